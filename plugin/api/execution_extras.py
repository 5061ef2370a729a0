"""PyFlink's ``ExecutionConfig`` and ``CheckpointConfig`` calls that steer Flink's runtime.

Closure cleaning, latency markers, task cancellation, Kryo/Avro serializer choices, snapshot
compression and unaligned checkpoints change how Flink runs a job, never what it computes or
the exactly-once guarantee it gives. Here each is checked (a wrong argument fails where it is
written), kept under its Flink key (which logs one warning naming why it has no effect,
``NOT_HONOURED`` in plan/config.py) and read back by its getter. The one call whose meaning
cannot be kept, ``disable_auto_generated_uids`` (Flink then refuses a job with an operator
without ``uid``), raises :class:`ConfigurationError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, TypeVar

from ..plan.config import Configuration, parse_duration_ms
from ..state_store.exceptions import ConfigurationError, GraphBuildError
from .time import Duration, to_millis

__all__ = ["CheckpointConfigExtras", "ExecutionConfigExtras"]

_E = TypeVar("_E", bound="ExecutionConfigExtras")
_C = TypeVar("_C", bound="CheckpointConfigExtras")

_CLOSURE = "pipeline.closure-cleaner-level"
_LATENCY = "metrics.latency.interval"
_CANCEL_INTERVAL = "task.cancellation.interval"
_CANCEL_TIMEOUT = "task.cancellation.timeout"
_KRYO = "pipeline.force-kryo"
_AVRO = "pipeline.force-avro"
_GENERIC = "pipeline.generic-types"
_COMPRESSION = "execution.checkpointing.snapshot-compression"
_UNALIGNED = "execution.checkpointing.unaligned.enabled"
_FORCE_UNALIGNED = "execution.checkpointing.unaligned.forced"
_ALIGNED_TIMEOUT = "execution.checkpointing.aligned-checkpoint-timeout"
_TOLERABLE = "execution.checkpointing.tolerable-failed-checkpoints"


def _flag(what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{what} needs a bool, got {value!r}")
    return value


def _non_negative(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{what} needs an int >= 0, got {value!r}")
    return value


class ExecutionConfigExtras:
    """The runtime-only calls of PyFlink's ``ExecutionConfig`` (mixed into it)."""

    if TYPE_CHECKING:  # provided by Configuration
        def set_string(self, key: str, value: str) -> Configuration: ...

        def get_string(self, key: str, default_value: Optional[str] = None
                       ) -> Optional[str]: ...

    def _bool(self, key: str, default: bool) -> bool:
        raw = self.get_string(key)
        return default if raw is None else raw == "true"

    def _set_bool(self: _E, key: str, value: bool) -> _E:
        self.set_string(key, "true" if value else "false")
        return self

    # -- closure cleaner ------------------------------------------------------
    def enable_closure_cleaner(self: _E) -> _E:
        """Kept, no effect: Python functions are pickled as written (Flink cleans Java closures).

        Returns:
            This ExecutionConfig.
        """
        self.set_string(_CLOSURE, "RECURSIVE")
        return self

    def disable_closure_cleaner(self: _E) -> _E:
        """Kept, no effect (see :meth:`enable_closure_cleaner`).

        Returns:
            This ExecutionConfig.
        """
        self.set_string(_CLOSURE, "NONE")
        return self

    def is_closure_cleaner_enabled(self) -> bool:
        """Whether the closure cleaner is on (Flink's default: on).

        Returns:
            False only after :meth:`disable_closure_cleaner`.
        """
        return self.get_string(_CLOSURE, "RECURSIVE") != "NONE"

    # -- latency tracking, task cancellation --------------------------------------
    def set_latency_tracking_interval(self: _E, interval: int) -> _E:
        """Kept, no effect: Flink's latency markers; Spark reports each micro-batch's progress.

        Args:
            interval: milliseconds (0 or less: off, as in Flink).

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not an int.
        """
        if isinstance(interval, bool) or not isinstance(interval, int):
            raise ConfigurationError(
                f"set_latency_tracking_interval needs an int of milliseconds, got {interval!r}")
        self.set_string(_LATENCY, f"{interval} ms")
        return self

    def get_latency_tracking_interval(self) -> int:
        """The interval given to :meth:`set_latency_tracking_interval` (Flink's default 0: off).

        Returns:
            Milliseconds.
        """
        raw = self.get_string(_LATENCY)
        return 0 if raw is None else int(raw.split()[0])

    def set_task_cancellation_interval(self: _E, interval: int) -> _E:
        """Kept, no effect: Spark cancels its tasks itself.

        Args:
            interval: milliseconds >= 0 between cancellation attempts.

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not an int >= 0.
        """
        self.set_string(_CANCEL_INTERVAL,
                        f"{_non_negative('set_task_cancellation_interval', interval)} ms")
        return self

    def get_task_cancellation_interval(self) -> int:
        """The value given to :meth:`set_task_cancellation_interval` (Flink's default 30000).

        Returns:
            Milliseconds.
        """
        raw = self.get_string(_CANCEL_INTERVAL)
        return 30000 if raw is None else parse_duration_ms(_CANCEL_INTERVAL, raw)

    def set_task_cancellation_timeout(self: _E, timeout: int) -> _E:
        """Kept, no effect: Spark kills its tasks itself.

        Args:
            timeout: milliseconds >= 0 (0: never, as in Flink).

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not an int >= 0.
        """
        self.set_string(_CANCEL_TIMEOUT,
                        f"{_non_negative('set_task_cancellation_timeout', timeout)} ms")
        return self

    def get_task_cancellation_timeout(self) -> int:
        """The value given to :meth:`set_task_cancellation_timeout` (Flink's default 180000).

        Returns:
            Milliseconds.
        """
        raw = self.get_string(_CANCEL_TIMEOUT)
        return 180000 if raw is None else parse_duration_ms(_CANCEL_TIMEOUT, raw)

    # -- Flink's Java serializers ----------------------------------------------------
    def enable_force_kryo(self: _E) -> _E:
        """Kept, no effect: Python records are pickled or typed (``Types.*``), as in PyFlink.

        Returns:
            This ExecutionConfig.
        """
        return self._set_bool(_KRYO, True)

    def disable_force_kryo(self: _E) -> _E:
        """Flink's default, what runs here.

        Returns:
            This ExecutionConfig.
        """
        return self._set_bool(_KRYO, False)

    def is_force_kryo_enabled(self) -> bool:
        """Whether :meth:`enable_force_kryo` was called.

        Returns:
            The flag.
        """
        return self._bool(_KRYO, False)

    def enable_force_avro(self: _E) -> _E:
        """Kept, no effect (see :meth:`enable_force_kryo`).

        Returns:
            This ExecutionConfig.
        """
        return self._set_bool(_AVRO, True)

    def disable_force_avro(self: _E) -> _E:
        """Flink's default, what runs here.

        Returns:
            This ExecutionConfig.
        """
        return self._set_bool(_AVRO, False)

    def is_force_avro_enabled(self) -> bool:
        """Whether :meth:`enable_force_avro` was called.

        Returns:
            The flag.
        """
        return self._bool(_AVRO, False)

    def enable_generic_types(self: _E) -> _E:
        """Flink's default (Java types may fall back to Kryo).

        Returns:
            This ExecutionConfig.
        """
        return self._set_bool(_GENERIC, True)

    def disable_generic_types(self: _E) -> _E:
        """Kept, no effect: Flink then refuses Java types it would serialize with Kryo;
        Python records never are (pickled or ``Types.*``, as in PyFlink).

        Returns:
            This ExecutionConfig.
        """
        return self._set_bool(_GENERIC, False)

    def has_generic_types_disabled(self) -> bool:
        """Whether :meth:`disable_generic_types` was called.

        Returns:
            The flag.
        """
        return not self._bool(_GENERIC, True)

    def get_default_kryo_serializer_classes(self) -> dict[str, str]:
        """Kryo serializers registered for Java classes: none here.

        Returns:
            An empty dict.
        """
        return {}

    def get_registered_kryo_types(self) -> list[str]:
        """Java types registered with Kryo: none here.

        Returns:
            An empty list.
        """
        return []

    def get_registered_pojo_types(self) -> list[str]:
        """Java POJO types registered with Flink: none here.

        Returns:
            An empty list.
        """
        return []

    # -- uids, snapshot compression ----------------------------------------------------
    def enable_auto_generated_uids(self: _E) -> _E:
        """Flink's default and what runs here: an operator without ``uid`` is matched by
        position when its state is restored.

        Returns:
            This ExecutionConfig.
        """
        return self

    def disable_auto_generated_uids(self: _E) -> _E:
        """Refused: Flink then refuses any job with an operator without ``uid``; that check is
        not made here.

        Returns:
            Nothing: it always raises.

        Raises:
            ConfigurationError: always, naming what to do instead.
        """
        raise ConfigurationError(
            "ExecutionConfig.disable_auto_generated_uids(): the check it enables (refuse a job "
            "with an operator without uid) is not made here; set uid() on each stateful "
            "operator instead and leave auto-generated uids on")

    def has_auto_generated_uids_enabled(self) -> bool:
        """Always True (see :meth:`disable_auto_generated_uids`).

        Returns:
            True.
        """
        return True

    def set_use_snapshot_compression(self: _E, use_snapshot_compression: bool) -> _E:
        """Kept, no effect: Spark compresses its state store and checkpoint files itself.

        Args:
            use_snapshot_compression: a bool.

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not a bool.
        """
        return self._set_bool(_COMPRESSION, _flag("set_use_snapshot_compression",
                                                  use_snapshot_compression))

    def is_use_snapshot_compression(self) -> bool:
        """The value given to :meth:`set_use_snapshot_compression` (Flink's default False).

        Returns:
            The flag.
        """
        return self._bool(_COMPRESSION, False)


class CheckpointConfigExtras:
    """The barrier-alignment and failure-tolerance calls of PyFlink's ``CheckpointConfig``.

    A micro-batch's state and sink output commit together: there are no barriers to align,
    so unaligned checkpoints and alignment timeouts are kept with no effect (exactly-once
    either way); a failed micro-batch fails the query, so the tolerable failure number is
    kept and not applied (the job stops at the first failure, never silently goes on).
    """

    _config: Configuration

    def enable_unaligned_checkpoints(self: _C, enabled: bool = True) -> _C:
        """Kept, no effect: there are no barriers; exactly-once either way.

        Args:
            enabled: a bool.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not a bool.
        """
        value = _flag("enable_unaligned_checkpoints", enabled)
        self._config.set_string(_UNALIGNED, "true" if value else "false")
        return self

    def disable_unaligned_checkpoints(self: _C) -> _C:
        """Flink's default, what runs here.

        Returns:
            This CheckpointConfig.
        """
        self._config.remove_config(_UNALIGNED)
        return self

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether :meth:`enable_unaligned_checkpoints` was called.

        Returns:
            The flag.
        """
        return self._config.get_string(_UNALIGNED) == "true"

    def set_force_unaligned_checkpoints(self: _C, force_unaligned_checkpoints: bool = True
                                        ) -> _C:
        """Kept, no effect (see :meth:`enable_unaligned_checkpoints`).

        Args:
            force_unaligned_checkpoints: a bool.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not a bool.
        """
        value = _flag("set_force_unaligned_checkpoints", force_unaligned_checkpoints)
        self._config.set_string(_FORCE_UNALIGNED, "true" if value else "false")
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether :meth:`set_force_unaligned_checkpoints` was given True.

        Returns:
            The flag.
        """
        return self._config.get_string(_FORCE_UNALIGNED) == "true"

    def set_aligned_checkpoint_timeout(self: _C, alignment_timeout: Duration) -> _C:
        """Kept, no effect: there are no barriers to align.

        Args:
            alignment_timeout: a ``Duration`` (or int milliseconds) >= 0.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not a Duration or int >= 0.
        """
        try:
            millis = to_millis(alignment_timeout, "set_aligned_checkpoint_timeout")
        except GraphBuildError as exc:
            raise ConfigurationError(str(exc)) from exc
        _non_negative("set_aligned_checkpoint_timeout", millis)
        self._config.set_string(_ALIGNED_TIMEOUT, f"{millis} ms")
        return self

    def get_aligned_checkpoint_timeout(self) -> Duration:
        """The value given to :meth:`set_aligned_checkpoint_timeout` (Flink's default 0).

        Returns:
            A Duration.
        """
        raw = self._config.get_string(_ALIGNED_TIMEOUT)
        return Duration.of_millis(0 if raw is None else parse_duration_ms(_ALIGNED_TIMEOUT, raw))

    def set_alignment_timeout(self: _C, alignment_timeout: Duration) -> _C:
        """PyFlink's older name of :meth:`set_aligned_checkpoint_timeout`.

        Args:
            alignment_timeout: a ``Duration`` (or int milliseconds) >= 0.

        Returns:
            This CheckpointConfig.
        """
        return self.set_aligned_checkpoint_timeout(alignment_timeout)

    def get_alignment_timeout(self) -> Duration:
        """PyFlink's older name of :meth:`get_aligned_checkpoint_timeout`.

        Returns:
            A Duration.
        """
        return self.get_aligned_checkpoint_timeout()

    def set_tolerable_checkpoint_failure_number(self: _C, tolerable_checkpoint_failure_number: int
                                                ) -> _C:
        """Kept, not applied: a failed micro-batch fails the query (as 0, Flink's default).

        Args:
            tolerable_checkpoint_failure_number: an int >= 0.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not an int >= 0.
        """
        value = _non_negative("set_tolerable_checkpoint_failure_number",
                              tolerable_checkpoint_failure_number)
        self._config.set_string(_TOLERABLE, str(value))
        return self

    def get_tolerable_checkpoint_failure_number(self) -> int:
        """The value given to :meth:`set_tolerable_checkpoint_failure_number` (default 0).

        Returns:
            The number.
        """
        return self._config.get_integer(_TOLERABLE, 0) or 0

    def set_fail_on_checkpointing_errors(self: _C, fail_on_checkpointing_errors: bool) -> _C:
        """PyFlink's older form of :meth:`set_tolerable_checkpoint_failure_number`: True is 0,
        False is unlimited (kept, not applied: a failed micro-batch fails the query).

        Args:
            fail_on_checkpointing_errors: a bool.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not a bool.
        """
        value = _flag("set_fail_on_checkpointing_errors", fail_on_checkpointing_errors)
        return self.set_tolerable_checkpoint_failure_number(0 if value else 2 ** 31 - 1)

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Whether no checkpoint failure is tolerated (the tolerable number is 0).

        Returns:
            The flag.
        """
        return self.get_tolerable_checkpoint_failure_number() == 0
