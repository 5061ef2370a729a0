"""make_keyed_operator: the one keyed operator factory (BATCH passes, savepoint checks,
STREAMING key groups), and the per-record loop the hash driver and key groups share."""

from __future__ import annotations

import pytest
from pyspark_datastream import JobExecutionError, SerializationError
from pyspark_datastream.operators import keygroup
from pyspark_datastream.operators.base import MIN_WATERMARK, OperatorConfig
from pyspark_datastream.operators.broadcast import BroadcastProcessOperator, BroadcastSpec
from pyspark_datastream.operators.broadcast_functions import KeyedBroadcastProcessFunction
from pyspark_datastream.operators.factory import KEYED_KINDS, make_keyed_operator
from pyspark_datastream.operators.functions import KeyedCoProcessFunction, KeyedProcessFunction
from pyspark_datastream.operators.keyed_process import KeyedCoProcessOperator, KeyedProcessOperator
from pyspark_datastream.operators.keyed_reduce import ReduceOperator
from pyspark_datastream.operators.windows import GlobalWindows, WindowOperator, WindowSpec
from pyspark_datastream.state_store.descriptors import MapStateDescriptor
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.types import Types

KS = GenericKeySerializer.INSTANCE


class Echo(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield ctx.get_current_key(), value


class BroadcastEcho(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        yield value


class CoEcho(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value


def _functions():
    return {
        "process": (Echo(), KeyedProcessOperator),
        "reduce": (lambda a, b: a + b, ReduceOperator),
        "co_process": (CoEcho(), KeyedCoProcessOperator),
        "window": (WindowSpec(GlobalWindows.create(), "reduce", lambda a, b: a + b), WindowOperator),
        "broadcast": (BroadcastSpec(BroadcastEcho(), [MapStateDescriptor("m", Types.STRING(),
                                                                         Types.LONG())], True),
                      BroadcastProcessOperator),
    }


def test_every_kind_gives_a_fresh_operator_of_its_class():
    functions = _functions()
    assert set(KEYED_KINDS) == set(functions)
    for kind, (function, operator_class) in functions.items():
        first = make_keyed_operator(kind, function)
        assert type(first) is operator_class
        assert first is not make_keyed_operator(kind, function)
        assert first.savepoint_watermark is None and not first.is_open


def test_unknown_kind_is_refused():
    with pytest.raises(JobExecutionError, match="unknown keyed operator kind 'sideways'"):
        make_keyed_operator("sideways", Echo())


def test_savepoint_write_sets_the_savepoint_watermark():
    assert make_keyed_operator("process", Echo(), savepoint_write=True).savepoint_watermark == MIN_WATERMARK
    assert make_keyed_operator(
        "process", Echo(), savepoint_write=True, savepoint_watermark=42).savepoint_watermark == 42
    # without savepoint_write the watermark is not used (a plain run fires every timer)
    assert make_keyed_operator("process", Echo(), savepoint_watermark=42).savepoint_watermark is None


def test_keygroup_reexports_the_factory():
    assert keygroup.make_keyed_operator is make_keyed_operator
    assert keygroup.KEYED_KINDS is KEYED_KINDS


def _rows(*items):
    return [(KS.serialize(k), ts, v, 0) for k, ts, v in items]


def test_key_group_counts_elements_of_any_iterable_and_bytes_like_keys():
    rows = _rows(("a", 1, 1), ("b", 2, 2), ("a", 3, 3), ("c", 4, 4))
    runtime = keygroup.KeyGroupRuntime("process", Echo(), KS, OperatorConfig.for_mode("STREAMING"))
    expected = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
    for given in (rows, iter(rows), ((bytearray(k), ts, v, i) for k, ts, v, i in rows)):
        result = runtime.run(None, given)
        assert result.elements == 4
        assert [o.value for o in result.outputs] == expected


def test_key_group_unreadable_key_bytes_name_the_operator():
    config = OperatorConfig.for_mode("STREAMING", operator_name="kg-op")
    runtime = keygroup.KeyGroupRuntime("process", Echo(), Types.LONG().create_serializer(), config)
    with pytest.raises(SerializationError, match="operator 'kg-op': cannot deserialize key bytes"):
        runtime.run(None, [(b"\x01", 1, 1, 0)])
