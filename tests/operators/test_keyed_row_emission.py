"""A Row is taken when it is emitted: changing it afterwards does not change what was emitted.

PyFlink encodes a record (or hands it to the next chained operator) when a function yields
it, so ``yield r; r[1] += 1; yield r`` emits (10, 10) then (10, 11). Each expected value
here comes from :func:`flink_model`, a plain-Python run of the same function that copies
every record at the moment it is emitted.
"""

from __future__ import annotations

from typing import Any, Iterable

import pytest
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.chain import CoStatelessOperator, StatelessChain
from pyspark_datastream.operators.functions import (
    CoFlatMapFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    ReduceFunction,
)
from pyspark_datastream.operators.keyed_process import KeyedProcessOperator
from pyspark_datastream.operators.keyed_reduce import ReduceOperator
from pyspark_datastream.state_store.descriptors import ValueStateDescriptor
from pyspark_datastream.state_store.row import Row, named_row_class, take_emitted
from pyspark_datastream.state_store.types import Types

SIDE = OutputTag("side")


def flink_model(emitted: Iterable[Any]) -> list[tuple[Any, ...]]:
    """What PyFlink keeps of each emitted Row: its values at the moment it is emitted."""
    return [tuple(r) for r in emitted]


def values(outputs: list[Any], tag: str | None = None) -> list[tuple[Any, ...]]:
    return [tuple(o.value) for o in outputs if o.tag == tag]


class YieldThenChange(FlatMapFunction):
    """Yields the same Row twice, changing it in between."""

    def flat_map(self, value):
        r = Row(id=value, n=10)
        yield r
        r[1] += 1
        yield r


class YieldThenChangeProcess(ProcessFunction):
    def process_element(self, value, ctx):
        r = Row(id=value, n=10)
        yield r
        r[1] += 1
        yield r
        s = Row(id=value, n=100)
        ctx.output(SIDE, s)
        s[1] = -1


class Twice(FlatMapFunction):
    def flat_map(self, value):
        r = Row(value)
        yield r
        yield r


class AddThousand(MapFunction):
    def map(self, value):
        value[0] += 1000
        return value


class RunningTotal(MapFunction):
    """Keeps one Row in ``self`` as a running total and returns it after each update."""

    def open(self, runtime_context):
        self.total = Row(total=0)

    def map(self, value):
        self.total[0] += value
        return self.total


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_yield_change_yield_in_a_flat_map_and_a_process_function(mode):
    cfg = OperatorConfig.for_mode(mode, operator_name="rows")
    expected = flink_model(YieldThenChange().flat_map(1))
    assert expected == [(1, 10), (1, 11)]
    chain = StatelessChain([("flat_map", YieldThenChange())])
    chain.open(cfg)
    assert values(chain.process(1, 5)) == expected
    chain = StatelessChain([("process", YieldThenChangeProcess())])
    chain.open(cfg)
    out = chain.process(1, 5)
    assert values(out) == expected
    assert values(out, SIDE.tag_id) == [(1, 100)]  # ctx.output, changed after: not seen


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_row_yielded_twice_into_a_map_that_changes_it(mode):
    expected = flink_model(AddThousand().map(Row(*r)) for r in Twice().flat_map(10))
    assert expected == [(1010,), (1010,)]
    chain = StatelessChain([("flat_map", Twice()), ("map", AddThousand())])
    chain.open(OperatorConfig.for_mode(mode, operator_name="rows"))
    assert values(chain.process(10)) == expected


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_running_total_row_kept_in_self(mode):
    model = RunningTotal()
    model.open(None)
    expected = flink_model(model.map(v) for v in (2, 3))
    assert expected == [(2,), (5,)]
    chain = StatelessChain([("map", RunningTotal())])
    chain.open(OperatorConfig.for_mode(mode, operator_name="rows"))
    assert values(chain.process_batch([2, 3])) == expected


class KeyedTotal(KeyedProcessFunction):
    """A running total as a Row in a ValueState (the heap backend keeps the object)."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        total = self.total.value()
        if total is None:
            total = Row(key=ctx.get_current_key(), total=0)
        total[1] += value
        self.total.update(total)
        yield total
        ctx.output(SIDE, total)  # the key's next record changes this very Row (heap state)


class KeyedYieldThenChange(KeyedProcessFunction):
    def process_element(self, value, ctx):
        r = Row(id=value, n=10)
        yield r
        r[1] += 1
        yield r
        yield SIDE, r
        r[1] += 1


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_keyed_process_function_rows(drive, mode):
    op = drive(KeyedProcessOperator(KeyedTotal()), mode=mode)
    out = op.push("a", 2) + op.push("a", 3)
    assert values(out) == [("a", 2), ("a", 5)]
    assert values(out, SIDE.tag_id) == [("a", 2), ("a", 5)]
    op = drive(KeyedProcessOperator(KeyedYieldThenChange()), mode=mode)
    out = op.push("k", 1)
    assert values(out) == flink_model(KeyedYieldThenChange().process_element(1, None))[:2]
    assert values(out) == [(1, 10), (1, 11)]
    assert values(out, SIDE.tag_id) == [(1, 11)]
    op = drive(KeyedProcessOperator(RunningTotal()), mode=mode)
    assert values(op.push("a", 2) + op.push("a", 3)) == [(2,), (5,)]


class AddInto(ReduceFunction):
    """Adds into the running value in place (the heap backend keeps that object)."""

    def reduce(self, a, b):
        a[1] += b[1]
        return a


def test_streaming_reduce_that_changes_its_running_value(drive):
    op = drive(ReduceOperator(AddInto()), mode="STREAMING")
    out = [o for v in (1, 2, 3) for o in op.push("k", Row("k", v))]
    assert values(out) == [("k", 1), ("k", 3), ("k", 6)]  # as Flink, the first one too


class CoTwice(CoFlatMapFunction):
    def flat_map1(self, value):
        r = Row(value, 0)
        yield r
        r[1] = 1
        yield r

    def flat_map2(self, value):
        return self.flat_map1(value)


def test_co_operator_rows():
    op = CoStatelessOperator(CoTwice())
    op.open()
    assert values(op.process(7, None, 0)) == flink_model(CoTwice().flat_map1(7))
    assert values(op.process(7, None, 1)) == [(7, 0), (7, 1)]


def test_take_emitted_copies_only_rows_and_keeps_field_names():
    named = Row(a=1, b=[2])
    copy = take_emitted(named)
    assert copy is not named and copy == named
    assert type(copy) is type(named) is named_row_class(("a", "b"))
    assert copy.b is named.b  # a shallow copy: nested containers are shared
    assert copy.get_field_names() == ["a", "b"] and copy.a == 1
    unnamed = Row(1, 2)
    assert type(take_emitted(unnamed)) is Row and take_emitted(unnamed) is not unnamed
    for other in ((1, 2), [1], {"a": 1}, "s", 3, None):
        assert take_emitted(other) is other
