"""Shared helpers for the state-backend tests: build each registered backend by name.

Every registered backend is in :data:`BACKEND_NAMES`, so the conformance suites run on each
one, the test folder's own ``counting_backend`` included (registered here by its path).
"""

from __future__ import annotations

from typing import Any

from pyspark_datastream.state_store.backend import KeyedStateBackend
from pyspark_datastream.state_store.backends import ROCKSDB, get_backend, registered_backends
from pyspark_datastream.state_store.types import Types

__all__ = ["BACKEND_NAMES", "make_backend", "string_key_serializer"]

get_backend("counting_backend:COUNTING")  # a backend from the test folder alone

BACKEND_NAMES = [b.name for b in registered_backends()]
#: options per backend: RocksDB with small buffers (each test has its own temp dir)
_OPTIONS: dict[str, dict[str, Any]] = {
    ROCKSDB.name: {"block_cache_size": 4 << 20, "write_buffer_size": 2 << 20},
}


def string_key_serializer() -> Any:
    """The key serializer most tests use (keys are str)."""
    return Types.STRING().create_serializer()


def make_backend(
    name: str,
    key_serializer: Any = None,
    max_parallelism: int = 128,
    key_group_range: range | None = None,
) -> KeyedStateBackend:
    """A fresh backend of the registration named ``name`` (an alias such as ``heap`` too)."""
    backend_type = get_backend(name)
    return backend_type.create(key_serializer or string_key_serializer(), max_parallelism,
                               key_group_range, **_OPTIONS.get(backend_type.name, {}))
