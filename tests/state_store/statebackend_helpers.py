"""Shared helpers for the state-backend tests: build each backend by name."""

from __future__ import annotations

from typing import Any

from pyspark_datastream.state_store.backend import KeyedStateBackend
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.typeinfo import Types

__all__ = ["BACKEND_NAMES", "make_backend", "string_key_serializer"]

BACKEND_NAMES = ["heap", "rocksdb", "single_key"]


def string_key_serializer() -> Any:
    """The key serializer most tests use (keys are str)."""
    return Types.STRING().create_serializer()


def make_backend(
    name: str,
    key_serializer: Any = None,
    max_parallelism: int = 128,
    key_group_range: range | None = None,
) -> KeyedStateBackend:
    """A fresh backend of kind ``name`` (RocksDB in its own temp dir with small buffers)."""
    key_serializer = key_serializer or string_key_serializer()
    if name == "heap":
        return HeapKeyedStateBackend(key_serializer, max_parallelism, key_group_range)
    if name == "single_key":
        return SingleKeyStateBackend(key_serializer, max_parallelism, key_group_range)
    if name == "rocksdb":
        return RocksDBKeyedStateBackend(
            key_serializer,
            max_parallelism,
            key_group_range,
            block_cache_size=4 << 20,
            write_buffer_size=2 << 20,
        )
    raise ValueError(f"unknown backend {name!r}")
