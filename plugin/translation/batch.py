"""BATCH translation (FLIP-134 semantics, FLIP-140 sorted execution).

Each keyed operator becomes: the upstream pass extracts ``_kg``/``_k`` (and
pre-aggregates reduce inputs per partition), Spark shuffles by key group and
sorts within partitions by ``(_kg, _k, _ts)`` with its spilling sort, and one
``mapInArrow`` pass runs the operator one key at a time on the single-key
backend, followed by any non-keyed stages fused into the same pass.
"""

from __future__ import annotations

import logging
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

from ..plan.config import resolve
from ..plan.graph import (
    BroadcastNode,
    ChainNode,
    CoChainNode,
    CoKeyedNode,
    FullPartitionNode,
    KeyByNode,
    KeyedNode,
    SideOutputNode,
    SinkNode,
    SourceNode,
    Transformation,
    UnionNode,
    consumers,
    is_keyed,
)
from ..plan.job import JobPlan
from ..results import CloseableIterator
from ..runtime.encoding import (
    KEY,
    KG,
    PICKLED,
    SIDE,
    TAG,
    TS,
    VALUE,
    Encoding,
    make_decoder,
    output_check,
    typed_encoding,
)
from ..runtime.fastpath import plain_callable
from ..runtime.passes import (
    COUNT,
    COUNTABLE_TYPES,
    RESTORE_COLUMNS,
    SP_COLUMNS,
    SP_META,
    KeyedSpec,
    PassSpec,
    folds_without_context,
    gc_paused,
    output_ddl,
    run_pass,
)
from ..runtime.spark_types import is_spark_mappable, python_from_spark
from ..spark_io.columns import col, count_all, lit
from ..spark_io.key_columns import native_key_bytes
from ..spark_io.progress import BatchProgress, Stage
from ..state_store.errors import GraphBuildError, JobExecutionError
from .failures import surfacing
from .rows import chain_before, chain_for_output, keyed_function, leading_rows
from .stream import Stream
from .tracing import Expr, ddl_of_field, field_plan, struct_type, to_column, trace

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BatchTranslator", "Stream"]

log = logging.getLogger("pyspark_datastream")


class BatchTranslator:
    """Turns a job graph into Spark DataFrames and runs its sinks, in BATCH mode."""

    mode = "BATCH"

    def __init__(self, plan: JobPlan, spark: SparkSession) -> None:
        self.plan = plan
        self.spark = spark
        self.job_name = plan.job_name
        self.nodes = list(plan.nodes)
        self.consumers = consumers(self.nodes)
        cfg = plan.config
        self.parallelism = plan.parallelism
        self.max_parallelism = plan.max_parallelism
        self.sorted_inputs = _bool(resolve(cfg, "execution.sorted-inputs.enabled", "BATCH"))
        self.pre_aggregate = _bool(resolve(cfg, "execution.batch.pre-aggregation.enabled", "BATCH"))
        self.backend = (plan.state_backend[0], dict(plan.state_backend[1]))
        self.pushdown = _bool(resolve(cfg, "execution.batch.native-pushdown.enabled", "BATCH"))
        self.op_config = {
            "mode": "BATCH",
            "processing_time_allow": str(resolve(cfg, "pipeline.processing-time.allow", "BATCH")),
            "processing_time_end_of_input": str(
                resolve(cfg, "pipeline.processing-time.end-of-input", "BATCH")),
            "parallelism": self.parallelism,
            "max_parallelism": self.max_parallelism,
            "job_parameters": cfg.to_dict(),
        }
        self._streams: dict[int, Stream] = {}
        self._tags: dict[int, frozenset[str]] = {}
        for n in self.nodes:
            if isinstance(n, SideOutputNode):
                parent = n.inputs[0]
                self._tags[parent.id] = self._tags.get(parent.id, frozenset()) | {n.tag_id}
        # Savepoints (translation/batch_savepoint.py): restore is checked here, before
        # anything runs; a write is set up by run_sinks(savepoint_path=...).
        from .batch_savepoint import BatchRestore

        self._savepoint_write: Any = None
        self.restore: Optional[BatchRestore] = BatchRestore.from_config(self, cfg)
        # Progress (plugin/progress.py): set up by run_sinks / collect; to_dataframe observes
        # nothing. ``progress`` is the list of stage rows, filled when the job finishes.
        self.batch_progress: Optional[BatchProgress] = None
        self.progress: list[dict[str, Any]] = []

    # -- public entry points ------------------------------------------------------
    def to_dataframe(self, node: Transformation) -> DataFrame:
        stream = self.translate(node)
        return self._typed_df(stream, node)

    def collect(self, node: Transformation) -> CloseableIterator:
        progress = self._start_progress()
        df, decode = self._collect_plan(node)
        stage = progress.add_stage("collect", "collect", [node.name], "Arrow to the driver")
        progress.planned()

        def records() -> Any:
            # Arrow transfer: one job, columnar; the result is held on the driver, so the
            # stage counts are known (and logged) before the first record is returned.
            ok = False
            try:
                with progress.action(f"collect of {node.name!r}"):
                    with surfacing(f"BATCH job {self.job_name!r}, collect of {node.name!r}"):
                        table = df.toArrow()
                    progress.complete(stage, rows_in=table.num_rows)
                ok = True
            finally:
                progress.finish(ok)
            for batch in table.to_batches():
                with gc_paused():  # a batch's thousands of acyclic records (see run_pass)
                    decoded = decode(batch)
                yield from decoded

        return CloseableIterator(records())

    def _collect_plan(self, node: Transformation) -> tuple[DataFrame, Any]:
        """The DataFrame to collect for ``node`` and the decoder of its Arrow batches."""
        stream = self.translate(node)
        df, enc = self._collectable_arrow(stream, node)
        decode, check = make_decoder(enc), output_check(node.output_type, enc, node.name)
        if check is None:
            return df, decode
        return df, lambda batch: check(decode(batch))

    def run_sinks(self, sinks: list[SinkNode], savepoint_path: Optional[str] = None) -> dict[str, int]:
        progress = self._start_progress()
        ok = False
        try:
            if savepoint_path is None:
                counts = self.run_planned_sinks(sinks)
            else:
                from .batch_savepoint import BatchSavepointWrite

                self._savepoint_write = write = BatchSavepointWrite(self, savepoint_path)
                try:
                    counts = self.run_planned_sinks(sinks, write)
                finally:
                    write.close()
                    self._savepoint_write = None
            ok = True
            return counts
        finally:
            progress.finish(ok)

    def run_planned_sinks(self, sinks: list[SinkNode], savepoint: Any = None) -> dict[str, int]:
        """Plan every sink (so the stage totals are known), then run one action per sink and
        finally write the savepoint (only after every sink succeeded: a failed job adds no
        savepoint version)."""
        progress = self.batch_progress
        assert progress is not None
        plans: list[tuple[SinkNode, Any, Any, Stage]] = []
        for sink in sinks:
            source = sink.inputs[0]
            if sink.kind == "print":
                df, decode = self._collect_plan(source)
                stage = progress.add_stage("sink", "print sink", [sink.name], "stdout")
            elif sink.kind == "delta":
                df, decode = self.to_dataframe(source), None
                stage = progress.add_stage(
                    "sink", "Delta sink", [sink.name],
                    f"Delta table {sink.options['path']}, mode {sink.options['mode']}")
            else:  # pragma: no cover - graph only creates the kinds above
                raise GraphBuildError(f"unknown sink kind {sink.kind!r}")
            plans.append((sink, df, decode, stage))
        sp_stage = None
        if savepoint is not None:
            sp_stage = progress.add_stage("savepoint", "savepoint", [],
                                          f"Delta table {savepoint.path}")
        progress.planned()
        counts: dict[str, int] = {}
        for sink, df, decode, stage in plans:
            with progress.action(f"sink {sink.name!r}"), \
                    surfacing(f"BATCH job {self.job_name!r}, sink {sink.name!r}"):
                if sink.kind == "print":
                    n = 0
                    prefix = sink.options.get("identifier")
                    for batch in df.toArrow().to_batches():
                        for record in decode(batch):
                            print(f"{prefix}> {record}" if prefix else str(record))
                            n += 1
                else:
                    from ..spark_io.delta_io import write_delta

                    n = write_delta(self.spark, df, sink.options["path"], sink.options["mode"])
                progress.complete(stage, rows_in=n)
            counts[sink.name] = n
        if savepoint is not None:
            with progress.action(f"savepoint write to {savepoint.path}"), \
                    surfacing(f"BATCH job {self.job_name!r}, savepoint write to {savepoint.path}"):
                version = savepoint.write()
                progress.complete(sp_stage, entries_out=savepoint.entry_count(),
                                  detail=f"Delta table {savepoint.path}, version {version}")
        return counts

    # -- progress (plugin/progress.py) --------------------------------------------------
    def _start_progress(self) -> BatchProgress:
        self.batch_progress = BatchProgress(self.job_name)
        self.progress = self.batch_progress.rows
        return self.batch_progress

    def action(self, label: str) -> AbstractContextManager[Any]:
        """Time a Spark action run during translation (savepoint staging, watermark)."""
        return self.batch_progress.action(label) if self.batch_progress is not None else nullcontext()

    def _new_stage(self, kind: str, label: str, names: list[str], detail: str = ""
                   ) -> Optional[int]:
        if self.batch_progress is None:
            return None
        return self.batch_progress.add_stage(kind, label, names, detail).index

    def _observe(self, df: DataFrame, stage: Optional[int], group: str,
                 metrics: dict[str, Any]) -> DataFrame:
        if self.batch_progress is None or stage is None:
            return df
        return self.batch_progress.observe(df, self.batch_progress.stage(stage), group, metrics)

    def _observe_pass(self, df_in: DataFrame, stream: Stream, spec: PassSpec,
                      name: str) -> tuple[DataFrame, Any]:
        """The pass's input observed (rows in; restored entries apart) and a function that
        observes its output (main rows; side-output rows and savepoint entries apart)."""
        if self.batch_progress is None:
            return df_in, lambda df: df
        from pyspark.sql import functions as F

        stage = stream.stage
        if stage is None:
            what = "pass"
            if spec.key_out is not None:
                what = "key_by with pre-aggregation" if spec.combiner is not None else "key_by"
            elif spec.tags:
                what = "side outputs"
            stage = self._new_stage("pass", what, [name or stream.name])
        elif spec.key_out is not None:
            st = self.batch_progress.stage(stage)
            assert st is not None
            st.label += "+key_by"
            if name and name not in st.names:
                st.names.append(name)
        one = F.lit(1)
        keyed = spec.keyed
        if keyed is not None and keyed.restore_meta is not None:
            restored = F.col(RESTORE_COLUMNS[0][0]).isNotNull()
            metrics_in = {"rows_in": F.count(F.when(~restored, one)),
                          "entries_in": F.count(F.when(restored, one))}
            if KG in df_in.columns:
                metrics_in["key_groups_in_approx"] = F.approx_count_distinct(
                    F.when(restored, F.col(KG)))
        else:
            metrics_in = {"rows_in": F.count(one)}
        df_in = self._observe(df_in, stage, "in", metrics_in)
        main = None
        side = None
        metrics_out: dict[str, Any] = {}
        if spec.writes_savepoint:
            sn = F.col(SP_COLUMNS[2][0])
            main = sn.isNull()
            metrics_out["entries_out"] = F.count(F.when(sn.isNotNull() & (sn != F.lit(SP_META)),
                                                        one))
        if spec.tags:
            tagged = F.col(TAG).isNotNull()
            side = tagged if main is None else (tagged & main)
            main = ~tagged if main is None else (~tagged & main)
            metrics_out["side_rows_out"] = F.count(F.when(side, one))
        metrics_out["rows_out"] = F.count(one) if main is None else F.count(F.when(main, one))

        def observe_out(df: DataFrame) -> DataFrame:
            return self._observe(df, stage, "out", metrics_out)

        return df_in, observe_out

    # -- translation ----------------------------------------------------------------
    def translate(self, node: Transformation) -> Stream:
        cached = self._streams.get(node.id)
        if cached is not None:
            return cached
        stream = self._translate(node)
        tags = self._tags.get(node.id)
        if (self._savepoint_write is not None and stream.keyed is not None
                and is_keyed(node)):
            # one run of the keyed pass gives both its records and its savepoint entries
            stream = self._savepoint_write.run_keyed(stream, node, tags or frozenset())
        elif tags or self._fan_out(node) > 1:
            stream = self._materialize_shared(stream, node, tags or frozenset())
        self._streams[node.id] = stream
        return stream

    def _fan_out(self, node: Transformation) -> int:
        return len([c for c in self.consumers.get(node.id, []) if not isinstance(c, SideOutputNode)])

    def _translate(self, node: Transformation) -> Stream:
        if isinstance(node, SourceNode):
            return self._source(node)
        if isinstance(node, ChainNode):
            parent = self.input_stream(node.inputs[0])
            native = self._native_map(node, parent) if self.pushdown else None
            if native is not None:
                return native
            stage = (node.stage, node.function)
            progress_stage = parent.stage if parent.pending else None
            if progress_stage is None:
                progress_stage = self._new_stage("pass", "pass", [node.name])
            elif self.batch_progress is not None:
                self.batch_progress.stages[progress_stage - 1].names.append(node.name)
            return replace(parent, chain=chain_before(parent) + (stage,), type_info=node.output_type,
                           name=node.name, stage=progress_stage)
        if isinstance(node, KeyByNode):
            # A KeyedStream used as a plain DataStream (e.g. keyed_stream.map(...)).
            return self.input_stream(node.inputs[0])
        if isinstance(node, KeyedNode):
            key_node = node.inputs[0]
            assert isinstance(key_node, KeyByNode)
            if self.pushdown and node.op == "reduce" and not self._savepoint_state(node):
                native = self._native_reduce(node, key_node)
                if native is not None:
                    return native
            field_keyed = self._field_keyed_input(node, key_node)
            if field_keyed is not None:
                return field_keyed
            function = keyed_function(node)
            combiner = function if (node.op == "reduce" and self.pre_aggregate) else None
            df, enc = self.keyed_input(key_node, node, combiner=combiner)
            df = self._keyed_shuffle(df, node, sided=False)
            spec = KeyedSpec(node.op, function, key_node.key_serializer, self.sorted_inputs,
                             self.backend, **self.savepoint_fields(node))
            keyed_stage = self.keyed_stage(node, node.op, sided=False)
            return Stream(df, enc, node.output_type, keyed=spec, name=node.name, stage=keyed_stage)
        if isinstance(node, CoKeyedNode):
            parts = []
            for side, key_node in enumerate(node.inputs):
                if not isinstance(key_node, KeyByNode):
                    raise GraphBuildError(f"{node.describe()} needs two keyed inputs")
                df, _ = self.keyed_input(key_node, node, force_pickled=True)
                parts.append(df.select(TS, KG, KEY, VALUE, lit(side).alias(SIDE)))
            serializers = [k.key_serializer for k in node.inputs]  # type: ignore[attr-defined]
            if serializers[0] != serializers[1]:
                raise GraphBuildError(
                    f"{node.describe()}: both inputs must use the same key type, got "
                    f"{serializers[0]!r} and {serializers[1]!r}"
                )
            df = self._keyed_shuffle(parts[0].unionByName(parts[1]), node, sided=True)
            spec = KeyedSpec("co_process", node.function, serializers[0], self.sorted_inputs,
                             self.backend, **self.savepoint_fields(node))
            keyed_stage = self.keyed_stage(node, "co_process", sided=True)
            return Stream(df, PICKLED, node.output_type, keyed=spec, sided=True, name=node.name,
                          stage=keyed_stage)
        if isinstance(node, BroadcastNode):  # see translation/broadcast.py
            from .broadcast import batch_broadcast

            return batch_broadcast(self, node)
        if isinstance(node, CoChainNode):
            co_parts = []
            for side, upstream in enumerate(node.inputs):
                df = self.materialize(self.input_stream(upstream), PICKLED, name=node.name)
                co_parts.append(df.select(TS, VALUE, lit(side).alias(SIDE)))
            return Stream(co_parts[0].unionByName(co_parts[1]), PICKLED, node.output_type,
                          co_stage=(node.stage, node.function), sided=True, name=node.name,
                          stage=self._new_stage("pass", f"connected {node.stage}", [node.name]))
        if isinstance(node, UnionNode):
            return self._union(node)
        if isinstance(node, FullPartitionNode):  # FLIP-380, see translation/partition.py
            from .partition import translate_full_partition

            return translate_full_partition(self, node)
        if isinstance(node, SideOutputNode):
            parent = self.translate(node.inputs[0])
            assert parent.tagged
            df = parent.df.filter(col(TAG) == node.tag_id).select(TS, VALUE)
            return Stream(df, PICKLED, node.output_type, name=node.name,
                          chain=leading_rows(node.output_type, node.name))
        raise GraphBuildError(f"{node.describe()} is not supported in BATCH mode")

    def input_stream(self, parent: Transformation) -> Stream:
        stream = self.translate(parent)
        if stream.tagged:
            main = stream.df.filter(col(TAG).isNull()).drop(TAG)
            return Stream(main, stream.enc, stream.type_info, name=stream.name)
        return stream

    def _materialize_shared(self, stream: Stream, node: Transformation,
                            tags: frozenset[str]) -> Stream:
        """Apply pending work once for a node read by several consumers or with side outputs."""
        if tags:
            df = self.materialize(stream, PICKLED, tags=tags, name=node.name)
            return Stream(df, PICKLED, stream.type_info, name=node.name, tagged=True)
        enc = self.preferred_encoding(stream.type_info)
        df = self.materialize(stream, enc, name=node.name)
        return Stream(df, enc, stream.type_info, name=node.name)

    def preferred_encoding(self, type_info: Any) -> Encoding:
        if type_info is not None and is_spark_mappable(type_info):
            return typed_encoding(type_info)
        return PICKLED

    def _source(self, node: SourceNode) -> Stream:
        spark = self.spark
        if node.kind == "collection":
            import pickle

            rows = [(None, pickle.dumps(v, pickle.HIGHEST_PROTOCOL)) for v in node.payload]
            df = spark.createDataFrame(rows, schema=f"{TS} bigint, {VALUE} binary")
            df = self._observe_source(df, node, f"collection of {len(rows):,} elements")
            return Stream(df, PICKLED, node.output_type, name=node.name)
        if node.kind == "dataframe":
            df = node.payload
            what = "DataFrame"
            if df.isStreaming:
                df = self._trigger_once(df, node)
                what = "streaming DataFrame read once (available-now)"
            cols = tuple(df.columns)
            enc = typed_encoding(node.output_type, columns=cols)  # ROW: records are Rows
            df = df.select(lit(None).cast("bigint").alias(TS), *[col(f"`{c}`") for c in cols])
            df = self._observe_source(df, node, what)
            return Stream(df, enc, node.output_type, name=node.name)
        raise GraphBuildError(f"{node.describe()}: unknown source kind {node.kind!r}")

    def _observe_source(self, df: DataFrame, node: SourceNode, what: str) -> DataFrame:
        if self.batch_progress is None:
            return df
        stage = self._new_stage("source", "source", [node.name], what)
        return self._observe(df, stage, "out", {"rows_out": count_all()})

    def _trigger_once(self, df: DataFrame, node: SourceNode) -> DataFrame:
        """A streaming DataFrame in BATCH: one availableNow run into staging Parquet."""
        staging = tempfile.mkdtemp(prefix="pyspark-datastream-trigger-once-")
        start = time.time()
        with self.action(f"trigger-once read of {node.name!r}"):
            query = (df.writeStream.format("parquet").option("path", f"{staging}/data")
                     .option("checkpointLocation", f"{staging}/checkpoint")
                     .trigger(availableNow=True).start())
            query.awaitTermination()
        if query.exception() is not None:
            raise JobExecutionError(f"{node.describe()}: trigger-once read failed: {query.exception()}")
        log.info("BATCH: streaming source %s read as one trigger-once batch in %.1f s",
                 node.name, time.time() - start)
        return self.spark.read.schema(df.schema).parquet(f"{staging}/data")

    def keyed_input(self, key_node: KeyByNode, consumer: Transformation,
                     combiner: Any = None, force_pickled: bool = False) -> tuple[DataFrame, Encoding]:
        parent = self.input_stream(key_node.inputs[0])
        if self.pushdown and not force_pickled:
            native = self._native_keyed_input(parent, key_node)
            if native is not None:
                return native, parent.enc
        enc = PICKLED if force_pickled else self.preferred_encoding(parent.type_info)
        df = self.materialize(parent, enc, key_out=(key_node.key_selector, key_node.key_serializer),
                               combiner=combiner, name=key_node.name, force=True)
        return df, enc

    # -- savepoints (see batch_savepoint.py) ------------------------------------------
    def _savepoint_state(self, node: Transformation) -> bool:
        """True when ``node``'s keyed state is written to or restored from a savepoint
        (then it must run as a real keyed operator: no native/fast reduce)."""
        if self._savepoint_write is not None:
            return True
        return self.restore is not None and self.restore.meta_for(node) is not None

    def savepoint_fields(self, node: Transformation) -> dict[str, Any]:
        """Extra KeyedSpec fields for savepoint write / restore (empty otherwise)."""
        fields: dict[str, Any] = {}
        if self._savepoint_write is not None:
            fields.update(self._savepoint_write.keyed_spec_fields())
        if self.restore is not None:
            meta = self.restore.meta_for(node)
            if meta is not None:
                fields["restore_meta"] = meta
        return fields

    def keyed_stage(self, node: Transformation, op: str, sided: bool) -> Optional[int]:
        """The progress stage of a keyed operator, naming its shuffle and sort."""
        if self.batch_progress is None:
            return None
        if self.sorted_inputs:
            order = "key, timestamp" + (", input side" if sided else "")
            detail = (f"shuffle into {self.parallelism} partitions by key group, "
                      f"sorted by {order}")
            label = f"sort+keyed {op}"
        else:
            detail = f"shuffle into {self.parallelism} partitions by key group, unsorted"
            label = f"keyed {op} (hash-based)"
        if self.restore is not None and self.restore.meta_for(node) is not None:
            detail += f", state restored from savepoint {self.restore.path}"
        if self._savepoint_write is not None:
            detail += ", state saved to the savepoint"
        return self._new_stage("keyed", label, [node.name], detail)

    def _keyed_shuffle(self, df: DataFrame, node: Transformation, sided: bool) -> DataFrame:
        """``_shuffle``, with the node's savepoint entries unioned in when restoring."""
        if self.restore is not None:
            restored = self.restore.union_state(df, node)
            if restored is not None:
                return restored
        return self._shuffle(df, sided)

    def _shuffle(self, df: DataFrame, sided: bool) -> DataFrame:
        """Shuffle by key group; sorted execution also sorts by (key, timestamp[, side]).

        Equal keys share a key group, so sorting by key bytes alone makes each key's records
        contiguous; the key-group column is not needed by the keyed pass and is dropped."""
        df = df.repartition(self.parallelism, col(KG))
        if self.sorted_inputs:
            order = [KEY, TS] + ([SIDE] if sided else [])
            df = df.sortWithinPartitions(*order)
        return df.drop(KG)

    def _union_inputs(self, node: UnionNode) -> list[Stream]:
        """The streams a union merges (STREAMING may stage some through files first)."""
        return [self.input_stream(p) for p in node.inputs]

    def _union(self, node: UnionNode) -> Stream:
        streams = self._union_inputs(node)
        encs = {s.enc for s in streams}
        enc = encs.pop() if len(encs) == 1 and all(not s.pending for s in streams) else None
        if enc is None:
            types = {repr(s.type_info) for s in streams}
            t = streams[0].type_info
            enc = self.preferred_encoding(t) if len(types) == 1 else PICKLED
        dfs = [self.materialize(s, enc, name=node.name) for s in streams]
        df = dfs[0]
        for other in dfs[1:]:
            df = df.unionByName(other)
        return Stream(df, enc, node.output_type, name=node.name)

    def materialize(self, stream: Stream, enc: Encoding, key_out: Any = None, combiner: Any = None,
                     tags: frozenset[str] = frozenset(), name: str = "", force: bool = False
                     ) -> DataFrame:
        """Run a stream's pending work (one mapInArrow) and return its DataFrame in ``enc``."""
        if not stream.pending and key_out is None and not tags and stream.enc == enc and not force:
            return stream.df
        spec = PassSpec(
            name=name or stream.name,
            input_enc=stream.enc,
            output_enc=enc,
            config=dict(self.op_config),
            sided=stream.sided,
            co_stage=stream.co_stage,
            keyed=stream.keyed,
            chain=chain_for_output(stream, enc, key_out),
            tags=tags,
            key_out=key_out,
            combiner=combiner,
            max_parallelism=self.max_parallelism,
        )
        ddl = output_ddl(spec)

        def fn(batches: Any) -> Any:
            return run_pass(spec, batches)

        df_in, observe_out = self._observe_pass(stream.df, stream, spec, name)
        return observe_out(df_in.mapInArrow(fn, ddl))

    # -- native pushdown -------------------------------------------------------------
    def _native_map(self, node: ChainNode, parent: Stream) -> Optional[Stream]:
        """A traceable map over a typed DataFrame becomes a native select."""
        if parent.pending or not parent.enc.typed or parent.tagged:
            return None
        if node.stage == "timestamps":
            return self._native_timestamps(node, parent)
        if node.stage != "map":
            return None
        fn = plain_callable(node.function)
        out_t = node.output_type
        if fn is None or out_t is None or not is_spark_mappable(out_t):
            return None
        traced = trace(fn, [struct_type(parent.enc)])
        if traced is None:
            return None
        out_enc = typed_encoding(out_t)
        exprs = traced if isinstance(traced, tuple) else (traced,)
        if out_enc.shape == "scalar":
            if isinstance(traced, tuple):
                return None
        elif len(exprs) != len(out_enc.columns):
            return None
        ddl = [f.split(" ", 1)[1] for f in out_enc.spark_fields()]
        cols = [to_column(e, [list(parent.enc.columns)]).cast(t).alias(c)
                for e, t, c in zip(exprs, ddl, out_enc.columns)]
        df = parent.df.select(col(TS), *cols)
        log.info("BATCH: %s runs as a native Spark projection", node.name)
        return Stream(df, out_enc, out_t, name=node.name)

    def _native_timestamps(self, node: ChainNode, parent: Stream) -> Optional[Stream]:
        """A timestamp assigner that reads one integer field becomes a native column."""
        from ..state_store.typeinfo import Types

        assigner = node.function
        if assigner is None:  # a strategy without assigner keeps record timestamps
            return replace(parent, name=node.name)
        fn = plain_callable(assigner)
        if fn is None:
            return None
        traced = trace(fn, [struct_type(parent.enc), Types.LONG()])
        if not isinstance(traced, Expr) or traced.op != "field" or traced.args[0] != 0 \
                or traced.type_info is None or traced.type_info.type_name not in ("LONG", "INT"):
            return None
        column = to_column(traced, [list(parent.enc.columns)]).cast("bigint")
        df = parent.df.withColumn(TS, column)
        return Stream(df, parent.enc, parent.type_info, name=node.name)

    def _key_field(self, parent: Stream, key_node: KeyByNode) -> Optional[tuple[int, str]]:
        """(index, type name) of the field a key selector reads, when it is a traceable lambda
        over a typed stream with nothing pending (the pushdowns below key by that column)."""
        if parent.pending or not parent.enc.typed or parent.tagged or parent.enc.shape == "scalar":
            return None
        key_fn = plain_callable(key_node.key_selector)
        if key_fn is None:
            return None
        key_expr = trace(key_fn, [struct_type(parent.enc)])
        if not isinstance(key_expr, Expr) or key_expr.op != "field" or key_expr.type_info is None:
            return None
        return key_expr.args[1], key_expr.type_info.type_name

    def _field_keyed_input(self, node: KeyedNode, key_node: KeyByNode) -> Optional[Stream]:
        """A keyed operator whose key selector reads one string/integer field of a typed
        stream: Spark shuffles and sorts by that column itself, and the keyed pass serializes
        each distinct key once (no key-bytes column). Not used when the operator's state goes to
        or comes from a savepoint (those rows are keyed by their stored bytes)."""
        if not (self.pushdown and self.sorted_inputs) or self._savepoint_state(node):
            return None
        parent = self.input_stream(key_node.inputs[0])
        key_field = self._key_field(parent, key_node)
        if key_field is None or key_field[1] not in ("STRING", "LONG", "INT", "SHORT", "BYTE"):
            return None
        index = key_field[0]
        column = col(f"`{parent.enc.columns[index]}`")
        function = keyed_function(node)
        counted = self._counts_identical(node, parent, function)
        df = parent.df.repartition(self.parallelism, column)
        if counted:
            # identical records (equal fields and timestamp) become one row and their number
            # (a hash aggregation, no extra shuffle): the reduce still folds every record in,
            # but Spark sorts, and Python decodes, each distinct one once
            df = df.groupBy(*[col(f"`{c}`") for c in (TS, *parent.enc.columns)]).agg(
                count_all().alias(COUNT))
        df = df.sortWithinPartitions(column, col(TS))
        spec = KeyedSpec(node.op, function, key_node.key_serializer, True,
                         self.backend, key_field=index, counted=counted)
        log.info("BATCH: %s is keyed by column %s", node.name, parent.enc.columns[index])
        name = parent.enc.columns[index]
        stage = self._new_stage(
            "keyed", f"sort+keyed {node.op}", [node.name],
            f"shuffle into {self.parallelism} partitions by column {name}, "
            + ("identical records counted, " if counted else "")
            + f"sorted by {name}, timestamp")
        return Stream(df, parent.enc, node.output_type, keyed=spec, name=node.name, stage=stage)

    def _counts_identical(self, node: KeyedNode, parent: Stream, function: Any) -> bool:
        """Whether a field-keyed BATCH reduce reads identical records counted: with
        pre-aggregation on, a reduce function that is a plain fold, and fields whose equal
        values decode to equal Python values (``COUNTABLE_TYPES``). Exact for any reduce
        function: records are immutable values and each is still folded in once."""
        if node.op != "reduce" or not self.pre_aggregate or not folds_without_context(function):
            return False
        types = parent.enc.type_info.get_field_types()  # type: ignore[union-attr]
        return all(t.type_name in COUNTABLE_TYPES for t in types)

    def _native_keyed_input(self, parent: Stream, key_node: KeyByNode) -> Optional[DataFrame]:
        """Key group and key bytes as native columns, for a key selector that reads one
        string or integer field of a typed stream (no Python pass before the shuffle)."""
        key_field = self._key_field(parent, key_node)
        if key_field is None:
            return None
        column = col(f"`{parent.enc.columns[key_field[0]]}`")
        key_bytes = native_key_bytes(column, key_field[1], key_node.key_serializer)
        if key_bytes is None:
            return None
        from pyspark.sql import functions as F

        df = parent.df.withColumn(KEY, key_bytes)
        df = df.withColumn(KG, F.pmod(F.crc32(F.col(KEY)), F.lit(self.max_parallelism)).cast("int"))
        log.info("BATCH: %s computes key groups natively", key_node.name)
        return df.select(TS, KG, KEY, *[F.col(f"`{c}`") for c in parent.enc.columns])

    def _native_reduce(self, node: KeyedNode, key_node: KeyByNode) -> Optional[Stream]:
        """sum/min/max/min_by/max_by, or a reduce lambda that is a field aggregation,
        over a typed stream keyed by one traceable field: a native groupBy().agg()."""
        from pyspark.sql import functions as F

        parent = self.input_stream(key_node.inputs[0])
        key_field = self._key_field(parent, key_node)
        if key_field is None:
            return None
        in_t = struct_type(parent.enc)
        key_idx = key_field[0]
        cols = list(parent.enc.columns)
        types = [t.type_name for t in in_t.get_field_types()]  # type: ignore[attr-defined]
        plan = field_plan(node.function, in_t, key_idx, types)
        if plan is None:
            return None
        kcol = cols[key_idx]
        stage = self._new_stage("aggregate", "native aggregation", [node.name],
                                f"Spark groupBy({kcol}).agg, partial aggregation before the shuffle")
        parent = replace(parent, df=self._observe(parent.df, stage, "in",
                                                  {"rows_in": F.count(F.lit(1))}))
        aggs = [F.max(TS).alias(TS)]
        kind = plan[0]
        if kind == "fields":
            for i, (c, how) in enumerate(zip(cols, plan[1])):
                if i == key_idx:
                    continue
                if how == "sum":
                    aggs.append(F.sum(f"`{c}`").cast(ddl_of_field(in_t, i)).alias(c))
                elif how == "min":
                    aggs.append(F.min(f"`{c}`").alias(c))
                elif how == "max":
                    aggs.append(F.max(f"`{c}`").alias(c))
                else:  # 'first': the earliest record's value (Flink keeps the first record)
                    aggs.append(F.min_by(f"`{c}`", F.col(TS)).alias(c))
            df = parent.df.groupBy(f"`{kcol}`").agg(*aggs)
        else:  # min_by / max_by: the whole record holding the extreme value, first on ties
            field_idx = plan[1]
            fn = F.min_by if kind == "min_by" else F.max_by
            order = F.struct(F.col(f"`{cols[field_idx]}`"),
                             (F.col(TS) if kind == "min_by" else -F.col(TS)))
            rec = F.struct(*[F.col(f"`{c}`") for c in cols])
            df = parent.df.groupBy(f"`{kcol}`").agg(F.max(TS).alias(TS), fn(rec, order).alias("_r"))
            df = df.select(TS, *[F.col(f"_r.`{c}`").alias(c) for c in cols])
        df = df.select(TS, *[F.col(f"`{c}`") for c in cols])
        df = self._observe(df, stage, "out", {"rows_out": F.count(F.lit(1))})
        log.info("BATCH: %s runs as a native Spark aggregation", node.name)
        return Stream(df, parent.enc, node.output_type, name=node.name)

    # -- results ----------------------------------------------------------------------
    def _typed_df(self, stream: Stream, node: Transformation) -> DataFrame:
        t = node.output_type
        if t is None or not is_spark_mappable(t):
            raise GraphBuildError(f"{node.describe()} has no Spark-mappable output_type")
        enc = stream.enc if (stream.enc.typed and not stream.pending) else typed_encoding(t)
        df = self.materialize(stream, enc, name=node.name)
        return df.select(*[col(f"`{c}`") for c in enc.columns])

    def _collectable_arrow(self, stream: Stream, node: Transformation) -> tuple[DataFrame, Encoding]:
        """The DataFrame to collect (payload columns only) and its encoding."""
        if stream.enc.typed and not stream.pending:
            enc = stream.enc
            return stream.df.select(*[col(f"`{c}`") for c in enc.columns]), enc
        return self.materialize(stream, PICKLED, name=node.name).select(VALUE), PICKLED

    def _collectable(self, stream: Stream, node: Transformation) -> tuple[DataFrame, Any]:
        """The DataFrame to collect and a converter from a list of its Spark Rows to the
        records (checked against the node's output_type when they travel pickled)."""
        df, enc = self._collectable_arrow(stream, node)
        if enc.typed:
            conv = python_from_spark(enc.type_info, enc.shape, enc.columns)
            return df, lambda rows: [conv(row) for row in rows]
        import pickle

        loads = pickle.loads
        check = output_check(node.output_type, enc, node.name) or (lambda records: records)
        return df, lambda rows: check([loads(row[0]) for row in rows])


def _bool(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes", "on")
