"""A program's keyed state as a savepoint sees it, and the restore of a savepoint into it:
shared by both modes' translators.

* :func:`operator_states` opens each keyed operator once on the driver, against a throwaway
  single-key backend, to learn its states; :func:`program_states` does it for the program.
* **Restore** (``execution.savepoint.path``): :class:`SavepointRestore` reads the
  savepoint metadata and runs :func:`~pyspark_datastream.savepoint.format.check_restore`
  against every keyed operator of the program *before anything runs*.
  :meth:`SavepointRestore.union_state` then adds an operator's savepoint entries (key
  groups recomputed for the CURRENT max parallelism) to its keyed input as rows with
  ``RESTORE_COLUMNS`` set, sorted before the key's records (``_kg, _k, <is record>,
  _ts``), so the pass restores each key at its start.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from ..plan.graph import BroadcastNode, KeyByNode, KeyedNode, Transformation, is_keyed
from ..runtime.encoding import KEY, KG, SIDE, TS
from ..runtime.passes import KeyedSpec
from ..runtime.savepoint_rows import RESTORE_COLUMNS
from ..savepoint.format import (
    SavepointMetadata,
    check_restore,
)
from ..spark_io.key_group_ranges import repartition_by_key_group_range
from ..state_store.backends import SINGLE_KEY
from ..state_store.entries import StateMetaInfo
from ..state_store.exceptions import ConfigurationError, GraphBuildError
from .broadcast import check_broadcast_restore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..plan.config import Configuration

__all__ = [
    "keyed_nodes",
    "key_serializer_of",
    "operator_states",
    "program_states",
    "SavepointRestore",
    "check_savepoint_uids",
    "RestoringTranslator",
]

log = logging.getLogger("pyspark_datastream")


def keyed_nodes(nodes: list[Transformation]) -> list[Transformation]:
    """The keyed-state operators of a job (KeyedNode, CoKeyedNode), in graph order."""
    return [n for n in nodes if is_keyed(n)]


def key_serializer_of(node: Transformation) -> Any:
    """The key serializer of a stateful node's state (a broadcast node's own)."""
    if isinstance(node, BroadcastNode):
        return node.key_serializer
    key_node = node.inputs[0]
    if not isinstance(key_node, KeyByNode):
        raise GraphBuildError(f"{node.describe()} needs a keyed input")
    return key_node.key_serializer


def _kind(node: Transformation) -> str:
    if isinstance(node, BroadcastNode):
        return "broadcast"
    return node.op if isinstance(node, KeyedNode) else "co_process"


def _operator_function(node: Transformation) -> Any:
    """What ``make_keyed_operator`` takes for ``node`` (a broadcast node's BroadcastSpec)."""
    if isinstance(node, BroadcastNode):
        return node.operator_spec()
    return getattr(node, "function", None)


def operator_states(node: Transformation, op_config: dict[str, Any],
                    max_parallelism: int) -> list[StateMetaInfo]:
    """Meta infos of the states (and timer queues) ``node``'s operator registers at open.

    The operator is opened on the driver against a throwaway single-key backend.
    States registered lazily (first used in ``process_element``) are not seen here;
    the write side also collects them from the executors. A user ``open()`` that
    fails on the driver gives ``[]`` (logged): the executors will report it.
    """
    from ..operators.base import OperatorConfig
    from ..operators.factory import make_keyed_operator
    spec = KeyedSpec(_kind(node), _operator_function(node), key_serializer_of(node), True)
    config = OperatorConfig.from_dict(op_config, subtask_index=0, operator_name=node.name)
    backend = SINGLE_KEY.create(spec.key_serializer, max_parallelism)
    try:
        operator = make_keyed_operator(spec.kind, spec.function)
        try:
            operator.open(backend, config)
        except Exception as exc:  # noqa: BLE001 - user open() on the driver
            log.warning("%s: cannot open the operator on the driver to list its states (%s); "
                        "only the savepoint's own metadata is checked", node.describe(), exc)
            return []
        try:
            return backend.state_meta_infos()
        finally:
            operator.close()
    finally:
        backend.close()


def program_states(nodes: list[Transformation], op_config: dict[str, Any], max_parallelism: int,
                   identity: Callable[[Transformation], str]
                   ) -> dict[str, tuple[Any, list[StateMetaInfo]]]:
    """``identity(node) -> (key serializer, states)`` of every stateful operator: what a
    savepoint restore (by uid) and a resumed checkpoint (by stage name, evolution.py) are
    checked against."""
    return {identity(n): (key_serializer_of(n), operator_states(n, op_config, max_parallelism))
            for n in keyed_nodes(nodes)}


class RestoringTranslator(Protocol):
    """What a restore reads of the translator of either mode."""

    spark: SparkSession
    nodes: list[Transformation]
    parallelism: int
    max_parallelism: int


class SavepointRestore:
    """The savepoint a job of either mode starts from, checked against the program at
    construction (BATCH unions its entries into the sorted keyed inputs; STREAMING packs
    them per key group, streaming/savepoint.py).

    ``op_config`` is the configuration the program's operators are opened with to list their
    states; ``sorted_inputs`` whether keyed inputs are sorted (a restore into operators needs
    it)."""

    def __init__(self, translator: RestoringTranslator, path: str, ignore_unclaimed: bool,
                 version: Optional[int], op_config: dict[str, Any], sorted_inputs: bool) -> None:
        from ..savepoint import read_metadata

        self.translator = translator
        self.path = path
        self.version = version
        start = time.monotonic()
        self.metadata: SavepointMetadata = read_metadata(path, version)
        meta = self.metadata
        log.info("restore: savepoint %s (version %s) metadata read in %.2f s: %d operators, "
                 "max parallelism %d, written by %s job %r", path,
                 version if version is not None else "latest", time.monotonic() - start,
                 len(meta.operators), meta.max_parallelism, meta.mode, meta.job_name)
        start = time.monotonic()
        program = program_states(translator.nodes, op_config, translator.max_parallelism,
                                 lambda node: node.effective_uid())
        check_restore(self.metadata, program, ignore_unclaimed)
        check_broadcast_restore(self.metadata, translator.nodes)
        if self.metadata.operators.keys() & program.keys() and not sorted_inputs:
            raise ConfigurationError(
                f"restoring savepoint {path} in BATCH needs sorted inputs "
                "(execution.sorted-inputs.enabled=true)")
        log.info("restore: compatibility checked in %.2f s; restoring savepoint %s "
                 "(version %s) into operators %s; their entries are counted as the job runs",
                 time.monotonic() - start, path, version if version is not None else "latest",
                 sorted(self.metadata.operators.keys() & program.keys()))

    @classmethod
    def from_config(cls, translator: RestoringTranslator, cfg: Configuration,
                    op_config: dict[str, Any],
                    sorted_inputs: bool) -> Optional[SavepointRestore]:
        """``execution.savepoint.*`` of the job's configuration, or None without a path."""
        path = cfg.get_string("execution.savepoint.path")
        if not path:
            return None
        ignore = bool(cfg.get_boolean("execution.savepoint.ignore-unclaimed-state", False))
        raw = cfg.get_string("execution.savepoint.version")
        version: Optional[int] = None
        if raw not in (None, ""):
            try:
                version = int(str(raw))
            except ValueError as exc:
                raise ConfigurationError(
                    f"execution.savepoint.version must be an integer Delta version, got {raw!r}"
                ) from exc
        return cls(translator, path, ignore, version, op_config, sorted_inputs)

    def meta_for(self, node: Transformation) -> Optional[tuple[StateMetaInfo, ...]]:
        """The savepoint's meta infos of ``node``'s operator, or None if it has no state there."""
        op = self.metadata.operators.get(node.effective_uid())
        return None if op is None else op.states

    def union_state(self, df: DataFrame, node: Transformation,
                    lead: Sequence[Any] = ()) -> Optional[DataFrame]:
        """``df`` (a keyed input: _ts, _kg, _k, payload[, _side]) plus the node's savepoint
        entries as restore rows, shuffled by key group and sorted so that each key's
        entries come before its records (after ``lead``, columns sorted by first). None
        when the node has no savepoint state."""
        from pyspark.sql import functions as F

        from ..savepoint import load_operator_state

        if self.meta_for(node) is None:
            return None
        t = self.translator
        entries = load_operator_state(t.spark, self.path, node.effective_uid(),
                                      max_parallelism=t.max_parallelism, version=self.version)
        sources = ("state_name", "namespace", "user_key", "value")
        state = entries.select(
            F.col("key_group").cast("int").alias(KG), F.col("key").alias(KEY),
            *[F.col(src).cast(ddl).alias(name)
              for src, (name, ddl) in zip(sources, RESTORE_COLUMNS)])
        records = df
        for name, ddl in RESTORE_COLUMNS:
            records = records.withColumn(name, F.lit(None).cast(ddl))
        union = records.unionByName(state, allowMissingColumns=True)
        sided = SIDE in df.columns
        order = [*lead, F.col(KG), F.col(KEY), F.col(RESTORE_COLUMNS[0][0]).isNull(), F.col(TS)]
        if sided:
            order.append(F.col(SIDE))
        order += [F.col(n) for n, _ in RESTORE_COLUMNS[:3]]
        return repartition_by_key_group_range(union, KG, t.parallelism, t.max_parallelism
                                              ).sortWithinPartitions(*order)


def check_savepoint_uids(nodes: list[Transformation]) -> None:
    """Savepoint state is matched by uid: refuse duplicates, warn about generated uids."""
    seen: dict[str, Transformation] = {}
    for node in keyed_nodes(nodes):
        uid = node.effective_uid()
        if uid in seen:
            raise GraphBuildError(
                f"{node.describe()} and {seen[uid].describe()} have the same uid {uid!r}; "
                "savepoint state is matched by uid, make them unique")
        seen[uid] = node
        if node.uid is None:
            msg = (f"{node.describe()} has no uid: its savepoint state is stored under the "
                   f"generated uid {uid!r}, which another program will not match; set "
                   ".uid(...) on it")
            warnings.warn(msg, UserWarning, stacklevel=5)
            log.warning(msg)
