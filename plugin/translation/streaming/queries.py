"""Running the STREAMING translator's Spark queries, and what their progress reports say.

Each query runs with the job's trigger and its checkpoint under the job folder
(``<job folder>/<name>/checkpoint``); the translator (``translator.py``) decides which
queries there are, these functions start them, wait for them and keep one
:func:`progress_row` per micro-batch.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from typing import TYPE_CHECKING, Any, Optional, Protocol

from ...operators.metrics import merge, read_published
from ...runtime.encoding import KEY, KG, SIDE, TAG, TS, VALUE
from ...runtime.group_frames import SEQ, SEQ_ROW
from ...runtime.group_state import END_OF_INPUT_MS, END_THRESHOLD
from ...runtime.passes import query_metrics_folder
from ...state_store.exceptions import ConfigurationError
from ...state_store.storage import Storage
from ..failures import job_failure
from ..query_ids import is_connect

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter
    from pyspark.sql.types import StructType

__all__ = [
    "QueryOwner",
    "progress_row",
    "as_dict",
    "collect_query",
    "write_df_once",
    "write_table_once",
    "end_of_input_stream",
    "start_query",
    "run_query",
    "log_query_progress",
    "metrics_target",
    "published_metrics",
    "arrow_batch_rows",
]

log = logging.getLogger("pyspark_datastream")


class QueryOwner(Protocol):
    """What running a query reads from (and records on) the STREAMING translator."""

    job_name: str
    trigger: tuple[str, Optional[str]]
    bounded: bool
    spark: Any
    #: session settings the job's queries start with (set for the start, then restored)
    query_conf: dict[str, str]
    @property
    def progress(self) -> list[dict[str, Any]]:
        """One :func:`progress_row` per micro-batch of every query run so far (appended to)."""
        ...

    #: when a list, queries are only started and appended (``env.execute_async``)
    async_queries: Optional[list[tuple[str, Any]]]

    def job_folder(self) -> str: ...

    def published_metrics(self, query_id: str) -> dict[str, dict[str, Any]]:
        """The user metrics the query's operator instances published last, per operator."""
        ...


def progress_row(query_name: str, progress: dict[str, Any]) -> dict[str, Any]:
    """A flat, notebook-readable summary of one micro-batch's StreamingQueryProgress."""
    ops = progress.get("stateOperators") or [{}]
    op = ops[0] if ops else {}
    sink = progress.get("sink") or {}
    duration = progress.get("durationMs") or {}
    return {
        "query": query_name,
        "batch": progress.get("batchId"),
        "rows_in": progress.get("numInputRows"),
        "rows_out": sink.get("numOutputRows"),
        "watermark": (progress.get("eventTime") or {}).get("watermark"),
        "key_groups_with_state": op.get("numRowsTotal"),
        "key_groups_updated": op.get("numRowsUpdated"),
        "state_bytes": op.get("memoryUsedBytes"),
        "duration_ms": duration.get("triggerExecution"),
        "metrics": {},
    }


def metrics_target(storage: Storage, job_folder: str, run_id: str) -> tuple[Storage, str]:
    """Where the operator instances of run ``run_id`` publish their metrics (the operator
    configuration's ``metrics_publish``); an earlier run's are deleted first: the job's folder
    keeps only the latest run's.

    Args:
        storage: The job's storage layer.
        job_folder: The job's folder.
        run_id: This run's id.

    Returns:
        (storage, the run's metrics folder).
    """
    folder = storage.join(job_folder, "metrics")
    storage.delete(folder)
    return storage, storage.join(folder, run_id)


def published_metrics(target: Optional[tuple[Storage, str]], query_id: str
                      ) -> dict[str, dict[str, Any]]:
    """The user metrics the instances of query ``query_id`` published last, combined per
    operator.

    Args:
        target: What :func:`metrics_target` returned (None: nothing was published).
        query_id: The streaming query's id.

    Returns:
        ``{operator: {metric: value}}`` (``operators.metrics.merge``).
    """
    published = query_metrics_folder(target, query_id)
    return {} if published is None else merge(read_published(*published))


def arrow_batch_rows(spark: SparkSession) -> int:
    """The session's ``spark.sql.execution.arrow.maxRecordsPerBatch``.

    Args:
        spark: the session.

    Returns:
        Its value (0: no limit).
    """
    try:
        return max(0, int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
                          or 10000))
    except ValueError:
        return 0


def collect_query(t: QueryOwner, df: DataFrame) -> list[Any]:
    """Run ``df`` as the job's collect query; its rows, in the order of its micro-batches.

    Args:
        t: the job's translator.
        df: the streaming DataFrame collected.

    Returns:
        The Spark rows.
    """
    rows: list[Any] = []
    if is_connect(t.spark):
        # Spark Connect runs a foreachBatch function in a server-side process, where this
        # list does not live: collect through a memory sink instead (it keeps the
        # micro-batches in the order they were appended)
        table = f"pds_collect_{uuid.uuid4().hex[:12]}"
        run_query(t, "collect", df.writeStream.format("memory"), table)
        try:
            return list(t.spark.sql(f"SELECT * FROM {table}").collect())
        finally:
            t.spark.catalog.dropTempView(table)

    def each(batch_df: Any, batch_id: int) -> None:
        rows.extend(batch_df.collect())

    run_query(t, "collect", df.writeStream.foreachBatch(each))
    return rows


def write_table_once(storage: Storage, folder: str, file_name: str, table: pa.Table) -> None:
    """Write the Arrow ``table`` as the one Parquet file ``<folder>/<file_name>`` unless an
    earlier run did: the file becomes visible complete (storage layer), and its name is the
    done-marker (no listing).

    Args:
        storage: the job's storage layer.
        folder: the folder (path or URI) a file stream reads.
        file_name: the file's name.
        table: its rows.
    """
    import pyarrow.parquet as pq

    path = Storage.join(folder, file_name)
    if storage.exists(path):
        return
    with storage.open_output(path) as f:
        pq.write_table(table, f)


def write_df_once(storage: Storage, folder: str, df: DataFrame) -> bool:
    """Write ``df`` as Parquet into ``folder`` with Spark (its Hadoop filesystem) unless an
    earlier run completed it: Spark's ``_SUCCESS`` marker, written last by its committer, is
    the done-marker; a partial folder of an interrupted run is overwritten.

    Args:
        storage: the job's storage layer.
        folder: the target folder (path or URI).
        df: a bounded DataFrame.
    Returns:
        True when this call wrote it.
    """
    if storage.exists(Storage.join(folder, "_SUCCESS")):
        return False
    df.write.mode("overwrite").parquet(folder)
    return True


def as_dict(progress: object) -> dict[str, Any]:
    """A StreamingQueryProgress (or its JSON, or a dict already) as a dict."""
    if isinstance(progress, dict):
        return progress
    text = getattr(progress, "json", None)
    parsed = json.loads(text if isinstance(text, str) else str(progress))
    if not isinstance(parsed, dict):
        raise TypeError(f"a query progress is a JSON object, got {parsed!r:.200}")
    return parsed


def _watermark_ms(progress: dict[str, Any]) -> int:
    wm = (progress.get("eventTime") or {}).get("watermark")
    if not wm:
        return 0
    from datetime import datetime

    return int(datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp() * 1000)


def end_of_input_stream(spark: SparkSession, storage: Storage, folder: str, schema: StructType
                       ) -> Any:
    """A one-row file stream of ``schema`` in ``folder`` (written once): key group -1 at
    :data:`END_OF_INPUT_MS`, the end-of-input signal a query over bounded input ends with.

    Args:
        spark: the job's session.
        storage: the job's storage.
        folder: the stream's folder under the job folder.
        schema: the Spark schema of the keyed input the row is unioned into.

    Returns:
        The streaming DataFrame of that row.
    """
    import pyarrow as pa

    if not storage.exists(storage.join(folder, "eoi.parquet")):
        cols: dict[str, Any] = {}
        for f in schema.fields:
            if f.name == TS:
                cols[f.name] = pa.array([END_OF_INPUT_MS], type=pa.int64())
            elif f.name == KG:
                cols[f.name] = pa.array([-1], type=pa.int32())
            elif f.name in (SEQ, SEQ_ROW):
                cols[f.name] = pa.array([0], type=pa.int64())
            elif f.name == SIDE:
                cols[f.name] = pa.array([0], type=pa.int32())
            elif f.name in (KEY, VALUE, TAG):
                cols[f.name] = pa.array([None], type=pa.binary())
            else:  # typed record columns (native keyed input)
                from pyspark.sql.pandas.types import to_arrow_type

                cols[f.name] = pa.nulls(1, type=to_arrow_type(f.dataType, timezone="UTC"))
        write_table_once(storage, folder, "eoi.parquet", pa.table(cols))
    return spark.readStream.schema(schema).parquet(folder)


def start_query(t: QueryOwner, name: str, writer: DataStreamWriter,
                query_name: Optional[str] = None) -> Any:
    """Start one query (checkpoint ``<root>/<name>/checkpoint``, the configured trigger;
    ``query_name`` names a memory sink's table)."""
    checkpoint = os.path.join(t.job_folder(), name, "checkpoint")
    writer = writer.option("checkpointLocation", checkpoint).queryName(
        query_name or f"{t.job_name}:{name}:{time.time_ns()}")
    kind, interval = t.trigger
    if kind == "available-now":
        writer = writer.trigger(availableNow=True)
    elif kind == "once":
        writer = writer.trigger(once=True)
    elif interval is None:
        raise ConfigurationError(f"the {kind} trigger of job {t.job_name!r} has no interval")
    else:
        writer = writer.trigger(processingTime=interval)
    # a query takes its own copy of the session's settings when it starts
    before = {key: t.spark.conf.get(key, None) for key in t.query_conf}
    for key, value in t.query_conf.items():
        t.spark.conf.set(key, value)
    try:
        return writer.start()
    finally:
        for key, value in before.items():
            if value is None:
                t.spark.conf.unset(key)
            else:
                t.spark.conf.set(key, value)


def run_query(t: QueryOwner, name: str, writer: DataStreamWriter, query_name: Optional[str] = None
             ) -> None:
    """Start one query, wait, log its progress (only start it for ``execute_async``)."""
    if t.async_queries is not None:
        t.async_queries.append((name, start_query(t, name, writer, query_name)))
        return
    kind = t.trigger[0]
    start = time.time()
    query = start_query(t, name, writer, query_name)
    failure: Optional[BaseException] = None
    try:
        if kind == "processing-time":
            _await_processing_time(t, query)
        else:
            query.awaitTermination()
    except Exception as exc:  # noqa: BLE001 - StreamingQueryException and friends
        failure = exc
    finally:
        if query.isActive:
            query.stop()
    log_query_progress(t, name, query)
    error = failure if failure is not None else query.exception()
    if error is not None:
        _await_tasks(t.spark, str(query.runId))
        raise job_failure(error, f"STREAMING query {name!r} of job {t.job_name!r}") \
            from error
    log.info("STREAMING query %s finished in %.1f s", name, time.time() - start)


def _await_tasks(spark: SparkSession, run_id: str, timeout_s: float = 30.0) -> None:
    """Wait (at most ``timeout_s``) until no task of the failed query runs any more.

    Spark cancels a failed job's other tasks asynchronously, and a task still running may
    write into the query's checkpoint: the job's temporary checkpoint is removed when the
    failure is raised, so those writes must be over first. The query's jobs run in the job
    group of its run id. Spark Connect has no status tracker: nothing to wait for there.
    """
    deadline = time.time() + timeout_s
    try:
        tracker = spark.sparkContext.statusTracker()
        while True:
            running = 0
            for job_id in tracker.getJobIdsForGroup(run_id):
                job = tracker.getJobInfo(job_id)
                for stage_id in job.stageIds if job is not None else []:
                    stage = tracker.getStageInfo(stage_id)
                    running += stage.numActiveTasks if stage is not None else 0
            if not running or time.time() >= deadline:
                return
            time.sleep(0.05)
    except Exception:  # noqa: BLE001 - Spark Connect (no SparkContext), a stopped session:
        return  # the query's own failure is what the job raises


def _await_processing_time(t: QueryOwner, query: Any) -> None:
    """Processing-time trigger: run until the end-of-input batch ran (bounded jobs) or
    until the query is stopped elsewhere (unbounded)."""
    while query.isActive:
        if query.awaitTermination(1):
            return
        if not t.bounded:
            continue
        recent = [as_dict(p) for p in query.recentProgress]
        if any(_watermark_ms(p) >= END_THRESHOLD for p in recent):
            last = recent[-1]
            if _watermark_ms(last) >= END_THRESHOLD and not query.status.get("isTriggerActive"):
                return


def log_query_progress(t: QueryOwner, name: str, query: StreamingQuery) -> None:
    """Record (``t.progress``) and log one :func:`progress_row` per micro-batch of ``query``;
    the last one carries the user metrics its operator instances published last."""
    rows = [progress_row(name, as_dict(p)) for p in query.recentProgress]
    if rows:
        try:
            rows[-1]["metrics"] = t.published_metrics(str(query.id))
        except Exception as exc:  # noqa: BLE001 - progress never fails a job
            log.warning("STREAMING %s: the operators' metrics cannot be read: %s", name, exc)
    for row in rows:
        t.progress.append(row)
        log.info(
            "STREAMING %s batch %s: rows in %s, rows out %s, watermark %s, key groups %s "
            "(updated %s), state %s bytes, %s ms%s", name, row["batch"], row["rows_in"],
            row["rows_out"], row["watermark"], row["key_groups_with_state"],
            row["key_groups_updated"], row["state_bytes"], row["duration_ms"],
            "; metrics " + "; ".join(f"{op!r}: {v}" for op, v in row["metrics"].items())
            if row["metrics"] else "")
