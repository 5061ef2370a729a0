"""Which paths from one keyed stage to the next, joined by a union, the one query runs in
one keying pass, holding the stage above once (graph only, no Spark)."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    GraphBuildError,
    KeyedProcessFunction,
    OutputTag,
    StreamExecutionEnvironment,
    Types,
    WatermarkStrategy,
)
from pyspark_datastream.plan.graph import consumers, reachable
from pyspark_datastream.translation.streaming.branches import joined_branches
from pyspark_datastream.translation.streaming.one_query import _check_graph, carry_plan

T = Types.TUPLE([Types.STRING(), Types.LONG()])
SIDE = OutputTag("side", T)


class Both(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value
        yield SIDE, value


def _check(env):
    nodes = reachable(list(env._sinks))
    readers = consumers(nodes)
    _check_graph(nodes, readers, carry_plan(nodes, readers))


def _above(env):
    return env.from_collection([("a", 1)], T).key_by(lambda r: r[0]).process(Both(), T)


def _below(stream):
    stage = stream.key_by(lambda r: r[0]).reduce(lambda a, b: b)
    stage.print()
    return stage


def test_paths_from_the_main_and_a_side_output_joined_by_a_union_run_in_one_pass():
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    even, twice = above.filter(lambda r: r[1] % 2 == 0), above.map(lambda r: r, T)
    joined = even.union(twice.rebalance(), above, above.get_side_output(SIDE).map(
        lambda r: r, T))
    below = _below(joined.map(lambda r: r, T).filter(lambda r: True))
    _check(env)  # runs: the stage above is held once
    branches = joined_branches(below._node)
    assert branches.above is above._node and branches.union is joined._node
    assert [(side is not None, [n.stage for n in path]) for side, path in branches.paths] == [
        (False, ["filter"]), (False, ["map"]), (False, []), (True, ["map"])]
    assert branches.paths[3][0].tag_id == SIDE.tag_id
    assert [n.stage for n in branches.after] == ["map", "filter"]


@pytest.mark.parametrize("shape", ["sink_above", "sink_between", "strategy", "other_source",
                                   "custom"])
def test_other_joined_paths_are_refused(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    one, two = above.map(lambda r: r, T), above.filter(lambda r: True)
    if shape == "sink_above":  # the stage above would be read apart too
        above.print()
    elif shape == "sink_between":
        one.print()
    elif shape == "strategy":  # an assigner on a path: not in a branch's pass
        two = two.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                lambda r, ts: r[1]))
    elif shape == "other_source":  # records no keyed stage touched meet them
        two = env.from_collection([("b", 2)], T)
    else:
        two = two.partition_custom(lambda k, n: 0, lambda r: r[0])
    below = _below(one.union(two))
    assert (joined_branches(below._node) is None) == (shape in ("strategy", "other_source",
                                                                "custom"))
    if shape == "other_source":
        _check(env)  # one path from the stage above: held once, as before
        return
    with pytest.raises(GraphBuildError, match="times"):
        _check(env)
