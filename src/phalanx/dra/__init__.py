"""Dynamic Resource Allocation: the structured-parameters allocator, device inventory and claim lifecycle."""

__all__: list[str] = []
