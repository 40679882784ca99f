"""The scheduler engine: framework, plugins, queue and the PodGroup cycle."""
