"""Physical partitioning without Spark: the nodes the API adds, the forward() parallelism
check, and the per-record targets of the partitioning pass (outside a Spark task the
partition is 0)."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from pyspark_datastream import (
    GraphBuildError,
    JobExecutionError,
    Partitioner,
    StreamExecutionEnvironment,
    Types,
    UserFunctionError,
)
from pyspark_datastream.plan.config import RuntimeMode
from pyspark_datastream.plan.graph import PartitionNode
from pyspark_datastream.plan.job import JobPlan
from pyspark_datastream.runtime.encoding import PICKLED, TS, VALUE, make_decoder
from pyspark_datastream.savepoint import partition_slots
from pyspark_datastream.spark_io.key_group_ranges import spark_partition
from pyspark_datastream.translation.physical import SLOT, target_batches


class Mod(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


def _stream():
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([1, 2, 3], type_info=Types.LONG())


def test_each_call_adds_its_partitioning_node():
    ds = _stream()
    for call, strategy in (("rebalance", "rebalance"), ("shuffle", "shuffle"),
                           ("rescale", "rescale"), ("forward", "forward"),
                           ("broadcast", "broadcast")):
        node = getattr(ds, call)()._node
        assert isinstance(node, PartitionNode) and node.strategy == strategy
        assert node.inputs == [ds._node] and node.output_type == ds._node.output_type
    custom = ds.partition_custom(lambda key, n: key % n, lambda r: r)._node
    assert custom.strategy == "custom"
    assert custom.partitioner.partition(7, 3) == 1 and custom.key_selector.get_key(5) == 5
    mod = Mod()
    assert ds.partition_custom(mod, lambda r: r)._node.partitioner is mod


def test_bad_arguments_are_refused_where_written():
    ds = _stream()
    with pytest.raises(GraphBuildError, match=r"partition_custom\(\): argument 'partitioner' "
                                              r"must be a Partitioner or a callable, got int 3"):
        ds.partition_custom(3, lambda r: r)
    with pytest.raises(GraphBuildError, match="got the class Mod itself"):
        ds.partition_custom(Mod, lambda r: r)
    with pytest.raises(GraphBuildError, match="'key_selector' must be a KeySelector"):
        ds.partition_custom(Mod(), "field")
    with pytest.raises(GraphBuildError, match="unknown partitioning 'hash'"):
        PartitionNode("p", [ds._node], strategy="hash")


def _plan(nodes, parallelism=2):
    return JobPlan("job", RuntimeMode.BATCH, tuple(nodes), parallelism, 128, ("hashmap", {}))


def test_forward_between_different_parallelism_is_refused_when_planned():
    ds = _stream()
    forwarded = ds.forward()
    mapped = forwarded.map(lambda x: x)
    _plan([ds._node, forwarded._node, mapped._node])  # both at the job's parallelism
    mapped.set_parallelism(3)
    with pytest.raises(GraphBuildError, match=r"forward\(\) does not allow a change of "
                                              r"parallelism: upstream operator .* has "
                                              r"parallelism 2, downstream operator 'Map' .* "
                                              r"has parallelism 3; use another partitioning"):
        _plan([ds._node, forwarded._node, mapped._node])
    ds.set_parallelism(3)
    _plan([ds._node, forwarded._node, mapped._node])
    rebalanced = ds.rebalance()
    other = rebalanced.map(lambda x: x).set_parallelism(5)  # only forward() is checked
    _plan([ds._node, rebalanced._node, other._node])


def _batches(values, size):
    for i in range(0, len(values), size):
        chunk = values[i:i + size]
        yield pa.RecordBatch.from_arrays(
            [pa.array([None] * len(chunk), pa.int64()),
             pa.array([pickle.dumps(v) for v in chunk], pa.binary())], names=[TS, VALUE])


def _targets(strategy, values, n, **kw):
    slots = partition_slots(n)
    out = list(target_batches(strategy, n, slots, "P", **kw)(_batches(values, 4)))
    assert all(b.schema.names == [TS, VALUE, SLOT] for b in out)
    got = [s for b in out for s in b.column(SLOT).to_pylist()]
    # each slot lands on its partition under Spark's hash partitioning
    return [int(p) for p in spark_partition([got], n)] if got else []


def test_targets_of_each_strategy():
    values = list(range(23))
    n = 3
    rebalanced = _targets("rebalance", values, n)
    assert rebalanced == [(rebalanced[0] + i) % n for i in range(len(values))]  # across batches
    assert _targets("rescale", values, n) == [0] * len(values)  # partition 0 -> subtask 0
    shuffled = _targets("shuffle", list(range(3000)), n)
    assert {shuffled.count(p) > 800 for p in range(n)} == {True}
    custom = _targets("custom", values, n, decode=make_decoder(PICKLED), partitioner=Mod(),
                      key_selector=_Key())
    assert custom == [(v * 2) % n for v in values]


class _Key:
    def get_key(self, value):
        return value * 2


class _Returns(Partitioner):
    def __init__(self, result):
        self.result = result

    def partition(self, key, num_partitions):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


@pytest.mark.parametrize("result", [3, -1, "1", True, 1.0])
def test_a_partition_that_is_no_int_in_range_fails_naming_operator_key_and_value(result):
    with pytest.raises(JobExecutionError, match=rf"operator 'P': the partitioner returned "
                                                rf"{result!r} for key 14, expected an int in "
                                                r"\[0, 3\)"):
        _targets("custom", [7], 3, decode=make_decoder(PICKLED), partitioner=_Returns(result),
                 key_selector=_Key())


def test_a_failing_partitioner_is_a_user_function_error():
    with pytest.raises(UserFunctionError, match=r"operator 'P': partitioner.partition failed "
                                                r"on 7: ZeroDivisionError"):
        _targets("custom", [7], 3, decode=make_decoder(PICKLED),
                 partitioner=_Returns(ZeroDivisionError("boom")), key_selector=_Key())


def test_the_job_identity_tells_the_partitionings_apart():
    from pyspark_datastream.translation.job_identity import describe_graph

    ds = _stream()

    def described(stream):
        ops = describe_graph([ds._node, stream._node], 128, "hashmap")["operators"]
        return next(iter(ops.values()))

    assert described(ds.rebalance())["strategy"] == "rebalance"
    assert described(ds.shuffle())["strategy"] == "shuffle"
    custom = described(ds.partition_custom(Mod(), lambda r: r))
    assert custom["strategy"] == "custom" and custom["partitioner"].endswith("Mod")
