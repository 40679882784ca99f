"""The openb GPU-fragmentation experiment: ``openb`` (the trace and the artifact's arrival procedure),
``experiment`` (policies x seeds, curves, the published figures), and the runners passed to it: ``engine``
(through the scheduler) and ``reference`` (the reference model of the FGD artifact's simulator)."""

__all__: list[str] = []
