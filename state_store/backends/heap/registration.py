"""The heap backend's registration (Flink's ``hashmap``)."""

from __future__ import annotations

from typing import Any, Optional

from ...backend import KeyedStateBackend
from ..base import StateBackendType
from .ttl import heap_ttl_cleanup

__all__ = ["HEAP", "REGISTRATION"]


def _create(key_serializer: Any, max_parallelism: int,
            key_group_range: Optional[range] = None) -> KeyedStateBackend:
    from .backend import HeapKeyedStateBackend

    return HeapKeyedStateBackend(key_serializer, max_parallelism, key_group_range)


#: objects on the heap; STREAMING keeps each key group's full snapshot in GroupState
HEAP = StateBackendType(
    name="hashmap", create_backend=_create, aliases=("heap",),
    description="working state as Python objects in memory",
    ttl_cleanup=heap_ttl_cleanup, snapshot_fast_paths=True)

#: the registration the registry finds in this folder (``registry.BUILTIN_FOLDERS``)
REGISTRATION = HEAP
