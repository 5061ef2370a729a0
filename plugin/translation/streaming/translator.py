"""STREAMING translation: Spark Structured Streaming with Flink's STREAMING semantics.

Per-stage mapping: every keyed operator is ``groupBy("_kgr").applyInPandasWithState(...)``
(``spark_io/key_group_ranges.py``), one call per key group per micro-batch, its own query
reading a keyed ancestor's output from staged files (``stages.py``). The one-query mapping
chains each keyed stage as a ``transformWithStateInPandas`` in one query (``one_query.py``). Non-keyed stages
are the fused ``mapInArrow`` passes of BATCH (``steps.py``); queries run through
``queries.py``; savepoints through ``savepoint.py``. The whole mapping:
docs/spark-mapping.md.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

from ...plan import graph
from ...plan.config import RuntimeMode, parse_trigger, resolve_boolean, streaming_trigger
from ...plan.graph import (
    KeyByNode,
    SinkNode,
    SourceNode,
    Transformation,
    consumers,
    full_window_streaming_error,
    is_keyed,
    upstream,
)
from ...results import CloseableIterator
from ...runtime.encoding import KEY, KG, PICKLED, SIDE, TS, VALUE, Encoding
from ...runtime.group_frames import SEQ, TypedInput
from ...runtime.group_state import END_OF_INPUT_MS, GroupSpec, stream_pass
from ...runtime.inband import WATERMARK_TAG
from ...runtime.passes import PassSpec, output_ddl
from ...spark_io.columns import lit
from ...spark_io.key_group_ranges import stateful_partitions
from ...state_store.exceptions import ConfigurationError, GraphBuildError
from ...state_store.storage import Storage
from ..evolution import stage_names
from ..job_identity import (
    TO_DATAFRAME_KEEPS,
    JobCheckpoint,
    configured_root,
    describe_graph,
    recorded_mapping,
)
from ..pushdown import native_map
from ..query_ids import is_connect
from ..rows import keyed_function
from ..sinks import sink_kind
from ..source_schema import check_parquet_sources
from ..steps import (
    collectable,
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
    union_all,
)
from ..stream import Stream, arrow_pass
from ..translator_base import kind_table
from .branches import Branches, SharedPaths, joined_branches, shared_paths, tagged_union
from .carried import carry_plan, plan_part, query_exits, with_carriers
from .inband import chained, forwarding, inband_strategy
from .keyed import own_watermark
from .one_query import (
    QUERY,
    branch_watermark,
    fans_out,
    from_keyed,
    meets_keyed,
    one_query_mapping,
    one_query_placement,
    state_store_conf,
)
from .queries import (
    arrow_batch_rows,
    collect_query,
    end_of_input_stream,
    log_query_progress,
    metrics_target,
    progress_row,
    published_metrics,
    run_query,
)
from .sources import collection_source, dataframe_stream_source, kafka_stream_source
from .stages import KeyedStages

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from ...plan.job import JobPlan
    from ...runtime.passes import Combiner, KeyOut
    from .savepoint import StreamingSavepointWrite

__all__ = ["StreamingTranslator", "END_OF_INPUT_MS", "parse_trigger", "progress_row"]

log = logging.getLogger("pyspark_datastream")


class StreamingTranslator(KeyedStages):
    """Turns a job graph into Spark streaming queries and runs them (STREAMING mode; the
    API's :class:`~.contract.Translator`)."""

    mode = RuntimeMode.STREAMING

    def __init__(self, plan: JobPlan, spark: SparkSession, storage: Storage) -> None:
        from ...spark_io.versions import check_streaming_versions

        check_streaming_versions()  # a pyspark/pyarrow pair that cannot run: before anything
        self.plan = plan
        self.spark = spark
        self.job_name = job_name = plan.job_name
        #: this run of the job: workers keep its operators' function instances under it
        self.run_id = uuid.uuid4().hex
        self.passes = 0  #: passes built so far (_long_lived)
        self._metrics_publish: Optional[tuple[Storage, str]] = None  # (metrics_publish)
        self._user_query = False  # to_dataframe(): the user runs the job's last query
        self.nodes = nodes = list(plan.nodes)
        self.consumers = consumers(nodes)
        cfg = plan.config
        self.parallelism = plan.parallelism
        self.max_parallelism = plan.max_parallelism
        self.backend = plan.state_backend
        #: the whole job as one query, keyed stages chained in it (one_query.py)
        root, where = configured_root(cfg, self.spark)  # job_identity.py: the job folder
        carrying = carry_plan(nodes, self.consumers)  # the keyed stages that would carry
        self.one_query = one_query_mapping(cfg, self.mode, spark, nodes, self.consumers, carrying,
                                           recorded_mapping(storage, root, where, job_name))
        #: session settings the job's queries start with (one_query.state_store_conf)
        self.query_conf = state_store_conf(spark) if self.one_query else {}
        #: the one query writes several sinks (one_query_sinks.py)
        self.fanned_out = self.one_query and fans_out(nodes, self.consumers)
        # the map and key-field pushdowns (../pushdown.py, pushdown.py)
        self.pushdown = resolve_boolean(cfg, "execution.streaming.native-pushdown.enabled",
                                        self.mode)
        #: key groups on Spark partitions in contiguous ranges (spark_io/key_group_ranges.py):
        #: the number of partitions the stateful operators run with, 0 when the session's
        #: number is not a number (Spark's hash of the key group places them then)
        self.range_partitions = stateful_partitions(spark)
        #: PySpark cuts a stateful operator's output into Arrow batches by this row count
        self.arrow_batch_rows = arrow_batch_rows(spark)
        self._streams: dict[int, Stream] = {}
        #: keyed stage id -> the strategy it takes in band, the keyed stage above forwarding
        #: it its watermark (inband.py)
        self.inband_strategies: dict[int, graph.Transformation] = {}
        self.forwarded: dict[int, graph.KeyedNode] = {}
        #: keyed stage id -> the paths from the stage above a union joins (branches.py)
        self.branched: dict[int, Branches] = {}
        #: union id -> the keyed stages it reads along several inputs (branches.py)
        self.shared: dict[int, list[SharedPaths]] = {}
        tags = side_output_tags(nodes)
        if self.one_query:
            self.branched = {n.id: b for n in nodes if (b := joined_branches(n)) is not None}
            self.shared = shared_paths(nodes, self.consumers, plan_part(query_exits(nodes)))
            self.inband_strategies = {n.id: s for n in nodes
                                      if (s := inband_strategy(n)) is not None}
            self.forwarded = forwarding(nodes)
            for above in self.forwarded.values():  # it hands its watermark on, tagged
                tags[above.id] = tags.get(above.id, frozenset()) | {WATERMARK_TAG}
        #: carrying keyed stage id -> how it carries (carried.with_carriers)
        self._tags, self.carriers = with_carriers(tags, nodes, carrying, self.fanned_out)
        self.op_config = operator_config(cfg, self.mode, self.parallelism, self.max_parallelism)
        # Restore (savepoint.py) is checked here, before anything runs, by
        # savepoint_restore.py's check: the program's operators are opened, with this job's
        # configuration, on a single-key backend to list their states. A STREAMING restore
        # loads each key group's entries into its state and needs no sorted inputs.
        from ..savepoint_restore import SavepointRestore

        self.restore: Optional[SavepointRestore] = SavepointRestore.from_config(
            self, cfg, self.op_config, sorted_inputs=True)
        if not self.backend.backend_type().streaming:
            raise GraphBuildError(
                f"STREAMING does not run on the {self.backend.backend_type().name} state "
                f"backend; state.backend.type is {self.backend.reference!r}"
            )
        self.trigger = streaming_trigger(
            cfg, self.mode, bounded=all(n.bounded for n in nodes if isinstance(n, SourceNode)))
        #: the storage layer of every file the job writes outside Spark (the job's, built by
        #: the environment: spark_io/storage_conf.py); pickled to executors with specs
        self.storage = storage
        #: node id -> a stateful operator's identity (evolution.py): its queries, files, state
        self.stage_names = stage_names(nodes)
        self.job = JobCheckpoint(
            job_name, root, where, describe_graph(nodes, self.max_parallelism, self.backend.reference),
            self.storage, nodes=nodes, program=self._program_states,
            ignore_unclaimed=bool(cfg.get_boolean("execution.savepoint.ignore-unclaimed-state",
                                                  False)),
            placement={"parallelism": self.parallelism, "partitions": self.range_partitions,
                       **(one_query_placement(self.stage_names, nodes) if self.one_query else {})})
        self.bounded = all(n.bounded for n in nodes if isinstance(n, SourceNode))
        #: a bounded source's number among the job's sources (sources.py: its folder)
        self.source_ordinals = {n.id: i for i, n in enumerate(
            n for n in nodes if isinstance(n, SourceNode))}
        self._prerequisites: list[tuple[str, Any]] = []  # (query name, DataStreamWriter)
        self._ran: set[str] = set()
        self._progress: list[dict[str, Any]] = []  # see the property
        #: savepoint support (savepoint.py): the write of this run, the
        #: applyInPandasWithState spec of every keyed node (by node id)
        self._savepoint_run = None
        self.group_specs: dict[int, GroupSpec] = {}
        #: query name -> root node of the DataFrame it runs (every query, for job clients)
        self.query_roots: dict[str, Transformation] = {}
        #: keyed node id -> how its function reads its native keyed input
        self._typed_inputs: dict[int, TypedInput] = {}
        #: keyed node id -> the query staging its output for several consumers
        self.staged_outputs: dict[int, str] = {}
        #: when a list, run_query only starts each query and appends ``(name, query)``
        #: (:meth:`start_sinks`) instead of waiting for it
        self.async_queries: Optional[list[tuple[str, Any]]] = None

    def _program_states(self) -> dict[str, tuple[Any, list[Any]]]:
        """Stage name -> (key serializer, states) of every stateful operator (evolution.py)."""
        from ..savepoint_restore import program_states

        return program_states(self.nodes, self.op_config, self.max_parallelism,
                              lambda n: self.stage_names[n.id])

    @property
    def progress(self) -> list[dict[str, Any]]:
        """One :func:`progress_row` per micro-batch of every query run so far."""
        return self._progress

    # -- directories -------------------------------------------------------------------
    def job_folder(self) -> str:
        """This job's folder (job_identity.py: ``<root>/<job name>``, or a temporary one for
        a job that may run on one); raises CheckpointRootError when it needs a root."""
        return self.job.folder()

    def plan_sinks(self, sinks: list[SinkNode]) -> None:
        """Before anything runs: a job writing only print() sinks may run on a temporary
        checkpoint; durable sinks need a root (CheckpointRootError)."""
        durable = any(sink_kind(s).durable for s in sinks)
        self.job.plan("never" if durable else "if-no-root",
                      "the checkpoints of its sinks' queries")
        self.job.require()

    def release(self) -> None:
        """The job has ended: remove its temporary checkpoint, if it ran on one."""
        self.job.release()

    # -- public entry points -------------------------------------------------------------
    def to_dataframe(self, node: Transformation) -> DataFrame:
        """A streaming DataFrame of ``node``'s records (upstream keyed stages run first)."""
        self.job.plan("never", TO_DATAFRAME_KEEPS)  # the user's checkpoint points into it
        self._user_query = True
        # the user runs the query: a source file that does not fit its declared schema is
        # named now (source_schema.py), not by Spark's failure of the user's query
        check_parquet_sources(self.nodes, self.storage,
                              f"the to_dataframe() of STREAMING job {self.job_name!r}")
        df = typed_df(self, self.input_stream(node), node)
        self.run_prerequisites()
        for key, value in self.query_conf.items():  # the user starts the query
            self.spark.conf.set(key, value)
        return df

    def collect(self, node: Transformation, one_off: bool = False) -> CloseableIterator:
        """Run the job ending in ``node`` and its collect query; its records (``one_off``:
        on a temporary checkpoint, else under the checkpoint root when there is one)."""
        self.job.plan("always" if one_off else "if-no-root", "its collect query's checkpoint")
        try:
            return self._collect(node)
        finally:
            self.release()

    def _collect(self, node: Transformation) -> CloseableIterator:
        stream = self.input_stream(node)  # its main output: never its side outputs
        df, decode = collectable(self, stream, node)
        self.run_prerequisites()
        return CloseableIterator(iter(decode(collect_query(self, df))))

    def run_sinks(self, sinks: list[SinkNode], savepoint_path: Optional[str] = None
                 ) -> dict[str, int]:
        self.plan_sinks(sinks)
        if savepoint_path is None:
            return self.run_planned_sinks(sinks)
        from .savepoint import StreamingSavepointWrite

        if self.trigger[0] == "processing-time":
            raise ConfigurationError(
                "a STREAMING savepoint is written at the end of an available-now (or once) run; "
                f"execution.streaming.trigger is processing-time={self.trigger[1]}")
        if self._streams:
            raise GraphBuildError("execute(savepoint_path=...) needs a fresh translator")
        self._savepoint_run = write = StreamingSavepointWrite(self, savepoint_path)
        try:
            counts = self.run_planned_sinks(sinks)
            write.write()  # only after every query succeeded: a failed job adds no version
            return counts
        finally:
            self._savepoint_run = None

    def run_planned_sinks(self, sinks: list[SinkNode],
                          savepoint: Optional[StreamingSavepointWrite] = None) -> dict[str, int]:
        if self.fanned_out:  # one query writing several sinks
            from .one_query_sinks import run_fanned_out

            return run_fanned_out(self, sinks)
        counts: dict[str, int] = {}
        # Spark Connect runs foreachBatch functions in a server-side process: the rows are
        # printed / written there, but their counters never reach this one (no count)
        connect = is_connect(self.spark)
        # one-query: the job's query (one_query.QUERY), its sink told apart by its name
        query = QUERY if self.one_query else None
        for i, sink in enumerate(sinks):
            source = sink.inputs[0]
            stream = self.input_stream(source)  # the main output: never its side outputs
            name = f"sink-{sink.uid or i}"
            self.register_query(query or name, source)
            df, write, total = sink_kind(sink).streaming(self, sink, stream, name, query)
            self.run_prerequisites()
            run_query(self, query or name, df.writeStream.foreachBatch(write))
            if not connect:  # the counter lives where foreachBatch ran (see above)
                counts[sink.name] = total[0]
        return counts

    # -- translation ------------------------------------------------------------------------
    def _kept(self, stream: Stream, node: Transformation, tags: frozenset[str]) -> Stream:
        shared = bool(tags) or fan_out(self.consumers, node) > 1
        return self._materialize_shared(stream, node, tags) if shared else stream

    # -- one method per node kind (_BY_KIND, at the end of the class) ---------------------
    def _chain(self, node: graph.ChainNode) -> Stream:
        parent = self.input_stream(node.inputs[0])
        # an assigner below a keyed stage of the one query runs in the keying pass, which
        # notes the timestamps it gives (inband.observed), never as a Spark column
        inband = (self.one_query and node.watermark_strategy is not None and chained(node))
        native = native_map(node, parent) if self.pushdown and not inband else None
        if native is not None:
            return native
        # no progress stages: every query reports its own (queries.py)
        return fused_chain(parent, node, None)

    def _keyed(self, node: graph.KeyedNode) -> Stream:
        if node.op not in ("process", "reduce", "window"):
            raise GraphBuildError(
                f"{node.describe()}: keyed operator {node.op!r} is not supported in STREAMING mode")
        key_node = node.inputs[0]
        assert isinstance(key_node, KeyByNode)
        df = self.keyed_input_df(key_node, node)
        return self.stateful(node, df, node.op, keyed_function(node), key_node.key_serializer,
                             False)

    def _co_keyed(self, node: graph.CoKeyedNode) -> Stream:
        parts = []
        for side, key_node in enumerate(node.inputs):
            if not isinstance(key_node, KeyByNode):
                raise GraphBuildError(f"{node.describe()} needs two keyed inputs")
            df = self.with_own_watermark(self.keyed_input_df(key_node, node), node, side)
            parts.append(df.select(TS, KG, KEY, VALUE, SEQ, lit(side).alias(SIDE)))
        serializer = same_key_serializer(node)
        return self.stateful(node, parts[0].unionByName(parts[1]), "co_process",
                             node.function, serializer, True)

    def _broadcast(self, node: graph.BroadcastNode) -> Stream:
        from .broadcast import streaming_broadcast

        return streaming_broadcast(self, node)

    def _co_chain(self, node: graph.CoChainNode) -> Stream:
        parts = []
        for side, s in enumerate(self._stateful_apart(node, "connect")):
            df = self.with_own_watermark(self.materialize(s, PICKLED, name=node.name), node,
                                         side, records=True)
            parts.append(df.select(TS, VALUE, lit(side).alias(SIDE)))
        return Stream(parts[0].unionByName(parts[1]), PICKLED, node.output_type,
                      co_stage=(node.stage, node.function, node.name), sided=True,
                      name=node.name)

    def _union(self, node: graph.UnionNode) -> Stream:
        streams = [self.with_own_watermark(s, node, i)
                   for i, s in enumerate(self._union_inputs(node))]
        for carry in self.carriers.values():  # a keyed stage carried through it, tagged
            if carry.union is not None and carry.union.union is node:
                return tagged_union(self, carry.union, streams, carry.tag, self._long_lived)
        shared = self.shared.get(node.id, [])
        if not shared:
            return union(self, node, streams)
        # several inputs read one keyed stage: one pass over its output runs their paths
        # (pickled, as the other inputs join them: no pass converts the paths' records)
        grouped = {i for s in shared for i in s.inputs}
        dfs = [self.shared_input(s) for s in shared] + [
            self.materialize(s, PICKLED, name=node.name).select(TS, VALUE)
            for i, s in enumerate(streams) if i not in grouped]
        return Stream(union_all(dfs), PICKLED, node.output_type, name=node.name)

    def with_own_watermark(self, data: Union[DataFrame, Stream], node: Transformation, side: int,
                           records: bool = False) -> Any:
        """``data`` (a keyed input DataFrame, a DataFrame of ``records``, or a Stream) of input
        ``side`` of ``node``; where that input meets a keyed stage's outputs in the one query
        (one_query.meets_keyed) and no keyed stage lies above it, with the watermark (and,
        bounded, the end of input) a keyed stage of its own would have given it."""
        branch = node.inputs[side]
        if not self.one_query or from_keyed(branch) or not meets_keyed(node, self.consumers):
            return data
        end = None
        if self.bounded and self._savepoint_run is None:
            place = [n.id for n in self.nodes if type(n) is type(node)].index(node.id)
            name = f"{type(node).__name__}{place}-{side}-end-of-input"
            folder = self.storage.join(self.job_folder(), name)
            end = partial(end_of_input_stream, self.spark, self.storage, folder)
        if isinstance(data, Stream):
            enc = self.preferred_encoding(data.type_info)
            df = own_watermark(self.materialize(data, enc, name=data.name),
                               branch_watermark(branch), end, records=True)
            return Stream(df, enc, data.type_info, name=data.name)
        return own_watermark(data, branch_watermark(branch), end, records)

    def _full_partition(self, node: graph.FullPartitionNode) -> Stream:
        raise full_window_streaming_error(node.describe())  # FLIP-380: BATCH only

    def materialize(self, stream: Stream, enc: Encoding, key_out: Optional[KeyOut] = None,
                    combiner: Optional[Combiner] = None, tags: frozenset[str] = frozenset(),
                    name: str = "", force: bool = False) -> DataFrame:
        """The fused ``mapInArrow`` pass of BATCH, with subtask indexes valid in micro-batches."""
        if not needs_pass(stream, enc, key_out, tags, force):
            return stream.df
        spec = self._long_lived(pass_spec(self, stream, enc, key_out, combiner, tags, name))
        return arrow_pass(stream, stream_pass(spec, self.parallelism), output_ddl(spec))

    def _long_lived(self, spec: PassSpec) -> PassSpec:
        """``spec`` with the identity its subtasks' functions live under for the run: the
        n-th pass of the translation (the same in every run of the same job)."""
        spec.instance_key = f"{self.job_name}#pass{self.passes}:{spec.name}"
        spec.run_id = self.run_id
        spec.config["metrics_publish"] = self.metrics_publish()
        self.passes += 1
        return spec

    def metrics_publish(self) -> Optional[tuple[Storage, str]]:
        """``metrics_publish`` of the operators (None: to_dataframe(), may have no folder)."""
        if self._metrics_publish is None and not self._user_query:
            self._metrics_publish = metrics_target(self.storage, self.job_folder(), self.run_id)
        return self._metrics_publish

    def published_metrics(self, query_id: str) -> dict[str, dict[str, Any]]:
        """The user metrics the query's operator instances published last, per operator."""
        return published_metrics(self.metrics_publish(), query_id)

    def _materialize_shared(self, stream: Stream, node: Transformation,
                            tags: frozenset[str]) -> Stream:
        """Apply pending work once (steps.py); a keyed stage's output is staged by a query."""
        if stream.tagged and not stream.pending:
            return stream  # a keyed operator already wrote its side outputs as _tag
        shared = materialize_shared(self, stream, node, tags)
        if tags or not is_keyed(node) or self.one_query:  # one_query_sinks.py fans it out
            return shared
        # A keyed stage read by several consumers runs in ONE query that stages its output
        # (else every consumer's query would run it again, with its own copy of the state)
        name = f"{self.stage_names[node.id]}-output"
        self.register_query(name, node)
        self.staged_outputs[node.id] = name
        return Stream(self._through_files(shared.df, name), shared.enc, shared.type_info,
                      name=shared.name)

    def _union_inputs(self, node: graph.UnionNode) -> list[Stream]:
        """The inputs of a union (:meth:`_stateful_apart`)."""
        return self._stateful_apart(node, "union")

    def _stateful_apart(self, node: Transformation, label: str) -> list[Stream]:
        """Spark refuses two ``applyInPandasWithState`` in one query: when several inputs of
        a union or a (non-keyed) connect run keyed stages - also one keyed stage reached
        twice, through its main and a side output - each of them runs as its own query
        staged through files."""
        streams = [self.input_stream(p) for p in node.inputs]
        if self.one_query:
            return streams
        stateful = [i for i, p in enumerate(node.inputs)
                    if any(is_keyed(n) for n in upstream(p, is_keyed, include_self=True))]
        if len(stateful) < 2:
            return streams
        ordinal = [n.id for n in self.nodes if type(n) is type(node)].index(node.id)
        for i in stateful:
            # names must be stable across runs of the same job (node ids are not)
            name = f"{node.uid or f'{label}{ordinal}'}-{i}-input"
            self.register_query(name, node.inputs[i])
            s = streams[i]
            df = self.materialize(s, s.enc, name=node.name)
            streams[i] = Stream(self._through_files(df, name), s.enc, s.type_info, name=s.name)
        return streams

    #: what each kind of source becomes (a kind not listed is refused by :meth:`_source`)
    _SOURCES: ClassVar[dict[str, Callable[[Any, SourceNode], Stream]]] = {
        "collection": collection_source,
        "dataframe": dataframe_stream_source,
        "kafka": kafka_stream_source,
    }

    # -- running queries -------------------------------------------------------------------
    def register_query(self, name: str, root: Transformation) -> None:
        """Query ``name`` runs the DataFrame of ``root`` (job clients, a savepoint of the run)."""
        self.query_roots[name] = root
        if self._savepoint_run is not None:
            self._savepoint_run.queries[name] = root

    def fork(self, streams: dict[int, Stream], first_pass: int) -> StreamingTranslator:
        """A copy that translates what lies below ``streams`` (node id -> its stream) over
        them, numbering its passes from ``first_pass`` (one_query_sinks.py)."""
        view = copy.copy(self)
        view._streams, view.passes = dict(streams), first_pass
        return view

    def run_prerequisites(self) -> None:
        for name, writer in self._prerequisites:
            if name not in self._ran:
                run_query(self, name, writer)
                self._ran.add(name)
                if self._savepoint_run is not None:  # savepoint.py: carrier row
                    self._savepoint_run.after_query(name)

    # -- the API's contract for running queries (contract.py, api/job_client.py) -----------
    def runs_detached(self) -> bool:
        """True under a processing-time trigger over unbounded sources."""
        return self.trigger[0] == "processing-time" and not self.bounded

    def trigger_kind(self) -> Optional[str]:
        """available-now, once or processing-time (``execution.streaming.trigger``)."""
        return self.trigger[0]

    def start_sinks(self, sinks: list[SinkNode]) -> list[tuple[str, Any]]:
        """Start every query of ``sinks`` without waiting; ``(name, query)``, upstream first."""
        started: list[tuple[str, Any]] = []
        self.async_queries = started
        try:
            self.run_planned_sinks(list(sinks))
        except BaseException:
            for _, q in started:
                if q.isActive:
                    q.stop()
            self.release()
            raise
        finally:
            self.async_queries = None
        return started

    def log_query_progress(self, name: str, query: StreamingQuery) -> None:
        """Record and log ``query``'s micro-batches (queries.py)."""
        log_query_progress(self, name, query)

    def query_holds_state(self, name: str) -> bool:
        """True when query ``name`` runs a keyed operator (savepoint.py)."""
        from .savepoint import keyed_nodes_in_query

        root = self.query_roots.get(name)
        return root is not None and bool(keyed_nodes_in_query(root, self.staged_outputs, name))

    def query_checkpoint(self, name: str) -> str:
        """``<job folder>/<name>/checkpoint`` (queries.py starts it there)."""
        return Storage.join(self.job_folder(), name, "checkpoint")

    def query_staging(self, name: str) -> str:
        """``<job folder>/<name>/data``: the file sink of :meth:`_through_files`."""
        return Storage.join(self.job_folder(), name, "data")

    def write_savepoint_at(self, path: str, batch_ids: dict[str, int],
                           progress: list[dict[str, Any]]) -> int:
        """The savepoint of the pinned batches (savepoint.py); its version."""
        from .savepoint import StreamingSavepointWrite

        write = StreamingSavepointWrite(self, path, progress)
        write.queries = dict(self.query_roots)
        return write.write(batch_ids)

    #: what each node kind becomes (a kind not listed is refused by :meth:`_translate`)
    _BY_KIND: ClassVar[dict[type, Callable[[Any, Any], Stream]]] = kind_table(vars())
