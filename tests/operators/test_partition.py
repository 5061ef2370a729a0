"""FLIP-380 runtime pieces: streaming partition runners, sort keys, validation."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle
from pyspark_datastream import GraphBuildError, JobExecutionError
from pyspark_datastream.operators.functions import KeySelector
from pyspark_datastream.operators.partition import (
    MapPartitionFunction,
    Order,
    PartitionOp,
    run_keyed_partition,
    run_partition,
    sort_key_bytes,
    sort_key_getter,
)
from pyspark_datastream.state_store.functions import AggregateFunction
from pyspark_datastream.state_store.row import Row


class Avg(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, acc):
        return [acc[0] + value, acc[1] + 1]

    def get_result(self, acc):
        return acc[0] / acc[1]


class Pairs(MapPartitionFunction):
    def __init__(self):
        self.opened = self.closed = 0

    def open(self, runtime_context):
        self.opened += 1

    def close(self):
        self.closed += 1

    def map_partition(self, values):
        it = iter(values)
        for a in it:
            yield (a, next(it, None))


def test_map_partition_gets_a_lazy_iterator_and_is_opened_and_closed():
    pulled = []

    def source():
        for i in range(5):
            pulled.append(i)
            yield i

    fn = Pairs()
    out = run_partition(PartitionOp("map_partition", fn), source())
    assert next(out) == (0, 1) and pulled == [0, 1]  # nothing read ahead
    assert list(out) == [(2, 3), (4, None)]
    assert (fn.opened, fn.closed) == (1, 1)


def test_aggregate_and_reduce_emit_once_per_non_empty_partition():
    assert list(run_partition(PartitionOp("aggregate", Avg()), [1, 2, 6])) == [3.0]
    assert list(run_partition(PartitionOp("aggregate", Avg()), [])) == []
    assert list(run_partition(PartitionOp("reduce", lambda a, b: a * b), [2, 3, 4])) == [24]
    assert list(run_partition(PartitionOp("reduce", max), [])) == []
    assert list(run_partition(PartitionOp("map_partition", lambda it: None), [1])) == []


def test_keyed_runner_applies_per_key_and_skips_unread_values():
    rows = [(b"a", 1), (b"a", 2), (b"a", 3), (b"b", 10), (b"c", 5), (b"c", 6)]
    first_only = PartitionOp("map_partition", lambda it: [next(iter(it))])
    assert list(run_keyed_partition(first_only, rows)) == [1, 10, 5]
    assert list(run_keyed_partition(PartitionOp("reduce", lambda a, b: a + b), rows)) == [6, 10, 11]
    assert list(run_keyed_partition(PartitionOp("aggregate", Avg()), rows)) == [2.0, 10.0, 5.5]


def test_user_errors_name_the_operator():
    def bad(it):
        for v in it:
            yield 1 / v

    with pytest.raises(JobExecutionError, match=r"'parts': map_partition failed .*ZeroDivision"):
        list(run_partition(PartitionOp("map_partition", bad), [1, 0], "parts"))
    with pytest.raises(JobExecutionError, match=r"'parts': reduce failed on 'x'"):
        list(run_partition(PartitionOp("reduce", lambda a, b: a + b), [1, "x"], "parts"))


def test_validation_messages():
    with pytest.raises(GraphBuildError, match="needs a MapPartitionFunction or a callable"):
        PartitionOp("map_partition", 42)
    with pytest.raises(GraphBuildError, match="needs an AggregateFunction"):
        PartitionOp("aggregate", lambda a, b: a)
    with pytest.raises(GraphBuildError, match="order must be Order.ASCENDING or Order.DESCENDING"):
        PartitionOp("sort_partition", field=0, order="asc")
    with pytest.raises(GraphBuildError, match="field must be a position"):
        PartitionOp("sort_partition", field=1.5)
    with pytest.raises(GraphBuildError, match="must be one of"):
        PartitionOp("explode")


def test_sort_key_getter_forms():
    class Second(KeySelector):
        def get_key(self, value):
            return value[1]

    row = Row(k="a", v=3)
    assert sort_key_getter(1)(("a", 3)) == 3
    assert sort_key_getter("v")(row) == 3
    assert sort_key_getter("v")({"v": 4}) == 4
    assert sort_key_getter(Second())(("a", 5)) == 5
    assert sort_key_getter(lambda r: -r[1])(("a", 5)) == -5
    with pytest.raises(GraphBuildError, match="the record has no field 'w'"):
        sort_key_getter("w")(row)
    with pytest.raises(GraphBuildError, match="a field name needs Row"):
        sort_key_getter("v")(("a", 3))


def test_partition_op_pickles():
    op = cloudpickle.loads(cloudpickle.dumps(PartitionOp("sort_partition", field="v",
                                                         order=Order.DESCENDING)))
    assert (op.op, op.field, op.order) == ("sort_partition", "v", Order.DESCENDING)


_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False), st.text(max_size=6), st.binary(max_size=6))
_kind = {type(None): 0, bool: 1, int: 2, float: 3, str: 4, bytes: 5, tuple: 6}


def _reference(v):
    """Python-side order the encoding must follow (kinds first, then values; floats as
    Java's ``Double.compare``, which Flink's double comparator uses: -0.0 before 0.0)."""
    if isinstance(v, tuple):
        return (6, tuple(_reference(x) for x in v))
    kind = _kind[type(v)]
    if kind == 3:
        return (kind, (v, math.copysign(1.0, v)))
    return (kind, 0 if v is None else v)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_scalar, st.tuples(_scalar, _scalar), st.tuples(_scalar)),
                min_size=2, max_size=8))
@example([(-0.0, None), (0.0,)])  # -0.0 orders before 0.0, whatever follows it
def test_sort_key_bytes_preserve_order(values):
    by_bytes = sorted(values, key=sort_key_bytes)
    by_ref = sorted(values, key=_reference)
    assert [_reference(v) for v in by_bytes] == [_reference(v) for v in by_ref]


def test_sort_key_bytes_rejects_unorderable_values():
    with pytest.raises(JobExecutionError, match="cannot order sort key"):
        sort_key_bytes({1, 2})
    with pytest.raises(JobExecutionError, match="does not fit in 64 bits"):
        sort_key_bytes(2**70)
