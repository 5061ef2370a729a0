"""A broadcast node in STREAMING (the pattern and both modes' mappings:
``translation/broadcast.py``).

Each broadcast record is copied to every key group; each key group keeps its copy of the
broadcast state and runs a micro-batch's broadcast records before its other records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

from ...operators.broadcast import BROADCAST_INPUT
from ...plan.graph import BroadcastNode, KeyByNode, Transformation
from ...runtime.encoding import KEY, KG, SIDE, TS, VALUE
from ...runtime.group_frames import SEQ, SPLIT_SHIFT
from ...state_store.backends import HEAP, BackendChoice
from ..stream import Stream, StreamTranslator

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ...runtime.passes import KeyOut
    from ...state_store.serializers.base import TypeSerializer
    from .carried import Carry

__all__ = ["BroadcastTranslator", "streaming_broadcast"]


class BroadcastTranslator(StreamTranslator, Protocol):
    """What a broadcast node's translation reads of the STREAMING translator."""

    def keyed_input_df(self, key_node: KeyByNode, consumer: Transformation) -> DataFrame: ...

    def sequenced(self, parent: Stream, name: str, key_out: Optional[KeyOut] = None,
                  carry: Optional[Carry] = None) -> DataFrame: ...

    def staged_input(self, df: DataFrame, root: Transformation, edge: Transformation,
                     consumer: Transformation, side: int) -> DataFrame: ...

    def with_own_watermark(self, data: Union[DataFrame, Stream], node: Transformation, side: int,
                           records: bool = False) -> Any: ...

    def stateful(self, node: Transformation, df: DataFrame, kind: str, function: object,
                 key_serializer: TypeSerializer[Any], sided: bool,
                 backend: Optional[BackendChoice] = None) -> Stream: ...


def streaming_broadcast(t: BroadcastTranslator, node: BroadcastNode) -> Stream:
    """The Stream of a broadcast node in STREAMING (``t``: the StreamingTranslator)."""
    from pyspark.sql import functions as F

    maxp = t.max_parallelism
    main, broadcast_node = node.inputs
    empty_key = F.lit(bytearray(b"")).alias(KEY)
    key_node = node.key_node
    if key_node is not None:
        df = t.keyed_input_df(key_node, node)
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
