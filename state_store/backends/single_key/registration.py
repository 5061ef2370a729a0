"""The single-key backend's registration (sorted BATCH execution, FLIP-140)."""

from __future__ import annotations

from typing import Any, Optional

from ...backend import KeyedStateBackend
from ..base import StateBackendType

__all__ = ["SINGLE_KEY", "REGISTRATION"]


def _create(key_serializer: Any, max_parallelism: int,
            key_group_range: Optional[range] = None) -> KeyedStateBackend:
    from .backend import SingleKeyStateBackend

    return SingleKeyStateBackend(key_serializer, max_parallelism, key_group_range)


#: one key at a time; no TTL cleanup (Flink's BATCH backend applies no TTL); never chosen by
#: users: sorted BATCH execution always runs on it
SINGLE_KEY = StateBackendType(
    name="single_key", create_backend=_create,
    description="only the current key's state (sorted BATCH input)",
    streaming=False, configurable=False)

#: the registration the registry finds in this folder (``registry.BUILTIN_FOLDERS``)
REGISTRATION = SINGLE_KEY
