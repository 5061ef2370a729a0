"""ReduceOperator (final-only vs every intermediate) and the built-in aggregations."""

from __future__ import annotations

from collections import namedtuple

import pytest
from pyspark import cloudpickle
from pyspark_datastream import GraphBuildError, JobExecutionError
from pyspark_datastream.operators import aggregations as agg
from pyspark_datastream.operators.aggregations import AggregationDescriptor, BuiltinAggregation
from pyspark_datastream.operators.base import MAX_WATERMARK, Output
from pyspark_datastream.operators.functions import ReduceFunction
from pyspark_datastream.operators.keyed import REDUCE_STATE_NAME
from pyspark_datastream.operators.keyed_reduce import ReduceOperator
from pyspark_datastream.state_store.row import Row
from pyspark_datastream.state_store.types import Types


def values(outputs):
    return [o.value for o in outputs if o.tag is None]


def test_streaming_reduce_emits_every_intermediate_result(drive) -> None:
    d = drive(ReduceOperator(lambda a, b: a + b))
    assert d.push("a", 1, 10) == [Output(None, 1, 10)]
    assert d.push("b", 5, 11) == [Output(None, 5, 11)]
    assert d.push("a", 2, 12) == [Output(None, 3, 12)]
    assert d.push("a", 3, None) == [Output(None, 6, None)]
    assert list(d.operator.end_input()) == []


@pytest.mark.parametrize("backend", ["heap", "single_key"])
def test_batch_reduce_emits_only_the_final_value_at_end_of_key(drive, backend) -> None:
    d = drive(ReduceOperator(lambda a, b: a + b), "BATCH", backend)
    assert d.push("a", 1, 10) == []
    assert d.push("a", 2, 11) == []
    assert d.operator.end_key() == [Output(None, 3, MAX_WATERMARK)]
    d.push("b", 7)
    assert values(d.operator.end_key()) == [7]
    assert list(d.operator.end_input()) == []


def test_batch_reduce_hash_mode_emits_finals_at_end_input(drive) -> None:
    d = drive(ReduceOperator(lambda a, b: a * b, value_type_info=Types.LONG()), "BATCH", "heap")
    for key, v in [("a", 2), ("b", 3), ("a", 5), ("c", 1), ("b", 4)]:
        d.push(key, v)
    assert sorted(values(d.operator.end_input())) == [1, 10, 12]


def test_reduce_function_class_and_lifecycle(drive) -> None:
    events = []

    class Longest(ReduceFunction):
        def open(self, rc):
            events.append(("open", rc.get_task_name()))

        def close(self):
            events.append(("close",))

        def reduce(self, a, b):
            return b if len(b) > len(a) else a

    op = ReduceOperator(Longest())
    d = drive(op, operator_name="longest")
    assert values(d.push("k", "ab") + d.push("k", "abc") + d.push("k", "x")) == ["ab", "abc", "abc"]
    op.close()
    assert events == [("open", "longest"), ("close",)]


def test_reduce_state_is_internal_and_typed(drive) -> None:
    op = ReduceOperator(lambda a, b: a + b, value_type_info=Types.LONG())
    assert op.state_descriptor.name == REDUCE_STATE_NAME and op.state_descriptor.internal
    d = drive(op)
    d.push("k", 4)
    d.push("k", 5)
    assert d.backend.get_state(op.state_descriptor).value() == 9


def test_reduce_errors_name_the_operator(drive) -> None:
    d = drive(ReduceOperator(lambda a, b: a + b), operator_name="summer")
    d.push("k", 1)
    with pytest.raises(JobExecutionError, match="operator 'summer': reduce failed on 'x': TypeError"):
        d.push("k", "x")
    with pytest.raises(GraphBuildError, match="argument 'reduce_function' must be a ReduceFunction"):
        ReduceOperator(42)


def test_reduce_operator_pickles(drive) -> None:
    op = ReduceOperator(agg.sum(1), value_type_info=None, name="s")
    clone = cloudpickle.loads(cloudpickle.dumps(op))
    d = drive(clone)
    d.push("k", ("k", 1))
    assert values(d.push("k", ("k", 2))) == [("k", 3)]


# -- built-in aggregations ------------------------------------------------------------------------


def run(aggregation, records):
    """Fold like the operator does: the first record, then reduce(acc, next)."""
    acc = records[0]
    results = [acc]
    for r in records[1:]:
        acc = aggregation.reduce(acc, r)
        results.append(acc)
    return results


def test_sum_min_max_keep_the_first_records_other_fields() -> None:
    records = [("a", 3, "first"), ("a", 1, "second"), ("a", 5, "third")]
    assert run(agg.sum(1), records)[-1] == ("a", 9, "first")
    assert run(agg.min(1), records) == [("a", 3, "first"), ("a", 1, "first"), ("a", 1, "first")]
    assert run(agg.max(1), records) == [("a", 3, "first"), ("a", 3, "first"), ("a", 5, "first")]


def test_min_by_max_by_return_whole_records_first_on_ties() -> None:
    records = [("a", 3, "first"), ("a", 1, "second"), ("a", 1, "tie"), ("a", 5, "third"), ("a", 5, "tie2")]
    assert run(agg.min_by(1), records)[-1] == ("a", 1, "second")
    assert run(agg.max_by(1), records)[-1] == ("a", 5, "third")
    assert run(agg.max_by(1), records)[:3] == [("a", 3, "first")] * 3


def test_plain_numbers() -> None:
    assert run(agg.sum(), [1, 2, 3.5])[-1] == 6.5
    assert run(agg.min(), [4, 2, 9]) == [4, 2, 2]
    assert run(agg.max(0), [4, 2, 9]) == [4, 4, 9]
    assert run(agg.min_by(), [4, 2, 2])[-1] == 2
    with pytest.raises(GraphBuildError, match="sum\\(1\\): field 1 selected on a plain int value"):
        agg.sum(1).reduce(1, 2)


def test_rows_by_name_and_position_and_lists_and_namedtuples() -> None:
    r1 = Row(name="a", score=3, note="first")
    r2 = Row(name="a", score=4, note="second")
    out = agg.sum("score").reduce(r1, r2)
    assert isinstance(out, Row) and out.as_dict() == {"name": "a", "score": 7, "note": "first"}
    assert agg.max_by("score").reduce(r1, r2) is r2
    assert agg.sum(1).reduce(Row("a", 1), Row("a", 2)) == ("a", 3)
    first = ["a", 1]
    assert agg.sum(1).reduce(first, ["a", 2]) == ["a", 3]
    assert first == ["a", 1]  # records are never mutated
    Point = namedtuple("Point", "x y")
    out = agg.max("y").reduce(Point(1, 2), Point(5, 9))
    assert out == Point(1, 9) and type(out) is Point


def test_aggregation_field_errors() -> None:
    with pytest.raises(GraphBuildError, match="no field 'nope'"):
        agg.sum("nope").reduce(Row(a=1), Row(a=2))
    with pytest.raises(GraphBuildError, match="a field name needs Row values"):
        agg.sum("a").reduce((1,), (2,))
    with pytest.raises(GraphBuildError, match="field position 3 is out of range for a record of 2 fields"):
        agg.min(3).reduce((1, 2), (3, 4))
    with pytest.raises(GraphBuildError, match="field position must be >= 0"):
        agg.max(-1)
    with pytest.raises(GraphBuildError, match="field must be a position \\(int\\) or a field name"):
        agg.min_by(1.5)  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match="aggregation kind must be one of"):
        BuiltinAggregation("avg", 0)


def test_descriptors_for_push_down() -> None:
    assert agg.sum(2).descriptor == AggregationDescriptor("sum", 2)
    assert agg.max_by("score").descriptor.kind == "max_by"
    assert agg.min("x").descriptor.field == "x"
    assert agg.sum(1) == agg.sum(1) and agg.sum(1) != agg.sum(2)
    assert cloudpickle.loads(cloudpickle.dumps(agg.min_by(1))).descriptor == ("min_by", 1)


@pytest.mark.parametrize("mode", ["STREAMING", "BATCH"])
def test_aggregations_through_the_reduce_operator(drive, mode) -> None:
    d = drive(ReduceOperator(agg.max_by(1)), mode, "heap")
    outs = []
    for rec in [("k", 2, "a"), ("k", 7, "b"), ("k", 7, "c"), ("k", 1, "d")]:
        outs += d.push("k", rec)
    outs += list(d.operator.end_input())
    if mode == "STREAMING":
        assert values(outs) == [("k", 2, "a"), ("k", 7, "b"), ("k", 7, "b"), ("k", 7, "b")]
    else:
        assert values(outs) == [("k", 7, "b")]
