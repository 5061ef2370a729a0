"""State backend choices for ``env.set_state_backend`` (PyFlink names).

These are configuration objects; the runtime backends live in
``pyspark_datastream.state_store.backends``. Sorted BATCH execution always uses
the single-key backend (FLIP-140); the configured backend serves hash-based
BATCH execution and STREAMING.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from ..state_store.backends import HEAP, ROCKSDB, backend_reference, get_backend
from ..state_store.exceptions import ConfigurationError

__all__ = ["StateBackend", "HashMapStateBackend", "EmbeddedRocksDBStateBackend", "backend_spec"]


class StateBackend:
    """Base of the backend configuration objects.

    ``kind`` names the backend's registration (``state_store/backends/registry.py``): a
    registered name or the ``"module:attr"`` path of another backend's registration;
    ``options()`` are its options. Subclass it to configure a backend of your own.
    """

    kind: str = ""

    def options(self) -> dict[str, Any]:
        """The backend's options.

        Returns:
            option name -> value (only those set).
        """
        return {}


@dataclass
class HashMapStateBackend(StateBackend):
    """Working state as Python objects in memory."""

    kind = HEAP.name


@dataclass
class EmbeddedRocksDBStateBackend(StateBackend):
    """Working state in RocksDB (rocksdict) on local disk: holds more state than memory.

    Args:
        local_dir: Parent directory of the working databases; None uses a fresh temporary
            directory.
        block_cache_size: RocksDB's block cache in bytes; None keeps the default.
        write_buffer_size: RocksDB's write buffer (memtable) in bytes; None keeps the default.
    """

    local_dir: Optional[str] = None
    block_cache_size: Optional[int] = None
    write_buffer_size: Optional[int] = None

    kind = ROCKSDB.name

    def options(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def backend_spec(backend: Union[StateBackend, str]) -> tuple[str, dict[str, Any]]:
    """Normalise a backend choice to ``(reference, options)``: the registration's name (or the
    path it was imported by: what executors resolve) and its checked options.

    Args:
        backend: a StateBackend, or a backend name or ``"module:attr"`` path.
    Returns:
        ``(reference, options)``.
    Raises:
        ConfigurationError: no registered backend users may choose, or an unknown option.
    """
    if isinstance(backend, StateBackend):
        name, options = backend.kind, backend.options()
    elif isinstance(backend, str):
        name, options = backend, {}
    else:
        name, options = None, {}
    try:
        backend_type = get_backend(name) if name is not None else None
    except ConfigurationError as exc:
        raise ConfigurationError(
            "state backend must be HashMapStateBackend(), EmbeddedRocksDBStateBackend(), "
            f"'hashmap', 'rocksdb' or the 'module:attr' path of a backend registration, "
            f"got {backend!r}: {exc}") from exc
    if backend_type is None or not backend_type.configurable:
        raise ConfigurationError(
            "state backend must be HashMapStateBackend(), EmbeddedRocksDBStateBackend(), "
            f"'hashmap', 'rocksdb' or the 'module:attr' path of a backend registration, "
            f"got {backend!r}")
    backend_type.check_options(options)
    return backend_reference(backend_type), options
