"""The scheduling cycles, one module per job: ``pod`` (a pod of no PodGroup), ``group`` (the PodGroup cycle
driver), ``members`` (the group algorithm on one state), ``placement`` (the topology placement driver) and
``group_preemption`` (the workload-aware preemption driver). Each takes a ``CycleContext``, never the engine."""

__all__: list[str] = []
