"""The object metadata every kind shares (``metav1.ObjectMeta``, ``metav1.Condition``), and the base of the models.

Kept apart from the kinds so that the models of each API group (:mod:`phalanx.api.models`,
:mod:`phalanx.api.scheduling`, :mod:`phalanx.api.dra`) can import it without importing each other.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

__all__ = ["Condition", "Model", "ObjectMeta", "OwnerReference", "TypedLocalObjectReference"]


class Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """The base of every model: camelCase JSON names, keyword construction, defaults left out when encoding."""


class OwnerReference(Model):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Model):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []


class Condition(Model):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    observed_generation: int = 0
    last_transition_time: datetime | None = None


class TypedLocalObjectReference(Model):
    api_group: str = ""
    kind: str = ""
    name: str = ""
