"""Errors of the DRA allocator (spec dra.md §3.12).

    AllocationError      fatal for the pod's scheduling attempt (CEL error, missing class, All with an
                         incomplete pool, ...): the scheduler returns an Error status and retries with backoff
    MaxSizeExceeded      internal: a branch would put more than 32 results into one claim; caught by the search

"No solution on this node" is not an error: the allocator returns None.
"""

from __future__ import annotations

__all__ = ["MAX_RESULTS", "AllocationError", "MaxSizeExceeded"]

MAX_RESULTS = 32  # AllocationResultsMaxSize: devices per claim


class AllocationError(Exception):
    """Fatal for this scheduling attempt; the message is kube-scheduler's."""


class MaxSizeExceeded(Exception):
    """A claim would get more than MAX_RESULTS devices on this branch (drives upstream's early backtracking)."""
