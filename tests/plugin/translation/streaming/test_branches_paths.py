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
from pyspark_datastream.translation.steps import side_output_tags
from pyspark_datastream.translation.streaming.branches import joined_branches, shared_paths
from pyspark_datastream.translation.streaming.carried import (
    carry_plan,
    exits_of,
    plan_part,
    query_exits,
    tail_unions,
    with_carriers,
)
from pyspark_datastream.translation.streaming.one_query import _check_graph, fans_out

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


def _plan(env):
    nodes = reachable(list(env._sinks))
    readers = consumers(nodes)
    return carry_plan(nodes, readers)


@pytest.mark.parametrize("shape", ["above", "between", "side", "onward"])
def test_a_stage_sinks_read_too_is_carried_through_the_stage_below(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    one, two = above.map(lambda r: r, T), above.filter(lambda r: True)
    reader = {"above": above, "between": one, "side": above.get_side_output(SIDE),
              "onward": above}[shape]
    reader.print()  # sinks read the stage above (through stateless operators) apart
    below = _below(one.union(two))
    if shape == "onward":  # the stage below goes on to a keyed stage: carried on too
        below.key_by(lambda r: r[1]).reduce(lambda a, b: b).print()
    _check(env)  # runs: the stage above is held once
    plan = _plan(env)
    assert plan.carried[above._node.id] is below._node and not plan.sources
    nodes = reachable(list(env._sinks))
    _, carriers = with_carriers(side_output_tags(nodes), nodes, plan, fanned_out=True)
    carry = carriers[below._node.id]
    assert carry.branched and carry.carried == above._node.id
    assert carry.tagged == (shape == "side")  # its side outputs are read: output tagged


@pytest.mark.parametrize("shape", ["below", "alone", "mapped"])
def test_a_union_of_paths_from_one_stage_that_a_sink_reads_runs_in_the_sinks_tail(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    joined = above.map(lambda r: r, T).union(above.get_side_output(SIDE).filter(
        lambda r: True), above)
    read = joined.map(lambda r: r, T) if shape == "mapped" else joined
    read.print()  # its exit: the stage above, the union in the sink's tail
    below = _below(joined) if shape == "below" else None
    _check(env)  # runs: the stage above is held once
    nodes = reachable(list(env._sinks))
    assert exits_of(read._node) == [above._node]
    assert tail_unions(nodes) == ([] if shape == "below" else [joined._node])
    assert fans_out(nodes, consumers(nodes))  # tails run in the fanned-out query only
    plan = _plan(env)
    if below is None:
        assert [e.id for e in query_exits(nodes)] == [above._node.id] and not plan.carried
    else:  # the union is in the query's plan too, in front of the stage below
        assert plan.carried[above._node.id] is below._node


@pytest.mark.parametrize("read", ["keyed", "sink"])
def test_paths_from_one_stage_into_a_union_with_records_from_elsewhere_read_it_once(read):
    env = StreamExecutionEnvironment.get_execution_environment()
    above, other_stage = _above(env), _above(env)
    source = env.from_collection([("b", 2)], T).map(lambda r: r, T)
    joined = above.map(lambda r: r, T).union(
        source, above.get_side_output(SIDE).filter(lambda r: True), other_stage, above)
    if read == "keyed":
        _below(joined.map(lambda r: r, T))
    else:
        joined.print()
    _check(env)  # runs: the stage above is held once
    nodes = reachable(list(env._sinks))
    shared = shared_paths(nodes, consumers(nodes), plan_part(query_exits(nodes)))
    [group] = shared[joined._node.id]
    assert group.branches.above is above._node and group.inputs == (0, 2, 4)
    assert [(side is not None, [n.stage for n in path])
            for side, path in group.branches.paths] == [(False, ["map"]), (True, ["filter"]),
                                                       (False, [])]


def test_a_union_carrying_a_stage_and_reading_another_along_two_paths_is_refused():
    env = StreamExecutionEnvironment.get_execution_environment()
    above, other = _above(env), _above(env)
    above.print()  # read by sinks and through the union: it would be carried
    _below(above.map(lambda r: r, T).union(other.map(lambda r: r, T), other))
    with pytest.raises(GraphBuildError, match=rf"id {above._node.id}\).*times"):
        _check(env)


def test_paths_into_such_a_union_read_elsewhere_too_stay_refused():
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    mapped = above.map(lambda r: r, T)
    _below(mapped)  # the path's operator is read by a keyed stage too: planned twice
    mapped.union(env.from_collection([("b", 2)], T), above).print()
    with pytest.raises(GraphBuildError, match="times"):
        _check(env)


@pytest.mark.parametrize("shape", ["two_stages", "source"])
def test_a_union_with_records_from_elsewhere_stays_an_exit(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    other = (_above(env) if shape == "two_stages"
             else env.from_collection([("b", 2)], T).map(lambda r: r, T))
    joined = above.map(lambda r: r, T).union(other)
    joined.print()
    nodes = reachable(list(env._sinks))
    assert exits_of(joined._node) == [joined._node] and not tail_unions(nodes)
    _check(env)  # runs: each stage read once, the union in the query's plan


@pytest.mark.parametrize("shape", ["keyed_above", "keyed_side", "below_read", "union_read"])
def test_a_stage_read_apart_other_than_by_sinks_stays_refused(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    one, two = above.map(lambda r: r, T), above.filter(lambda r: True)
    above.print()
    joined = one.union(two)
    if shape == "union_read":  # a sink reads the union: an exit of the query too
        joined.print()
    below = _below(joined)
    if shape == "keyed_above":  # another keyed stage reads the stage above too
        above.key_by(lambda r: r[1]).reduce(lambda a, b: b).print()
    elif shape == "keyed_side":  # and one of its side outputs
        above.get_side_output(SIDE).key_by(lambda r: r[1]).reduce(lambda a, b: b).print()
    else:  # the stage below is read by a keyed stage behind a union: not carried on
        (below.union(env.from_collection([("b", 2)], T)).key_by(lambda r: r[1])
         .reduce(lambda a, b: b).print())
    with pytest.raises(GraphBuildError, match="times"):
        _check(env)


@pytest.mark.parametrize("shape", ["strategy", "other_source", "custom"])
def test_other_joined_paths_are_refused(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    one, two = above.map(lambda r: r, T), above.filter(lambda r: True)
    if shape == "strategy":  # an assigner on a path: not in a branch's pass
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


@pytest.mark.parametrize("shape", ["plain", "side", "through_ops"])
def test_a_stage_read_by_sinks_and_through_a_union_with_records_from_elsewhere_is_carried(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    above.print()  # read apart by sinks
    if shape == "side":
        above.get_side_output(SIDE).print()
    path = above if shape == "plain" else above.map(lambda r: r, T).rebalance().filter(
        lambda r: True)
    other = env.from_collection([("b", 2)], T).map(lambda r: r, T)
    below = _below(other.union(path).map(lambda r: r, T))
    _check(env)  # runs: the stage above is held once
    plan = _plan(env)
    assert plan.carried[above._node.id] is below._node
    carry = plan.unions[below._node.id]
    assert carry.above is above._node and carry.side == 1
    nodes = reachable(list(env._sinks))
    _, carriers = with_carriers(side_output_tags(nodes), nodes, plan, fanned_out=True)
    assert carriers[below._node.id].union is carry
    assert carriers[below._node.id].for_pass()[-1]  # its keying pass reads them tagged


@pytest.mark.parametrize("shape", ["both_inputs", "keyed_other", "union_read", "custom"])
def test_other_unions_with_records_from_elsewhere_stay_refused(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    above.print()
    path = above.map(lambda r: r, T)
    other = env.from_collection([("b", 2)], T)
    if shape == "both_inputs":  # the other input reads the stage above too, after a sink
        other = other.union(above.filter(lambda r: True))
    elif shape == "keyed_other":  # a keyed stage read twice elsewhere on the other input
        other = above.key_by(lambda r: r[1]).reduce(lambda a, b: b)
        other.print()
    elif shape == "custom":  # a partitioning its keying pass does not run
        path = path.partition_custom(lambda k, n: 0, lambda r: r[0])
    joined = other.union(path)
    if shape == "union_read":  # the union is read by a sink too
        joined.print()
    _below(joined)
    with pytest.raises(GraphBuildError, match="times"):
        _check(env)


@pytest.mark.parametrize("shape", ["leaves", "stage_and_below"])
def test_a_union_of_stages_sharing_a_stage_above_leaves_the_query_apart(shape):
    """A union of records of keyed stages with a keyed stage above in common (two leaves of
    a tree of stages; a stage and one below it) would hold that stage twice in the query's
    plan: each input's stage is an exit, the shared stage carried through the others, and
    the union runs in the sink's tail."""
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _above(env)
    left = above.key_by(lambda r: r[0]).reduce(lambda a, b: b)
    right = (above.key_by(lambda r: r[1], key_type=Types.LONG()).reduce(lambda a, b: a)
             if shape == "leaves" else left.key_by(lambda r: r[1], key_type=Types.LONG())
             .reduce(lambda a, b: a))
    ends = [left._node, right._node] if shape == "leaves" else [above._node, right._node]
    joined = (left if shape == "leaves" else above).map(lambda r: r, T).union(right)
    joined.filter(lambda r: True).print()
    nodes = reachable(list(env._sinks))
    assert exits_of(joined._node) == ends
    assert query_exits(nodes) == ends and tail_unions(nodes) == [joined._node]
    assert fans_out(nodes, consumers(nodes))
    _check(env)  # runs: every stage held once


def test_a_union_of_stages_sharing_an_operator_above_them_stays_refused():
    """A stateless operator read by two keyed stages whose records a union joins: neither
    stage's keying pass may run it for the other (Flink runs it once per record)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    mapped = _above(env).map(lambda r: r, T)
    left = mapped.key_by(lambda r: r[0]).reduce(lambda a, b: b)
    right = mapped.key_by(lambda r: r[1], key_type=Types.LONG()).reduce(lambda a, b: a)
    left.union(right).print()
    with pytest.raises(GraphBuildError, match="Both.*2 times"):
        _check(env)
