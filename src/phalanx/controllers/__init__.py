"""What kube-controller-manager does for the scheduler: Jobs become pods (and, for gang-eligible Indexed Jobs, a
Workload and a PodGroup). Controllers only turn API objects into API objects, so `schedule` and `simulate` share
them and neither depends on the other."""

__all__: list[str] = []
