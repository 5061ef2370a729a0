"""Translation of the broadcast state pattern (``stream.connect(ds.broadcast(...)).process(f)``).

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

import pickle
from typing import Any, Optional

from ..operators.broadcast import (
    BROADCAST_INPUT,
    TICK_INPUT,
    check_broadcast_compatible,
)
from ..plan.graph import BroadcastNode, Transformation
from ..runtime.encoding import KEY, KG, PICKLED, SIDE, TS, VALUE
from ..runtime.group_frames import SEQ, SPLIT_SHIFT
from ..runtime.passes import KeyedSpec
from ..savepoint import partition_slots, read_broadcast_entries
from ..state_store.backends import HEAP, BackendChoice
from ..state_store.entries import StateEntry, StateMetaInfo
from .stream import Stream

__all__ = [
    "batch_broadcast",
    "streaming_broadcast",
    "restored_broadcast",
    "broadcast_meta_infos",
    "check_broadcast_restore",
]

#: Broadcast records' position in the broadcast stream (BATCH sort column).
_BSEQ = "_bseq"


# -- savepoints ------------------------------------------------------------------------------
def check_broadcast_restore(metadata: Any, nodes: list[Transformation]) -> None:
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


def restored_broadcast(restore: Any, node: Transformation
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


def broadcast_meta_infos(node: Transformation, restore: Any = None) -> tuple[StateMetaInfo, ...]:
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


# -- BATCH -------------------------------------------------------------------------------------
def batch_broadcast(t: Any, node: BroadcastNode) -> Stream:
    """The Stream of a broadcast node in BATCH (``t``: the BatchTranslator)."""
    from pyspark.sql import functions as F

    n = t.parallelism
    slots = F.array(*[F.lit(slot) for slot in partition_slots(n)])
    main, broadcast_node = node.inputs
    no_key = F.lit(None).cast("binary")
    if node.keyed:
        df, _ = t.keyed_input(main, node, force_pickled=True)
        other = df.select(TS, KG, KEY, VALUE, F.lit(0).alias(SIDE),
                          F.lit(None).cast("bigint").alias(_BSEQ))
    else:  # upstream partition i -> partition i % n, in its order
        df = t.materialize(t.input_stream(main), PICKLED, name=node.name)
        part = F.element_at(slots, F.pmod(F.spark_partition_id(), F.lit(n)) + F.lit(1))
        other = df.select(TS, part.alias(KG), no_key.alias(KEY), VALUE, F.lit(0).alias(SIDE),
                          F.monotonically_increasing_id().alias(_BSEQ))
    bstream = t.input_stream(broadcast_node)
    bdf = t.materialize(bstream, PICKLED, name=node.name).select(
        TS, VALUE, F.monotonically_increasing_id().alias(_BSEQ))
    if bstream.keyed is not None:
        # its keyed pass gets a stage of its own: inside the union's stage Spark numbers its
        # tasks after the union's first input, outside the keyed pass's subtask range
        bdf = bdf.repartition(n)
    broadcast = bdf.select(TS, F.explode(slots).alias(KG), no_key.alias(KEY), VALUE,
                           F.lit(BROADCAST_INPUT).alias(SIDE), _BSEQ)
    ticks = t.spark.range(n).select(
        F.lit(None).cast("bigint").alias(TS),
        F.element_at(slots, F.col("id").cast("int") + F.lit(1)).alias(KG), no_key.alias(KEY),
        F.lit(bytearray(pickle.dumps(None))).alias(VALUE), F.lit(TICK_INPUT).alias(SIDE),
        F.lit(None).cast("bigint").alias(_BSEQ))
    union = other.unionByName(broadcast).unionByName(ticks)
    # broadcast records (and ticks) first, in broadcast-stream order, in every partition
    lead = [F.when(F.col(SIDE) >= F.lit(BROADCAST_INPUT), F.lit(0)).otherwise(F.lit(1)),
            F.col(_BSEQ)]
    restored = restored_broadcast(t.restore, node)
    if t.restore is not None and t.restore.meta_for(node) is not None:
        df = t.restore.union_state(union, node, lead=lead)
    else:
        df = union.repartition(n, F.col(KG)).sortWithinPartitions(*lead, KEY, TS)
    df = df.drop(_BSEQ)
    spec = KeyedSpec("broadcast", node.operator_spec(restored), node.key_serializer,
                     t.sorted_inputs, t.backend, name=node.name, **t.savepoint_fields(node))
    return Stream(df, PICKLED, node.output_type, keyed=spec, sided=True, name=node.name,
                  stage=t.keyed_stage(node, "broadcast", sided=True))


# -- STREAMING ---------------------------------------------------------------------------------
def streaming_broadcast(t: Any, node: BroadcastNode) -> Stream:
    """The Stream of a broadcast node in STREAMING (``t``: the StreamingTranslator)."""
    from pyspark.sql import functions as F

    maxp = t.max_parallelism
    main, broadcast_node = node.inputs
    empty_key = F.lit(bytearray(b"")).alias(KEY)
    if node.keyed:
        df = t.keyed_input_df(main, node)
        other = df.select(TS, KG, KEY, VALUE, SEQ, F.lit(0).alias(SIDE))
    else:  # grouped by upstream split; no key
        df = t.staged_input(t.sequenced(t.input_stream(main), node.name), main, main, node, 0)
        split = F.pmod(F.shiftright(F.col(SEQ), SPLIT_SHIFT), F.lit(maxp)).cast("int")
        other = df.select(TS, split.alias(KG), empty_key, VALUE, SEQ, F.lit(0).alias(SIDE))
    bdf = t.sequenced(t.input_stream(broadcast_node), broadcast_node.name)
    bdf = t.staged_input(bdf, broadcast_node, broadcast_node, node, 1)
    # the one query: an input no keyed stage touched, meeting one a keyed stage emitted
    bdf = t.with_own_watermark(bdf, node, 1, records=True)
    other = t.with_own_watermark(other, node, 0, records=not node.keyed)
    every_key_group = F.explode(F.sequence(F.lit(0), F.lit(maxp - 1))).alias(KG)
    broadcast = bdf.select(TS, every_key_group, empty_key, VALUE, SEQ,
                           F.lit(BROADCAST_INPUT).alias(SIDE))
    backend: Optional[BackendChoice] = None if node.keyed else BackendChoice.of(HEAP)
    return t.stateful(node, other.unionByName(broadcast), "broadcast", node.operator_spec(),
                      node.key_serializer, True, backend=backend)
