"""The ``applyInPandasWithState`` function and the per-partition passes of STREAMING.

Shipped to executors: one call of :func:`group_function` runs one key group for one
micro-batch on its ``KeyGroupRuntime``; :func:`stream_pass`/:func:`seq_pass` run the
non-keyed chains (``mapInArrow``), the latter stamping each record's arrival order.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Optional

from ..operators.base import MIN_WATERMARK, OperatorConfig
from ..operators.broadcast_runtime import BroadcastKeyGroupRuntime
from ..operators.exceptions import JobExecutionError
from ..operators.instances import run_instances
from ..operators.keygroup import KeyGroupRuntime
from ..operators.metrics import report_due, to_worker_stderr
from ..state_store.backends import HEAP, BackendChoice
from ..state_store.keygroups import key_group_of_range_key, subtask_partition
from ..state_store.storage import Storage
from .columnar_reduce import FieldReduce, run_field_reduce
from .emit_order import arrival_keys, output_order
from .encoding import VALUE, Encoding
from .group_frames import (
    BLOB,
    NBYTES,
    SEQ,
    SPLIT_SHIFT,
    TypedInput,
    column_blobs,
    float_columns,
    group_rows,
    nan_column,
    output_schema,
    release_arrow_memory,
)
from .passes import PassSpec, gc_paused, partition_id, query_metrics_folder, run_pass

#: a call's state read from the checkpoint's storage (:func:`log_storage_read`)
_STATE_LOG = logging.getLogger("pyspark_datastream.state")

__all__ = [
    "END_OF_INPUT_MS", "END_THRESHOLD", "FLUSH_BYTES", "GroupSpec", "group_function", "flushing",
    "stream_pass", "seq_pass", "append_seq", "check_partition", "log_storage_read",
]

#: Event time (ms) of the end-of-input sentinel: 9999-12-31T23:59:59Z.
END_OF_INPUT_MS = 253_402_300_799_000
#: A Spark watermark at or above this (year ~5138) means "end of input".
END_THRESHOLD = 100_000_000_000_000
#: Output and state bytes after which a call makes PySpark's serializer cut its Arrow batch
#: (the worker holds them, and their copies in pandas and Arrow, until it does). Each cut
#: costs ~10k padding rows PySpark converts one by one: at 4 MiB, STREAMING WordCount took
#: ~8% longer; at 16 MiB its workers held ~100 MiB more.
FLUSH_BYTES = 8 << 20


@dataclass
class GroupSpec:
    """What the applyInPandasWithState function needs; pickled to the executors."""

    name: str
    kind: str
    function: Any
    key_serializer: Any
    config: dict[str, Any]
    event_time: bool
    sided: bool
    tags: frozenset[str]
    #: the state backend;
    #: a backend with a STREAMING key-group store (rocksdb) keeps its files in ``state_dir``
    backend: BackendChoice = BackendChoice.of(HEAP)
    state_dir: Optional[str] = None
    #: the input carries savepoint restore rows (``_seq < 0``)
    restoring: bool = False
    #: GroupState timeouts run on processing time (ProcessingTimeTimeout), not event time
    processing_timeout: bool = False
    #: records (and keys) arrive as typed columns instead of ``_k``/``_v`` (group_frames.py)
    typed_input: Optional[TypedInput] = None
    #: records leave as these typed columns instead of pickled ``_v``
    output_enc: Optional[Encoding] = None
    #: the number of Spark partitions the key groups were placed on in contiguous ranges
    #: (grouped on the range key; each call checks its partition); 0: grouped on the key
    #: group, placed by Spark's hash of it
    partitions: int = 0
    #: Spark's ``spark.sql.execution.arrow.maxRecordsPerBatch`` (0: no limit): a call pads
    #: its output past it once :data:`FLUSH_BYTES` are pending (:func:`flushing`)
    arrow_batch_rows: int = 0
    #: a reduce whose fields keep their first value or add up, run on the typed columns
    #: (columnar_reduce.py; needs ``typed_input`` and a typed ``output_enc``)
    field_reduce: Optional[FieldReduce] = None
    #: the query sets a GroupState timeout kind and a watermark; False for an operator on an
    #: unbounded input with neither event time nor processing-time timeouts, where no
    #: watermark advances and nothing times out (its watermark is then Flink's initial one)
    timeouts: bool = True
    #: the job's storage layer (state_store/storage), where ``state_dir`` lives
    storage: Optional[Storage] = None
    #: the operator in its job (``<job name>#<node id>``) and the run (one translation of the
    #: job): with the query's id, what a worker keeps the operator's long-lived function
    #: instances under (operators/instances.py; a later run closes the earlier one's)
    instance_key: str = ""
    run_id: str = ""
    #: outputs leave as arrays of their columns (group_frames.array_frame), not as blobs
    direct_output: bool = False
    #: the operator's parallel instances (Flink's subtasks, each a range of key groups:
    #: ``get_index_of_this_subtask()``, one ``open()`` each); subtask ``i`` runs in Spark
    #: partition ``i % partitions`` (keygroups.subtask_partition). 0: ``partitions``
    parallelism: int = 0
    #: outputs carry their elements' arrival order (emit_order.py): the stage feeds another
    #: keyed stage, which must see them in the order the subtask received their elements
    ordered: bool = False
    #: the one-query mapping's stage below another keyed stage of the query: its elements
    #: left that stage in the same micro-batch, before the watermark the call moves to, so
    #: the call processes them at its key group's previous watermark, then moves to this one
    chained: bool = False
    #: each call checks its key group runs in its subtask's partition (:func:`check_partition`);
    #: not in the one-query mapping, whose tasks may number partitions after a union (the
    #: job's build checks the checkpoint's partitions instead: evolution.check_placement)
    checks_partition: bool = True


def group_function(spec: GroupSpec) -> Callable[..., Iterator[Any]]:
    """The ``applyInPandasWithState`` function: one call = one key group, one micro-batch."""
    holder: dict[str, KeyGroupRuntime] = {}

    def runtime() -> KeyGroupRuntime:
        rt = holder.get("rt")
        if rt is None:
            c = spec.config
            query = _query_id()
            cfg = OperatorConfig.from_dict(
                c, subtask_index=0, operator_name=spec.name,
                metrics_publish=query_metrics_folder(c.get("metrics_publish"), query))
            backend_type = spec.backend.backend_type()
            maxp = int(c["max_parallelism"])
            store = spec.backend.create_key_group_store(
                spec.state_dir, spec.key_serializer, maxp, spec.storage)
            # None: the heap default (the lean reduce may stand in for it)
            factory = None if backend_type.snapshot_fast_paths or store is not None else (
                partial(spec.backend.create, spec.key_serializer, maxp))
            runtime_class = BroadcastKeyGroupRuntime if spec.kind == "broadcast" else KeyGroupRuntime
            instances = run_instances(f"{spec.instance_key}/{query}", f"{spec.run_id}/{query}")
            # the stage's parallel instances: the operator's parallelism (key group ranges)
            rt = runtime_class(spec.kind, spec.function, spec.key_serializer, cfg,
                               backend_factory=factory, store=store, instances=instances,
                               parallel_instances=spec.parallelism or spec.partitions or None)
            holder["rt"] = rt
        return rt

    direct = (output_schema(spec.output_enc, bool(spec.tags), spec.ordered)
              if spec.direct_output else None)
    unflushed = [0]  # output and state bytes PySpark's serializer holds for its next batch

    def fn(key: tuple[Any, ...], pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        read = _storage_bytes_read(holder.get("rt"))
        with gc_paused():
            frame = run(key, pdfs, state)
        read = _storage_bytes_read(holder.get("rt")) - read
        if read > 0:
            group = key[0] if not spec.partitions else key_group_of_range_key(int(key[0]))
            log_storage_read(spec.name, int(group), read)
        if spec.arrow_batch_rows > 0:
            unflushed[0] += frame_bytes(frame)
            unflushed[0] += len(state.get[0]) if state.exists else 0
            if unflushed[0] >= FLUSH_BYTES:
                frame = flushing(frame, spec.arrow_batch_rows, direct)
                unflushed[0] = 0
                release_arrow_memory()
        if frame is not None:
            yield frame

    def run(key: tuple[Any, ...], pdfs: Iterator[Any], state: Any) -> Any:
        frames = [p for p in pdfs if len(p)]
        kg = key[0]
        if kg is not None and spec.partitions:  # grouped on the range key
            kg = key_group_of_range_key(int(kg))
        if kg is None or kg < 0:  # the end-of-input sentinel's own group
            return
        if spec.partitions and spec.checks_partition:
            check_partition(spec, int(kg))
        restored: Optional[bytes] = None
        if spec.restoring and frames:
            # savepoint restore rows (one per key group, first micro-batch only)
            marks = [p[SEQ] < 0 for p in frames]
            for p, m in zip(frames, marks):
                if m.any():
                    restored = bytes(p[m][VALUE].iloc[0])
            frames = [p[~m] for p, m in zip(frames, marks) if (~m).any()]
        wm_s = int(state.getCurrentWatermarkMs()) if spec.timeouts else 0
        end = wm_s >= END_THRESHOLD
        watermark = wm_s - 1 if (spec.event_time and wm_s > 0 and not end) else MIN_WATERMARK
        previous = state.get[0] if state.exists else None
        if restored is not None and previous is None:
            previous = runtime().restored_state(int(kg), restored)
        if (spec.field_reduce is not None and frames and spec.typed_input is not None
                and spec.output_enc is not None):
            done = run_field_reduce(spec.field_reduce, spec.typed_input, spec.output_enc,
                                    frames, previous, int(kg), spec.key_serializer, runtime(),
                                    spec.direct_output, spec.ordered)
            if done is not None:  # a reduce holds no timers: no timeout to set
                new_state, frame = done
                _commit(state, new_state)
                return frame
        order: list[Any] = []
        rows = (group_rows(frames, spec.typed_input, spec.sided, spec.key_serializer,
                           (int(kg), int(spec.config["max_parallelism"])),
                           order if spec.ordered else None) if frames else ())
        # ProcessingTimeTimeout: Spark times a group out by the batch's processing time, so the
        # operator's clock is that time (timers <= it fire; the next one sets the timeout)
        now_ms = (int(state.getCurrentProcessingTimeMs()) if spec.processing_timeout
                  else int(time.time() * 1000))
        before = watermark
        if spec.chained and frames and spec.event_time:
            last = state.lastWatermarkMs()
            before = last - 1 if last > 0 else MIN_WATERMARK
        result = runtime().run(previous, rows, min(before, watermark), end_of_input=end,
                               processing_time=now_ms, key_group=int(kg),
                               track_positions=spec.ordered, watermark_after=watermark)
        _commit(state, result.state)
        report_due()  # the functions' metrics, every REPORT_INTERVAL_S per instance
        if spec.processing_timeout:
            if result.state is not None and result.next_processing_timer is not None:
                state.setTimeoutDuration(max(result.next_processing_timer - now_ms, 1))
        elif spec.timeouts and not end and result.state is not None:
            due = []
            if result.next_event_timer is not None:
                # Timers beyond the end-of-input sentinel (e.g. EndOfStreamWindows' timer at
                # Long.MAX_VALUE) must still make the group time out when input ends.
                due.append(min(result.next_event_timer, END_THRESHOLD))
            if result.next_processing_timer is not None:  # poll on the next watermark
                due.append(wm_s)
            if due:
                state.setTimeoutTimestamp(max(min(due), wm_s, 1))
        out_tags, values, stamps = result.output_columns()
        emitted = None
        if spec.ordered:
            arrival = arrival_keys(frames, order[0]) if frames else None
            emitted = output_order(arrival, result.positions, len(values))
        return column_blobs(out_tags, values, stamps, spec.tags, spec.output_enc, spec.name,
                            spec.direct_output, emitted)

    return fn


def _storage_bytes_read(rt: Optional[KeyGroupRuntime]) -> int:
    """What the runtime's key-group store read from the checkpoint's storage so far (a
    store may count it as ``storage_bytes_read``; 0 before the runtime exists)."""
    return int(getattr(getattr(rt, "store", None), "storage_bytes_read", 0) or 0)


def log_storage_read(operator: str, key_group: int, read: int) -> None:
    """Log, at INFO on logger ``pyspark_datastream.state`` (the executor's log), a call that
    read its key group's state from the checkpoint's storage instead of finding it on its
    host: the operator, the group, the bytes, the query and micro-batch. Nothing otherwise.

    Args:
        operator: the keyed operator's name.
        key_group: the call's key group.
        read: the bytes read from storage during the call.
    """
    if read <= 0:
        return
    from pyspark.taskcontext import TaskContext

    context = TaskContext.get()
    query = batch = ""
    if context is not None:
        query = context.getLocalProperty("sql.streaming.queryId") or ""
        batch = context.getLocalProperty("streaming.sql.batchId") or ""
    to_worker_stderr(_STATE_LOG)
    _STATE_LOG.info("operator %r key group %d: %d bytes of state read from the checkpoint's "
                    "storage (query %s, batch %s)", operator, key_group, read, query, batch)


def _query_id() -> str:
    """The id of the streaming query this task belongs to ("" outside one): two queries of
    one run that compute the same keyed stage keep separate function instances."""
    from pyspark.taskcontext import TaskContext

    context = TaskContext.get()
    if context is None:
        return ""
    return context.getLocalProperty("sql.streaming.queryId") or ""


def _commit(state: Any, data: Optional[bytes]) -> None:
    """Hand a key group's new state bytes to Spark's GroupState (None: it holds nothing)."""
    if data is not None:
        state.update((data,))
    elif state.exists:
        state.remove()


def flushing(frame: Any, batch_rows: int, direct: Optional[Any] = None) -> Any:
    """``frame`` (None: no output) padded to more than ``batch_rows`` rows: with null blobs,
    which :func:`unpack_blobs` skips, or for ``direct``, the Arrow schema of an array frame,
    with empty arrays, which explode into no record (not nulls: pandas, concatenating
    PySpark's frames, scans a column of nulls to its end).

    PySpark's applyInPandasWithState serializer cuts its Arrow batches by output row count
    alone (``spark.sql.execution.arrow.maxRecordsPerBatch``), and the state of every call
    rides along: a few output rows per key group never reach it, so a partition's whole
    output and state (hundreds of MB at tens of millions of records) became one Arrow
    buffer in the JVM's direct memory, which a 1 GB driver could not allocate. More rows
    than the limit in one call make it cut the batch here.
    """
    import numpy as np
    import pandas as pd

    names = [BLOB] if direct is None else list(direct.names) + [
        nan_column(name) for name in float_columns(direct)]
    kept = 0 if frame is None else len(frame)
    if kept > batch_rows:
        return frame
    filler = np.empty(1, dtype=object)
    filler[0] = None if direct is None else []
    columns = {}
    for name in names:
        column = np.empty(batch_rows + 1, dtype=object)
        if kept:
            column[:kept] = frame[name].to_numpy(dtype=object)
        column[kept:] = filler
        columns[name] = column
    return pd.DataFrame(columns)


def frame_bytes(frame: Any) -> int:
    """The bytes of a call's output frame (None: none)."""
    if frame is None:
        return 0
    if BLOB in frame:
        return sum(map(len, frame[BLOB]))
    return int(frame.attrs.get(NBYTES, 0))


def check_partition(spec: GroupSpec, key_group: int) -> None:
    """Raise unless key group ``key_group`` runs in the partition of its subtask's range:
    the salts that place it there were computed for ``spec.partitions`` partitions, and a
    query restarted from a checkpoint keeps the number of partitions it started with."""
    maxp = int(spec.config["max_parallelism"])
    expected = subtask_partition(maxp, spec.parallelism or spec.partitions, spec.partitions,
                                 key_group)
    actual = partition_id()
    if actual != expected:
        raise JobExecutionError(
            f"operator {spec.name!r}: key group {key_group} runs in Spark partition {actual}, "
            f"not {expected}: the job was planned for spark.sql.shuffle.partitions="
            f"{spec.partitions}, but the query runs with another number (a query restarted "
            "from a checkpoint keeps the number it started with). Build the job with the "
            "checkpoint's spark.sql.shuffle.partitions, or start with a new checkpoint.")


def stream_pass(spec: PassSpec, parallelism: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """``run_pass`` with the subtask index folded into ``parallelism`` (a micro-batch can
    have more partitions than the job's parallelism)."""

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        return run_pass(spec, batches, subtask=partition_id() % parallelism)

    return fn


def seq_pass(spec: PassSpec, parallelism: int,
             carry: Optional[tuple[str, bool, Optional[str], bool, bool, bool]] = None
             ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """``run_pass`` plus a ``_seq`` column: arrival order inside the micro-batch partition
    (``carry``: the records read are handed on as well, the arguments of
    ``runtime/carry.carrying`` after the parallelism)."""

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        return append_seq(run_pass(spec, batches, subtask=partition_id() % parallelism))

    if carry is not None:
        from .carry import carrying

        return carrying(fn, spec.input_enc, spec.max_parallelism, parallelism, *carry)
    return fn


def append_seq(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` function: the batches plus ``_seq``, their arrival order inside the
    micro-batch partition (``partition << SPLIT_SHIFT | position``)."""
    import numpy as np
    import pyarrow as pa

    base = partition_id() << SPLIT_SHIFT
    n = 0
    for b in batches:
        seq = pa.array(np.arange(base + n, base + n + b.num_rows, dtype=np.int64))
        n += b.num_rows
        yield pa.RecordBatch.from_arrays(list(b.columns) + [seq], names=list(b.schema.names) + [SEQ])
