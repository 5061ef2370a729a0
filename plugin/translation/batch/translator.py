"""BATCH translation (FLIP-134 semantics, FLIP-140 sorted execution).

Each keyed operator becomes: the upstream pass extracts ``_kg``/``_k`` (and
pre-aggregates reduce inputs per partition), Spark shuffles by key group and
sorts within partitions by ``(_kg, _k, _ts)`` with its spilling sort, and one
``mapInArrow`` pass runs the operator one key at a time on the single-key
backend, followed by any non-keyed stages fused into the same pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from ...operators.exceptions import JobExecutionError
from ...plan import graph
from ...plan.config import RuntimeMode, resolve_boolean
from ...plan.graph import (
    KeyByNode,
    SinkNode,
    SourceNode,
    Transformation,
    consumers,
    is_keyed,
)
from ...plan.job import JobPlan
from ...results import CloseableIterator
from ...runtime.encoding import (
    KEY,
    KG,
    METRICS,
    PICKLED,
    SIDE,
    TAG,
    TS,
    VALUE,
    Encoding,
)
from ...runtime.passes import (
    COUNT,
    COUNTABLE_TYPES,
    KeyedSpec,
    PassSpec,
    gc_paused,
    output_ddl,
    run_pass,
)
from ...runtime.savepoint_rows import RESTORE_COLUMNS, SP_COLUMNS, SP_META
from ...runtime.sorted_reduce import folds_without_context
from ...spark_io.columns import col, count_all, lit
from ...spark_io.dataframes import to_arrow
from ...spark_io.key_columns import native_key_bytes
from ...spark_io.key_group_ranges import repartition_by_key_group_range
from ...spark_io.progress import METRICS_KEY, BatchProgress, Stage
from ...state_store.exceptions import GraphBuildError
from ...state_store.storage import Storage, normalize_uri
from ..failures import surfacing
from ..job_identity import configured_root
from ..pushdown import native_map, traced_key_field
from ..rows import keyed_function
from ..sinks import arrow_collectable, sink_kind
from ..source_schema import check_parquet_sources
from ..steps import (
    co_chain_input,
    dataframe_source,
    fan_out,
    fused_chain,
    materialize_shared,
    needs_pass,
    operator_config,
    pass_spec,
    same_key_serializer,
    side_output_tags,
    typed_df,
    union,
)
from ..stream import Stream
from ..tracing import ddl_of_field, field_plan, struct_type
from ..translator_base import TranslatorBase, kind_table
from .trigger_once import TriggerOnceReads

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from ...runtime.passes import Combiner, KeyOut
    from .savepoint import BatchSavepointWrite

__all__ = ["BatchTranslator", "Stream"]

log = logging.getLogger("pyspark_datastream")


class BatchTranslator(TranslatorBase):
    """Turns a job graph into Spark DataFrames and runs its sinks, in BATCH mode (the
    API's :class:`~.contract.Translator`)."""

    mode = RuntimeMode.BATCH

    def __init__(self, plan: JobPlan, spark: SparkSession, storage: Storage) -> None:
        self.plan = plan
        self.spark = spark
        #: the job's storage (its ``s3.*`` keys over the session's; spark_io/storage_conf.py)
        self.storage = storage
        self.job_name = plan.job_name
        self.nodes = list(plan.nodes)
        self.consumers = consumers(self.nodes)
        cfg = plan.config
        self.parallelism = plan.parallelism
        self.max_parallelism = plan.max_parallelism
        batch = RuntimeMode.BATCH
        self.sorted_inputs = resolve_boolean(cfg, "execution.sorted-inputs.enabled", batch)
        self.pre_aggregate = resolve_boolean(cfg, "execution.batch.pre-aggregation.enabled", batch)
        self.backend = plan.state_backend
        self.pushdown = resolve_boolean(cfg, "execution.batch.native-pushdown.enabled", batch)
        self.op_config = operator_config(cfg, batch, self.parallelism, self.max_parallelism)
        self._streams: dict[int, Stream] = {}
        self._tags = side_output_tags(self.nodes)
        #: streaming DataFrame sources, each read once available-now into staged Parquet
        self.trigger_once = TriggerOnceReads(self.job_name, self.action, storage,
                                             self._staging_root)
        # Savepoints: restore is checked here, before anything runs (savepoint_restore.py);
        # a write is set up by run_sinks(savepoint_path=...) (savepoint.py).
        from ..savepoint_restore import SavepointRestore

        self._savepoint_write: Optional[BatchSavepointWrite] = None
        self.restore: Optional[SavepointRestore] = SavepointRestore.from_config(
            self, cfg, self.op_config, self.sorted_inputs)
        # Progress (plugin/progress.py): set up by run_sinks / collect; to_dataframe observes
        # nothing. ``progress`` is the list of stage rows, filled when the job finishes.
        self.batch_progress: Optional[BatchProgress] = None
        self._progress: list[dict[str, Any]] = []

    @property
    def progress(self) -> list[dict[str, Any]]:
        """The stage rows of the last run_sinks / collect (filled when it finished)."""
        return self._progress

    # -- public entry points ------------------------------------------------------
    def to_dataframe(self, node: Transformation) -> DataFrame:
        """The DataFrame of ``node``'s records, which the caller runs: a Parquet source file
        whose column type differs from the read schema is named now (source_schema.py),
        not by Spark's failure of the caller's action."""
        check_parquet_sources(self.nodes, self.storage,
                              f"the to_dataframe() of BATCH job {self.job_name!r}")
        return typed_df(self, self.input_stream(node), node)

    def collect(self, node: Transformation, one_off: bool = False) -> CloseableIterator:
        """Run the job ending in ``node``; its records (``one_off``: BATCH keeps nothing
        either way: its streaming sources' staged reads go once the records are held)."""
        progress = self._start_progress()
        try:
            df, decode = arrow_collectable(self, node)
        except BaseException:
            self.release()
            raise
        stage = progress.add_stage("collect", "collect", [node.name], "Arrow to the driver")
        progress.planned()

        def records() -> Any:
            # Arrow transfer: one job, columnar; the result is held on the driver, so the
            # stage counts are known (and logged) before the first record is returned.
            ok = False
            try:
                with progress.action(f"collect of {node.name!r}"):
                    with surfacing(f"BATCH job {self.job_name!r}, collect of {node.name!r}"):
                        table = to_arrow(df)
                    progress.complete(stage, rows_in=table.num_rows)
                ok = True
            finally:
                progress.finish(ok)
                self.release()  # the records are on the driver: the staged reads may go
            for batch in table.to_batches():
                with gc_paused():  # a batch's thousands of acyclic records (see run_pass)
                    decoded = decode(batch)
                yield from decoded

        return CloseableIterator(records())

    def run_sinks(self, sinks: list[SinkNode], savepoint_path: Optional[str] = None
                 ) -> dict[str, int]:
        progress = self._start_progress()
        ok = False
        try:
            if savepoint_path is None:
                counts = self.run_planned_sinks(sinks)
            else:
                from .savepoint import BatchSavepointWrite

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

    def run_planned_sinks(self, sinks: list[SinkNode],
                          savepoint: Optional[BatchSavepointWrite] = None) -> dict[str, int]:
        """Plan every sink (so the stage totals are known), then run one action per sink and
        finally write the savepoint (only after every sink succeeded: a failed job adds no
        savepoint version)."""
        progress = self.batch_progress
        assert progress is not None
        plans: list[tuple[SinkNode, Callable[[], int], Stage]] = []
        for sink in sinks:
            kind = sink_kind(sink)
            detail, write_sink = kind.batch(self, sink)
            plans.append((sink, write_sink, progress.add_stage("sink", kind.title, [sink.name], detail)))
        sp_stage = None
        if savepoint is not None:
            sp_stage = progress.add_stage("savepoint", "savepoint", [],
                                          f"Delta table {savepoint.path}")
        progress.planned()
        counts: dict[str, int] = {}
        for sink, write_sink, stage in plans:
            with progress.action(f"sink {sink.name!r}"), \
                    surfacing(f"BATCH job {self.job_name!r}, sink {sink.name!r}"):
                n = write_sink()
                progress.complete(stage, rows_in=n)
            counts[sink.name] = n
        if savepoint is not None:
            with progress.action(f"savepoint write to {savepoint.path}"), \
                    surfacing(f"BATCH job {self.job_name!r}, savepoint write to {savepoint.path}"):
                version = savepoint.write()
                progress.complete(sp_stage, entries_out=savepoint.entry_count(),
                                  detail=f"Delta table {savepoint.path}, version {version}")
        return counts

    # -- the API's contract for running queries (contract.py): BATCH runs none ------------
    def release(self) -> None:
        """Remove what the job kept for its run only: its streaming sources' staged reads."""
        self.trigger_once.remove()

    def _staging_root(self) -> Optional[str]:
        """The checkpoint root (``execution.checkpointing.dir``, else Spark's), normalized:
        BATCH keeps no checkpoint, but stages its streaming sources' reads there."""
        root, where = configured_root(self.plan.config, self.spark)
        return normalize_uri(root, where) if root else None

    def plan_sinks(self, sinks: list[SinkNode]) -> None:
        """Nothing to check before a BATCH run (no checkpoint)."""

    def runs_detached(self) -> bool:
        """False: a BATCH job runs to its end."""
        return False

    def trigger_kind(self) -> Optional[str]:
        """None: BATCH has no streaming trigger."""
        return None

    def _no_queries(self, what: str) -> JobExecutionError:
        return JobExecutionError(
            f"{what}: BATCH job {self.job_name!r} runs to its end and has no streaming queries")

    def start_sinks(self, sinks: list[SinkNode]) -> list[tuple[str, Any]]:
        """Refused: a BATCH job runs to its end (``run_sinks``)."""
        raise self._no_queries("start_sinks")

    def log_query_progress(self, name: str, query: StreamingQuery) -> None:
        """Refused: no streaming queries."""
        raise self._no_queries(f"log_query_progress({name!r})")

    def query_holds_state(self, name: str) -> bool:
        """Refused: no streaming queries."""
        raise self._no_queries(f"query_holds_state({name!r})")

    def query_checkpoint(self, name: str) -> str:
        """Refused: no streaming queries."""
        raise self._no_queries(f"query_checkpoint({name!r})")

    def query_staging(self, name: str) -> str:
        """Refused: no streaming queries."""
        raise self._no_queries(f"query_staging({name!r})")

    def write_savepoint_at(self, path: str, batch_ids: dict[str, int],
                           progress: list[dict[str, Any]]) -> int:
        """Refused: a BATCH savepoint is written by ``run_sinks(savepoint_path=...)``."""
        raise self._no_queries(f"write_savepoint_at({path!r})")

    # -- progress (plugin/progress.py) --------------------------------------------------
    def _start_progress(self) -> BatchProgress:
        self.batch_progress = BatchProgress(self.job_name, self.mode)
        self._progress = self.batch_progress.rows
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
                      name: str) -> tuple[DataFrame, Callable[[DataFrame], DataFrame]]:
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
        if spec.metrics_column:  # the tasks' metrics rows: taken, then filtered out
            record = F.col(METRICS).isNull()
            main = record if main is None else (main & record)
            # one string of JSON lines (json.dumps escapes newlines): an array observed by
            # pyspark 4.0/4.1 reaches Python as a JVM object, not a list
            metrics_out[METRICS_KEY] = F.concat_ws("\n", F.collect_list(F.col(METRICS)))
        metrics_out["rows_out"] = F.count(one) if main is None else F.count(F.when(main, one))

        def observe_out(df: DataFrame) -> DataFrame:
            df = self._observe(df, stage, "out", metrics_out)
            if spec.metrics_column:
                df = df.filter(F.col(METRICS).isNull()).drop(METRICS)
            return df

        return df_in, observe_out

    # -- translation ----------------------------------------------------------------
    def _kept(self, stream: Stream, node: Transformation, tags: frozenset[str]) -> Stream:
        if self._savepoint_write is not None and stream.keyed is not None and is_keyed(node):
            # one run of the keyed pass gives both its records and its savepoint entries
            return self._savepoint_write.run_keyed(stream, node, tags,
                                                   fan_out(self.consumers, node) > 1)
        if tags or fan_out(self.consumers, node) > 1:
            return materialize_shared(self, stream, node, tags)
        return stream

    # -- one method per node kind (_BY_KIND, at the end of the class) ---------------------
    def _chain(self, node: graph.ChainNode) -> Stream:
        parent = self.input_stream(node.inputs[0])
        native = native_map(node, parent) if self.pushdown else None
        if native is not None:
            return native
        progress_stage = parent.stage if parent.pending else None
        if progress_stage is None:
            progress_stage = self._new_stage("pass", "pass", [node.name])
        elif self.batch_progress is not None:
            self.batch_progress.stages[progress_stage - 1].names.append(node.name)
        return fused_chain(parent, node, progress_stage)

    def _keyed(self, node: graph.KeyedNode) -> Stream:
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
        combiner = (function if (node.op == "reduce" and self.pre_aggregate
                                 and folds_without_context(function)) else None)
        df, enc = self.keyed_input(key_node, node, combiner=combiner)
        df = self._keyed_shuffle(df, node, sided=False)
        spec = KeyedSpec(node.op, function, key_node.key_serializer, self.sorted_inputs,
                         self.backend, name=node.name, **self.savepoint_fields(node))
        keyed_stage = self.keyed_stage(node, node.op, sided=False)
        return Stream(df, enc, node.output_type, keyed=spec, name=node.name, stage=keyed_stage)

    def _co_keyed(self, node: graph.CoKeyedNode) -> Stream:
        parts = []
        for side, key_node in enumerate(node.inputs):
            if not isinstance(key_node, KeyByNode):
                raise GraphBuildError(f"{node.describe()} needs two keyed inputs")
            df, _ = self.keyed_input(key_node, node, force_pickled=True)
            parts.append(df.select(TS, KG, KEY, VALUE, lit(side).alias(SIDE)))
        serializer = same_key_serializer(node)
        df = self._keyed_shuffle(parts[0].unionByName(parts[1]), node, sided=True)
        spec = KeyedSpec("co_process", node.function, serializer, self.sorted_inputs,
                         self.backend, name=node.name, **self.savepoint_fields(node))
        keyed_stage = self.keyed_stage(node, "co_process", sided=True)
        return Stream(df, PICKLED, node.output_type, keyed=spec, sided=True, name=node.name,
                      stage=keyed_stage)

    def _broadcast(self, node: graph.BroadcastNode) -> Stream:
        from .broadcast import batch_broadcast  # the pattern: translation/broadcast.py

        return batch_broadcast(self, node)

    def _co_chain(self, node: graph.CoChainNode) -> Stream:
        return Stream(co_chain_input(self, node), PICKLED, node.output_type,
                      co_stage=(node.stage, node.function, node.name), sided=True, name=node.name,
                      stage=self._new_stage("pass", f"connected {node.stage}", [node.name]))

    def _union(self, node: graph.UnionNode) -> Stream:
        return union(self, node, [self.input_stream(p) for p in node.inputs])

    def _full_partition(self, node: graph.FullPartitionNode) -> Stream:
        from .partition import translate_full_partition  # FLIP-380

        return translate_full_partition(self, node)

    def _collection_source(self, node: SourceNode) -> Stream:
        import pickle

        rows = [(None, pickle.dumps(v, pickle.HIGHEST_PROTOCOL)) for v in node.payload]
        df = self.spark.createDataFrame(rows, schema=f"{TS} bigint, {VALUE} binary")
        df = self._observe_source(df, node, f"collection of {len(rows):,} elements")
        return Stream(df, PICKLED, node.output_type, name=node.name)

    def _dataframe_source(self, node: SourceNode) -> Stream:
        df = node.payload
        what = "DataFrame"
        if df.isStreaming:
            df = self.trigger_once.read(df, node)
            what = "streaming DataFrame read once (available-now)"
        stream = dataframe_source(df, node)
        return replace(stream, df=self._observe_source(stream.df, node, what))

    def _kafka_source(self, node: SourceNode) -> Stream:
        from ..kafka import kafka_source

        stream = kafka_source(self.spark, node, streaming=False)
        where = node.payload["topics"] or node.payload["topic_pattern"]
        return replace(stream, df=self._observe_source(
            stream.df, node, f"Kafka {where} up to the latest offsets"))

    #: what each kind of source becomes (a kind not listed is refused by :meth:`_source`)
    _SOURCES: ClassVar[dict[str, Callable[[Any, SourceNode], Stream]]] = {
        "collection": _collection_source,
        "dataframe": _dataframe_source,
        "kafka": _kafka_source,
    }

    def _observe_source(self, df: DataFrame, node: SourceNode, what: str) -> DataFrame:
        if self.batch_progress is None:
            return df
        stage = self._new_stage("source", "source", [node.name], what)
        return self._observe(df, stage, "out", {"rows_out": count_all()})

    def keyed_input(self, key_node: KeyByNode, consumer: Transformation,
                    combiner: Optional[Combiner] = None, force_pickled: bool = False
                   ) -> tuple[DataFrame, Encoding]:
        parent = self.input_stream(key_node.inputs[0])
        if self.pushdown and not force_pickled:
            native = self._native_keyed_input(parent, key_node)
            if native is not None:
                return native, parent.enc
        enc = PICKLED if force_pickled else self.preferred_encoding(parent.type_info)
        df = self.materialize(parent, enc, key_out=(key_node.key_selector, key_node.key_serializer),
                               combiner=combiner, name=key_node.name, force=True)
        return df, enc

    # -- savepoints (see savepoint.py) ------------------------------------------
    def _savepoint_state(self, node: Transformation) -> bool:
        """True when ``node``'s keyed state is written to or restored from a savepoint
        (then it must run as a real keyed operator: no native/fast reduce)."""
        return self._savepoint_write is not None or self._restores(node)

    def _restores(self, node: Transformation) -> bool:
        """True when ``node``'s keyed state is restored from the job's savepoint."""
        return self.restore is not None and self.restore.meta_for(node) is not None

    def savepoint_fields(self, node: Transformation) -> dict[str, Any]:
        """Extra KeyedSpec fields for savepoint write / restore (empty otherwise)."""
        fields: dict[str, Any] = {}
        if self._savepoint_write is not None:
            fields.update(self._savepoint_write.keyed_spec_fields(node))
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
        df = repartition_by_key_group_range(df, KG, self.parallelism, self.max_parallelism)
        if self.sorted_inputs:
            order = [KEY, TS] + ([SIDE] if sided else [])
            df = df.sortWithinPartitions(*order)
        return df.drop(KG)

    def materialize(self, stream: Stream, enc: Encoding, key_out: Optional[KeyOut] = None,
                    combiner: Optional[Combiner] = None, tags: frozenset[str] = frozenset(),
                    name: str = "", force: bool = False) -> DataFrame:
        """Run a stream's pending work (one mapInArrow) and return its DataFrame in ``enc``."""
        if not needs_pass(stream, enc, key_out, tags, force):
            return stream.df
        spec = pass_spec(self, stream, enc, key_out, combiner, tags, name)
        spec.metrics_column = self.batch_progress is not None
        ddl = output_ddl(spec)

        def fn(batches: Any) -> Any:
            return run_pass(spec, batches)

        df_in, observe_out = self._observe_pass(stream.df, stream, spec, name)
        return observe_out(df_in.mapInArrow(fn, ddl))

    # -- native pushdown (the map and key-field pushdowns both modes use: pushdown.py) ----
    def _field_keyed_input(self, node: graph.KeyedNode, key_node: KeyByNode) -> Optional[Stream]:
        """A keyed operator whose key selector reads one string/integer field of a typed
        stream: Spark shuffles and sorts by that column itself, and the keyed pass serializes
        each distinct key once (no key-bytes column). Not used when the operator's state comes
        from a savepoint (restored rows are keyed by their stored bytes); a savepoint written
        takes each key's bytes from that serialization."""
        if not (self.pushdown and self.sorted_inputs) or self._restores(node):
            return None
        parent = self.input_stream(key_node.inputs[0])
        key_field = traced_key_field(parent, key_node)
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
                         self.backend, key_field=index, counted=counted, name=node.name,
                         **self.savepoint_fields(node))
        log.info("BATCH: %s is keyed by column %s", node.name, parent.enc.columns[index])
        name = parent.enc.columns[index]
        stage = self._new_stage(
            "keyed", f"sort+keyed {node.op}", [node.name],
            f"shuffle into {self.parallelism} partitions by column {name}, "
            + ("identical records counted, " if counted else "")
            + f"sorted by {name}, timestamp"
            + (", state saved to the savepoint" if self._savepoint_write is not None else ""))
        return Stream(df, parent.enc, node.output_type, keyed=spec, name=node.name, stage=stage)

    def _counts_identical(self, node: graph.KeyedNode, parent: Stream, function: Any) -> bool:
        """Whether a field-keyed BATCH reduce reads identical records counted: with
        pre-aggregation on, a reduce function that is a plain fold, and fields whose equal
        values decode to equal Python values (``COUNTABLE_TYPES``). Exact for any reduce
        function: records are immutable values and each is still folded in once."""
        if node.op != "reduce" or not self.pre_aggregate or not folds_without_context(function):
            return False
        types = parent.enc.field_types()  # a typed input (key_field_of)
        return all(t.type_name in COUNTABLE_TYPES for t in types)

    def _native_keyed_input(self, parent: Stream, key_node: KeyByNode) -> Optional[DataFrame]:
        """Key group and key bytes as native columns, for a key selector that reads one
        string or integer field of a typed stream (no Python pass before the shuffle)."""
        key_field = traced_key_field(parent, key_node)
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

    def _native_reduce(self, node: graph.KeyedNode, key_node: KeyByNode) -> Optional[Stream]:
        """sum/min/max/min_by/max_by, or a reduce lambda that is a field aggregation,
        over a typed stream keyed by one traceable field: a native groupBy().agg()."""
        from pyspark.sql import functions as F

        parent = self.input_stream(key_node.inputs[0])
        key_field = traced_key_field(parent, key_node)
        if key_field is None:
            return None
        in_t = struct_type(parent.enc)
        key_idx = key_field[0]
        cols = list(parent.enc.columns)
        types = [t.type_name for t in in_t.get_field_types()]
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
            # F.col, not the name: Spark Connect 3.5 binds a name to the plan id of the
            # observed DataFrame, which its analyzer then fails to find
            df = parent.df.groupBy(F.col(f"`{kcol}`")).agg(*aggs)
        else:  # min_by / max_by: the whole record holding the extreme value, first on ties
            field_idx = plan[1]
            fn = F.min_by if kind == "min_by" else F.max_by
            order = F.struct(F.col(f"`{cols[field_idx]}`"),
                             (F.col(TS) if kind == "min_by" else -F.col(TS)))
            rec = F.struct(*[F.col(f"`{c}`") for c in cols])
            df = parent.df.groupBy(F.col(f"`{kcol}`")).agg(
                F.max(TS).alias(TS), fn(rec, order).alias("_r"))
            df = df.select(TS, *[F.col(f"_r.`{c}`").alias(c) for c in cols])
        df = df.select(TS, *[F.col(f"`{c}`") for c in cols])
        df = self._observe(df, stage, "out", {"rows_out": F.count(F.lit(1))})
        log.info("BATCH: %s runs as a native Spark aggregation", node.name)
        return Stream(df, parent.enc, node.output_type, name=node.name)

    #: what each node kind becomes (a kind not listed is refused by :meth:`_translate`)
    _BY_KIND: ClassVar[dict[type, Callable[[Any, Any], Stream]]] = kind_table(vars())
