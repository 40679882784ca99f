"""phalanx: a workload-aware scheduling toolkit for AI/ML clusters, and a deploy guard.

The scheduler engine (``phalanx.scheduling``) runs over the cluster state (``phalanx.cluster``) built from
Kubernetes objects (``phalanx.api``); ``phalanx.guard`` is the independent deploy guard.
"""

__all__: list[str] = []

__version__ = "0.1.0"
