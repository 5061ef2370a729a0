"""PyFlink's ``CheckpointConfig`` and ``ExecutionConfig`` over the job's configuration.

A STREAMING job here checkpoints once per micro-batch (its state and sink output commit
together), so the checkpoint interval is the processing-time trigger interval. Settings
that have a meaning on Spark are mapped to the configuration keys the job reads; settings
that have none are kept, and log one warning naming them (see docs/porting.md).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Any, Optional

from ..plan.config import Configuration, parse_duration_ms
from ..state_store.exceptions import ConfigurationError
from ..state_store.keygroups import check_max_parallelism
from .execution_extras import CheckpointConfigExtras, ExecutionConfigExtras

__all__ = ["CheckpointConfig", "CheckpointingMode", "ExecutionConfig",
           "ExternalizedCheckpointCleanup", "ExternalizedCheckpointRetention"]

log = logging.getLogger("pyspark_datastream")

_INTERVAL = "execution.checkpointing.interval"
_MODE = "execution.checkpointing.mode"
_RETENTION = "execution.checkpointing.externalized-checkpoint-retention"
_DIR = "execution.checkpointing.dir"
_JOB_PARAMETERS = "pipeline.global-job-parameters"


class CheckpointingMode(enum.Enum):
    """Flink's checkpointing guarantee. Both run exactly-once here: a micro-batch's state
    and sink output commit together, so AT_LEAST_ONCE is accepted and gives more."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to a job's checkpoint when the job is cancelled. Only
    RETAIN_ON_CANCELLATION runs here: the checkpoint stays under the job's folder."""

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


#: PyFlink 1.x's name of :class:`ExternalizedCheckpointRetention`
ExternalizedCheckpointCleanup = ExternalizedCheckpointRetention


def _millis(what: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigurationError(f"{what} must be an int of milliseconds >= {low}, got {value!r}")
    return value


class CheckpointConfig(CheckpointConfigExtras):
    """PyFlink's checkpoint settings, kept in the job's configuration
    (``execution.checkpointing.*``). Obtained from ``env.get_checkpoint_config()``; not
    constructed directly.
    """

    DEFAULT_MODE = CheckpointingMode.EXACTLY_ONCE
    DEFAULT_TIMEOUT = 10 * 60 * 1000
    DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS = 0
    DEFAULT_MAX_CONCURRENT_CHECKPOINTS = 1

    def __init__(self, configuration: Configuration) -> None:
        self._config = configuration

    def is_checkpointing_enabled(self) -> bool:
        """Whether a checkpoint interval is set.

        Returns:
            True when ``execution.checkpointing.interval`` is set.
        """
        return self._config.contains_key(_INTERVAL)

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        """Set the STREAMING processing-time trigger interval (one checkpoint per micro-batch)
        used when ``execution.streaming.trigger`` is not set.

        Args:
            checkpoint_interval: milliseconds, at least 10 (as in Flink).

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not an int of at least 10.
        """
        _millis("set_checkpoint_interval: checkpoint_interval", checkpoint_interval, 10)
        self._config.set_string(_INTERVAL, str(checkpoint_interval))
        return self

    def get_checkpoint_interval(self) -> int:
        """The checkpoint interval in milliseconds.

        Returns:
            The interval, or -1 when checkpointing is not enabled (as in Flink).
        """
        raw = self._config.get_string(_INTERVAL)
        return -1 if raw is None else parse_duration_ms(_INTERVAL, raw)

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        """Set the guarantee; both modes run exactly-once here.

        Args:
            checkpointing_mode: a :class:`CheckpointingMode`.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not a CheckpointingMode.
        """
        if not isinstance(checkpointing_mode, CheckpointingMode):
            raise ConfigurationError(
                f"set_checkpointing_mode needs a CheckpointingMode, got {checkpointing_mode!r}")
        if checkpointing_mode is CheckpointingMode.AT_LEAST_ONCE:
            log.info("CheckpointingMode.AT_LEAST_ONCE runs exactly-once: a micro-batch's state "
                     "and sink output commit together")
        self._config.set_string(_MODE, checkpointing_mode.name)
        return self

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """The configured guarantee (default EXACTLY_ONCE).

        Returns:
            A :class:`CheckpointingMode`.
        """
        return CheckpointingMode[(self._config.get_string(_MODE) or "EXACTLY_ONCE").upper()]

    def set_externalized_checkpoint_retention(
            self, retention_mode: ExternalizedCheckpointRetention) -> CheckpointConfig:
        """Keep the checkpoint when the job is cancelled: the only behaviour here.

        Args:
            retention_mode: ``ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION``.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: any other value (the checkpoint is always kept).
        """
        if not isinstance(retention_mode, ExternalizedCheckpointRetention):
            raise ConfigurationError(
                f"set_externalized_checkpoint_retention needs an ExternalizedCheckpointRetention,"
                f" got {retention_mode!r}")
        self._config.set_string(_RETENTION, retention_mode.name)
        return self

    def enable_externalized_checkpoints(
            self, cleanup_mode: ExternalizedCheckpointRetention) -> CheckpointConfig:
        """PyFlink 1.x's name of :meth:`set_externalized_checkpoint_retention`.

        Args:
            cleanup_mode: ``RETAIN_ON_CANCELLATION``.

        Returns:
            This CheckpointConfig.
        """
        return self.set_externalized_checkpoint_retention(cleanup_mode)

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        """What happens to the checkpoint on cancellation: RETAIN_ON_CANCELLATION.

        Returns:
            ``ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION``.
        """
        return ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION

    def is_externalized_checkpoints_enabled(self) -> bool:
        """Checkpoints are files under the checkpoint root: always True.

        Returns:
            True.
        """
        return True

    def _no_effect(self, key: str, value: Any) -> CheckpointConfig:
        self._config.set_string(key, str(value))  # logs the one warning naming the key
        return self

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int
                                          ) -> CheckpointConfig:
        """Kept, no effect (one warning): the next micro-batch starts at the next trigger tick.

        Args:
            min_pause_between_checkpoints: milliseconds >= 0.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not an int >= 0.
        """
        value = _millis("set_min_pause_between_checkpoints", min_pause_between_checkpoints)
        return self._no_effect("execution.checkpointing.min-pause", value)

    def get_min_pause_between_checkpoints(self) -> int:
        """The value given to :meth:`set_min_pause_between_checkpoints` (default 0).

        Returns:
            Milliseconds.
        """
        return self._config.get_integer("execution.checkpointing.min-pause", 0) or 0

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        """Kept, no effect (one warning): a micro-batch runs until it commits or fails.

        Args:
            checkpoint_timeout: milliseconds >= 1.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not an int >= 1.
        """
        value = _millis("set_checkpoint_timeout", checkpoint_timeout, 1)
        return self._no_effect("execution.checkpointing.timeout", value)

    def get_checkpoint_timeout(self) -> int:
        """The value given to :meth:`set_checkpoint_timeout` (default 10 minutes).

        Returns:
            Milliseconds.
        """
        return self._config.get_integer("execution.checkpointing.timeout",
                                        self.DEFAULT_TIMEOUT) or self.DEFAULT_TIMEOUT

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        """Kept, no effect (one warning): a query runs one micro-batch at a time, which is
        what 1 (Flink's default) means.

        Args:
            max_concurrent_checkpoints: an int >= 1.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not an int >= 1.
        """
        value = _millis("set_max_concurrent_checkpoints", max_concurrent_checkpoints, 1)
        return self._no_effect("execution.checkpointing.max-concurrent-checkpoints", value)

    def get_max_concurrent_checkpoints(self) -> int:
        """The value given to :meth:`set_max_concurrent_checkpoints` (default 1).

        Returns:
            The count.
        """
        key = "execution.checkpointing.max-concurrent-checkpoints"
        return self._config.get_integer(key, 1) or 1

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        """Set the checkpoint root (``execution.checkpointing.dir``); each job keeps its
        checkpoint under ``<root>/<job name>``.

        Args:
            checkpoint_path: a local, ``file:``, ``s3a:`` or other Hadoop path.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: not a non-empty str.
        """
        if not isinstance(checkpoint_path, str) or not checkpoint_path.strip():
            raise ConfigurationError(
                f"set_checkpoint_storage_dir needs a non-empty path, got {checkpoint_path!r}")
        self._config.set_string(_DIR, checkpoint_path)
        return self

    def set_checkpoint_storage(self, storage: Any) -> CheckpointConfig:
        """Set the checkpoint root from a path or a storage object with
        ``get_checkpoint_path()`` (as PyFlink's ``FileSystemCheckpointStorage``).

        Args:
            storage: a path str, or an object whose ``get_checkpoint_path()`` gives one.

        Returns:
            This CheckpointConfig.

        Raises:
            ConfigurationError: neither (e.g. a JobManager in-memory storage: checkpoints
                here are always files).
        """
        get_path = getattr(storage, "get_checkpoint_path", None)
        path = get_path() if callable(get_path) else storage
        if not isinstance(path, str):
            raise ConfigurationError(
                f"set_checkpoint_storage needs a path or a storage with get_checkpoint_path(); "
                f"checkpoints here are files under a directory, got {storage!r:.80}")
        return self.set_checkpoint_storage_dir(path)

    def get_checkpoint_storage_dir(self) -> Optional[str]:
        """The configured checkpoint root.

        Returns:
            ``execution.checkpointing.dir``, or None (Spark's checkpoint location is used).
        """
        return self._config.get_string(_DIR)


class ExecutionConfig(Configuration, ExecutionConfigExtras):
    """The job's :class:`Configuration` (``set_string``, ``get_string``, ...) with PyFlink's
    ``ExecutionConfig`` methods on top. Obtained from ``env.get_config()``; not constructed
    directly.
    """

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        """Set ``parallelism.default`` (Spark partitions per keyed operator).

        Args:
            parallelism: an int >= 1.

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not an int >= 1.
        """
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigurationError(f"parallelism must be a positive int, got {parallelism!r}")
        self.set_integer("parallelism.default", parallelism)
        return self

    def get_parallelism(self) -> int:
        """The configured parallelism.

        Returns:
            ``parallelism.default``, or -1 when unset (Flink's "use the default").
        """
        return self.get_integer("parallelism.default", -1) or -1

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        """Set ``pipeline.max-parallelism`` (number of key groups).

        Args:
            max_parallelism: 1..32768.

        Returns:
            This ExecutionConfig.

        Raises:
            KeyGroupError: out of range.
        """
        self.set_integer("pipeline.max-parallelism", check_max_parallelism(max_parallelism))
        return self

    def get_max_parallelism(self) -> int:
        """The number of key groups.

        Returns:
            ``pipeline.max-parallelism`` (default 128).
        """
        return self.get_integer("pipeline.max-parallelism", 128) or 128

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Kept, no effect (one warning): watermarks advance once per micro-batch.

        Args:
            interval: milliseconds >= 0.

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not an int >= 0.
        """
        self.set_string("pipeline.auto-watermark-interval",
                        f"{_millis('set_auto_watermark_interval', interval)} ms")
        return self

    def get_auto_watermark_interval(self) -> int:
        """The value given to :meth:`set_auto_watermark_interval` (Flink's default 200).

        Returns:
            Milliseconds.
        """
        raw = self.get_string("pipeline.auto-watermark-interval")
        return 200 if raw is None else parse_duration_ms("pipeline.auto-watermark-interval", raw)

    def set_global_job_parameters(self, global_job_parameters_dict: Mapping[str, Any]
                                  ) -> ExecutionConfig:
        """Set job parameters, read in functions with
        ``get_runtime_context().get_job_parameter(key)``.

        Args:
            global_job_parameters_dict: parameter names and values (kept as strings).

        Returns:
            This ExecutionConfig.

        Raises:
            ConfigurationError: not a mapping of str keys.
        """
        if not isinstance(global_job_parameters_dict, Mapping) or \
                not all(isinstance(k, str) for k in global_job_parameters_dict):
            raise ConfigurationError(
                f"set_global_job_parameters needs a dict of str keys, "
                f"got {global_job_parameters_dict!r:.80}")
        params = {k: str(v) for k, v in global_job_parameters_dict.items()}
        for key in self.get_global_job_parameters():
            self.remove_config(key)
        for key, value in params.items():
            self.set_string(key, value)
        self.set_string(_JOB_PARAMETERS, ",".join(sorted(params)))
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        """The parameters given to :meth:`set_global_job_parameters`.

        Returns:
            Their names and values.
        """
        names = (self.get_string(_JOB_PARAMETERS) or "").split(",")
        return {n: self.get_string(n) or "" for n in names if n and self.contains_key(n)}

    def enable_object_reuse(self) -> ExecutionConfig:
        """Kept, no effect (one warning): records are Python objects.

        Returns:
            This ExecutionConfig.
        """
        self.set_string("pipeline.object-reuse", "true")
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        """Flink's default, what runs here.

        Returns:
            This ExecutionConfig.
        """
        self.remove_config("pipeline.object-reuse")
        return self

    def is_object_reuse_enabled(self) -> bool:
        """Whether :meth:`enable_object_reuse` was called.

        Returns:
            The flag.
        """
        return bool(self.get_boolean("pipeline.object-reuse", False))
