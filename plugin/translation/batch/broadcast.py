"""A broadcast node in BATCH (the pattern and both modes' mappings: ``translation/broadcast.py``).

Every broadcast record is copied into each of the ``parallelism`` partitions of the keyed
shuffle and sorted before the keyed records, so each partition's operator processes the
broadcast input completely before the other one, as Flink does in BATCH.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Optional, Protocol

from ...operators.broadcast import BROADCAST_INPUT, TICK_INPUT
from ...plan.graph import BroadcastNode, Transformation
from ...runtime.encoding import KEY, KG, PICKLED, SIDE, TS, VALUE
from ...runtime.passes import KeyedSpec
from ...savepoint import partition_slots
from ..broadcast import restored_broadcast
from ..stream import KeyedInputTranslator, Stream

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ...state_store.backends import BackendChoice
    from ..savepoint_restore import SavepointRestore

__all__ = ["BroadcastTranslator", "batch_broadcast"]

#: Broadcast records' position in the broadcast stream (BATCH sort column).
_BSEQ = "_bseq"


class BroadcastTranslator(KeyedInputTranslator, Protocol):
    """What a broadcast node's translation reads of the BATCH translator."""

    spark: SparkSession
    restore: Optional[SavepointRestore]
    sorted_inputs: bool
    backend: BackendChoice

    def savepoint_fields(self, node: Transformation) -> dict[str, Any]: ...

    def keyed_stage(self, node: Transformation, op: str, sided: bool) -> Optional[int]: ...


def batch_broadcast(t: BroadcastTranslator, node: BroadcastNode) -> Stream:
    """The Stream of a broadcast node in BATCH (``t``: the BatchTranslator)."""
    from pyspark.sql import functions as F

    n = t.parallelism
    slots = F.array(*[F.lit(slot) for slot in partition_slots(n)])
    main, broadcast_node = node.inputs
    no_key = F.lit(None).cast("binary")
    key_node = node.key_node
    if key_node is not None:
        df, _ = t.keyed_input(key_node, node, force_pickled=True)
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
    with_state = t.restore.union_state(union, node, lead=lead) if t.restore is not None else None
    df = (with_state if with_state is not None
          else union.repartition(n, F.col(KG)).sortWithinPartitions(*lead, KEY, TS))
    df = df.drop(_BSEQ)
    spec = KeyedSpec("broadcast", node.operator_spec(restored), node.key_serializer,
                     t.sorted_inputs, t.backend, name=node.name, **t.savepoint_fields(node))
    return Stream(df, PICKLED, node.output_type, keyed=spec, sided=True, name=node.name,
                  stage=t.keyed_stage(node, "broadcast", sided=True))
