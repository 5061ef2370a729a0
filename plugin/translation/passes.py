"""One Python pass over Arrow batches: the code that runs inside ``mapInArrow``.

A pass fuses, in one loop over the records of a Spark partition: an optional
keyed operator (over input sorted by key, FLIP-140, or hash-partitioned), an
optional non-keyed two-input stage, a chain of non-keyed stages, and an optional
key extraction (+ per-partition pre-aggregation) for the next keyed operator.
Nothing round-trips to the JVM between fused stages.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import pyarrow as pa

from ..operators.base import OperatorConfig, Output
from ..operators.chain import KeyExtractor, StatelessChain
from .encoding import KEY, KG, SIDE, TAG, TS, ColumnWriter, Encoding, make_decoder
from .fastpath import FastKeyedOutput, compile_chain

__all__ = ["KeyedSpec", "PassSpec", "run_pass", "output_ddl", "make_backend"]

_COMBINE_LIMIT = 100_000


@dataclass
class KeyedSpec:
    """The keyed operator a pass starts with."""

    kind: str  # process | reduce | co_process
    function: Any
    key_serializer: Any
    sorted_input: bool
    backend: tuple[str, dict[str, Any]] = ("hashmap", {})


@dataclass
class PassSpec:
    """Everything one ``mapInArrow`` pass does; pickled to the executors."""

    name: str
    input_enc: Encoding
    output_enc: Encoding
    config: dict[str, Any]
    sided: bool = False
    co_stage: Optional[tuple[str, Any]] = None
    keyed: Optional[KeyedSpec] = None
    chain: list[tuple[str, Any]] = field(default_factory=list)
    tags: frozenset[str] = frozenset()
    key_out: Optional[tuple[Any, Any]] = None  # (key_selector, key_serializer)
    combiner: Any = None
    max_parallelism: int = 128

    def extra_fields(self) -> list[pa.Field]:
        fields = []
        if self.tags:
            fields.append(pa.field(TAG, pa.string()))
        fields.append(pa.field(TS, pa.int64()))
        if self.key_out is not None:
            fields += [pa.field(KG, pa.int32()), pa.field(KEY, pa.binary())]
        return fields


def output_ddl(spec: PassSpec) -> str:
    """Spark DDL schema of a pass's output."""
    parts = []
    if spec.tags:
        parts.append(f"{TAG} string")
    parts.append(f"{TS} bigint")
    if spec.key_out is not None:
        parts += [f"{KG} int", f"{KEY} binary"]
    parts += spec.output_enc.spark_fields()
    return ", ".join(parts)


def make_backend(kind: str, options: dict[str, Any], key_serializer: Any, max_parallelism: int) -> Any:
    """A runtime keyed backend of ``kind`` (single_key, hashmap or rocksdb)."""
    if kind == "single_key":
        from ..state_store.backends.single_key import SingleKeyStateBackend

        return SingleKeyStateBackend(key_serializer, max_parallelism)
    if kind in ("hashmap", "heap"):
        from ..state_store.backends.heap import HashMapStateBackend

        return HashMapStateBackend(key_serializer, max_parallelism)
    if kind == "rocksdb":
        from ..state_store.backends.rocksdb import EmbeddedRocksDBStateBackend

        return EmbeddedRocksDBStateBackend(key_serializer, max_parallelism, **options)
    raise ValueError(f"unknown state backend {kind!r}")


def _operator_config(spec: PassSpec, subtask: int) -> OperatorConfig:
    c = dict(spec.config)
    mode = c.pop("mode")
    if spec.keyed is None and subtask >= c.get("parallelism", 1):
        # Non-keyed passes keep their input's partitioning, which may be wider than the
        # configured parallelism (e.g. after a union).
        c["parallelism"] = subtask + 1
    return OperatorConfig.for_mode(mode, subtask_index=subtask, operator_name=spec.name, **c)


def _subtask_index() -> int:
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
        return tc.partitionId() if tc is not None else 0
    except Exception:  # noqa: BLE001 - outside a Spark task
        return 0


def _make_keyed_operator(ks: KeyedSpec) -> Any:
    from ..operators import keyed

    if ks.kind == "process":
        return keyed.KeyedProcessOperator(ks.function)
    if ks.kind == "reduce":
        return keyed.ReduceOperator(ks.function)
    if ks.kind == "co_process":
        return keyed.KeyedCoProcessOperator(ks.function)
    if ks.kind == "window":  # keyed windows: function is an operators.windows.WindowSpec
        from ..operators.windows import WindowOperator

        return WindowOperator(ks.function)
    raise ValueError(f"unknown keyed operator kind {ks.kind!r}")


def run_pass(spec: PassSpec, batches: Iterator[pa.RecordBatch],
             subtask: Optional[int] = None) -> Iterator[pa.RecordBatch]:
    """Run ``spec`` over the Arrow batches of one partition, yielding output batches."""
    from ..operators.driver import run_hash_keyed, run_sorted_keyed

    config = _operator_config(spec, _subtask_index() if subtask is None else subtask)
    decode = make_decoder(spec.input_enc)
    writer = ColumnWriter(spec.output_enc, spec.extra_fields())
    keyed = spec.keyed is not None
    if not keyed and spec.co_stage is None and not spec.tags and not spec.sided:
        fast = compile_chain(spec.chain, spec.name)
        if fast is not None:
            yield from _run_fast(spec, fast, decode, writer, batches)
            return

    def records() -> Iterator[tuple[Any, ...]]:
        for b in batches:
            if b.num_rows == 0:
                continue
            values = decode(b)
            ts = b.column(TS).to_pylist()
            sides = b.column(SIDE).to_pylist() if spec.sided else itertools.repeat(0)
            if keyed:
                yield from zip(b.column(KEY).to_pylist(), ts, values, sides)
            else:
                yield from zip(values, ts, sides)

    cleanup = []
    outputs: Iterator[Output]
    if spec.keyed is not None:
        ks = spec.keyed
        backend_kind = "single_key" if ks.sorted_input else ks.backend[0]
        backend = make_backend(backend_kind, ks.backend[1], ks.key_serializer, spec.max_parallelism)
        operator = _make_keyed_operator(ks)
        operator.open(backend, config)
        cleanup += [operator.close, backend.close]
        if _fast_reduce_applies(ks, config):
            outputs = _sorted_reduce(ks.function, records(), spec.name)
        else:
            driver = run_sorted_keyed if ks.sorted_input else run_hash_keyed
            outputs = driver(operator, backend, records(), ks.key_serializer, config)
    elif spec.co_stage is not None:
        outputs = _run_co_stage(spec.co_stage, records(), config)
    else:
        outputs = (Output(None, v, t) for v, t, _ in records())

    if spec.chain:
        chain = StatelessChain(spec.chain)
        chain.open(config)
        cleanup.append(chain.close)
        outputs = _through_chain(chain, outputs)

    extractor = None
    if spec.key_out is not None:
        extractor = KeyExtractor(spec.key_out[0], spec.key_out[1], spec.max_parallelism,
                                 operator_name=spec.name)
    combiner = spec.combiner
    combined: dict[bytes, list[Any]] = {}
    tags = spec.tags
    has_tags = bool(tags)

    try:
        for out in outputs:
            tag = out.tag
            if tag is not None:
                if tag in tags:
                    batch = writer.append((tag, out.timestamp), out.value)
                    if batch is not None:
                        yield batch
                continue
            if extractor is not None:
                kg, key = extractor.extract(out.value)
                if combiner is not None:
                    slot = combined.get(key)
                    ts = out.timestamp
                    if slot is None:
                        combined[key] = [kg, out.value, ts]
                    elif ts is not None and slot[2] is not None and ts < slot[2]:
                        # keep the earliest record first, as the sorted fold would
                        slot[1] = combiner.reduce(out.value, slot[1])
                        slot[2] = ts
                    else:
                        slot[1] = combiner.reduce(slot[1], out.value)
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
    """BATCH reduce over sorted input, with a function that needs no runtime context."""
    if ks.kind != "reduce" or not ks.sorted_input or not config.is_batch:
        return False
    from ..state_store.functions import Function

    fn = ks.function
    return getattr(type(fn), "open", Function.open) is Function.open


def _sorted_reduce(function: Any, rows: Iterator[tuple[Any, ...]], name: str) -> Iterator[Output]:
    """FLIP-140 sorted reduce without per-record state access: one fold per run of equal keys,
    the final value emitted at the end of the key (timestamp MAX_WATERMARK, as ReduceOperator)."""
    from ..operators.base import MAX_WATERMARK, user_function_error

    reduce = function.reduce
    current: Any = _NO_KEY
    acc: Any = None
    for key, _ts, value, _side in rows:
        if key != current:
            if current is not _NO_KEY:
                yield Output(None, acc, MAX_WATERMARK)
            current, acc = key, value
            continue
        try:
            acc = reduce(acc, value)
        except Exception as exc:  # noqa: BLE001
            raise user_function_error(name, "reduce", value, exc) from exc
    if current is not _NO_KEY:
        yield Output(None, acc, MAX_WATERMARK)


_NO_KEY = object()


def _run_fast(spec: PassSpec, chain: Any, decode: Any, writer: ColumnWriter,
              batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The vectorised path: whole batches through plain-lambda stages (see fastpath.py)."""
    keyed_out = None
    if spec.key_out is not None:
        keyed_out = FastKeyedOutput(spec.key_out[0], spec.key_out[1], spec.max_parallelism,
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


def _flush_combined(combined: dict[bytes, list[Any]], writer: ColumnWriter) -> Iterator[pa.RecordBatch]:
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


def _run_co_stage(co_stage: tuple[str, Any], rows: Iterator[tuple[Any, ...]],
                  config: OperatorConfig) -> Iterator[Output]:
    from ..operators.co import CoStage

    stage = CoStage(co_stage[0], co_stage[1])
    stage.open(config)
    try:
        for value, ts, side in rows:
            yield from stage.process(value, ts, side)
    finally:
        stage.close()
