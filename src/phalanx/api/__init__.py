"""Kubernetes objects phalanx reads: typed models, decoding with field paths, quantities, selectors, validation."""

__all__: list[str] = []
