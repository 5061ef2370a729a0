"""One Python pass over Arrow batches: the code that runs inside ``mapInArrow``.

A pass fuses, in one loop over the records of a Spark partition: an optional
keyed operator (over input sorted by key, FLIP-140, or hash-partitioned), an
optional non-keyed two-input stage, a chain of non-keyed stages, and an optional
key extraction (+ per-partition pre-aggregation) for the next keyed operator.
Nothing round-trips to the JVM between fused stages.
"""

from __future__ import annotations

import gc
import itertools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Protocol

import pyarrow as pa

from ..operators.base import OperatorConfig, Output
from ..operators.chain import KeyExtractor, StatelessChain, open_key_selector
from ..operators.factory import make_keyed_operator
from ..operators.functions import as_key_selector, per_record_call
from ..operators.instances import SubtaskInstance, run_instances
from ..operators.metrics import mark as metrics_mark
from ..operators.metrics import report_due, report_since
from ..state_store.backends import HEAP, SINGLE_KEY, BackendChoice
from ..state_store.bulk import paused_gc as gc_paused  # a call's acyclic objects: no GC
from ..state_store.exceptions import GraphBuildError
from .encoding import KEY, KG, METRICS, SIDE, TAG, TS, ColumnWriter, Encoding, make_decoder
from .entry_files import EntryFiles
from .fastpath import FastKeyedOutput, compile_chain
from .savepoint_rows import (
    SP_COLUMNS,
    SP_TAG,
    EntrySink,
    SavepointColumnWriter,
    entry_sink,
    group_restore_rows,
    restore_rows,
    with_savepoint,
)
from .sorted_reduce import (
    folds_without_context,
    key_column,
    keys_from_field,
    repeated,
    sorted_reduce,
    sorted_reduce_by_field,
)

__all__ = [
    "Combiner", "KeyOut", "KeyedSpec", "PassSpec", "run_pass", "output_ddl", "gc_paused", "COUNT",
    "COUNTABLE_TYPES", "query_metrics_folder",
]

if TYPE_CHECKING:
    from ..state_store.serializers.base import TypeSerializer

#: ``(key selector, key serializer)`` a pass keys its output records with (the selector a
#: KeySelector or a callable: ``as_key_selector``)
KeyOut = tuple[object, "TypeSerializer[Any]"]


class Combiner(Protocol):
    """The reduce function a keying pass pre-aggregates its records with, per key."""

    def reduce(self, value1: Any, value2: Any) -> Any: ...


_COMBINE_LIMIT = 100_000
#: Input column of a counted keyed pass (``KeyedSpec.counted``): how many identical records
#: (same key, fields and timestamp) the row stands for
COUNT = "_n"
#: Field types whose equal values Spark groups exactly as Python compares the decoded values
#: (no float: Spark merges -0.0 and 0.0, and NaNs), so identical records may be counted
COUNTABLE_TYPES = frozenset({"STRING", "BOOLEAN", "BYTE", "SHORT", "INT", "LONG"})
_BULK = 4096  # records per ColumnWriter.extend



@dataclass
class KeyedSpec:
    """The keyed operator a pass starts with."""

    kind: str  # process | reduce | co_process
    function: Any
    key_serializer: Any
    sorted_input: bool
    backend: BackendChoice = BackendChoice.of(HEAP)
    #: BATCH savepoint write: emit each key's entries (``SP_COLUMNS``) at its end, with
    #: event timers fired only up to ``savepoint_watermark`` (None: no timestamps, none fire)
    savepoint_write: bool = False
    savepoint_watermark: Optional[int] = None
    #: BATCH savepoint write: each task writes the entries as savepoint rows into this
    #: folder itself (None: they leave the pass as ``SP_COLUMNS`` rows, for staging)
    savepoint_files: Optional[EntryFiles] = None
    #: BATCH restore: the savepoint's meta infos of this operator; the input carries
    #: ``RESTORE_COLUMNS`` rows sorted before each key's records
    restore_meta: Optional[tuple[Any, ...]] = None
    #: the key is this field of the (typed) record: no ``_k`` column, key bytes are
    #: serialized once per run of equal keys (the input is sorted by that field)
    key_field: Optional[int] = None
    #: BATCH reduce: each input row stands for ``COUNT`` identical records (Spark counted
    #: them before the sort); the pass folds the record in that many times
    counted: bool = False
    #: the keyed node's name, which its function's metrics are reported under ("": the
    #: pass's name)
    name: str = ""


@dataclass
class PassSpec:
    """Everything one ``mapInArrow`` pass does; pickled to the executors."""

    name: str
    input_enc: Encoding
    output_enc: Encoding
    config: dict[str, Any]
    sided: bool = False
    co_stage: Optional[tuple[str, Any, str]] = None
    keyed: Optional[KeyedSpec] = None
    chain: list[tuple[Any, ...]] = field(default_factory=list)  # (kind, function[, name])
    tags: frozenset[str] = frozenset()
    key_out: Optional[KeyOut] = None
    combiner: Optional[Combiner] = None
    max_parallelism: int = 128
    #: STREAMING: the pass in its job and the run (one translation of the job). With the
    #: query's id, what a worker keeps the pass's non-keyed functions under, one opened
    #: copy per subtask for the whole run (operators/instances.py); "" (BATCH): a pass
    #: opens its own copy and closes it at its end
    instance_key: str = ""
    run_id: str = ""
    #: the input is a partitioning's ``parallelism`` partitions (translation/physical.py):
    #: as for a keyed pass, a union's task numbering is folded back into a subtask index
    partitioned: bool = False
    #: BATCH with progress: the output ends with a ``METRICS`` column, null on records; each
    #: task's last rows carry its operator instances' metrics (JSON, ``metrics.report_since``;
    #: a STREAMING pass, whose instances outlive the task, publishes them instead)
    metrics_column: bool = False

    def extra_fields(self) -> list[pa.Field]:
        fields = []
        if self.tags:
            fields.append(pa.field(TAG, pa.string()))
        fields.append(pa.field(TS, pa.int64()))
        if self.key_out is not None:
            fields += [pa.field(KG, pa.int32()), pa.field(KEY, pa.binary())]
        if self.writes_savepoint:
            fields += [pa.field(n, t) for n, t, _ in SP_COLUMNS]
        return fields

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the pass's output batches (:func:`output_ddl` in Spark's
        terms)."""
        return pa.schema(self.extra_fields() + self.output_enc.arrow_fields()
                         + ([pa.field(METRICS, pa.string())] if self.metrics_column else []))

    @property
    def writes_savepoint(self) -> bool:
        """Whether the pass's output carries savepoint entry rows (``SP_COLUMNS``)."""
        return (self.keyed is not None and self.keyed.savepoint_write
                and self.keyed.savepoint_files is None)


def output_ddl(spec: PassSpec) -> str:
    """Spark DDL schema of a pass's output."""
    parts = []
    if spec.tags:
        parts.append(f"{TAG} string")
    parts.append(f"{TS} bigint")
    if spec.key_out is not None:
        parts += [f"{KG} int", f"{KEY} binary"]
    if spec.writes_savepoint:
        parts += [f"{n} {d}" for n, _, d in SP_COLUMNS]
    parts += spec.output_enc.spark_fields()
    if spec.metrics_column:
        parts.append(f"{METRICS} string")
    return ", ".join(parts)


def _operator_config(spec: PassSpec, subtask: int) -> OperatorConfig:
    parallelism = spec.config.get("parallelism", 1)
    if (spec.keyed is not None or spec.partitioned) and subtask >= parallelism:
        # A keyed pass reads its key shuffle's ``parallelism`` partitions, but when a union
        # reads it, the task's partition number counts the union's earlier inputs' first:
        # the shuffle's partitions are ``parallelism`` consecutive numbers, so modulo
        # ``parallelism`` each still gets a subtask index of its own.
        subtask %= parallelism
    overrides: dict[str, Any] = {"subtask_index": subtask, "operator_name": spec.name}
    overrides["metrics_publish"] = query_metrics_folder(spec.config.get("metrics_publish"),
                                                        query_id())
    if spec.keyed is None and subtask >= parallelism:
        # Non-keyed passes keep their input's partitioning, which may be wider than the
        # configured parallelism (e.g. after a union).
        overrides["parallelism"] = subtask + 1
    return OperatorConfig.from_dict(spec.config, **overrides)


def query_metrics_folder(publish: Optional[tuple[Any, str]], query: str
                         ) -> Optional[tuple[Any, str]]:
    """STREAMING: where the instances of ``query`` publish their metrics: the run's metrics
    folder (``metrics_publish`` of the operator configuration), one sub-folder per query.

    Args:
        publish: (storage layer, the run's metrics folder); None: nothing is published.
        query: The streaming query's id.

    Returns:
        (storage layer, the query's folder), or None.
    """
    if publish is None:
        return None
    storage, folder = publish
    return storage, storage.join(folder, query or "no-query")


def partition_id() -> int:
    """The Spark partition this task processes (0 outside a Spark task); the one place
    executor code reads ``TaskContext``."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
        return tc.partitionId() if tc is not None else 0
    except Exception:  # noqa: BLE001 - outside a Spark task
        return 0


def query_id() -> str:
    """The id of the streaming query this task belongs to ("" outside one): two queries of
    one run that compute the same stage keep separate function instances."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
        return (tc.getLocalProperty("sql.streaming.queryId") or "") if tc is not None else ""
    except Exception:  # noqa: BLE001 - outside a Spark task
        return ""


class _PassStages:
    """A subtask's own non-keyed stages of a pass (chain, key extraction, two-input stage),
    built once from its copy of the shipped functions."""

    def __init__(self, spec: PassSpec, functions: tuple[Any, Any, Any]) -> None:
        from ..operators.co import CoStage

        chain, key_out, co_stage = functions
        self.chain = StatelessChain(chain) if chain else None
        self.extractor = (KeyExtractor(key_out[0], key_out[1], spec.max_parallelism,
                                       operator_name=spec.name) if key_out is not None else None)
        self.co_stage = CoStage(*co_stage) if co_stage is not None else None


def _subtask_stages(spec: PassSpec, config: OperatorConfig) -> Optional[_PassStages]:
    """STREAMING: this subtask's long-lived stages of a non-keyed pass, opened the first
    time (Flink keeps a function per parallel instance for the whole job: ``open()`` once,
    its attributes last across micro-batches, ``close()`` when the run ends); None when
    the pass opens its own (BATCH, or a pass starting with a keyed operator)."""
    if not spec.instance_key or spec.keyed is not None:
        return None
    query = query_id()
    instances = run_instances(f"{spec.instance_key}/{query}", f"{spec.run_id}/{query}")
    instance = instances.get(config.subtask_index)
    if instance is None:
        instance = SubtaskInstance((spec.chain, spec.key_out, spec.co_stage), config)
        instance.function = _PassStages(spec, instance.function)
        instances[config.subtask_index] = instance
    stages: _PassStages = instance.function
    for stage in (stages.co_stage, stages.chain, stages.extractor):
        if stage is not None:
            instance.open(stage, config)  # once per instance: stage.open(config)
    return stages


#: During a pass the cyclic collector runs once per this many input batches (see run_pass)
_GC_EVERY_BATCHES = 64


def _collecting_every(batches: Iterator[pa.RecordBatch], every: int) -> Iterator[pa.RecordBatch]:
    """``batches``, with a full cyclic collection before every ``every``-th one."""
    for i, batch in enumerate(batches, 1):
        if i % every == 0:
            gc.collect()
        yield batch


def run_pass(spec: PassSpec, batches: Iterator[pa.RecordBatch],
             subtask: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Run ``spec`` over the Arrow batches of one partition, yielding output batches.

    The automatic cyclic collector is off during the pass: decoding a batch allocates
    thousands of acyclic records, and the collector's passes over them cost more than
    the records' own work. A full collection every :data:`_GC_EVERY_BATCHES` input
    batches still frees any cycles the user's functions leave behind. The functions'
    metrics are reported at the end (BATCH: the pass was the instance's whole run) or when
    due (STREAMING).
    """
    config = _operator_config(spec, partition_id() if subtask is None else subtask)
    since = metrics_mark()
    records: list[dict[str, Any]] = []
    schema: Optional[pa.Schema] = None
    try:
        with gc_paused():
            for batch in _run_pass(spec, _collecting_every(batches, _GC_EVERY_BATCHES), config):
                if spec.metrics_column:
                    # (RecordBatch.append_column needs pyarrow 15)
                    batch = pa.RecordBatch.from_arrays(
                        [*batch.columns, pa.nulls(batch.num_rows, pa.string())],
                        schema=batch.schema.append(pa.field(METRICS, pa.string())))
                    schema = batch.schema
                yield batch
    finally:
        if not spec.instance_key:  # BATCH: the pass was its instances' whole run
            records = report_since(since)
        else:
            report_due()
    if spec.metrics_column and records:  # the pass ended without an error
        yield _metrics_batch(spec, records, schema)


def _metrics_batch(spec: PassSpec, records: list[dict[str, Any]],
                   schema: Optional[pa.Schema]) -> pa.RecordBatch:
    """One row per operator instance's metrics record (JSON in ``METRICS``), every other
    column null; ``schema``: the pass's output batches' (None: none was output)."""
    if schema is None:
        schema = spec.arrow_schema()
    rows = [json.dumps(r, default=str) for r in records]
    columns = [pa.nulls(len(rows), f.type) for f in schema][:-1] + [pa.array(rows, pa.string())]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _run_pass(spec: PassSpec, batches: Iterator[pa.RecordBatch],
              config: OperatorConfig) -> Iterator[pa.RecordBatch]:
    from ..operators.driver import run_hash_keyed, run_sorted_keyed

    stages = _subtask_stages(spec, config)
    decode = make_decoder(spec.input_enc)
    writes_savepoint = spec.writes_savepoint
    writer = (SavepointColumnWriter if writes_savepoint else ColumnWriter)(
        spec.output_enc, spec.extra_fields(), name=spec.name)
    keyed = spec.keyed is not None
    restoring = spec.keyed is not None and spec.keyed.restore_meta is not None
    if not keyed and spec.co_stage is None and not spec.tags and not spec.sided:
        fast = compile_chain(spec.chain, spec.name)
        if fast is not None:
            if stages is not None or spec.key_out is None:
                selector = (stages.extractor.key_selector
                            if stages is not None and stages.extractor is not None else None)
                yield from _run_fast(spec, fast, decode, writer, batches, selector)
                return
            # BATCH: the pass is the key selector's parallel instance, opened for its run
            selector = as_key_selector(spec.key_out[0])
            open_key_selector(selector, config)
            try:
                yield from _run_fast(spec, fast, decode, writer, batches, selector)
            finally:
                selector.close()
            return

    key_field = spec.keyed.key_field if spec.keyed is not None else None
    counted = spec.keyed is not None and spec.keyed.counted
    serialize_key: Optional[Callable[[Any], bytes]] = (
        spec.keyed.key_serializer.serialize if spec.keyed is not None else None)

    def records() -> Iterator[tuple[Any, ...]]:
        for b in batches:
            if b.num_rows == 0:
                continue
            if restoring:
                yield from restore_rows(b, decode, spec.sided)
                continue
            values = decode(b)
            ts = b.column(TS).to_pylist()
            sides: Iterable[Any] = itertools.repeat(0)
            if spec.sided:
                sides = b.column(SIDE).to_pylist()
            if counted:
                counts = b.column(COUNT).to_pylist()
                values, ts = repeated(values, counts), repeated(ts, counts)
                if isinstance(sides, list):
                    sides = repeated(sides, counts)
            if key_field is not None and serialize_key is not None:
                yield from keys_from_field(values, ts, sides, key_field, serialize_key)
            elif keyed:
                yield from zip(b.column(KEY).to_pylist(), ts, values, sides)
            else:
                yield from zip(values, ts, sides)

    cleanup = []
    outputs: Iterator[Output]
    if spec.keyed is not None:
        ks = spec.keyed
        backend = (SINGLE_KEY.create(ks.key_serializer, spec.max_parallelism) if ks.sorted_input
                   else ks.backend.create(ks.key_serializer, spec.max_parallelism))
        operator = make_keyed_operator(ks.kind, ks.function, savepoint_write=ks.savepoint_write,
                                       savepoint_watermark=ks.savepoint_watermark)
        operator.open(backend, config.with_overrides(metrics_name=ks.name) if ks.name else config)
        cleanup += [operator.close, backend.close]
        sink = entry_sink(ks, backend, config)
        if sink is not None:
            cleanup.append(sink.abort)
        if ks.kind == "broadcast":
            outputs = _run_broadcast(operator, backend, records(), ks, config, sink)
        elif _fast_reduce_applies(ks, config) and key_field is not None and not spec.sided:
            outputs = sorted_reduce_by_field(ks.function, batches, decode, key_field, spec.name,
                                              key_column(spec.input_enc, key_field),
                                              COUNT if counted else None)
        elif _fast_reduce_applies(ks, config):
            outputs = sorted_reduce(ks.function, records(), spec.name)
        elif ks.savepoint_write or ks.restore_meta is not None:
            if not ks.sorted_input:
                raise GraphBuildError(
                    f"operator {spec.name!r}: BATCH savepoints need sorted inputs "
                    "(execution.sorted-inputs.enabled=true)")
            rows = group_restore_rows(records()) if restoring else records()
            outputs = with_savepoint(operator, backend, rows, ks, config, sink)
        else:
            driver = run_sorted_keyed if ks.sorted_input else run_hash_keyed
            outputs = driver(operator, backend, records(), ks.key_serializer, config)
    elif spec.co_stage is not None:
        outputs = (_through_co_stage(stages.co_stage, records()) if stages is not None
                   else _run_co_stage(spec.co_stage, records(), config))
    else:
        outputs = (Output(None, v, t) for v, t, _ in records())

    if spec.chain:
        if stages is not None:
            assert stages.chain is not None
            chain = stages.chain
        else:
            chain = StatelessChain(spec.chain)
            chain.open(config)
            cleanup.append(chain.close)
        outputs = _through_chain(chain, outputs)

    extractor = None
    if stages is not None:
        extractor = stages.extractor
    elif spec.key_out is not None:
        extractor = KeyExtractor(spec.key_out[0], spec.key_out[1], spec.max_parallelism,
                                 operator_name=spec.name)
        extractor.open(config)  # the pass is the parallel instance: open once, close at its end
        cleanup.append(extractor.close)
    combiner = spec.combiner
    combine = per_record_call(combiner.reduce) if combiner is not None else None
    combined: dict[bytes, list[Any]] = {}
    tags = spec.tags
    has_tags = bool(tags)

    try:
        if extractor is None and not has_tags and not writes_savepoint:
            # the common tail: records (side outputs nobody reads are dropped) in bulk
            while True:
                chunk = list(itertools.islice(outputs, _BULK))
                if not chunk:
                    break
                kept = [o for o in chunk if o.tag is None]
                yield from writer.extend([[o.timestamp for o in kept]], [o.value for o in kept])
            outputs = iter(())
        elif extractor is None and writes_savepoint:
            # records and savepoint entries in bulk (their order in the output is free: the
            # staging read splits them)
            assert isinstance(writer, SavepointColumnWriter)
            while True:
                chunk = list(itertools.islice(outputs, _BULK))
                if not chunk:
                    break
                kept = [o for o in chunk if o.tag is None or o.tag in tags]
                if kept:
                    extras: list[list[Any]] = [[o.timestamp for o in kept]]
                    if has_tags:
                        extras.insert(0, [o.tag for o in kept])
                    yield from writer.extend(extras, [o.value for o in kept])
                if len(kept) < len(chunk):
                    yield from writer.extend_entries([o.value for o in chunk if o.tag is SP_TAG])
            outputs = iter(())
        entry_writer = writer if isinstance(writer, SavepointColumnWriter) else None
        for out in outputs:
            tag = out.tag
            if tag is not None:
                if tag is SP_TAG:
                    if entry_writer is None:
                        raise GraphBuildError(f"pass {spec.name!r}: an operator emitted savepoint "
                                              "entries into a pass that writes no savepoint")
                    batch = entry_writer.append_entry(out.value)
                    if batch is not None:
                        yield batch
                elif tag in tags:
                    batch = writer.append((tag, out.timestamp), out.value)
                    if batch is not None:
                        yield batch
                continue
            if extractor is not None:
                kg, key = extractor.extract(out.value)
                if combine is not None:
                    slot = combined.get(key)
                    ts = out.timestamp
                    if slot is None:
                        combined[key] = [kg, out.value, ts]
                    elif ts is not None and slot[2] is not None and ts < slot[2]:
                        # keep the earliest record first, as the sorted fold would
                        slot[1] = combine(out.value, slot[1])
                        slot[2] = ts
                    else:
                        slot[1] = combine(slot[1], out.value)
                    if len(combined) >= _COMBINE_LIMIT:
                        yield from _flush_combined(combined, writer)
                    continue
                batch = writer.append((out.timestamp, kg, key), out.value)
            elif has_tags:
                batch = writer.append((None, out.timestamp), out.value)
            else:
                batch = writer.append((out.timestamp,), out.value)
            if batch is not None:
                yield batch
        if combined:
            yield from _flush_combined(combined, writer)
        last = writer.flush()
        if last is not None:
            yield last
    finally:
        for close in cleanup:
            close()


def _fast_reduce_applies(ks: KeyedSpec, config: OperatorConfig) -> bool:
    """BATCH reduce over sorted input, with a function that needs no runtime context
    (not when state is saved to or restored from a savepoint: it keeps no state)."""
    if ks.kind != "reduce" or not ks.sorted_input or not config.is_batch:
        return False
    if ks.savepoint_write or ks.restore_meta is not None:
        return False
    return folds_without_context(ks.function)


def _run_fast(spec: PassSpec, chain: Any, decode: Any, writer: ColumnWriter,
              batches: Iterator[pa.RecordBatch], selector: Any = None) -> Iterator[pa.RecordBatch]:
    """The vectorised path: whole batches through plain-lambda stages (see fastpath.py);
    ``selector``: the subtask's long-lived key selector (STREAMING)."""
    keyed_out = None
    if spec.key_out is not None:
        keyed_out = FastKeyedOutput(selector or spec.key_out[0], spec.key_out[1], spec.max_parallelism,
                                    spec.combiner, spec.name)
    append = writer.append
    for b in batches:
        if b.num_rows == 0:
            continue
        values, ts = chain(decode(b), b.column(TS).to_pylist())
        if keyed_out is None:
            for v, t in zip(values, ts):
                batch = append((t,), v)
                if batch is not None:
                    yield batch
        elif spec.combiner is None:
            for v, t, kg, kb in keyed_out.rows(values, ts):
                batch = append((t, kg, kb), v)
                if batch is not None:
                    yield batch
        else:
            keyed_out.combine(values, ts)
            if keyed_out.pending() >= _COMBINE_LIMIT:
                for v, t, kg, kb in keyed_out.drain():
                    batch = append((t, kg, kb), v)
                    if batch is not None:
                        yield batch
    if keyed_out is not None and spec.combiner is not None:
        for v, t, kg, kb in keyed_out.drain():
            batch = append((t, kg, kb), v)
            if batch is not None:
                yield batch
    last = writer.flush()
    if last is not None:
        yield last


def _flush_combined(combined: dict[bytes, list[Any]], writer: ColumnWriter
                   ) -> Iterator[pa.RecordBatch]:
    for key, (kg, value, ts) in combined.items():
        batch = writer.append((ts, kg, key), value)
        if batch is not None:
            yield batch
    combined.clear()


def _through_chain(chain: StatelessChain, outputs: Iterator[Output]) -> Iterator[Output]:
    process = chain.process
    for out in outputs:
        if out.tag is not None:
            yield out
        else:
            yield from process(out.value, out.timestamp)
    yield from chain.finish()  # what async stages still hold


def _through_co_stage(stage: Any, rows: Iterator[tuple[Any, ...]]) -> Iterator[Output]:
    for value, ts, side in rows:
        yield from stage.process(value, ts, side)


def _run_co_stage(co_stage: tuple[str, Any, str], rows: Iterator[tuple[Any, ...]],
                  config: OperatorConfig) -> Iterator[Output]:
    from ..operators.co import CoStage

    stage = CoStage(*co_stage)
    stage.open(config)
    try:
        for value, ts, side in rows:
            yield from stage.process(value, ts, side)
    finally:
        stage.close()


def _run_broadcast(operator: Any, backend: Any, rows: Iterator[tuple[Any, ...]], ks: KeyedSpec,
                   config: OperatorConfig, sink: Optional[EntrySink]) -> Iterator[Output]:
    """A broadcast operator over one partition (BATCH): the partition starts with every
    broadcast record (sorted so, in the same order in every partition), each processed
    before any other record, Flink's BATCH rule; then the other input as any keyed
    operator's (non-keyed: in arrival order, no key). A savepoint takes the broadcast state
    from partition 0 (every partition holds the same copy)."""
    from ..operators.broadcast import BROADCAST_INPUT, TICK_INPUT
    from ..operators.driver import run_hash_keyed, run_sorted_keyed

    rest: Iterator[tuple[Any, ...]] = iter(())
    for row in rows:
        if row[3] == BROADCAST_INPUT:
            yield from operator.process_broadcast(row[2], row[1])
        elif row[3] != TICK_INPUT:
            rest = itertools.chain((row,), rows)
            break
    savepoint = ks.savepoint_write or ks.restore_meta is not None
    if savepoint and not ks.sorted_input:
        raise GraphBuildError(f"operator {config.operator_name!r}: BATCH savepoints need sorted "
                              "inputs (execution.sorted-inputs.enabled=true)")

    def broadcast_entries() -> list[Any]:
        # every partition holds the same copy: partition 0's is saved
        return list(operator.broadcast_states.snapshot()) if config.subtask_index == 0 else []

    if not operator.keyed:
        for _key, ts, value, side in rest:
            if side >= 0:  # (a savepoint has no keyed entries for it)
                yield from operator.process_element(value, ts, 0)
        yield from operator.end_input()
        if sink is not None:
            yield from sink.add(broadcast_entries())
            yield from sink.finish(None)
    elif savepoint:
        yield from with_savepoint(operator, backend, group_restore_rows(rest), ks, config, sink,
                                   broadcast_entries)
    else:
        driver = run_sorted_keyed if ks.sorted_input else run_hash_keyed
        yield from driver(operator, backend, rest, ks.key_serializer, config)
