"""State backend choices for ``env.set_state_backend`` (PyFlink names).

These are configuration objects; the runtime backends live in
``pyspark_datastream.state_store.backends``. Sorted BATCH execution always uses
the single-key backend (FLIP-140); the configured backend serves hash-based
BATCH execution and STREAMING.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from ..state_store.exceptions import ConfigurationError

__all__ = ["StateBackend", "HashMapStateBackend", "EmbeddedRocksDBStateBackend", "backend_spec"]


class StateBackend:
    """Base of the backend configuration objects."""

    kind: str = ""

    def options(self) -> dict[str, Any]:
        return {}


@dataclass
class HashMapStateBackend(StateBackend):
    """Working state as Python objects in memory."""

    kind = "hashmap"


@dataclass
class EmbeddedRocksDBStateBackend(StateBackend):
    """Working state in RocksDB (rocksdict) on local disk: holds more state than memory."""

    local_dir: Optional[str] = None
    block_cache_size: Optional[int] = None
    write_buffer_size: Optional[int] = None

    kind = "rocksdb"

    def options(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def backend_spec(backend: Union[StateBackend, str]) -> tuple[str, dict[str, Any]]:
    """Normalise a backend choice to ``(kind, options)``."""
    if isinstance(backend, StateBackend):
        return backend.kind, backend.options()
    if isinstance(backend, str):
        low = backend.strip().lower()
        if low in ("hashmap", "heap"):
            return "hashmap", {}
        if low == "rocksdb":
            return "rocksdb", {}
    raise ConfigurationError(
        "state backend must be HashMapStateBackend(), EmbeddedRocksDBStateBackend(), "
        f"'hashmap' or 'rocksdb', got {backend!r}"
    )
