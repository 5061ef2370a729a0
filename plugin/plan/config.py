"""Configuration: Flink-style string keys, typed accessors, and the option table.

Every option the product reads is declared once in :data:`OPTIONS` (key, default,
description); the configuration reference (docs/configuration.md) is generated from it.
Mode-dependent defaults (FLIP-134) are resolved by :func:`resolve`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from ..operators.modes import (
    MODE_KEY,
    PROCESSING_TIME_ALLOW_VALUES,
    PROCESSING_TIME_END_OF_INPUT_VALUES,
    RuntimeExecutionMode,
    RuntimeMode,
)
from ..state_store.exceptions import ConfigurationError
from .config_extras import ConfigurationExtras
from .config_values import (
    check_boolean,
    check_checkpoint_interval,
    check_integer,
    check_path,
    check_retention,
    check_state_backend,
    check_trigger,
    parse_boolean,
    parse_duration_ms,
    parse_trigger,
)

__all__ = [
    "Configuration",
    "ConfigOption",
    "OPTIONS",
    "REMOVED_OPTIONS",
    "RuntimeExecutionMode",
    "RuntimeMode",
    "QUERY_MAPPING",
    "QUERY_MAPPINGS",
    "PER_STAGE",
    "ONE_QUERY",
    "AUTO_MAPPING",
    "check_not_removed",
    "configured_runtime_mode",
    "parse_boolean",
    "parse_duration_ms",
    "parse_trigger",
    "resolve",
    "resolve_boolean",
    "streaming_trigger",
    "validate",
]

log = logging.getLogger("pyspark_datastream")

#: a typed getter's result (int or float)
_N = TypeVar("_N", int, float)


@dataclass(frozen=True)
class ConfigOption:
    """One configuration key with its default(s), meaning and value check."""

    key: str
    default: Any
    description: str
    batch_default: Any = None
    streaming_default: Any = None
    choices: tuple[str, ...] | None = None
    #: ``check(key, raw)`` raises ConfigurationError for a value the option cannot take
    check: Optional[Callable[[str, str], Any]] = None
    #: ``check`` runs when the value is set too, and its result is the value kept
    check_on_set: bool = False
    #: the default as the configuration reference states it, where ``default`` is None
    #: because another setting (the session's) supplies it
    default_doc: Optional[str] = None
    #: a key whose configured value :func:`resolve` takes when this one is not set (before
    #: the default): the key that decided this option before it had its own
    fallback: Optional[str] = None

    def default_for(self, mode: RuntimeMode | None) -> Any:
        if mode is RuntimeMode.BATCH and self.batch_default is not None:
            return self.batch_default
        if mode is RuntimeMode.STREAMING and self.streaming_default is not None:
            return self.streaming_default
        return self.default


#: The STREAMING query-mapping option and its values (``translation/streaming/one_query.py``)
QUERY_MAPPING = "execution.streaming.query-mapping"
PER_STAGE = "per-stage"
ONE_QUERY = "one-query"
AUTO_MAPPING = "auto"
QUERY_MAPPINGS = (AUTO_MAPPING, PER_STAGE, ONE_QUERY)

_BATCH_DEFAULTS = RuntimeMode.BATCH.processing_time_defaults
_STREAMING_DEFAULTS = RuntimeMode.STREAMING.processing_time_defaults

OPTIONS: dict[str, ConfigOption] = {
    o.key: o
    for o in [
        ConfigOption(
            MODE_KEY, RuntimeExecutionMode.STREAMING.value,
            "BATCH, STREAMING or AUTOMATIC (BATCH iff every source is bounded).",
            choices=tuple(m.value for m in RuntimeExecutionMode),
        ),
        ConfigOption("parallelism.default", None,
                     "Parallel instances (subtasks) of every operator: BATCH's Spark partitions "
                     "per keyed stage; a STREAMING keyed stage's key-group ranges.",
                     default_doc="session's `spark.sql.shuffle.partitions`",
                     check=lambda k, v: check_integer(k, v, 1)),
        ConfigOption("pipeline.max-parallelism", 128,
                     "Number of key groups (1..32768).",
                     check=lambda k, v: check_integer(k, v, 1, 32768)),
        ConfigOption("state.backend.type", "hashmap",
                     "`hashmap` (alias `heap`), `rocksdb`, or the `\"module:attr\"` path of "
                     "another backend's registration: backend of hash-based BATCH and of "
                     "STREAMING.",
                     check=check_state_backend, check_on_set=True),
        ConfigOption("execution.sorted-inputs.enabled", "true",
                     "BATCH: sort keyed inputs, single-key backend (FLIP-140); false = hash-based "
                     "with `state.backend.type`.", check=check_boolean),
        ConfigOption("execution.batch.pre-aggregation.enabled", "true",
                     "BATCH: combine reduce/sum/min/max inputs per partition before the shuffle "
                     "(reduce functions must be associative and commutative, as for Flink's "
                     "combinable reduce; the earliest record by event time stays first; a reduce "
                     "function with its own `open()` or `close()` is never pre-combined: it runs "
                     "only in the keyed operator, opened once per parallel instance as in Flink); "
                     "a reduce over a typed stream keyed by a field instead counts identical "
                     "records before the sort (exact for any reduce function).",
                     check=check_boolean),
        ConfigOption("execution.batch.native-pushdown.enabled", "true",
                     "BATCH: traceable lambdas (field access, constants, tuples, `+ - *`) and "
                     "built-in `sum/min/max/min_by/max_by` run as native Spark "
                     "expressions/aggregations; identical results; `false` runs them per record "
                     "in Python.", check=check_boolean),
        ConfigOption("execution.streaming.native-pushdown.enabled", "true",
                     "STREAMING: traceable lambdas run as native Spark expressions, Spark "
                     "computes key groups for a key selector reading one field, and a summing "
                     "`reduce` (traced lambda or `sum(i)`) runs on columns (see the STREAMING "
                     "mapping); identical results; `false` runs them per record in Python.",
                     default_doc="the value of `execution.batch.native-pushdown.enabled` when "
                                 "that is set, else true",
                     check=check_boolean, fallback="execution.batch.native-pushdown.enabled"),
        ConfigOption(QUERY_MAPPING, AUTO_MAPPING,
                     "STREAMING: `per-stage` runs each keyed stage as its own Spark query "
                     "(`applyInPandasWithState`), staged through files; `one-query` (Spark 4.0+) "
                     "runs the whole job as one query, each keyed stage a "
                     "`transformWithStateInPandas` with the watermark handed on inside each "
                     "micro-batch (graphs it does not run yet are refused when the job is "
                     "built); `auto` runs one query where per-stage would run several and the "
                     "Spark line, session and graph allow it, else per-stage, and keeps the "
                     "mapping of the job's checkpoint. A checkpoint resumes only under the "
                     "mapping that wrote it.",
                     choices=QUERY_MAPPINGS),
        ConfigOption("pipeline.processing-time.allow", None,
                     "ALLOW, IGNORE or FAIL use of processing time.",
                     batch_default=_BATCH_DEFAULTS["processing_time_allow"],
                     streaming_default=_STREAMING_DEFAULTS["processing_time_allow"],
                     choices=PROCESSING_TIME_ALLOW_VALUES),
        ConfigOption("pipeline.processing-time.end-of-input", None,
                     "Fire or drop pending processing-time timers at end of input.",
                     batch_default=_BATCH_DEFAULTS["processing_time_end_of_input"],
                     streaming_default=_STREAMING_DEFAULTS["processing_time_end_of_input"],
                     choices=PROCESSING_TIME_END_OF_INPUT_VALUES),
        ConfigOption("execution.checkpointing.dir", None,
                     "STREAMING: checkpoint root; each job keeps everything under `<root>/<job "
                     "name>` (see *STREAMING jobs*). BATCH keeps no checkpoint, but stages a "
                     "streaming DataFrame source's available-now read in a `_batch-read-*` "
                     "folder there while the job runs (without a root: the driver's "
                     "temporary folder).",
                     default_doc="Spark's `spark.sql.streaming.checkpointLocation`", check=check_path),
        ConfigOption("s3.endpoint", None,
                     "S3 endpoint the Python side uses for the checkpoint root, the savepoints the "
                     "job writes and restores, and its Delta sinks (see *Storage*).",
                     default_doc="the session's `fs.s3a.endpoint`", check=check_path),
        ConfigOption("s3.access-key", None,
                     "S3 access key of the Python side.",
                     default_doc="the session's `fs.s3a.access.key`, else AWS's default "
                                 "credential chain", check=check_path),
        ConfigOption("s3.secret-key", None,
                     "S3 secret key of the Python side.",
                     default_doc="the session's `fs.s3a.secret.key`",
                     check=check_path),
        ConfigOption("s3.session-token", None,
                     "S3 session token of the Python side.",
                     default_doc="the session's `fs.s3a.session.token`",
                     check=check_path),
        ConfigOption("s3.path.style.access", None,
                     "`true`: path-style S3 requests (MinIO, moto, most S3-compatible servers).",
                     default_doc="the session's `fs.s3a.path.style.access`",
                     check=check_boolean),
        ConfigOption("s3.connection.ssl.enabled", None,
                     "`false`: plain HTTP to the S3 endpoint.",
                     default_doc="the session's `fs.s3a.connection.ssl.enabled` (true)",
                     check=check_boolean),
        ConfigOption("s3.endpoint.region", None,
                     "S3 region of the Python side.",
                     default_doc="the session's `fs.s3a.endpoint.region`",
                     check=check_path),
        ConfigOption("execution.streaming.trigger", "available-now",
                     "STREAMING trigger: `available-now`, `once` or `processing-time=<duration>`.",
                     default_doc="`processing-time=<execution.checkpointing.interval>` when "
                                 "that is set and a source is unbounded, else available-now",
                     check=check_trigger),
        ConfigOption("execution.checkpointing.interval", None,
                     "STREAMING: a Flink duration (`5000`, `10 s`, `1 min`; at least 10 ms), "
                     "the processing-time trigger interval of a job over unbounded sources "
                     "when `execution.streaming.trigger` is not set (each micro-batch commits "
                     "a checkpoint; a job over bounded sources runs available-now to its end); "
                     "`env.enable_checkpointing(ms)` sets it.",
                     check=check_checkpoint_interval, check_on_set=True),
        ConfigOption("execution.checkpointing.mode", "EXACTLY_ONCE",
                     "EXACTLY_ONCE or AT_LEAST_ONCE; both run exactly-once (a micro-batch's "
                     "state and sink output commit together).",
                     choices=("EXACTLY_ONCE", "AT_LEAST_ONCE")),
        ConfigOption("execution.checkpointing.externalized-checkpoint-retention",
                     "RETAIN_ON_CANCELLATION",
                     "Only RETAIN_ON_CANCELLATION: a STREAMING job's checkpoint stays under "
                     "its folder when the job stops or is cancelled.",
                     check=check_retention, check_on_set=True),
        ConfigOption("execution.savepoint.path", None,
                     "Restore keyed state from this savepoint (a Delta table).",
                     check=check_path),
        ConfigOption("execution.savepoint.ignore-unclaimed-state", "false",
                     "Allow savepoint state no operator claims.",
                     check=check_boolean),
        ConfigOption("execution.savepoint.version", None,
                     "Delta version of the savepoint to restore.",
                     default_doc="latest",
                     check=lambda k, v: check_integer(k, v, 0)),
    ]
}

#: keys the product no longer reads, with what to do instead: a job that sets one is refused
#: rather than run with the setting silently ignored
REMOVED_OPTIONS: dict[str, str] = {
    "execution.sorted-shuffles.enabled": "use execution.sorted-inputs.enabled",
    "execution.streaming.key-group-ranges.enabled":
        "STREAMING keyed operators always place key groups on Spark partitions in contiguous "
        "ranges; a checkpoint written with false cannot be resumed, restore a savepoint of "
        "its job into a new one instead",
    "execution.streaming.timeout-free-operators.enabled":
        "STREAMING keyed operators that nothing can time out always run without a GroupState "
        "timeout; a checkpoint written with false cannot be resumed, restore a savepoint of "
        "its job into a new one instead",
}

#: Flink keys this product reads nowhere, with why: setting one logs one warning naming it
NOT_HONOURED: dict[str, str] = {
    "execution.checkpointing.min-pause":
        "the next micro-batch starts at the next trigger tick",
    "execution.checkpointing.timeout": "a micro-batch runs until it commits or fails",
    "execution.checkpointing.max-concurrent-checkpoints":
        "a Spark query runs one micro-batch (one checkpoint) at a time",
    "execution.checkpointing.tolerable-failed-checkpoints":
        "a failed micro-batch fails the query",
    "execution.checkpointing.unaligned.enabled":
        "a micro-batch's state and output commit together, there are no barriers",
    "pipeline.auto-watermark-interval":
        "watermarks advance once per micro-batch (STREAMING) or per key at end of input "
        "(BATCH)",
    "pipeline.object-reuse": "records are Python objects passed to one function at a time",
    "pipeline.operator-chaining.enabled": "Spark fuses the stages of a pass itself",
    "execution.buffer-timeout.interval":
        "Spark moves records between stages per partition or micro-batch",
    "execution.checkpointing.unaligned.forced":
        "a micro-batch's state and output commit together, there are no barriers",
    "execution.checkpointing.aligned-checkpoint-timeout":
        "a micro-batch's state and output commit together, there are no barriers",
    "execution.checkpointing.snapshot-compression":
        "Spark compresses its state store and checkpoint files itself",
    "execution.checkpointing.savepoint-dir":
        "stop_with_savepoint writes to the savepoint_directory it is given",
    "pipeline.closure-cleaner-level": "Python functions are pickled as written",
    "pipeline.force-kryo": "Python records are pickled or typed (Types.*), as in PyFlink",
    "pipeline.force-avro": "Python records are pickled or typed (Types.*), as in PyFlink",
    "pipeline.generic-types": "Python records are pickled or typed (Types.*), as in PyFlink",
    "metrics.latency.interval":
        "Flink's latency markers; Spark reports each micro-batch's progress",
    "task.cancellation.interval": "Spark cancels its tasks itself",
    "task.cancellation.timeout": "Spark kills its tasks itself",
    "state.backend.rocksdb.checkpoint.transfer.thread.num":
        "Spark uploads and downloads the state store's files itself",
    "restart-strategy.type":
        "a failed Spark task is retried by Spark (spark.task.maxFailures, which "
        "env.set_restart_strategy(RestartStrategies...) sets); a failed STREAMING job "
        "resumes from its checkpoint when run again",
}

#: key prefixes of Flink's own options: a key under one that this product neither reads
#: (:data:`OPTIONS`), handles in the environment, nor lists in :data:`NOT_HONOURED` also
#: logs one warning
FLINK_PREFIXES = ("execution.", "pipeline.", "state.", "restart-strategy", "python.",
                  "taskmanager.", "jobmanager.", "parallelism.", "rest.", "table.",
                  "high-availability", "metrics.", "heartbeat.", "cluster.", "s3.", "fs.")

#: keys the environment applies when it creates its Spark session (environment.py)
ENVIRONMENT_KEYS = ("pipeline.jars", "pipeline.classpaths", "python.executable",
                    "pipeline.global-job-parameters")

def check_not_removed(key: str) -> None:
    """Refuse a key the product no longer reads.

    Args:
        key: a configuration key.

    Raises:
        ConfigurationError: ``key`` is in :data:`REMOVED_OPTIONS` (names the key and what to
            do instead).
    """
    if key in REMOVED_OPTIONS:
        raise ConfigurationError(
            f"configuration key {key} was removed: {REMOVED_OPTIONS[key]}. "
            f"Remove it from the job's configuration")


def not_honoured(key: str) -> Optional[str]:
    """Why ``key`` has no effect here, or None for a key this product reads or does not know.

    Args:
        key: a configuration key.

    Returns:
        The reason for a Flink key no part of this product reads; None otherwise.
    """
    if key in OPTIONS or key in ENVIRONMENT_KEYS or key in REMOVED_OPTIONS:
        return None
    if key in NOT_HONOURED:
        return NOT_HONOURED[key]
    if key.startswith(FLINK_PREFIXES):
        return "no part of pyspark-datastream reads it (see the configuration reference)"
    return None


class Configuration(ConfigurationExtras):
    """String-keyed configuration with PyFlink's typed accessors.

    A Flink key this product does not read (:func:`not_honoured`) is kept and logs one
    warning naming it, the first time it is set on this configuration.

    Args:
        other: A Configuration to copy, a mapping of keys to values (each stored as
            ``str(value)``), or None for an empty configuration.
    """

    def __init__(self, other: Configuration | Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, str] = {}
        self._warned: set[str] = set()
        if isinstance(other, Configuration):
            self._data.update(other._data)
        elif other is not None:
            for k, v in other.items():
                self.set_string(k, str(v))

    # -- setters -----------------------------------------------------------
    def set_string(self, key: str, value: str) -> Configuration:
        """Set ``key`` to a string value (stored as a string).

        Args:
            key: The configuration key.
            value: The value.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: The key was removed from the product, or the value is not one of
                the key's choices or fails its check.
        """
        check_not_removed(key)
        option = OPTIONS.get(key)
        if option is not None and option.choices is not None:
            norm = str(value).strip()
            upper = norm.upper() if option.choices[0].isupper() else norm.lower()
            if upper not in option.choices:
                raise ConfigurationError(
                    f"{key} must be one of {', '.join(option.choices)}, got {value!r}"
                )
            value = upper
        elif option is not None and option.check_on_set and option.check is not None:
            value = option.check(key, str(value))
        reason = not_honoured(key)
        if reason is not None and key not in self._warned:
            self._warned.add(key)
            log.warning("configuration key %s=%r has no effect: %s", key, value, reason)
        self._data[key] = str(value)
        return self

    @staticmethod
    def from_dict(map: Mapping[str, Any]) -> Configuration:  # noqa: A002 (PyFlink's name)
        """A configuration of the given keys and values (PyFlink's ``Configuration.from_dict``).

        Args:
            map: keys and values (values are kept as strings).

        Returns:
            A new Configuration.

        Raises:
            ConfigurationError: a key was removed, or a value is not one its option takes.
        """
        return Configuration(map)

    def set_integer(self, key: str, value: int) -> Configuration:
        """Set ``key`` to an int (stored as a string, ``int(value)``).

        Args:
            key: The configuration key.
            value: The int.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: As for ``set_string``.
        """
        return self.set_string(key, str(int(value)))

    def set_boolean(self, key: str, value: bool) -> Configuration:
        """Set ``key`` to a boolean (stored as a string: ``true``/``false``).

        Args:
            key: The configuration key.
            value: The bool.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: As for ``set_string``.
        """
        return self.set_string(key, "true" if value else "false")

    def set_float(self, key: str, value: float) -> Configuration:
        """Set ``key`` to a float (stored as a string, ``repr(float(value))``).

        Args:
            key: The configuration key.
            value: The float.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: As for ``set_string``.
        """
        return self.set_string(key, repr(float(value)))

    # -- getters -----------------------------------------------------------
    def get_string(self, key: str, default_value: str | None = None) -> str | None:
        """The value of ``key`` as a string, or ``default_value`` when unset.

        Args:
            key: The configuration key.
            default_value: What to return when the key is unset.

        Returns:
            The value, or ``default_value``.
        """
        return self._data.get(key, default_value)

    def get_integer(self, key: str, default_value: int | None = None) -> int | None:
        """The value of ``key`` as an int, or ``default_value`` when unset.

        Args:
            key: The configuration key.
            default_value: What to return when the key is unset.

        Returns:
            The value as an int, or ``default_value``.

        Raises:
            ConfigurationError: The stored value is not an integer.
        """
        return self._get(key, default_value, int, "an integer")

    def get_boolean(self, key: str, default_value: bool | None = None) -> bool | None:
        """The value of ``key`` as a bool, or ``default_value`` when unset.

        Args:
            key: The configuration key.
            default_value: What to return when the key is unset.

        Returns:
            The value as a bool, or ``default_value``.

        Raises:
            ConfigurationError: The stored value is not true or false.
        """
        raw = self.get_string(key)
        return default_value if raw is None else parse_boolean(key, raw)

    def get_float(self, key: str, default_value: float | None = None) -> float | None:
        """The value of ``key`` as a float, or ``default_value`` when unset.

        Args:
            key: The configuration key.
            default_value: What to return when the key is unset.

        Returns:
            The value as a float, or ``default_value``.

        Raises:
            ConfigurationError: The stored value is not a number.
        """
        return self._get(key, default_value, float, "a number")

    def _get(self, key: str, default_value: _N | None, parse: Callable[[str], _N],
             what: str) -> _N | None:
        raw = self.get_string(key)
        if raw is None:
            return default_value
        try:
            return parse(raw)
        except ValueError as exc:
            raise ConfigurationError(f"{key} must be {what}, got {raw!r}") from exc

    def contains_key(self, key: str) -> bool:
        """Whether ``key`` is set.

        Args:
            key: The configuration key.

        Returns:
            True when set.
        """
        return key in self._data

    def remove_config(self, key: str) -> bool:
        """Unset ``key``.

        Args:
            key: The configuration key.

        Returns:
            True when it was set.
        """
        return self._data.pop(key, None) is not None

    def key_set(self) -> set[str]:
        """The keys that are set.

        Returns:
            A new set of the keys.
        """
        return set(self._data)

    def to_dict(self) -> dict[str, str]:
        """Every key and its string value.

        Returns:
            A new dict.
        """
        return dict(self._data)

    def add_all(self, other: Configuration, prefix: Optional[str] = None) -> Configuration:
        """Copy every entry of ``other`` into this configuration (PyFlink's ``add_all``).

        Args:
            other: the configuration to copy from.
            prefix: prepended to each copied key (None: keys as they are).

        Returns:
            This configuration.

        Raises:
            ConfigurationError: ``other`` is no Configuration or ``prefix`` no str.
        """
        if not isinstance(other, Configuration):
            raise ConfigurationError(f"add_all needs a Configuration, got {other!r:.80}")
        if prefix is None:
            self._data.update(other._data)
            return self
        if not isinstance(prefix, str):
            raise ConfigurationError(f"add_all prefix must be a str, got {prefix!r}")
        for key, value in other._data.items():
            self.set_string(prefix + key, value)
        return self

    def __repr__(self) -> str:
        return f"Configuration({self._data!r})"


def validate(config: Configuration) -> None:
    """Check every configured option's value (ranges, booleans, the trigger, paths): a job
    is refused with the key, the allowed values and the value before anything runs or any
    directory is created. Keys the product does not know are left alone (as Flink does); keys
    it removed (:data:`REMOVED_OPTIONS`) are refused."""
    for key, raw in config.to_dict().items():
        check_not_removed(key)
        option = OPTIONS.get(key)
        if option is None:
            continue
        if option.choices is not None:
            norm = raw.strip()
            if (norm.upper() if option.choices[0].isupper() else norm.lower()) not in option.choices:
                raise ConfigurationError(
                    f"{key} must be one of {', '.join(option.choices)}, got {raw!r}")
        if option.check is not None:
            option.check(key, raw)


def configured_runtime_mode(config: Configuration) -> Optional[RuntimeMode]:
    """``execution.runtime-mode`` of ``config``: BATCH or STREAMING, None for AUTOMATIC (the
    job's sources decide).

    Args:
        config: the job's configuration (unset: STREAMING, Flink's default).

    Returns:
        The configured mode, or None when it is AUTOMATIC.

    Raises:
        ConfigurationError: the value is none of BATCH, STREAMING, AUTOMATIC (any case).
    """
    raw = config.get_string(MODE_KEY)
    value = OPTIONS[MODE_KEY].default if raw is None else raw.strip().upper()
    try:
        return RuntimeExecutionMode(value).decided()
    except ValueError:
        raise ConfigurationError(
            f"{MODE_KEY} must be one of "
            f"{', '.join(m.value for m in RuntimeExecutionMode)}, got {raw!r}") from None


def streaming_trigger(config: Configuration, mode: RuntimeMode | None,
                      bounded: bool = False) -> tuple[str, Optional[str]]:
    """The STREAMING trigger of a job: ``execution.streaming.trigger``, else (unbounded
    sources) a processing-time trigger every ``execution.checkpointing.interval``, else
    available-now. A job over bounded sources runs available-now to its end, as Flink's
    bounded job finishes whatever its checkpoint interval.

    Args:
        config: the job's configuration.
        mode: the job's mode (for the option default).
        bounded: every source of the job is bounded.

    Returns:
        ``(kind, interval)`` as :func:`parse_trigger` gives it.

    Raises:
        ConfigurationError: either value is malformed.
    """
    interval = config.get_string("execution.checkpointing.interval")
    if config.get_string("execution.streaming.trigger") is None and interval is not None \
            and not bounded:
        ms = parse_duration_ms("execution.checkpointing.interval", interval)
        return parse_trigger(f"processing-time={ms} milliseconds")
    if interval is not None and not bounded:
        log.warning("execution.checkpointing.interval=%s has no effect: "
                    "execution.streaming.trigger is set", interval)
    return parse_trigger(resolve(config, "execution.streaming.trigger", mode))


def resolve(config: Configuration, key: str, mode: RuntimeMode | None) -> Any:
    """Value of ``key``: the configured one, else its fallback key's configured one
    (:attr:`ConfigOption.fallback`), else the option's default for ``mode``."""
    raw = config.get_string(key)
    if raw is not None:
        return raw
    option = OPTIONS.get(key)
    if option is None:
        return None
    if option.fallback is not None and config.get_string(option.fallback) is not None:
        return config.get_string(option.fallback)
    return option.default_for(mode)


def resolve_boolean(config: Configuration, key: str, mode: RuntimeMode | None) -> bool:
    """The value of the boolean option ``key`` (:func:`resolve`, then :func:`parse_boolean`).

    Args:
        config: the job's configuration.
        key: a boolean option.
        mode: the job's mode (for the option's default).

    Returns:
        The bool.

    Raises:
        ConfigurationError: the configured value is not true or false.
    """
    return parse_boolean(key, resolve(config, key, mode))
