"""OperatorStateStore: the context process_broadcast_element gets is one, and its
get_broadcast_state writes the state process_element then reads (a real broadcast run)."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    BroadcastProcessFunction,
    MapStateDescriptor,
    OperatorStateStore,
    Types,
)
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.broadcast import BroadcastSpec
from pyspark_datastream.operators.broadcast_runtime import BroadcastKeyGroupRuntime
from pyspark_datastream.state_store.serializers import GenericKeySerializer

RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
SEEN: list[bool] = []


class Enrich(BroadcastProcessFunction):
    def process_broadcast_element(self, value, ctx):
        SEEN.append(isinstance(ctx, OperatorStateStore))
        store: OperatorStateStore = ctx
        store.get_broadcast_state(RULES)[value[0]] = value[1]

    def process_element(self, value, ctx):
        yield (value, ctx.get_broadcast_state(RULES).get(value))


def test_the_broadcast_context_is_an_operator_state_store():
    SEEN.clear()
    runtime = BroadcastKeyGroupRuntime(
        "broadcast", BroadcastSpec(Enrich(), [RULES], False), GenericKeySerializer.INSTANCE,
        OperatorConfig.for_mode("STREAMING", operator_name="enrich"))
    result = runtime.run(None, [(b"", None, ("a", 3), 1), (b"", 7, "a", 0), (b"", 8, "b", 0)],
                         key_group=0)
    assert SEEN == [True]
    assert [tuple(o)[1] for o in result.outputs] == [("a", 3), ("b", None)]


def test_an_operator_state_store_must_give_broadcast_state():
    class Incomplete(OperatorStateStore):
        pass

    with pytest.raises(TypeError, match="get_broadcast_state"):
        Incomplete()
