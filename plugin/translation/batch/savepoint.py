"""Savepoints written by BATCH execution (``env.execute(name, savepoint_path=p)``); the
restore both modes share is ``savepoint_restore.py``.

:class:`BatchSavepointWrite` computes the final watermark (max event time minus the
out-of-orderness of the watermark strategies, the minimum over strategies; None without
timestamps). Each keyed pass snapshots every key at its end. With the embedded Delta writer
(delta-rs) the pass writes those entries itself, as savepoint rows, into the new version's
data folder (``runtime.entry_files``) while its records flow on to their consumers: the
savepoint costs no extra Spark stage. A keyed operator read by several consumers (or with
side outputs) stages its records once so its pass runs once. After every sink succeeded, the
driver checks that every partition of every pass finished, and commits the files and the
metadata row as one Delta version. With Spark's Delta writer (a session that has Delta) the
pass instead emits its entries beside its records (``SP_COLUMNS``) into a staging Parquet
folder that is read twice (the stream for the consumers, the entries for
:func:`~pyspark_datastream.savepoint.write_savepoint`).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any, Optional, Protocol

from ...operators.exceptions import JobExecutionError
from ...plan.graph import ChainNode, Transformation
from ...runtime.encoding import TS
from ...runtime.entry_files import EntryFiles, entry_file_name, meta_file_name
from ...runtime.savepoint_rows import SP_COLUMNS, SP_META
from ...savepoint.format import (
    BROADCAST_KIND,
    OperatorMetadata,
    SavepointMetadata,
    savepoint_arrow_schema,
)
from ...savepoint.writer import SavepointFolder
from ...spark_io.delta_io import session_has_delta
from ...state_store.backends import SINGLE_KEY
from ...state_store.entries import StateMetaInfo
from ...state_store.exceptions import ConfigurationError
from ...state_store.storage import Storage
from ..broadcast import broadcast_meta_infos
from ..savepoint_restore import (
    SavepointRestore,
    check_savepoint_uids,
    key_serializer_of,
    operator_states,
)
from ..stream import Stream, StreamTranslator

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pyspark.sql import DataFrame, SparkSession

    from ...operators.modes import RuntimeMode
    from ...spark_io.progress import BatchProgress

__all__ = [
    "BatchSavepointWrite",
    "SavepointTranslator",
    "final_watermark",
]

log = logging.getLogger("pyspark_datastream")

#: the folder of the passes' reports inside a new savepoint version's data folder
_REPORTS = "_reports"


class SavepointTranslator(StreamTranslator, Protocol):
    """What a BATCH savepoint's write reads of the BATCH translator."""

    spark: SparkSession
    nodes: list[Transformation]
    job_name: str
    sorted_inputs: bool
    restore: Optional[SavepointRestore]
    batch_progress: Optional[BatchProgress]

    @property
    def mode(self) -> RuntimeMode: ...

    def action(self, label: str) -> AbstractContextManager[Any]: ...


def final_watermark(translator: SavepointTranslator) -> Optional[int]:
    """The last watermark a STREAMING run over the same input would emit: max event time minus
    the out-of-orderness minus 1 (Flink's bounded-out-of-orderness watermark; a timer at ``t``
    fires once the watermark is ``>= t``), the minimum over the job's watermark strategies (a
    small Spark aggregation per strategy); None without timestamps."""
    from pyspark.sql import functions as F

    marks = []
    for node in translator.nodes:
        if not isinstance(node, ChainNode) or node.stage != "timestamps":
            continue
        strategy = node.watermark_strategy
        if strategy is None or strategy.out_of_orderness_ms is None:
            continue
        stream = translator.input_stream(node)
        df = stream.df
        if stream.pending:
            df = translator.materialize(stream, translator.preferred_encoding(stream.type_info),
                                         name=node.name)
        with translator.action(f"savepoint final watermark of {node.name!r}"):
            top = df.agg(F.max(F.col(TS)).alias("m")).collect()[0]["m"]
        if top is not None:
            marks.append(int(top) - int(strategy.out_of_orderness_ms) - 1)
    return min(marks) if marks else None


class BatchSavepointWrite:
    """One ``execute(..., savepoint_path=...)``: entries written by the keyed passes (or
    staged beside their records), then the savepoint committed after every sink."""

    def __init__(self, translator: SavepointTranslator, path: str) -> None:
        self.translator = translator
        self.path = path
        if not translator.sorted_inputs:
            raise ConfigurationError(
                "writing a savepoint in BATCH needs sorted inputs "
                "(execution.sorted-inputs.enabled=true)")
        check_savepoint_uids(translator.nodes)
        #: the keyed passes write their entries into this new version's folder themselves
        #: (delta-rs commits files); None with Spark's Delta writer (it commits a DataFrame)
        self.folder = None if session_has_delta(translator.spark) else SavepointFolder(path)
        self.staging = tempfile.mkdtemp(prefix="pyspark-datastream-savepoint-")
        #: the passes' reports, inside the new version's folder (on the savepoint's own
        #: storage, which every executor reaches; removed before the commit)
        self.meta_folder = None if self.folder is None else \
            Storage.join(self.folder.target, _REPORTS)
        self.operators: dict[str, tuple[Any, dict[str, StateMetaInfo], bool]] = {}
        self.entries: list[DataFrame] = []
        #: operator uid -> meta infos of its broadcast (operator) states
        self.broadcast: dict[str, tuple[StateMetaInfo, ...]] = {}
        #: operator uid -> progress stage of its keyed pass (entries counted there)
        self.stages: dict[str, Optional[int]] = {}
        #: operator uid -> the number naming its entry files (direct writes)
        self.indexes: dict[str, int] = {}
        #: operator uid -> entries its passes wrote (direct writes, known after the sinks)
        self.counts: dict[str, int] = {}
        #: the data files the passes' reports name (what the commit adds)
        self.files: list[str] = []
        self.committed = False
        self.watermark = final_watermark(translator)
        log.info("BATCH savepoint: final watermark %s", self.watermark)

    def keyed_spec_fields(self, node: Transformation) -> dict[str, Any]:
        """Fields of :class:`KeyedSpec` for ``node``'s keyed pass."""
        fields: dict[str, Any] = {"savepoint_write": True,
                                  "savepoint_watermark": self.watermark}
        if self.folder is not None:
            uid = node.effective_uid()
            index = self.indexes.setdefault(uid, len(self.indexes))
            fields["savepoint_files"] = EntryFiles(
                self.folder.target, str(self.meta_folder), uid, index,
                savepoint_arrow_schema(), BROADCAST_KIND, self.folder.storage)
        return fields

    def run_keyed(self, stream: Stream, node: Transformation, tags: frozenset[str],
                  shared: bool) -> Stream:
        """Record ``node``'s operator for the savepoint; return the stream its consumers
        read. Writing entries directly, a stream read by one consumer is returned as it is
        (the pass runs as part of that consumer); otherwise, or when ``shared`` (several
        consumers) or with side outputs, the pass runs once into staging."""
        self._register(node, stream)
        if self.folder is not None and not tags and not shared:
            return stream
        return self._staged(stream, node, tags)

    def _register(self, node: Transformation, stream: Stream) -> None:
        t = self.translator
        uid = node.effective_uid()
        metas = {m.name: m for m in operator_states(node, t.op_config, t.max_parallelism)}
        self.operators[uid] = (key_serializer_of(node), metas, node.uid is None)
        self.broadcast[uid] = broadcast_meta_infos(node, t.restore)
        self.stages[uid] = stream.stage

    def _staged(self, stream: Stream, node: Transformation, tags: frozenset[str]) -> Stream:
        """Run ``node``'s keyed pass once into staging; return its (materialized) stream,
        and (staging its entries too) keep its entries for the savepoint write."""
        from dataclasses import replace

        from pyspark.sql import functions as F

        from ...runtime.encoding import PICKLED

        t = self.translator
        enc = PICKLED if tags else t.preferred_encoding(stream.type_info)
        df = t.materialize(stream, enc, tags=tags, name=node.name, force=True)
        folder = f"{self.staging}/op-{node.id}"
        with t.action(f"savepoint staging of {node.name!r}"):
            df.write.mode("error").parquet(folder)
        staged = t.spark.read.parquet(folder)
        main = staged
        if self.folder is None:
            sp_names = [n for n, _, _ in SP_COLUMNS]
            kg, key, sn, ns, uk, val = (F.col(n) for n in sp_names)
            main = staged.filter(sn.isNull()).select(
                *[F.col(f"`{c}`") for c in staged.columns if c not in sp_names])
            uid = node.effective_uid()
            self.entries.append(staged.filter(sn.isNotNull() & (sn != F.lit(SP_META))).select(
                F.lit(uid).alias("operator_uid"), kg.alias("key_group"), key.alias("key"),
                sn.alias("state_name"), ns.alias("namespace"), uk.alias("user_key"),
                val.alias("value")))
            metas = self.operators[uid][1]
            for row in staged.filter(sn == F.lit(SP_META)).select(val.alias("v")).distinct(
                    ).collect():
                for d in json.loads(bytes(row["v"]).decode("utf-8")):
                    meta = StateMetaInfo.from_dict(d)
                    metas[meta.name] = meta
        return replace(stream, df=main, enc=enc, keyed=None, chain=(), co_stage=None,
                       sided=False, tagged=bool(tags), name=node.name, stage=None)

    def entry_count(self) -> Optional[int]:
        """State entries the keyed passes produced for the savepoint, or None when a count
        is unknown (staged: counted while they ran into staging; direct: after the write)."""
        if self.folder is not None:
            return sum(self.counts.values()) if self.counts.keys() >= self.operators.keys() \
                else None
        progress = self.translator.batch_progress
        if progress is None:
            return None
        total = 0
        for index in self.stages.values():
            stage = progress.stage(index)
            n = None if stage is None else stage.counts.get("entries_out")
            if n is None:
                return None
            total += n
        return total

    def _collect_direct(self) -> None:
        """Meta infos and entry counts the passes left, per operator; every partition of
        every pass must have finished (else the savepoint would miss keys)."""
        t = self.translator
        progress = t.batch_progress
        assert self.folder is not None and self.meta_folder is not None
        storage = self.folder.storage
        for uid, index in sorted(self.indexes.items(), key=lambda item: item[1]):
            if uid not in self.operators:  # planned, but its pass was never part of a job
                continue
            metas = self.operators[uid][1]
            rows = 0
            missing = []
            for subtask in range(t.parallelism):
                file = Storage.join(self.meta_folder, meta_file_name(index, subtask))
                try:  # by exact name: a report is written once, whole
                    report = json.loads(storage.read_bytes(file))
                except FileNotFoundError:
                    missing.append(subtask)
                    continue
                rows += int(report["rows"])
                name = report.get("file", entry_file_name(index, subtask)
                                  if int(report["rows"]) else None)
                if name:
                    self.files.append(name)
                for d in report["metas"]:
                    meta = StateMetaInfo.from_dict(d)
                    metas[meta.name] = meta
            if missing:
                raise JobExecutionError(
                    f"savepoint {self.path}: the keyed pass of operator {uid!r} did not run to "
                    f"the end of partitions {missing[:10]} of {t.parallelism} (its records were "
                    "not all read); no savepoint version was written")
            self.counts[uid] = rows
            stage = None if progress is None else progress.stage(self.stages.get(uid))
            if stage is not None:
                stage.counts["entries_out"] = rows

    def write(self) -> int:
        """Write the savepoint (after every sink succeeded); return its Delta version."""
        from ...savepoint import write_savepoint
        from ...savepoint.format import entries_ddl

        t = self.translator
        if self.folder is not None:
            self._collect_direct()
        ops = {uid: OperatorMetadata(uid, key_ser.snapshot(),
                                     tuple(metas[n] for n in sorted(metas)), generated,
                                     self.broadcast.get(uid, ()))
               for uid, (key_ser, metas, generated) in self.operators.items()}
        metadata = SavepointMetadata(max_parallelism=t.max_parallelism, operators=ops,
                                     final_watermark=self.watermark, mode=t.mode.value,
                                     backend=SINGLE_KEY.name, job_name=t.job_name)
        start = time.monotonic()
        n = self.entry_count()
        if self.folder is not None:
            log.info("BATCH savepoint: committing %s state entries of operators %s, written by "
                     "their keyed passes, to %s", "?" if n is None else f"{n:,}", sorted(ops),
                     self.path)
            version = self.folder.commit(metadata, files=self.files)
            self.committed = True
        else:
            union = None
            for df in self.entries:
                union = df if union is None else union.unionByName(df)
            if union is None:
                union = t.spark.createDataFrame([], entries_ddl())
            log.info("BATCH savepoint: writing %s state entries of operators %s to %s",
                     "?" if n is None else f"{n:,}", sorted(ops), self.path)
            version = write_savepoint(t.spark, self.path, union, metadata)
        log.info("BATCH savepoint written to %s (version %d, operators %s) in %.1f s", self.path,
                 version, sorted(ops), time.monotonic() - start)
        return version

    def close(self) -> None:
        """Remove the staging folder, and the uncommitted data files of a failed job."""
        if self.folder is not None and not self.committed:
            self.folder.discard()
        shutil.rmtree(self.staging, ignore_errors=True)
