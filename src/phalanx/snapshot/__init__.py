"""The ``schedule`` front end: what-if scheduling of a snapshot given as Kubernetes YAML.

``schedule`` loads, validates and runs the engine once (``schedule_snapshot``), ``result`` builds the
ScheduleResult from what the engine recorded and answers, and ``render`` draws it as tables.
"""

__all__: list[str] = []
