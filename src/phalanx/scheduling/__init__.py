"""The scheduler engine: framework, plugins, queue and the PodGroup cycle."""

__all__: list[str] = []
