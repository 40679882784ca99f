"""Preemption: what kube-scheduler's DefaultPreemption PostFilter does for one pod, and workload-aware preemption
for a whole PodGroup.

- ``default_preemption``: per-pod PostFilter (candidates per node, reprieves, ranking); ``victim_index`` its
  vectorised fast path; ``candidates`` the ranking.
- ``workload``: victim units and the reprieve loop of workload-aware preemption (driven by
  ``scheduling/cycle/group_preemption.py``).
- ``budgets`` (PodDisruptionBudgets), ``units`` (which pods go together: a PodGroup's declared disruptionMode,
  and running gangs' members kept first), ``common`` (ordering, messages, what-if removal).
"""

__all__: list[str] = []
