"""The runtime keyed state backends, and the one factory that builds them by name.

``hashmap`` (objects on the heap; ``heap`` is accepted as its short name), ``rocksdb``
(serialized bytes in RocksDB) and ``single_key`` (one key at a time: BATCH's sorted
execution). The public configuration objects (``pyspark_datastream.HashMapStateBackend``,
``EmbeddedRocksDBStateBackend``) choose among them by these names.
"""

from __future__ import annotations

from typing import Any

from ..backend import KeyedStateBackend
from ..exceptions import ConfigurationError

__all__ = ["BACKEND_KINDS", "canonical_backend_kind", "create_keyed_state_backend"]

#: the backend kinds, by their canonical names
BACKEND_KINDS = ("hashmap", "rocksdb", "single_key")
_ALIASES = {"heap": "hashmap"}


def canonical_backend_kind(kind: str) -> str:
    """``kind``'s canonical name (``heap`` -> ``hashmap``); a ConfigurationError otherwise."""
    name = _ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if name not in BACKEND_KINDS:
        raise ConfigurationError(
            f"state backend must be one of {', '.join(BACKEND_KINDS)} (or heap), got {kind!r}")
    return name


def create_keyed_state_backend(kind: str, key_serializer: Any, max_parallelism: int,
                               key_group_range: range | None = None,
                               **options: Any) -> KeyedStateBackend:
    """A new runtime backend of ``kind`` for keys serialized by ``key_serializer``.

    ``options`` go to the RocksDB backend (``directory``, ``block_cache_size``, ...); the
    heap and single-key backends take none.
    """
    name = canonical_backend_kind(kind)
    if name == "rocksdb":
        from .rocksdb import RocksDBKeyedStateBackend

        return RocksDBKeyedStateBackend(key_serializer, max_parallelism, key_group_range, **options)
    if options:
        raise ConfigurationError(f"the {name} state backend takes no options, got {sorted(options)}")
    if name == "hashmap":
        from .heap import HeapKeyedStateBackend

        return HeapKeyedStateBackend(key_serializer, max_parallelism, key_group_range)
    from .single_key import SingleKeyStateBackend

    return SingleKeyStateBackend(key_serializer, max_parallelism, key_group_range)
