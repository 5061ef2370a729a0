"""The broadcast state pattern (``stream.connect(ds.broadcast(...)).process(f)``): its
savepoint state, which both modes share, and how each mode maps it (``batch/broadcast.py``,
``streaming/broadcast.py``).

A broadcast node is a stateful stage of kind ``broadcast`` (operators/broadcast.py). Its
broadcast input must reach every parallel instance and, as Flink requires in each mode,
come before the other input:

* **BATCH** (Flink: the broadcast input is processed completely before the other one):
  every broadcast record is copied into each of the ``parallelism`` partitions of the
  keyed shuffle (its key-group column holds, per partition, an int Spark's hash
  partitioning puts there, :func:`~pyspark_datastream.savepoint.partition_slots`) and the
  partitions are sorted broadcast records first, in one order (their position in the
  broadcast stream), then the keyed records as for any keyed operator (key, timestamp;
  savepoint restore rows before their key). Each partition's operator processes the
  broadcast records, then its keys. A non-keyed other input keeps its upstream partitions
  (partition ``i`` goes to ``i % parallelism``) and order. One no-op row per partition
  makes every partition run (a savepoint takes the broadcast state from partition 0).
* **STREAMING**: ``groupBy(_kg).applyInPandasWithState`` as for any keyed operator, each
  broadcast record copied to all ``max_parallelism`` key groups; each key group keeps its
  copy of the broadcast state in its committed state (``operators/broadcast_runtime.py``)
  and runs a micro-batch's broadcast records before its other records. A non-keyed other
  input is grouped by upstream split (``_seq`` partition ``% max_parallelism``) and has no
  keyed state (the heap backend is used whatever the job's).
* **Savepoints**: broadcast state is operator state: rows of kind ``broadcast`` (key group
  -1) and the operator's ``broadcast_states`` meta infos; a restore starts every parallel
  instance (every key group) from the same copy, read on the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

from ..operators.broadcast import check_broadcast_compatible
from ..plan.graph import BroadcastNode, Transformation
from ..savepoint import read_broadcast_entries
from ..state_store.entries import StateEntry, StateMetaInfo

if TYPE_CHECKING:
    from ..savepoint.format import SavepointMetadata

__all__ = [
    "RestoredSavepoint",
    "restored_broadcast",
    "broadcast_meta_infos",
    "check_broadcast_restore",
]


class RestoredSavepoint(Protocol):
    """The savepoint a job restores, as read here (``savepoint_restore.SavepointRestore``)."""

    metadata: SavepointMetadata
    path: str
    version: Optional[int]


# -- savepoints ------------------------------------------------------------------------------
def check_broadcast_restore(metadata: SavepointMetadata, nodes: list[Transformation]) -> None:
    """Refuse (``IncompatibleStateError``) restoring a broadcast state into a descriptor of
    another kind or other serializers, before anything runs."""
    for node in nodes:
        if not isinstance(node, BroadcastNode):
            continue
        op = metadata.operators.get(node.effective_uid())
        if op is None:
            continue
        stored = {m.name: m for m in op.broadcast_states}
        for descriptor in node.descriptors:
            if descriptor.name in stored:
                check_broadcast_compatible(stored[descriptor.name], descriptor,
                                           f"operator {op.uid!r}")


def restored_broadcast(restore: Optional[RestoredSavepoint], node: Transformation
                       ) -> Optional[tuple[list[StateMetaInfo], list[StateEntry]]]:
    """The broadcast state ``node`` starts from (``(meta infos, entries)``, read on the
    driver), or None when the savepoint holds none for it."""
    if restore is None or not isinstance(node, BroadcastNode):
        return None
    op = restore.metadata.operators.get(node.effective_uid())
    if op is None or not op.broadcast_states:
        return None
    entries = read_broadcast_entries(restore.path, op.uid, restore.version)
    return list(op.broadcast_states), entries


def broadcast_meta_infos(node: Transformation, restore: Optional[RestoredSavepoint] = None
                         ) -> tuple[StateMetaInfo, ...]:
    """Meta infos of ``node``'s broadcast states in a savepoint it writes: the declared ones
    and those it restored without declaring them (kept, as operator state is); () for
    nodes without broadcast state."""
    if not isinstance(node, BroadcastNode):
        return ()
    metas = {m.name: m for m in node.operator_spec().meta_infos()}
    op = restore.metadata.operators.get(node.effective_uid()) if restore is not None else None
    for meta in (op.broadcast_states if op is not None else ()):
        metas.setdefault(meta.name, meta)
    return tuple(metas[n] for n in sorted(metas))
