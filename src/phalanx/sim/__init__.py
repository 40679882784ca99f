"""Trace-driven simulation of a cluster over time: jobs arrive, run and finish on a simulated clock, and the
same engine `phalanx schedule` uses decides where their pods go. The simulator only feeds the engine events."""

__all__: list[str] = []
