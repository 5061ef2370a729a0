"""The keyed stages of the STREAMING translator: each one's keyed input (keyed in one pass,
or by Spark under the key-field pushdown), its hand-off from a query above it through staged
files (the per-stage mapping), and its ``applyInPandasWithState`` / ``transformWithState``
call (:meth:`KeyedStages.stateful`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ...plan.graph import KeyByNode, KeyedNode, Transformation, is_keyed, upstream
from ...runtime.branches import branched_pass
from ...runtime.carry import carrying
from ...runtime.encoding import KG, PICKLED, TAG, TS, VALUE
from ...runtime.group_frames import SEQ, TypedInput, direct_output, output_encoding, output_schema
from ...runtime.group_state import GroupSpec, seq_pass
from ...runtime.inband import forwarded_marks, with_watermark_rows
from ...runtime.passes import PassSpec, output_ddl
from ...runtime.tws_processor import TwsCall, state_name, tws_time_mode
from ...spark_io.key_group_ranges import RANGE_KEY, range_key_column
from ...state_store.backends import BackendChoice
from ...state_store.storage import Storage
from ..rows import chain_for_output
from ..stream import Stream, arrow_pass
from ..timecheck import processing_time_use, processing_timeout_of
from ..translator_base import TranslatorBase
from .branches import Branches, SharedPaths, branch_streams
from .carried import Carry, keying_input, relays
from .inband import chained, observed
from .keyed import feeds_keyed, keyed_call, watermarked
from .one_query import branch_watermark
from .pushdown import field_reduce_plan, file_ordered, native_keyed_input, restaged_order
from .queries import end_of_input_stream
from .savepoint import restored_input, restores

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ...runtime.passes import KeyOut
    from ...state_store.serializers.base import TypeSerializer
    from ..job_identity import JobCheckpoint
    from ..savepoint_restore import SavepointRestore
    from .savepoint import StreamingSavepointWrite

__all__ = ["KeyedStages"]


class KeyedStages(TranslatorBase):
    """The keyed-stage part of :class:`~.translator.StreamingTranslator`, which sets every
    attribute declared here in its constructor and defines the methods declared last."""

    spark: SparkSession
    #: the storage layer of every file the job writes outside Spark
    storage: Storage
    nodes: list[Transformation]
    consumers: dict[int, list[Transformation]]
    job: JobCheckpoint
    job_name: str
    run_id: str
    backend: BackendChoice
    restore: Optional[SavepointRestore]
    #: ``(kind, interval)``: plan/config.py's ``streaming_trigger``
    trigger: tuple[str, Optional[str]]
    bounded: bool
    pushdown: bool
    one_query: bool
    fanned_out: bool
    range_partitions: int
    arrow_batch_rows: int
    stage_names: dict[int, str]
    group_specs: dict[int, GroupSpec]
    staged_outputs: dict[int, str]
    carriers: dict[int, Carry]
    #: keyed stage id -> the strategy it takes in band (``inband.inband_strategy``)
    inband_strategies: dict[int, Transformation]
    #: keyed stage id -> the keyed stage above forwarding it its in-band watermark
    #: (``inband.forwarding``)
    forwarded: dict[int, KeyedNode]
    #: keyed stage id -> the paths from the stage above that a union joins
    #: (``branches.joined_branches``)
    branched: dict[int, Branches]
    _tags: dict[int, frozenset[str]]
    _typed_inputs: dict[int, TypedInput]
    _prerequisites: list[tuple[str, Any]]
    _savepoint_run: Optional[StreamingSavepointWrite]

    @property
    def progress(self) -> list[dict[str, Any]]:
        """One progress row per micro-batch of every query run so far."""
        raise NotImplementedError

    def job_folder(self) -> str:
        """This job's folder."""
        raise NotImplementedError

    def register_query(self, name: str, root: Transformation) -> None:
        """Query ``name`` runs the DataFrame of ``root``."""
        raise NotImplementedError

    def metrics_publish(self) -> Optional[tuple[Storage, str]]:
        """``metrics_publish`` of the operators."""
        raise NotImplementedError

    def _long_lived(self, spec: PassSpec) -> PassSpec:
        raise NotImplementedError

    def keyed_input_df(self, key_node: KeyByNode, consumer: Transformation) -> DataFrame:
        """``_ts, _kg, _k, _v, _seq`` for ``consumer``; staged through files when upstream
        already holds a stateful operator (one per query)."""
        branches = self.branched.get(consumer.id)
        if branches is not None:  # the stage above's paths, joined in one pass (branches.py)
            return self.branched_input(branches, key_node, self.carriers.get(consumer.id))
        carry = self.carriers.get(consumer.id)  # the keying pass hands its records on
        forwarded = consumer.id in self.forwarded  # reads the watermark of the stage above
        parent = keying_input(self, key_node, carry, forwarded)  # and those carried through
        strategy = self.inband_strategies.get(consumer.id)
        watermark = None
        if strategy is not None:  # the pass hands on the watermark too (runtime/inband.py)
            parent, watermark = observed(parent, strategy, str(consumer.id))
        elif forwarded:  # the watermark the stage above hands on with its records
            watermark = (str(consumer.id), 0)
        df = (None if carry or watermark else
              self._native_keyed_input_df(parent, key_node, consumer))
        if df is None:
            df = self.sequenced(parent, key_node.name,
                                (key_node.key_selector, key_node.key_serializer), carry,
                                watermark, forwarded)
        side = consumer.inputs.index(key_node) if key_node in consumer.inputs else 0
        return self.staged_input(df, key_node.inputs[0], key_node, consumer, side)

    def sequenced(self, parent: Stream, name: str, key_out: Optional[KeyOut] = None,
                  carry: Optional[Carry] = None,
                  watermark: Optional[tuple[str, int]] = None,
                  forwarded: bool = False) -> DataFrame:
        """``_ts[, _kg, _k], _v, _seq``: ``parent``'s pending work in one Python pass that
        numbers the records in arrival order, keys them with ``key_out`` (and hands them on
        as they were under ``carry``'s tag, runtime/carry.py; with ``watermark``, the
        token and bound of :func:`observed`, hands every key group a watermark row: the
        greatest the stage above forwards in ``parent``, when ``forwarded``)."""
        spec = PassSpec(
            name=name, input_enc=parent.enc, output_enc=PICKLED, config=dict(self.op_config),
            sided=parent.sided, co_stage=parent.co_stage, keyed=parent.keyed,
            chain=chain_for_output(parent, PICKLED, key_out), key_out=key_out,
            max_parallelism=self.max_parallelism)
        self._long_lived(spec)
        fn = seq_pass(spec, self.parallelism, carry and carry.for_pass())
        if forwarded:
            assert watermark is not None
            fn = forwarded_marks(fn, watermark[0], keep_tags=carry is not None)
        if watermark is not None:
            import pyarrow as pa

            schema = spec.arrow_schema().append(pa.field(SEQ, pa.int64()))  # append_seq's
            fn = with_watermark_rows(fn, *watermark, self.max_parallelism, schema)
        return arrow_pass(file_ordered(parent), fn, output_ddl(spec) + f", {SEQ} bigint")

    def branched_input(self, branches: Branches, key_node: KeyByNode,
                       carry: Optional[Carry] = None) -> DataFrame:
        """``_ts, _kg, _k, _v, _seq`` for the stage below a keyed stage whose paths a union
        joins: one pass over that stage's output running each path, then the operators
        after the union and the key extraction (branches.py, runtime/branches.py); under
        ``carry``, the pass hands on every record of that output as well
        (runtime/carry.py)."""
        base, paths, joined = branch_streams(self, branches)
        specs = self._path_specs(paths)
        key_out = (key_node.key_selector, key_node.key_serializer)
        spec = PassSpec(name=key_node.name, input_enc=PICKLED, output_enc=PICKLED,
                        config=dict(self.op_config),
                        chain=chain_for_output(joined, PICKLED, key_out), key_out=key_out,
                        max_parallelism=self.max_parallelism)
        fn = branched_pass(specs, base.tagged, self._long_lived(spec), self.parallelism)
        if carry is not None:
            assert carry.branched and carry.tagged == base.tagged, carry  # with_carriers
            fn = carrying(fn, base.enc, self.max_parallelism, self.parallelism,
                          *carry.for_pass())
        return arrow_pass(base, fn, output_ddl(spec) + f", {SEQ} bigint")

    def shared_input(self, shared: SharedPaths) -> DataFrame:
        """``_ts, _v`` (pickled) of the union's inputs that read one keyed stage along
        several paths: one pass over that stage's output running each path
        (branches.shared_paths, runtime/branches.py)."""
        base, paths, joined = branch_streams(self, shared.branches)
        spec = PassSpec(name=joined.name, input_enc=PICKLED, output_enc=PICKLED,
                        config=dict(self.op_config), chain=chain_for_output(joined, PICKLED),
                        max_parallelism=self.max_parallelism)
        fn = branched_pass(self._path_specs(paths), base.tagged, self._long_lived(spec),
                           self.parallelism)
        return arrow_pass(base, fn, output_ddl(spec) + f", {SEQ} bigint").select(TS, VALUE)

    def _path_specs(self, paths: list[tuple[Optional[str], Stream]]
                    ) -> list[tuple[Optional[str], PassSpec]]:
        """Per path of a branched pass, the side-output tag it reads and the pass running
        its operators (pickled output)."""
        specs = []
        for tag, stream in paths:
            spec = PassSpec(name=stream.name, input_enc=stream.enc, output_enc=PICKLED,
                            config=dict(self.op_config), sided=stream.sided, keyed=stream.keyed,
                            chain=chain_for_output(stream, PICKLED),
                            max_parallelism=self.max_parallelism)
            specs.append((tag, self._long_lived(spec)))
        return specs

    def staged_input(self, df: DataFrame, root: Transformation, edge: Transformation,
                     consumer: Transformation, side: int) -> DataFrame:
        """``df`` (computed from ``root``'s stream, reaching input ``side`` of ``consumer``
        through ``edge``) read back from files when its plan holds a stateful operator:
        Spark runs one ``applyInPandasWithState`` per query (not in the one-query mapping)."""
        if self.one_query:
            return df
        staged = self._staged_above(root)
        if staged is not None:  # a shared upstream stage: its query already staged it
            if self._savepoint_run is not None:  # savepoint.py: watermark carrier
                carrier = f"{staged}-watermark-{self.stage_names[consumer.id]}"
                df = self._savepoint_run.forward_watermark(df, staged, edge, consumer, carrier)
        elif any(is_keyed(n) for n in upstream(root, include_self=True)):
            # names must be stable across runs of the same job (node ids are not)
            name = f"{self.stage_names[consumer.id]}-{side}-input"
            self.register_query(name, root)
            df = self._through_files(df, name)
            if self._savepoint_run is not None:  # savepoint.py: watermark carrier
                df = self._savepoint_run.forward_watermark(df, name, edge, consumer)
        return df

    def _native_keyed_input_df(self, parent: Stream, key_node: KeyByNode,
                               consumer: Transformation) -> Optional[DataFrame]:
        """``_ts, _kg, <typed columns>[, _n<i>], _seq`` computed by Spark for a one-input keyed
        operator (pushdown.py), else None. Not used when restoring from a savepoint
        (its rows carry state bytes in ``_v``). Records the plan in ``self._typed_inputs``."""
        if not self.pushdown or not isinstance(consumer, KeyedNode):
            return None
        if restores(self, consumer):
            return None
        native = native_keyed_input(parent, key_node, self.max_parallelism)
        if native is None:
            return None
        df, typed = native
        self._typed_inputs[consumer.id] = typed
        return df

    def _through_files(self, df: DataFrame, name: str) -> DataFrame:
        """Run ``df`` as its own query into a Parquet file sink; read it back as a stream."""
        folder = self.storage.join(self.job_folder(), name)
        data = self.storage.join(folder, "data")
        self.storage.makedirs(data)  # a file stream needs its folder to exist
        self._prerequisites.append((name, df.writeStream.format("parquet").option("path", data)))
        return restaged_order(self.spark.readStream.schema(df.schema).parquet(data))

    def watermark_strategy(self, node: Transformation) -> Any:
        """The nearest upstream WatermarkStrategy (Flink forwards watermarks through operators)."""
        return branch_watermark(node)

    def stateful(self, node: Transformation, df: DataFrame, kind: str, function: object,
                 key_serializer: TypeSerializer[Any], sided: bool,
                 backend: Optional[BackendChoice] = None) -> Stream:
        """``node`` as ``groupBy(_kg).applyInPandasWithState`` over its keyed input ``df``
        (``backend``: the state backend when not the job's)."""
        from pyspark.sql import functions as F
        from pyspark.sql.streaming.state import GroupStateTimeout

        stage = self.stage_names[node.id]
        df, restoring = restored_input(self, node, df)  # its savepoint state rows, if any
        # a chained stage of the one-query mapping has the watermark of the stage above it
        chain = self.one_query and chained(node)
        if self.bounded and self._savepoint_run is None and not chain:
            # a savepoint run is a stop-with-savepoint WITHOUT drain: no end-of-input flush
            folder = self.storage.join(self.job_folder(), f"{stage}-end-of-input")
            df = df.unionByName(end_of_input_stream(self.spark, self.storage, folder, df.schema))
        ws = self.watermark_strategy(node)
        processing_timeout = processing_timeout_of(node, function, ws, self.trigger, self.bounded)
        # Without event time, on an unbounded input and without processing-time timers, no
        # watermark ever advances and no group can time out: such an operator gets neither
        # (NoTimeout), which spares Spark a column and its watermark tracking. Operators with
        # processing-time timers keep a timeout whatever the trigger: Spark's state rows
        # carry a timeout column exactly when the operator has a timeout kind, so a
        # checkpoint stays resumable when the trigger changes.
        timeouts = ws is not None or self.bounded or processing_time_use(function) is not None
        if timeouts and not chain:
            df = watermarked(df, ws)
        tags = self._tags.get(node.id, frozenset())
        backend = backend or self.backend  # BackendChoice.of made it: as executors resolve it
        backend_type = backend.backend_type()
        backend_kind = backend.reference
        # group_frames.py: typed columns in (native keyed input) and out, where pandas keeps
        # them exact; pickled ``_v`` otherwise
        out_enc = output_encoding(node.output_type, bool(tags))  # ROW types: pickled Rows
        ordered = kind != "broadcast" and (feeds_keyed(node, self.consumers)
                                           or relays(self.carriers, node.id))
        spec = GroupSpec(node.name, kind, function, key_serializer,
                         dict(self.op_config, metrics_publish=self.metrics_publish()),
                          ws is not None, sided, tags,
                          backend,
                          (self.storage.join(self.job_folder(), "state", stage)
                           if backend_type.key_group_store is not None else None), restoring,
                          processing_timeout, self._typed_inputs.get(node.id), out_enc,
                          self.range_partitions,
                          self.arrow_batch_rows,
                          field_reduce_plan(kind, function, self._typed_inputs.get(node.id),
                                            out_enc, backend_kind),
                          timeouts, self.storage, f"{self.job_name}#{node.id}",
                          self.run_id, direct_output(output_schema(out_enc, bool(tags))),
                          parallelism=self.parallelism, ordered=ordered, chained=chain,
                          checks_partition=not self.one_query)
        self.group_specs[node.id] = spec
        fields = ([(TAG, "string")] if tags else []) + [(TS, "bigint")] + (
            out_enc.spark_columns() if out_enc is not None else [(VALUE, "binary")])
        timeout = (GroupStateTimeout.ProcessingTimeTimeout if processing_timeout
                   else GroupStateTimeout.EventTimeTimeout if timeouts
                   else GroupStateTimeout.NoTimeout)
        grouping = KG
        if self.range_partitions:
            # Spark hashes the grouping column to pick a partition: the range key (key group
            # plus a salt) lands each key group in its subtask's partition (key_group_ranges.py).
            # The function reads the key group from the range key, so _kg is not handed over:
            # every column costs a conversion per record on both sides of the Arrow stream.
            df = df.withColumn(RANGE_KEY, range_key_column(
                F.col(KG), self.max_parallelism, self.range_partitions,
                self.parallelism)).drop(KG)
            grouping = RANGE_KEY
        inband = node.id in self.inband_strategies or node.id in self.forwarded
        # an in-band stage's own watermark is no Spark's: Spark's serves it only to signal
        # the end of a bounded input (an unbounded one may have no Spark watermark at all)
        mode = ("EventTime" if self.bounded else "None") if inband else tws_time_mode(
            processing_timeout, timeouts)
        forwards = any(above.id == node.id for above in self.forwarded.values())
        tws = TwsCall(mode, tuple(df.columns), state_name(stage), node.id in self.carriers,
                      inband, forwards) if self.one_query else None
        out, unordered = keyed_call(df.groupBy(grouping), spec, fields, timeout, tws)
        return Stream(out, out_enc if out_enc is not None and out_enc.typed else PICKLED,
                      node.output_type, name=node.name, tagged=bool(tags),
                      ordered_from=None if unordered is None else (out, unordered))

    def _staged_above(self, root: Transformation) -> Optional[str]:
        """The query staging the output of the one keyed stage at or above ``root`` when that
        stage's output is shared (:meth:`_materialize_shared`), else None."""
        keyed = [n for n in upstream(root, is_keyed, include_self=True) if is_keyed(n)]
        if len(keyed) == 1 and keyed[0].id in self.staged_outputs:
            return self.staged_outputs[keyed[0].id]
        return None
