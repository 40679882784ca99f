"""Seeded tie-breaks: where kube-scheduler picks at random (equally scored nodes, equally good topology domains,
victim units alike in importance), phalanx orders by a hash of ``--seed`` and a name, so a run is reproducible and
another seed draws another order."""

from __future__ import annotations

import hashlib

__all__ = ["seeded_hash"]


def seeded_hash(seed: int, text: str, signed: bool = False) -> int:
    """A 64-bit hash of ``seed`` and ``text``, stable across processes and Python versions."""
    digest = hashlib.blake2b(f"{seed}:{text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=signed)
