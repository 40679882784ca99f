"""The framework handle: what the engine shares with plugins (kube-scheduler's ``framework.Handle``), services
and never the engine itself. A plugin's factory receives it (``PluginSpec.factory(args, handle)``)."""

from __future__ import annotations

from typing import Protocol

from phalanx.scheduling.resource_claims import ClaimBinding

__all__ = ["Handle"]


class Handle(Protocol):
    """``claims`` is the engine's one DRA view (tracker, reservations); it is replaced when a snapshot is loaded,
    so plugins read it through the handle each time instead of keeping it."""

    @property
    def claims(self) -> ClaimBinding: ...
