"""The live adapter: the only package that talks to a Kubernetes API server (``phalanx serve``)."""

__all__: list[str] = []
