"""CEL conformance suite: cases from cel-spec and Kubernetes, the runner and the pass-rate report."""

__all__: list[str] = []
