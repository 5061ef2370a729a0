"""``StreamExecutionEnvironment`` calls of PyFlink beyond building and running jobs: legacy
sources, the time characteristic, the changelog state backend, slot-sharing groups and the
cached files, each working, kept as a runtime-only hint, or refused with its reason.

- ``set_stream_time_characteristic`` (deprecated since Flink 1.12, where event time became
  the default and the call stopped changing results): accepted with a DeprecationWarning.
- ``register_slot_sharing_group``, ``set_default_local_parallelism``: steer Flink's
  scheduler only; checked and kept.
- ``add_source`` (a ``SourceFunction``), ``create_input`` (an ``InputFormat``),
  ``enable_changelog_state_backend(True)`` and ``register_cached_file``: refused, naming
  what to use instead.
"""

from __future__ import annotations

import enum
import warnings
from typing import TYPE_CHECKING, Any, Optional, Self

from ..state_store.exceptions import ConfigurationError
from .exceptions import UnsupportedConnectorError

if TYPE_CHECKING:
    from .checkpointing import CheckpointConfig, CheckpointingMode, ExecutionConfig

__all__ = ["EnvironmentExtras", "TimeCharacteristic"]

_SAVEPOINT_DIR = "execution.checkpointing.savepoint-dir"


class TimeCharacteristic(enum.Enum):
    """PyFlink 1.x's time characteristic (deprecated since Flink 1.12: event time is the
    default, and processing-time operations say so themselves, e.g.
    ``TumblingProcessingTimeWindows``)."""

    ProcessingTime = 0
    IngestionTime = 1
    EventTime = 2


class EnvironmentExtras:
    """The calls of the module docstring, mixed into ``StreamExecutionEnvironment``."""

    _config: ExecutionConfig
    _time_characteristic = TimeCharacteristic.EventTime
    _default_local_parallelism: Optional[int] = None

    if TYPE_CHECKING:  # provided by StreamExecutionEnvironment
        def get_checkpoint_config(self) -> CheckpointConfig: ...

    # -- time characteristic -----------------------------------------------------------
    def set_stream_time_characteristic(self, characteristic: TimeCharacteristic) -> None:
        """Accepted with a DeprecationWarning: since Flink 1.12 event time is the default
        and the call changes no result (windows and timers name their clock).

        Args:
            characteristic: a :class:`TimeCharacteristic`.

        Raises:
            ConfigurationError: not a TimeCharacteristic.
        """
        if not isinstance(characteristic, TimeCharacteristic):
            raise ConfigurationError(
                f"set_stream_time_characteristic needs a TimeCharacteristic, got "
                f"{characteristic!r}")
        warnings.warn(
            "set_stream_time_characteristic is deprecated since Flink 1.12 and changes no "
            "result: event time is the default; use processing-time windows and timers "
            "(e.g. TumblingProcessingTimeWindows) for processing time", DeprecationWarning,
            stacklevel=2)
        self._time_characteristic = characteristic

    def get_stream_time_characteristic(self) -> TimeCharacteristic:
        """The characteristic given (default ``EventTime``, Flink's since 1.12).

        Returns:
            A TimeCharacteristic.
        """
        return self._time_characteristic

    # -- checkpointing getters ----------------------------------------------------------
    def get_checkpointing_mode(self) -> CheckpointingMode:
        """The checkpointing guarantee (both run exactly-once here).

        Returns:
            A CheckpointingMode.
        """
        return self.get_checkpoint_config().get_checkpointing_mode()

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        """PyFlink 2's name of :meth:`get_checkpointing_mode`.

        Returns:
            A CheckpointingMode.
        """
        return self.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether unaligned checkpoints were asked for (kept, no effect).

        Returns:
            The flag.
        """
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether forced unaligned checkpoints were asked for (kept, no effect).

        Returns:
            The flag.
        """
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def enable_changelog_state_backend(self, enabled: bool) -> Self:
        """``False`` is what runs here; ``True`` is refused: Spark's state store has no
        changelog that state is restored from.

        Args:
            enabled: a bool.

        Returns:
            This environment.

        Raises:
            ConfigurationError: ``enabled`` is True or not a bool.
        """
        if enabled is not False:
            raise ConfigurationError(
                f"enable_changelog_state_backend({enabled!r}): Flink's changelog state "
                f"backend has no counterpart on Spark (its state store writes each "
                f"micro-batch's state itself); leave it off")
        return self

    def is_changelog_state_backend_enabled(self) -> bool:
        """Always False (see :meth:`enable_changelog_state_backend`).

        Returns:
            False.
        """
        return False

    def set_default_savepoint_directory(self, directory: str) -> Self:
        """Kept (``execution.checkpointing.savepoint-dir``), no effect:
        ``JobClient.stop_with_savepoint`` writes to the directory it is given.

        Args:
            directory: a non-empty path.

        Returns:
            This environment.

        Raises:
            ConfigurationError: not a non-empty str.
        """
        if not isinstance(directory, str) or not directory.strip():
            raise ConfigurationError(
                f"set_default_savepoint_directory needs a non-empty path, got {directory!r:.80}")
        self._config.set_string(_SAVEPOINT_DIR, directory)
        return self

    def get_default_savepoint_directory(self) -> Optional[str]:
        """The directory given to :meth:`set_default_savepoint_directory`.

        Returns:
            The path, or None.
        """
        return self._config.get_string(_SAVEPOINT_DIR)

    # -- scheduling ---------------------------------------------------------------------
    def register_slot_sharing_group(self, slot_sharing_group: Any) -> Self:
        """Flink: declare a slot-sharing group's resources. Spark schedules tasks on its
        executors: checked, no effect.

        Args:
            slot_sharing_group: a ``SlotSharingGroup``.

        Returns:
            This environment.

        Raises:
            ConfigurationError: not a SlotSharingGroup.
        """
        from .slot_sharing import SlotSharingGroup

        if not isinstance(slot_sharing_group, SlotSharingGroup):
            raise ConfigurationError(
                f"register_slot_sharing_group needs a SlotSharingGroup, got "
                f"{slot_sharing_group!r:.80}")
        return self

    @staticmethod
    def set_default_local_parallelism(parallelism: int) -> None:
        """Flink: the parallelism of local environments that set none. Kept, no effect: the
        local session's cores come from its master (``local[2]``, or
        ``PYSPARK_DATASTREAM_MASTER``) and a job's partitions from ``set_parallelism``.

        Args:
            parallelism: an int >= 1.

        Raises:
            ConfigurationError: not an int >= 1.
        """
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigurationError(
                f"set_default_local_parallelism needs an int >= 1, got {parallelism!r}")
        EnvironmentExtras._default_local_parallelism = parallelism

    @staticmethod
    def get_default_local_parallelism() -> int:
        """The value given to :meth:`set_default_local_parallelism` (default: the CPU count,
        as Flink).

        Returns:
            The parallelism.
        """
        import os

        return EnvironmentExtras._default_local_parallelism or os.cpu_count() or 1

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """Flink's chaining rule; Spark fuses stages itself. Always True (Flink's default).

        Returns:
            True.
        """
        return True

    # -- refused sources and files ----------------------------------------------------------
    def add_source(self, source_func: Any, source_name: str = "Custom Source",
                   type_info: Any = None) -> Any:
        """Refused: a ``SourceFunction`` (Flink's legacy source interface, removed from Flink
        2's connectors) cannot run on Spark.

        Args:
            source_func: the SourceFunction.
            source_name: its name.
            type_info: its records' type.

        Returns:
            Nothing: it always raises.

        Raises:
            UnsupportedConnectorError: always, naming what to use instead.
        """
        raise UnsupportedConnectorError(
            f"add_source({type(source_func).__name__}, {source_name!r}): a SourceFunction "
            f"(Flink's legacy source interface) cannot run on Spark; use env.from_source with "
            f"a KafkaSource, FileSource or NumberSequenceSource, env.from_collection, or "
            f"env.from_dataframe over any Spark source")

    def create_input(self, input_format: Any, type_info: Any = None) -> Any:
        """Refused: an ``InputFormat`` is a Java class, and there is no Flink JVM here.

        Args:
            input_format: the InputFormat.
            type_info: its records' type.

        Returns:
            Nothing: it always raises.

        Raises:
            UnsupportedConnectorError: always, naming the readers to use instead.
        """
        raise UnsupportedConnectorError(
            f"create_input({type(input_format).__name__}): a Java InputFormat cannot run on "
            f"Spark; read the data with a Spark reader and env.from_dataframe, or use "
            f"env.from_source with a FileSource")

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        """Refused: Flink's distributed cache has no reader in PyFlink's Python functions
        here; ship the file with ``add_python_archive(path, target_dir)`` (extracted in the
        workers' directory) or ``add_python_file``.

        Args:
            file_path: the file.
            name: its name in the cache.
            executable: whether it is executable.

        Raises:
            ConfigurationError: always, naming what to use instead.
        """
        raise ConfigurationError(
            f"register_cached_file({file_path!r}, {name!r}): Flink's distributed cache has no "
            f"counterpart here; ship the file with env.add_python_archive(path, target_dir) "
            f"or env.add_python_file(path)")
