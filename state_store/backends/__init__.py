"""The keyed state backends: one folder per backend, one registration each, one registry.

``heap/`` (Flink's ``hashmap``: objects on the heap; ``heap`` is accepted as an alias),
``rocksdb/`` (serialized bytes in RocksDB) and ``single_key/`` (one key at a time: BATCH's
sorted execution). Each folder holds ``backend.py`` (the keyed backend), ``registration.py``
(its :class:`~.base.StateBackendType`) and, where it has them, ``ttl.py`` (its background
TTL cleanup) and ``keygroup_store.py`` (its STREAMING key-group store). ``registry.py``
finds registrations by name; every other layer goes through it.
"""

from __future__ import annotations

from typing import Any

from ..backend import KeyedStateBackend
from .base import KeyGroupStore, StateBackendType
from .registry import (
    HEAP,
    ROCKSDB,
    SINGLE_KEY,
    BackendChoice,
    backend_reference,
    get_backend,
    register_backend,
    registered_backends,
)

__all__ = ["HEAP", "ROCKSDB", "SINGLE_KEY", "BackendChoice", "KeyGroupStore", "StateBackendType",
           "backend_reference", "create_keyed_state_backend", "get_backend", "register_backend",
           "registered_backends"]


def create_keyed_state_backend(name: str, key_serializer: Any, max_parallelism: int,
                               key_group_range: range | None = None,
                               **options: Any) -> KeyedStateBackend:
    """A new keyed backend of the registration named ``name`` (see :func:`get_backend`).

    Args:
        name: the backend's name, alias or ``"module:attr"`` path.
        key_serializer: the keys' serializer.
        max_parallelism: the number of key groups.
        key_group_range: the key groups it owns (None: all).
        **options: backend options (a ConfigurationError names any it does not take).
    Returns:
        the backend.
    """
    return get_backend(name).create(key_serializer, max_parallelism, key_group_range, **options)
