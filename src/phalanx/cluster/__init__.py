"""The cluster state: node table (numpy), label index, pod accounting, assume/forget of tentative placements."""

__all__: list[str] = []
