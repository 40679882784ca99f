"""The guard's eBPF programs in restricted C (one object per attach point) and how they are compiled."""

__all__: list[str] = []
