"""One module per plugin, named after kube-scheduler's plugin."""
