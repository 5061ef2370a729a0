"""``StreamExecutionEnvironment``: where a program is defined and run (PyFlink names)."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional, Union

from ..plan.config import (
    Configuration,
    RuntimeExecutionMode,
    RuntimeMode,
    configured_runtime_mode,
    validate,
)
from ..plan.graph import SinkNode, SourceNode, Transformation, reachable
from ..plan.job import JobPlan
from ..results import CloseableIterator, JobExecutionResult
from ..state_store.backends import BackendChoice
from ..state_store.exceptions import ConfigurationError, GraphBuildError
from ..state_store.keygroups import check_max_parallelism
from .checkpointing import CheckpointConfig, CheckpointingMode, ExecutionConfig
from .environment_extras import EnvironmentExtras
from .environment_sources import EnvironmentSources, unbounded_in_batch
from .restart_strategies import local_master_with_attempts
from .session_resources import SessionResources
from .state_backends import StateBackend, backend_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..state_store.storage import Storage
    from ..translation.contract import Translator
    from .job_client import JobClient

__all__ = ["StreamExecutionEnvironment", "default_local_session"]

log = logging.getLogger("pyspark_datastream")


def default_local_session(session_conf: Optional[dict[str, str]] = None) -> SparkSession:
    """A local SparkSession sized for a laptop (used when none is active).

    Args:
        session_conf: Spark settings a new session must start with (``spark.jars``,
            ``spark.pyspark.python``; see ``add_jars``/``set_python_executable``).

    Returns:
        The active session, or a new local one.

    Raises:
        ConfigurationError: ``session_conf`` is given and a session is already active.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        if session_conf:
            raise ConfigurationError(
                f"{', '.join(sorted(session_conf))} can only be set when the Spark session "
                f"starts, and one is already active: configure them when that session is built")
        return active
    # Local Python workers must run this interpreter (the one with this package installed).
    python = (session_conf or {}).get("spark.pyspark.python")
    if python is not None:
        os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in (session_conf or {}).items():
        builder = builder.config(key, value)
    return (
        builder.master(local_master_with_attempts(
            os.environ.get("PYSPARK_DATASTREAM_MASTER", "local[2]"), session_conf or {}))
        .appName("pyspark-datastream")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .getOrCreate()
    )


class StreamExecutionEnvironment(SessionResources, EnvironmentSources, EnvironmentExtras):
    """Entry point of a DataStream program; usually made by :meth:`get_execution_environment`.

    Args:
        configuration: The job configuration (keys: the Configuration reference), or None.
        spark: The SparkSession to run on; None uses the active one, else creates a local one
            when first needed.
    """

    def __init__(self, configuration: Optional[Configuration] = None,
                 spark: Optional[SparkSession] = None) -> None:
        self._config = ExecutionConfig(configuration)
        self._spark = spark
        self._sinks: list[SinkNode] = []
        self._sources: list[SourceNode] = []
        self._state_backend: BackendChoice = backend_spec(
            self._config.get_string("state.backend.type", "hashmap") or "hashmap"
        )
        self._last_progress: list[dict[str, Any]] = []
        self._buffer_timeout = 100  # Flink's default; see set_buffer_timeout
        self._py_files: list[tuple[str, str]] = []  # shipped once the session exists
        self._started_with: dict[str, str] = {}  # the session settings this env started with

    @staticmethod
    def get_execution_environment(configuration: Optional[Configuration] = None,
                                  spark: Optional[SparkSession] = None) -> StreamExecutionEnvironment:
        """A new environment on ``spark``, the active SparkSession, or a local one.

        Args:
            configuration: The job configuration (keys: the Configuration reference), or None.
            spark: The SparkSession to run on; None uses the active one, else creates a local one
                when first needed.

        Returns:
            The environment.

        Example:
            >>> env = StreamExecutionEnvironment.get_execution_environment()
            >>> env.set_runtime_mode(RuntimeExecutionMode.BATCH).set_parallelism(4).get_parallelism()
            4
        """
        return StreamExecutionEnvironment(configuration, spark)

    # -- configuration ---------------------------------------------------------
    def get_config(self) -> ExecutionConfig:
        """The job's configuration: a :class:`Configuration` (``set_string``, ...) with
        PyFlink's ``ExecutionConfig`` methods (``set_auto_watermark_interval``,
        ``set_global_job_parameters``, ...).

        Returns:
            The environment's ExecutionConfig (changes apply to the next job).
        """
        return self._config

    def enable_checkpointing(self, interval: int, mode: Optional[CheckpointingMode] = None
                             ) -> StreamExecutionEnvironment:
        """Checkpoint every ``interval`` ms: a STREAMING job whose
        ``execution.streaming.trigger`` is not set runs a processing-time trigger of that
        interval, each micro-batch committing a checkpoint.

        Args:
            interval: milliseconds, at least 10 (as in Flink).
            mode: a :class:`CheckpointingMode`; AT_LEAST_ONCE is accepted and runs
                exactly-once.

        Returns:
            This environment.

        Raises:
            ConfigurationError: ``interval`` is no int >= 10 or ``mode`` no CheckpointingMode.
        """
        config = self.get_checkpoint_config().set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        """PyFlink's checkpoint settings over this environment's configuration.

        Returns:
            A :class:`CheckpointConfig` (see docs/porting.md for what each setting does).
        """
        return CheckpointConfig(self._config)

    def get_checkpoint_interval(self) -> int:
        """The checkpoint interval.

        Returns:
            Milliseconds, or -1 when checkpointing is not enabled.
        """
        return self.get_checkpoint_config().get_checkpoint_interval()

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        """Flink: run every operator in its own task. Spark fuses the stages of a pass
        itself: no effect (one warning).

        Returns:
            This environment.
        """
        self._config.set_string("pipeline.operator-chaining.enabled", "false")
        return self

    def is_chaining_enabled(self) -> bool:
        """Whether :meth:`disable_operator_chaining` was not called.

        Returns:
            The flag.
        """
        return bool(self._config.get_boolean("pipeline.operator-chaining.enabled", True))

    def configure(self, configuration: Configuration) -> StreamExecutionEnvironment:
        """Add every key of ``configuration`` to the environment's (PyFlink's ``configure``).

        Args:
            configuration: The keys to set; ``state.backend.type`` also selects the backend.

        Returns:
            This environment.

        Raises:
            ConfigurationError: ``state.backend.type`` names no registered backend.
        """
        self._config.add_all(configuration)
        if configuration.contains_key("state.backend.type"):
            self._state_backend = backend_spec(configuration.get_string("state.backend.type") or "")
        return self

    def set_runtime_mode(self, execution_mode: Union[RuntimeExecutionMode, str]
                         ) -> StreamExecutionEnvironment:
        """Set ``execution.runtime-mode``: BATCH, STREAMING or AUTOMATIC (by the sources' boundedness).

        Args:
            execution_mode: A ``RuntimeExecutionMode`` or its name (any case).

        Returns:
            This environment.

        Raises:
            ConfigurationError: ``execution_mode`` names no mode.
        """
        mode = execution_mode
        value = mode.value if isinstance(mode, RuntimeExecutionMode) else mode
        self._config.set_string("execution.runtime-mode", str(value))
        return self

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        """Set ``parallelism.default``.

        Args:
            parallelism: A positive int.

        Returns:
            This environment.

        Raises:
            ConfigurationError: ``parallelism`` is not a positive int.
        """
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise ConfigurationError(f"parallelism must be a positive int, got {parallelism!r}")
        self._config.set_integer("parallelism.default", parallelism)
        return self

    def get_parallelism(self) -> int:
        """The configured ``parallelism.default``, else Spark's ``spark.sql.shuffle.partitions``.

        Returns:
            The parallelism (4 when Spark's setting cannot be read).
        """
        configured = self._config.get_integer("parallelism.default")
        if configured is not None:
            return configured
        try:
            return max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions") or 4))
        except Exception:  # noqa: BLE001 - conf access can fail on restricted clusters
            return 4

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        """Set ``pipeline.max-parallelism``: the number of key groups.

        Args:
            max_parallelism: An int in ``[1, 32768]``.

        Returns:
            This environment.

        Raises:
            KeyGroupError: ``max_parallelism`` is out of range or not an int.
        """
        check_max_parallelism(max_parallelism)
        self._config.set_integer("pipeline.max-parallelism", max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        """The number of key groups (``pipeline.max-parallelism``, default 128).

        Returns:
            The max parallelism.

        Raises:
            KeyGroupError: The configured value is out of range.
        """
        configured = self._config.get_integer("pipeline.max-parallelism")
        return check_max_parallelism(128 if configured is None else configured)

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        """Flink's network buffer flush interval (-1: when full; 0: every record). Spark
        moves data between stages in whole partitions or micro-batches: checked and kept,
        no other effect (latency follows the trigger).

        Args:
            timeout_millis: An int >= -1.

        Returns:
            This environment.

        Raises:
            ConfigurationError: ``timeout_millis`` is not an int >= -1.
        """
        if isinstance(timeout_millis, bool) or not isinstance(timeout_millis, int) \
                or timeout_millis < -1:
            raise ConfigurationError(
                f"set_buffer_timeout: timeout_millis must be an int >= -1, got {timeout_millis!r}")
        self._buffer_timeout = timeout_millis
        return self

    def get_buffer_timeout(self) -> int:
        """The value given to :meth:`set_buffer_timeout` (Flink's default: 100 ms).

        Returns:
            The timeout in ms.
        """
        return self._buffer_timeout

    def set_state_backend(self, state_backend: Union[StateBackend, str]) -> StreamExecutionEnvironment:
        """Choose the keyed state backend (sets ``state.backend.type``).

        Args:
            state_backend: A ``StateBackend`` (``HashMapStateBackend()``,
                ``EmbeddedRocksDBStateBackend()``) or a registered backend's name.

        Returns:
            This environment.

        Raises:
            ConfigurationError: No registered backend of that name, or an unknown option.
        """
        self._state_backend = backend_spec(state_backend)
        self._config.set_string("state.backend.type", self._state_backend.reference)
        return self

    def get_state_backend(self) -> BackendChoice:
        """The chosen backend.

        Returns:
            ``(backend name or path, options)``.
        """
        return self._state_backend

    @property
    def spark(self) -> SparkSession:
        """The environment's SparkSession: the one given, the active one, or a new local
        one started with the jars and Python executable set on this environment."""
        if self._spark is None:
            self._started_with = self._session_conf()
            self._spark = default_local_session(self._started_with)
            pending, self._py_files = self._py_files, []
            for path, kind in pending:
                self._ship(path, kind)
        return self._spark

    # -- running ---------------------------------------------------------------
    def add_sink_node(self, node: SinkNode) -> None:
        """Declare a sink (used by the stream classes); ``execute`` runs every declared one.

        Args:
            node: The sink's graph node.
        """
        self._sinks.append(node)

    def runtime_mode_for(self, nodes: list[Transformation]) -> RuntimeMode:
        """The mode of a job over ``nodes``: ``execution.runtime-mode``, AUTOMATIC resolved by
        the sources' boundedness.

        Args:
            nodes: The job graph's nodes.

        Returns:
            BATCH or STREAMING.

        Raises:
            ConfigurationError: ``execution.runtime-mode`` is no mode.
        """
        mode = configured_runtime_mode(self._config)
        if mode is None:
            sources = [n for n in nodes if isinstance(n, SourceNode)]
            return RuntimeMode.BATCH if all(s.bounded for s in sources) else RuntimeMode.STREAMING
        return mode

    def _translator(self, nodes: list[Transformation], job_name: str, storage: Storage
                    ) -> Translator:
        from ..translation.sinks import sink_kind

        # every sink's kind is known before anything runs (GraphBuildError naming the sink)
        kinds = [sink_kind(n) for n in nodes if isinstance(n, SinkNode)]
        if any(k.writes_delta for k in kinds) \
                or self._config.get_string("execution.savepoint.path"):
            from ..spark_io.delta_io import delta_writer

            delta_writer(self.spark)  # the Spark conf choosing the Delta writer, checked too
        mode = self.runtime_mode_for(nodes)
        unbounded = [n for n in nodes if isinstance(n, SourceNode) and not n.bounded
                     and not n.batch_runs_unbounded]
        if unbounded and mode is RuntimeMode.BATCH:
            raise GraphBuildError(unbounded_in_batch(unbounded[0]))
        from ..plan.graph import check_full_window_mode  # FLIP-380 full-window nodes need BATCH

        check_full_window_mode(nodes, mode)
        plan = JobPlan(job_name, mode, tuple(nodes), self.get_parallelism(),
                       self.get_max_parallelism(), self._state_backend, self._config)
        if mode is RuntimeMode.BATCH:
            from ..translation.batch.translator import BatchTranslator

            return BatchTranslator(plan, self.spark, storage)
        from ..translation.streaming.translator import StreamingTranslator

        return StreamingTranslator(plan, self.spark, storage)

    @contextmanager
    def _job(self, nodes: list[Transformation], job_name: str) -> Iterator[Translator]:
        """The translator of a job, built and used in the job's storage scope: its ``s3.*``
        keys over the session's ``fs.s3a.*`` for every path it reads or writes — checkpoint
        root, savepoints, Delta tables (spark_io/storage_conf.py)."""
        from ..spark_io.storage_conf import job_scope, job_storage

        validate(self._config)  # every option's value, before anything runs or is created
        spark = self.spark
        wanted = self._session_conf()
        if wanted and wanted != self._started_with:
            raise ConfigurationError(
                f"pipeline.jars / pipeline.classpaths / python.executable ({wanted}) take effect "
                f"when this environment starts its Spark session, and the session was already "
                f"running: set spark.jars / spark.pyspark.python when building it")
        storage = job_storage(self._config, spark)
        with job_scope(storage):
            yield self._translator(nodes, job_name, storage)

    def _job_name(self, nodes: list[Transformation], job_name: Optional[str]) -> str:
        """``job_name``, else one derived from the graph (translation/job_identity.py): a
        STREAMING job's checkpoints live under its name, so different programs get
        different names and the same program resumes its own checkpoint."""
        if job_name:
            return job_name
        validate(self._config)  # the default name reads options: check them first
        from ..translation.job_identity import default_job_name

        return default_job_name(nodes, self.get_max_parallelism(), self._state_backend.reference)

    def dataframe_of(self, node: Transformation) -> DataFrame:
        """The DataFrame of ``node``'s records (``DataStream.to_dataframe``).

        Args:
            node: The graph node of the stream.

        Returns:
            The DataFrame (streaming in STREAMING mode).
        """
        nodes = reachable([node])
        with self._job(nodes, self._job_name(nodes, None)) as translator:
            return translator.to_dataframe(node)

    def collect_node(self, node: Transformation, job_name: Optional[str]) -> CloseableIterator:
        """Run the job ending in ``node`` and iterate its records (``DataStream.execute_and_collect``).

        Args:
            node: The graph node of the collected stream.
            job_name: The job's name; None runs a one-off job (STREAMING: on a temporary
                checkpoint).

        Returns:
            An iterator over the records.
        """
        nodes = reachable([node])
        with self._job(nodes, self._job_name(nodes, job_name)) as translator:
            # an unnamed collect is a one-off job (STREAMING: on a temporary checkpoint); a
            # named one resumes under the checkpoint root (temporary without one)
            it = translator.collect(node, one_off=job_name is None)
        # the translator's list: BATCH fills it once the results are collected
        self._last_progress = translator.progress
        return it

    def get_last_progress(self) -> list[dict[str, Any]]:
        """Progress rows of the last ``execute`` / ``execute_and_collect`` on this environment
        (as :meth:`JobExecutionResult.get_progress`; for ``execute_and_collect`` filled once
        its results were fetched).

        Returns:
            A new list of the progress dicts.
        """
        return list(self._last_progress)

    def execute(self, job_name: Optional[str] = None, savepoint_path: Optional[str] = None
                ) -> JobExecutionResult:
        """Run every declared sink (print, Delta, ...) as one job.

        The declared sinks are consumed whether the job succeeds or fails, as in Flink.

        Args:
            job_name: The job's name; None derives one from the job graph.
            savepoint_path: Write a savepoint of the job's final state there, or None.

        Returns:
            The ``JobExecutionResult`` (name, mode, run time, row counts, progress).

        Raises:
            GraphBuildError: No sink is declared.
        """
        if not self._sinks:
            raise GraphBuildError(
                "no sinks declared: add print(), sink_to_delta(...) or use execute_and_collect()"
            )
        sinks = list(self._sinks)
        nodes = reachable(list(sinks))
        job_name = self._job_name(nodes, job_name)
        with self._job(nodes, job_name) as translator:
            # as in Flink, a job whose graph was built consumes the declared sinks, whether it
            # then succeeds or fails (a later execute() must not run them again)
            self._sinks = []
            start = time.time()
            try:
                counts = translator.run_sinks(sinks, savepoint_path=savepoint_path)
            finally:
                self._last_progress = translator.progress
                translator.release()  # a temporary checkpoint ends with the job
        result = JobExecutionResult(job_name, translator.mode.value, int((time.time() - start) * 1000),
                                    counts, savepoint_path, list(self._last_progress))
        log.info("job %r finished in %s ms: %s", job_name, result.net_runtime_ms, counts)
        return result

    def execute_async(self, job_name: Optional[str] = None) -> JobClient:
        """Start every declared sink as one job and return its :class:`JobClient` at once.

        STREAMING processing-time jobs keep running and take savepoints through the client;
        a BATCH job has run to its end when it returns (the "Savepoints of a running job"
        section of the Savepoints guide).

        Args:
            job_name: The job's name; None derives one from the job graph.

        Returns:
            The job's client.

        Raises:
            GraphBuildError: No sink is declared.
        """
        if not self._sinks:
            raise GraphBuildError(
                "no sinks declared: add print(), sink_to_delta(...) before execute_async()"
            )
        from .job_client import JobClient

        sinks = list(self._sinks)
        nodes = reachable(list(sinks))
        name = self._job_name(nodes, job_name)
        if self.runtime_mode_for(nodes) is RuntimeMode.BATCH:
            return JobClient.finished(self.execute(name))  # execute consumes the sinks
        with self._job(nodes, name) as translator:  # its thread keeps the scope (job_client.py)
            client = JobClient.start(name, translator, sinks)
        self._sinks = []  # started: the sinks are this job's now
        return client

    def get_execution_plan(self) -> str:
        """The job graph of the declared sinks as JSON, in Flink's plan format (``nodes``
        with ``id``, ``type``, ``pact``, ``contents``, ``parallelism``, ``predecessors``).

        Returns:
            The JSON string; ``{"nodes": []}`` when no sink is declared.
        """
        from ..plan.graph import KeyByNode

        nodes = reachable(list(self._sinks)) if self._sinks else []
        default = self._config.get_integer("parallelism.default") or -1
        plan = []
        for node in nodes:
            pact = ("Data Source" if isinstance(node, SourceNode)
                    else "Data Sink" if isinstance(node, SinkNode) else "Operator")
            plan.append({
                "id": node.id,
                "type": (f"Source: {node.name}" if isinstance(node, SourceNode)
                         else f"Sink: {node.name}" if isinstance(node, SinkNode) else node.name),
                "pact": pact,
                "contents": node.name,
                "parallelism": node.parallelism or default,
                "predecessors": [
                    {"id": parent.id,
                     "ship_strategy": "HASH" if isinstance(parent, KeyByNode) else "FORWARD",
                     "side": "second"}
                    for parent in node.inputs],
            })
        return json.dumps({"nodes": plan}, indent=2)

    def close(self) -> None:
        """Drop the declared sinks (the environment can build a new job after). The Spark
        session stays: it may be shared, stop it with ``spark.stop()``."""
        self._sinks = []
        self._sources = []
