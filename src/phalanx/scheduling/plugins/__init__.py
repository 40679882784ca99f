"""One module per plugin, named after kube-scheduler's plugin."""

__all__: list[str] = []
