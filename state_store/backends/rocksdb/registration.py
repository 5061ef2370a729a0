"""The RocksDB backend's registration (Flink's ``rocksdb``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from ...backend import KeyedStateBackend
from ...exceptions import ConfigurationError
from ..base import KeyGroupStore, StateBackendType
from .ttl import rocksdb_ttl_cleanup

__all__ = ["ROCKSDB", "REGISTRATION"]

#: the sizes a STREAMING key group's database gets unless the job's options say otherwise
#: (small: an executor keeps many key groups open)
_STORE_BLOCK_CACHE = 8 << 20
_STORE_WRITE_BUFFER = 4 << 20


def _create(key_serializer: Any, max_parallelism: int, key_group_range: Optional[range] = None,
            *, local_dir: Optional[str] = None, **options: Any) -> KeyedStateBackend:
    from .backend import RocksDBKeyedStateBackend

    if local_dir is not None and "directory" not in options:
        options["directory"] = local_dir
    _version_cache(options.pop("version_cache", True))  # STREAMING's key-group store only
    return RocksDBKeyedStateBackend(key_serializer, max_parallelism, key_group_range, **options)


def _key_group_store(checkpoint_dir: str, key_serializer: Any, max_parallelism: int,
                     storage: Any, options: Mapping[str, Any]) -> KeyGroupStore:
    from .keygroup_store import RocksDBKeyGroupStore

    return RocksDBKeyGroupStore(
        checkpoint_dir, key_serializer, max_parallelism, storage=storage,
        local_dir=options.get("local_dir") or options.get("directory"),
        block_cache_size=int(options.get("block_cache_size") or _STORE_BLOCK_CACHE),
        write_buffer_size=int(options.get("write_buffer_size") or _STORE_WRITE_BUFFER),
        version_cache=_version_cache(options.get("version_cache", True)))


def _version_cache(value: Any) -> bool:
    """``version_cache``: whether a host keeps copies of the key group version files it
    writes or reads from remote storage (version_cache.py); a bool, never coerced."""
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"the rocksdb state backend's option version_cache takes True or False, got "
            f"{type(value).__name__} {value!r}")
    return value


#: serialized bytes in an embedded RocksDB; STREAMING keeps versioned files per key group
ROCKSDB = StateBackendType(
    name="rocksdb", create_backend=_create,
    description="working state serialized in RocksDB on local disk",
    options=("local_dir", "directory", "block_cache_size", "write_buffer_size", "version_cache",
             "max_write_buffer_number", "max_background_jobs", "track_changes",
             "max_tracked_bytes"),
    ttl_cleanup=rocksdb_ttl_cleanup, key_group_store=_key_group_store)

#: the registration the registry finds in this folder (``registry.BUILTIN_FOLDERS``)
REGISTRATION = ROCKSDB
