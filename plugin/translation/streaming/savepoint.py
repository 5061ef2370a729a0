"""Savepoints in STREAMING execution: write after an available-now run, restore at start.

Used by :class:`~pyspark_datastream.translation.streaming.translator.StreamingTranslator`.

* **Write** (``env.execute(name, savepoint_path=p)``): the run is a
  stop-with-savepoint WITHOUT drain. A bounded job normally gets an end-of-input
  sentinel that moves the watermark to +inf (every timer fires); a savepoint run
  omits it, so only the event-time timers the watermark passed have fired
  (Spark's final watermark is ``max event time - out-of-orderness``; the operator
  sees Flink's ``watermark - 1``), later timers stay pending. After every query
  finished, :class:`StreamingSavepointWrite` reads each keyed operator's
  per-key-group GroupState from the query checkpoint with Spark's
  ``format("statestore")`` reader; a ``mapInArrow`` on the executors turns each
  key group's state (a full snapshot, :func:`operators.keygroup.encode_state` bytes; or,
  for a backend with a key-group store such as rocksdb, what the store committed, exported
  with its ``export_entries``) into unified entry rows, staged as
  Parquet, then written by :func:`~pyspark_datastream.savepoint.write_savepoint`.
  Nothing but the (small) state meta infos reaches the driver.
* **Multi-stage jobs** (one query per keyed stage, joined by staging tables): the
  queries run one after the other, each to the end of what its upstream wrote, so
  every stage's state is as of the whole input and the timers an upstream stage
  fired have reached the downstream stage. Flink forwards the watermark through
  operators; a downstream query here derives its own from the event times it
  reads, which lag its upstream's when the upstream emits with older timestamps
  (e.g. on timers). So a savepoint run feeds each downstream stage whose watermark
  is forwarded (no watermark strategy between the stages) one *watermark carrier*
  row (key group -1, ignored by the operator) with event time = the upstream
  query's final Spark watermark + the downstream's out-of-orderness, written after
  the upstream query finished (:meth:`StreamingSavepointWrite.forward_watermark`,
  :meth:`StreamingSavepointWrite.after_query`): every stage ends at the job's final
  watermark, as in BATCH's savepoint.
* **Restore** (``execution.savepoint.path``): checked before any query starts by
  :class:`~.savepoint_restore.SavepointRestore` (built by the translator constructor).
  :func:`restore_rows_folder` packs the savepoint entries of one operator into
  ONE row per key group (key groups recomputed for the current max parallelism;
  the row carries the key group's state as :func:`encode_state` bytes and
  ``_seq = RESTORE_SEQ``), written once by the executors as Parquet. The stateful
  query reads that folder as a second file stream unioned into its input: in
  the first micro-batch every restored key group is called (even one with no new
  data), loads its state (rocksdb: ``import_entries``) when its GroupState is
  still empty and sets its timeout to the earliest restored timer, so restored
  timers fire by the watermark.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Protocol

from ...plan.graph import Transformation, is_keyed, upstream
from ...runtime.encoding import KEY, KG, SIDE, TS, VALUE
from ...savepoint.format import OperatorMetadata, SavepointMetadata
from ...spark_io.dataframes import map_groups_in_arrow
from ...spark_io.key_group_ranges import RANGE_KEY, key_group_of_range_key_column
from ...spark_io.progress import Heartbeat, fmt_count, observe, observed_metrics
from ...spark_io.versions import require_feature
from ...state_store.entries import StateMetaInfo
from ...state_store.exceptions import SavepointFormatError
from ...state_store.storage import Storage
from ..broadcast import broadcast_meta_infos, restored_broadcast
from ..savepoint_restore import (
    SavepointRestore,
    check_savepoint_uids,
    key_serializer_of,
    keyed_nodes,
    operator_states,
)
from .carried import query_exits
from .inband import assigns_watermarks
from .one_query import tws_state_reader
from .queries import write_df_once

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from ...operators.modes import RuntimeMode
    from ...runtime.group_state import GroupSpec
    from ...state_store.backends import BackendChoice
    from ..job_identity import JobCheckpoint

__all__ = [
    "RESTORE_SEQ",
    "SavepointTranslator",
    "StreamingSavepointWrite",
    "keyed_nodes_in_query",
    "restore_rows_folder",
]

log = logging.getLogger("pyspark_datastream")

#: ``_seq`` of a restore row (a key group's savepoint state); input rows have ``_seq >= 0``.
RESTORE_SEQ = -1
_META = "\x00meta"
_ENTRY_DDL = ("operator_uid string, key_group int, key binary, state_name string, "
              "namespace binary, user_key binary, value binary")


def keyed_nodes_in_query(root: Transformation, staged: Optional[dict[int, str]] = None,
                         query: Optional[str] = None) -> list[Transformation]:
    """Keyed operators whose ``applyInPandasWithState`` runs in query ``query``, built
    from ``root``.

    Walking up from ``root``, a keyed operator is part of the query; its own input
    either has no keyed ancestor or is staged through files by another query, so
    the walk stops there. ``staged`` maps a keyed operator whose output several
    consumers read to the one query that runs it and stages that output: it belongs
    to that query only.
    """
    staged = staged or {}
    return [n for n in upstream(root, is_keyed, include_self=True)
            if is_keyed(n) and staged.get(n.id, query) == query]


def _watermark_forwarded(key_node: Transformation) -> bool:
    """True when the nearest watermark source above ``key_node`` is a keyed stage (whose
    watermark Flink forwards), not a watermark strategy (which generates a new one)."""
    for n in upstream(key_node, is_keyed):
        if assigns_watermarks(n):
            return False
        if is_keyed(n):
            return True
    return False


def _write_carrier(storage: Storage, folder: str, schema: Any, event_time: int) -> None:
    """One Parquet file with one row of ``schema``: key group -1 at ``event_time``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    values = {TS: event_time, KG: -1, "_seq": 0, SIDE: 0}
    table = pa.table({f.name: pa.array([values.get(f.name)], type=f.type) for f in arrow})
    name = f"carrier-{uuid.uuid4().hex[:12]}.parquet"
    with storage.open_output(storage.join(folder, name)) as f:  # visible only complete
        pq.write_table(table, f)


def _spark_watermark_ms(text: Optional[str]) -> int:
    if not text:
        return 0
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _export_pass(uid: str, spec: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """``mapInArrow``: statestore rows ``(kg, s)`` -> entry rows of ``uid`` plus one meta
    row per key group (``state_name == _META``, value = JSON list of meta infos)."""
    import pyarrow as pa

    from ...operators.broadcast_runtime import unwrap_state
    from ...operators.keygroup import decode_state
    from ...savepoint.format import entries_to_batch

    backend = spec.backend
    maxp = int(spec.config["max_parallelism"])
    broadcast = spec.kind == "broadcast"

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        # the backend's savepoint hooks (its key-group store's export), or none: full snapshots
        store = backend.create_key_group_store(spec.state_dir, spec.key_serializer, maxp,
                                               spec.storage)
        for batch in batches:
            kgs = batch.column("kg").to_pylist()
            states = batch.column("s").to_pylist()
            for kg, s in zip(kgs, states):
                if kg is None or kg < 0 or s is None:
                    continue
                if broadcast:  # every key group holds the same copy: key group 0's is saved
                    s, _, operator_entries = unwrap_state(bytes(s))
                    if kg == 0 and operator_entries:
                        yield entries_to_batch(uid, operator_entries)
                    if s is None:
                        continue
                if store is not None:  # the backend's store; else s is a full snapshot
                    metas, entries = store.export_entries(int(kg), bytes(s))
                else:
                    metas, entries = decode_state(bytes(s))
                out = entries_to_batch(uid, entries)
                if out.num_rows:
                    yield out
                meta = json.dumps([m.to_dict() for m in metas]).encode("utf-8")
                yield pa.RecordBatch.from_arrays(
                    [pa.array([uid]), pa.array([int(kg)], type=pa.int32()),
                     pa.array([b""], type=pa.binary()), pa.array([_META]),
                     pa.array([b""], type=pa.binary()), pa.array([b""], type=pa.binary()),
                     pa.array([meta], type=pa.binary())],
                    schema=out.schema)

    return fn


class SavepointTranslator(Protocol):
    """What a STREAMING savepoint's write and a keyed stage's restore read of the STREAMING
    translator."""

    spark: SparkSession
    storage: Storage
    nodes: list[Transformation]
    job: JobCheckpoint
    job_name: str
    max_parallelism: int
    backend: BackendChoice
    op_config: dict[str, Any]
    restore: Optional[SavepointRestore]
    one_query: bool
    fanned_out: bool
    stage_names: dict[int, str]
    group_specs: dict[int, GroupSpec]
    staged_outputs: dict[int, str]

    @property
    def mode(self) -> RuntimeMode: ...

    @property
    def progress(self) -> list[dict[str, Any]]: ...

    def job_folder(self) -> str: ...

    def watermark_strategy(self, node: Transformation) -> Any: ...


class StreamingSavepointWrite:
    """One STREAMING ``execute(..., savepoint_path=...)``: after the queries, export and write."""

    def __init__(self, translator: SavepointTranslator, path: str,
                 progress: Optional[list[dict[str, Any]]] = None) -> None:
        self.translator = translator
        self.path = path
        #: the progress rows the final watermarks are read from: the translator's (filled
        #: as its queries run), or those of the batches a running job's savepoint pins
        self.progress: list[dict[str, Any]] = (translator.progress if progress is None
                                               else progress)
        # Spark 3.5 has no state data source to read the state back with (versions.py)
        require_feature("streaming_savepoint", translator.spark.version)
        check_savepoint_uids(translator.nodes)
        #: query name -> root node of the DataFrame it runs (filled by the translator)
        self.queries: dict[str, Transformation] = {}
        #: staging query name -> [(carrier folder, staged schema, downstream delay ms)]
        self._carriers: dict[str, list[tuple[str, Any, int]]] = {}

    def forward_watermark(self, df: DataFrame, name: str, key_node: Transformation,
                          consumer: Transformation, carrier: Optional[str] = None
                          ) -> DataFrame:
        """``df`` (the staged input ``name`` of ``consumer``) plus a file stream of the
        watermark carrier row :meth:`after_query` writes once query ``name`` finished; ``df``
        unchanged when ``consumer`` has no event time or a watermark strategy between the
        stages generates its watermark (Flink does not forward one through it). ``carrier``
        names the carrier folder (default ``<name>-watermark``; one per consumer when the
        staged output of ``name`` has several)."""
        t = self.translator
        strategy = t.watermark_strategy(consumer)
        if strategy is None or not _watermark_forwarded(key_node):
            return df
        folder = t.storage.join(t.job_folder(), carrier or f"{name}-watermark")
        t.storage.makedirs(folder)
        self._carriers.setdefault(name, []).append(
            (folder, df.schema, int(strategy.out_of_orderness_ms or 0)))
        return df.unionByName(t.spark.readStream.schema(df.schema).parquet(folder))

    def after_query(self, name: str) -> None:
        """Query ``name`` finished: when it stages a forwarded watermark, write the carrier
        row (event time = its final Spark watermark + the consumer's out-of-orderness)."""
        carriers = self._carriers.get(name)
        if not carriers:
            return
        rows = [r for r in self.progress if r["query"] == name]
        mark = max((_spark_watermark_ms(r["watermark"]) for r in rows), default=0)
        if mark <= 0:
            return  # no watermark advanced upstream: nothing to forward
        for folder, schema, delay in carriers:
            _write_carrier(self.translator.storage, folder, schema, mark + delay)
        log.info("STREAMING savepoint: watermark %d of query %s forwarded to %d consumer(s)",
                 mark, name, len(carriers))

    def _query_of(self, node: Transformation) -> Optional[str]:
        for name, root in self.queries.items():
            if self.translator.one_query:  # every keyed stage above its exits is in it
                roots = (query_exits(self.translator.nodes) if self.translator.fanned_out
                         else [root])
                if any(n.id == node.id for r in roots for n in upstream(r, include_self=True)):
                    return name
                continue
            staged = self.translator.staged_outputs
            if any(n.id == node.id for n in keyed_nodes_in_query(root, staged, name)):
                return name
        return None

    def final_watermark(self, names: list[str]) -> Optional[int]:
        """The operators' (Flink) watermark at the end of the run: Spark's last watermark of
        their queries minus 1, the minimum over them; None when no watermark advanced."""
        marks = []
        for name in names:
            rows = [r for r in self.progress if r["query"] == name]
            wm = max((_spark_watermark_ms(r["watermark"]) for r in rows), default=0)
            if wm > 0:
                marks.append(wm - 1)
        return min(marks) if marks else None

    def write(self, batch_ids: Optional[dict[str, int]] = None) -> int:
        """Export every keyed operator's final state and write the savepoint; its version.

        ``batch_ids`` (job clients, queries maybe still running): read each query's state as
        of that committed micro-batch; a query not in it has committed none and is empty."""
        from pyspark.sql import functions as F

        from ...savepoint import write_savepoint

        t = self.translator
        spark = t.spark
        # in the job folder, which every executor reaches (not the driver's temporary dir)
        staging = t.storage.join(t.job_folder(), f"_savepoint-staging-{uuid.uuid4().hex[:12]}")
        start = time.monotonic()
        total_entries: Optional[int] = 0
        try:
            ops: dict[str, OperatorMetadata] = {}
            parts: list[DataFrame] = []
            names: list[str] = []
            for node in keyed_nodes(t.nodes):
                uid = node.effective_uid()
                key_ser = key_serializer_of(node)
                metas = {m.name: m for m in operator_states(node, t.op_config, t.max_parallelism)}
                name = self._query_of(node)
                spec = t.group_specs.get(node.id)
                if name is not None and spec is not None:
                    names.append(name)
                    checkpoint = t.storage.join(t.job_folder(), name, "checkpoint")
                    pinned = batch_ids is None or name in batch_ids
                    if pinned and t.storage.exists(t.storage.join(checkpoint, "state")):
                        folder = t.storage.join(staging, f"op-{len(parts)}")
                        reader = spark.read.format("statestore")
                        if batch_ids is not None:
                            reader = reader.option("batchId", int(batch_ids[name]))
                        group = (key_group_of_range_key_column(F.col(f"key.{RANGE_KEY}"))
                                 if spec.partitions else F.col("key._kg"))
                        value = F.col("value.groupState.s")
                        if t.one_query:  # one_query.py: the stage's value state
                            reader, value = tws_state_reader(reader, spark, checkpoint,
                                                             t.stage_names[node.id])
                        raw = reader.load(checkpoint).select(group.alias("kg"), value.alias("s"))
                        exported = raw.mapInArrow(_export_pass(uid, spec), _ENTRY_DDL)
                        is_meta = F.col("state_name") == F.lit(_META)
                        exported, obs = observe(exported, f"savepoint export {uid}", {
                            "entries": F.count(F.when(~is_meta, F.lit(1))),
                            "key_groups": F.count(F.when(is_meta, F.lit(1)))})
                        op_start = time.monotonic()
                        with Heartbeat(f"exporting the state of operator {uid!r} for the "
                                       f"savepoint {self.path}"):
                            exported.write.parquet(folder)
                        got = observed_metrics(obs) or {}
                        n = got.get("entries")
                        total_entries = None if n is None or total_entries is None \
                            else total_entries + int(n)
                        log.info("STREAMING savepoint: operator %r: %s state entries of %s key "
                                 "groups exported by the executors in %.1f s", uid,
                                 fmt_count(n), fmt_count(got.get("key_groups")),
                                 time.monotonic() - op_start)
                        staged = spark.read.parquet(folder)
                        for row in staged.filter(staged.state_name == _META).select(
                                "value").distinct().collect():
                            for d in json.loads(bytes(row["value"]).decode("utf-8")):
                                meta = StateMetaInfo.from_dict(d)
                                metas[meta.name] = meta
                        parts.append(staged.filter(staged.state_name != _META))
                else:
                    log.warning("STREAMING savepoint: %s ran in no query; it is saved empty",
                                node.describe())
                ops[uid] = OperatorMetadata(uid, key_ser.snapshot(),
                                            tuple(metas[n] for n in sorted(metas)),
                                            node.uid is None, broadcast_meta_infos(node, t.restore))
            kind = t.backend.backend_type().name
            metadata = SavepointMetadata(
                max_parallelism=t.max_parallelism, operators=ops,
                final_watermark=self.final_watermark(names), mode=t.mode.value, backend=kind,
                job_name=t.job_name)
            union = None
            for df in parts:
                union = df if union is None else union.unionByName(df)
            if union is None:
                union = spark.createDataFrame([], _ENTRY_DDL)
            log.info("STREAMING savepoint: writing %s state entries of operators %s to %s",
                     fmt_count(total_entries), sorted(ops), self.path)
            version = write_savepoint(spark, self.path, union, metadata)
            log.info("STREAMING savepoint written to %s (version %d, operators %s) in %.1f s",
                     self.path, version, sorted(ops), time.monotonic() - start)
            return version
        finally:
            t.storage.delete_dir(staging)


def _pack_pass(metas: list[dict[str, Any]], fields: list[str],
               broadcast: Optional[Any] = None) -> Callable[[Any], Any]:
    """Per key group (:func:`map_groups_in_arrow`): its savepoint entries -> one restore row
    with the keyed input's ``fields`` (with ``broadcast`` = ``(meta infos, entries)``, the broadcast
    state every key group gets; rows without a key then only mark a key group).

    Arrow sorts the entries (so a retried task packs the same bytes) and hands them over as
    plain tuples: a key group of a million-key savepoint holds thousands of entries."""

    def fn(table: Any) -> Any:
        from itertools import repeat

        import pyarrow as pa
        import pyarrow.compute as pc

        from ...operators.broadcast_runtime import wrap_state
        from ...operators.keygroup_state import dump_state

        kg = int(table.column("key_group")[0].as_py())
        table = table.filter(pc.is_valid(table.column("key")))
        parts = {name: table.column(name) for name in ("key", "state_name")}
        for name in ("namespace", "user_key", "value"):
            column = table.column(name)
            parts[name] = pc.fill_null(column, pa.scalar(b"", column.type))
        ordered = pa.table(parts).sort_by(
            [(name, "ascending") for name in ("key", "state_name", "namespace", "user_key")])
        rows = list(zip(repeat(kg), *(ordered.column(name).to_pylist() for name in (
            "state_name", "key", "namespace", "user_key", "value"))))  # StateEntry's order
        value: Optional[bytes] = dump_state(metas, rows)
        if broadcast is not None:
            value = wrap_state(value if rows else None, *broadcast) or value
        columns = {
            TS: pa.array([None], pa.int64()),
            KG: pa.array([kg], pa.int32()),
            KEY: pa.array([None], pa.binary()),
            VALUE: pa.array([value], pa.binary()),
            "_seq": pa.array([RESTORE_SEQ], pa.int64()),
            "_seq_row": pa.array([0], pa.int64()),  # a staged input's (restaged_order)
            SIDE: pa.array([0], pa.int32()),
        }
        return pa.table({name: columns[name] for name in fields})

    return fn


def restores(translator: SavepointTranslator, node: Transformation) -> bool:
    """Whether ``node``'s keyed input carries savepoint state rows: the job restores it now
    (``execution.savepoint.path``), or an earlier run of this job did. A job started from a
    savepoint resumes from its checkpoint afterwards with or without the setting (as Flink
    restores a savepoint once): its query keeps the stream of those rows, read already, so
    its sources stay what its checkpoint records.

    Args:
        translator: the STREAMING translator.
        node: a keyed operator.

    Returns:
        True when the keyed input gets the rows' stream (:func:`restored_input`).
    """
    if _restores_now(translator, node):
        return True
    durable = translator.job.durable_folder()  # (a temporary job folder has no earlier run)
    storage = translator.storage
    return durable is not None and bool(storage.exists(storage.join(
        durable, _restore_name(translator, node), "_SUCCESS")))


def restored_input(translator: SavepointTranslator, node: Transformation, df: DataFrame
                  ) -> tuple[Any, bool]:
    """``node``'s keyed input ``df`` with its savepoint state rows when it :func:`restores`
    (written first when the job restores now).

    Args:
        translator: the STREAMING translator.
        node: a keyed operator.
        df: its keyed input.

    Returns:
        The input, and whether it carries the rows' stream.
    """
    if not restores(translator, node):
        return df, False
    folder = _restore_folder(translator, node)
    if _restores_now(translator, node):
        restore_rows_folder(translator, node, folder, df.schema)
    return df.unionByName(translator.spark.readStream.schema(df.schema).parquet(folder)), True


def _restores_now(translator: SavepointTranslator, node: Transformation) -> bool:
    """The job restores ``node`` from ``execution.savepoint.path`` in this run."""
    return translator.restore is not None and translator.restore.meta_for(node) is not None


def _restore_name(translator: SavepointTranslator, node: Transformation) -> str:
    return f"{translator.stage_names[node.id]}-restore"


def _restore_folder(translator: SavepointTranslator, node: Transformation) -> str:
    return str(translator.storage.join(translator.job_folder(), _restore_name(translator, node)))


def restore_rows_folder(translator: SavepointTranslator, node: Transformation, folder: str,
                        schema: StructType) -> None:
    """Write (once, atomically) ``node``'s savepoint state as one row per key group with the
    keyed input's ``schema`` into ``folder``; executors pack and write, nothing is collected."""
    from pyspark.sql import functions as F

    from ...savepoint import load_operator_state

    storage = translator.storage
    if storage.exists(storage.join(folder, "_SUCCESS")):
        return  # written by an earlier run of this job: the file stream already knows it
    restore = translator.restore
    if restore is None:
        raise SavepointFormatError(f"{node.describe()} restores no savepoint: "
                                   "execution.savepoint.path is not set")
    op = restore.metadata.operators.get(node.effective_uid())
    if op is None:
        raise SavepointFormatError(f"{node.describe()} has no state in savepoint {restore.path}")
    entries = load_operator_state(translator.spark, restore.path, node.effective_uid(),
                                  max_parallelism=translator.max_parallelism,
                                  version=restore.version)
    entries, obs_in = observe(entries, f"restore entries {node.effective_uid()}",
                              {"entries": F.count(F.lit(1))})
    broadcast = restored_broadcast(restore, node)
    if broadcast is not None:  # every key group starts from the broadcast state
        every = translator.spark.range(translator.max_parallelism).select(
            F.col("id").cast("int").alias("key_group"))
        entries = entries.unionByName(every, allowMissingColumns=True)
    packed = map_groups_in_arrow(
        entries, "key_group",
        _pack_pass([m.to_dict() for m in op.states], schema.fieldNames(), broadcast), schema)
    packed, obs_out = observe(packed, f"restore key groups {node.effective_uid()}",
                              {"key_groups": F.count(F.lit(1))})
    start = time.monotonic()
    with Heartbeat(f"loading the savepoint state of {node.describe()} from {restore.path}"):
        write_df_once(storage, folder, packed)  # Spark's _SUCCESS, written last, marks it done
    log.info("STREAMING restore: %s state entries in %s key groups of %s loaded from savepoint "
             "%s in %.1f s, staged in %s", fmt_count((observed_metrics(obs_in) or {}).get("entries")),
             fmt_count((observed_metrics(obs_out) or {}).get("key_groups")), node.describe(),
             restore.path, time.monotonic() - start, folder)
