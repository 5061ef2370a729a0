"""State backend choices for ``env.set_state_backend`` (PyFlink names).

These are configuration objects; the runtime backends live in
``pyspark_datastream.state_store.backends``. Sorted BATCH execution always uses
the single-key backend (FLIP-140); the configured backend serves hash-based
BATCH execution and STREAMING.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any, Optional, Union

from ..state_store.backends import HEAP, ROCKSDB, BackendChoice, get_backend
from ..state_store.exceptions import ConfigurationError

__all__ = ["StateBackend", "HashMapStateBackend", "EmbeddedRocksDBStateBackend", "PredefinedOptions",
           "CustomStateBackend", "backend_spec"]

log = logging.getLogger("pyspark_datastream")


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


class PredefinedOptions(enum.Enum):
    """Flink's predefined RocksDB option sets, mapped onto the rocksdict options that have a
    counterpart here (options given explicitly win):

    - ``DEFAULT``: none.
    - ``SPINNING_DISK_OPTIMIZED``, ``FLASH_SSD_OPTIMIZED``: ``max_background_jobs`` 4
      (Flink's ``setIncreaseParallelism(4)``).
    - ``SPINNING_DISK_OPTIMIZED_HIGH_MEM``: that, a 256 MiB block cache, 64 MiB write
      buffers and at most 4 of them.

    Their other settings (compaction style, open files, fsync, bloom filters) tune disk
    access and change no result.
    """

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


_PREDEFINED: dict[PredefinedOptions, dict[str, int]] = {
    PredefinedOptions.DEFAULT: {},
    PredefinedOptions.SPINNING_DISK_OPTIMIZED: {"max_background_jobs": 4},
    PredefinedOptions.FLASH_SSD_OPTIMIZED: {"max_background_jobs": 4},
    PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM: {
        "max_background_jobs": 4, "block_cache_size": 256 << 20,
        "write_buffer_size": 64 << 20, "max_write_buffer_number": 4},
}


class EmbeddedRocksDBStateBackend(StateBackend):
    """Working state in RocksDB (rocksdict) on local disk: holds more state than memory.

    Args:
        enable_incremental_checkpointing: Flink's incremental checkpoints; kept (read back by
            :meth:`is_incremental_checkpoints_enabled`), no effect: the state store writes
            each key group's changes itself.
        j_embedded_rocks_db_state_backend: PyFlink's Java object; must be None here.
        local_dir: Parent directory of the working databases; None uses a fresh temporary
            directory (PyFlink's ``set_db_storage_paths``).
        block_cache_size: RocksDB's block cache in bytes; None keeps the default.
        write_buffer_size: RocksDB's write buffer (memtable) in bytes; None keeps the default.
        version_cache: STREAMING with the checkpoint on object storage: whether each host
            keeps copies of the key group version files it writes or reads, so that a
            worker rebuilding a key group reads them from local disk (default True).

    Raises:
        ConfigurationError: a Java object, or a flag that is not a bool.
    """

    kind = ROCKSDB.name

    def __init__(self, enable_incremental_checkpointing: Optional[bool] = None,
                 j_embedded_rocks_db_state_backend: Any = None, *,
                 local_dir: Optional[str] = None, block_cache_size: Optional[int] = None,
                 write_buffer_size: Optional[int] = None,
                 version_cache: Optional[bool] = None) -> None:
        if j_embedded_rocks_db_state_backend is not None:
            raise ConfigurationError(
                "EmbeddedRocksDBStateBackend(j_embedded_rocks_db_state_backend): there is no "
                "Java Flink object here; use its Python options")
        if enable_incremental_checkpointing is not None and \
                not isinstance(enable_incremental_checkpointing, bool):
            raise ConfigurationError(
                f"EmbeddedRocksDBStateBackend: enable_incremental_checkpointing must be a bool, "
                f"got {enable_incremental_checkpointing!r}")
        if version_cache is not None and not isinstance(version_cache, bool):
            raise ConfigurationError(
                f"EmbeddedRocksDBStateBackend: version_cache must be a bool, got "
                f"{type(version_cache).__name__} {version_cache!r}")
        self._incremental = bool(enable_incremental_checkpointing)
        self.version_cache = version_cache
        self.local_dir = local_dir
        self.block_cache_size = block_cache_size
        self.write_buffer_size = write_buffer_size
        self._paths: list[str] = [] if local_dir is None else [local_dir]
        self._predefined = PredefinedOptions.DEFAULT
        self._transfer_threads = 4

    def options(self) -> dict[str, Any]:
        """The backend's options: the predefined set's, then those given explicitly.

        Returns:
            option name -> value (only those set).
        """
        out: dict[str, Any] = dict(_PREDEFINED[self._predefined])
        for key in ("local_dir", "block_cache_size", "write_buffer_size", "version_cache"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    def is_incremental_checkpoints_enabled(self) -> bool:
        """The ``enable_incremental_checkpointing`` given (default False).

        Returns:
            The flag.
        """
        return self._incremental

    def set_db_storage_paths(self, *paths: str) -> None:
        """Where the working databases go (``local_dir``); no path: a temporary directory.
        Flink spreads its instances over several paths; here they all go under the first
        (one warning names the others).

        Args:
            *paths: local directories.

        Raises:
            ConfigurationError: a path that is not a non-empty str.
        """
        bad = [p for p in paths if not isinstance(p, str) or not p.strip()]
        if bad:
            raise ConfigurationError(
                f"set_db_storage_paths needs local directory paths, got {bad!r:.80}")
        self._paths = [p[len("file://"):] if p.startswith("file://") else p for p in paths]
        self.local_dir = self._paths[0] if self._paths else None
        if len(self._paths) > 1:
            log.warning("set_db_storage_paths: the working databases all go under %s; %s "
                        "are not used", self._paths[0], ", ".join(self._paths[1:]))

    def get_db_storage_paths(self) -> list[str]:
        """The paths given to :meth:`set_db_storage_paths`.

        Returns:
            The paths (empty: a temporary directory).
        """
        return list(self._paths)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        """Use one of Flink's predefined option sets (see :class:`PredefinedOptions`).

        Args:
            options: a PredefinedOptions.

        Raises:
            ConfigurationError: not a PredefinedOptions.
        """
        if not isinstance(options, PredefinedOptions):
            raise ConfigurationError(
                f"set_predefined_options needs a PredefinedOptions, got {options!r}")
        self._predefined = options

    def get_predefined_options(self) -> PredefinedOptions:
        """The predefined option set (default ``DEFAULT``).

        Returns:
            A PredefinedOptions.
        """
        return self._predefined

    def set_options(self, options_factory_class_name: str) -> None:
        """Refused: an options factory is a Java class, and there is no Flink JVM here.

        Args:
            options_factory_class_name: the Java class name.

        Raises:
            ConfigurationError: always, naming the options that can be set instead.
        """
        raise ConfigurationError(
            f"EmbeddedRocksDBStateBackend.set_options({options_factory_class_name!r}): a Java "
            f"RocksDBOptionsFactory cannot run here (no Flink JVM); use "
            f"set_predefined_options, or block_cache_size/write_buffer_size")

    def get_options(self) -> None:
        """The options factory: none here (see :meth:`set_options`).

        Returns:
            None.
        """
        return None

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        """Kept, no effect: Spark uploads and downloads the state store's files itself.

        Args:
            number_of_transfering_threads: an int >= 1.

        Raises:
            ConfigurationError: not an int >= 1.
        """
        n = number_of_transfering_threads
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigurationError(
                f"set_number_of_transfer_threads needs an int >= 1, got {n!r}")
        self._transfer_threads = n

    def get_number_of_transfer_threads(self) -> int:
        """The value given to :meth:`set_number_of_transfer_threads` (Flink's default 4).

        Returns:
            The number.
        """
        return self._transfer_threads

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmbeddedRocksDBStateBackend) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.options().items())))

    def __repr__(self) -> str:
        return f"EmbeddedRocksDBStateBackend({self.options()!r})"


class CustomStateBackend(StateBackend):
    """A Java state backend: refused, there is no Flink JVM here (subclass
    :class:`StateBackend` to configure a backend of your own).

    Args:
        j_custom_state_backend: PyFlink's Java object.

    Raises:
        ConfigurationError: always.
    """

    def __init__(self, j_custom_state_backend: Any) -> None:
        raise ConfigurationError(
            "CustomStateBackend: a Java state backend cannot run here (no Flink JVM); use "
            "HashMapStateBackend(), EmbeddedRocksDBStateBackend() or a StateBackend subclass "
            "naming a backend registration")


def backend_spec(backend: Union[StateBackend, str]) -> BackendChoice:
    """Normalise a backend choice to a :class:`BackendChoice`: the registration's name (or the
    path it was imported by: what executors resolve) and its checked options.

    Args:
        backend: a StateBackend, or a backend name or ``"module:attr"`` path.
    Returns:
        the choice.
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
    return BackendChoice.of(backend_type, options)
