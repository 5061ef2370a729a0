"""Which keyed stages the one query carries through the keyed stage below them, and which
graphs it still refuses because it would hold a keyed stage twice (graph only, no Spark)."""

from __future__ import annotations

import pytest
from pyspark_datastream import GraphBuildError, OutputTag, StreamExecutionEnvironment, Types
from pyspark_datastream.plan.graph import ChainNode, consumers, reachable
from pyspark_datastream.translation.steps import side_output_tags
from pyspark_datastream.translation.streaming.carried import (
    Carry,
    _path,
    carry_plan,
    carry_tag,
    relays,
    with_carriers,
)
from pyspark_datastream.translation.streaming.one_query import _check_paths

T = Types.TUPLE([Types.STRING(), Types.LONG()])


def _graph(env):
    nodes = reachable(list(env._sinks))
    return nodes, consumers(nodes)


def _stage(stream):
    return stream.key_by(lambda r: r[0]).reduce(lambda a, b: b)


def test_a_stage_read_by_sinks_and_one_keyed_stage_is_carried_by_it():
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    first.filter(lambda r: r[1] > 0).print()  # a second tail down to a sink
    second = _stage(first.map(lambda r: (r[0], 2 * r[1]), T))
    second.print()
    nodes, readers = _graph(env)
    assert {k: v.id for k, v in carry_plan(nodes, readers).carried.items()} == {
        first._node.id: second._node.id}
    _check_paths(nodes, readers, carry_plan(nodes, readers))  # runs: nothing refused
    tags, carriers = with_carriers({}, nodes, carry_plan(nodes, readers), fanned_out=True)
    assert carriers == {second._node.id: Carry(first._node.id, False)}
    assert tags == {second._node.id: frozenset({carry_tag(first._node.id)})}
    # a job writing one sink does not fan out: nothing carried
    assert with_carriers({}, nodes, carry_plan(nodes, readers), fanned_out=False) == ({}, {})


def test_a_chain_of_stages_each_read_by_sinks_is_carried_to_its_last_stage():
    """Each stage read by a sink and keyed on directly: the first's records travel through
    the second and on through the third, where they leave with the second's."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    second = _stage(first)
    second.print()
    third = _stage(second)
    third.print()
    nodes, readers = _graph(env)
    a, b, c = first._node.id, second._node.id, third._node.id
    assert {k: v.id for k, v in carry_plan(nodes, readers).carried.items()} == {a: b, b: c}
    _check_paths(nodes, readers, carry_plan(nodes, readers))
    tags, carriers = with_carriers({}, nodes, carry_plan(nodes, readers), fanned_out=True)
    assert carriers == {b: Carry(a, False), c: Carry(b, True)}
    assert tags == {b: frozenset({carry_tag(a)}), c: frozenset({carry_tag(a), carry_tag(b)})}


BETWEEN = {  # what may lie between a carried stage and the key_by of the stage below
    "map": lambda s: s.map(lambda r: r, T),
    "key_by_map": lambda s: s.key_by(lambda r: r[0]).map(lambda r: r, T),
    "rebalance": lambda s: s.rebalance().map(lambda r: r, T),
    "shuffle": lambda s: s.filter(lambda r: True).shuffle(),
    "rescale": lambda s: s.rescale(),
    "forward": lambda s: s.forward().map(lambda r: r, T),
}


def _three(between: str, reads_second: bool):
    """Three keyed stages, each written to a sink: the second reads the first, the third
    reads the second (or the first) through ``BETWEEN[between]``."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    second = _stage(first)
    third = _stage(BETWEEN[between](second if reads_second else first))
    for stage in (first, second, third):
        stage.print()
    return (*_graph(env), (first, second, third))


@pytest.mark.parametrize("between", sorted(BETWEEN))
def test_a_stage_carried_on_through_stateless_operators(between):
    """The keying pass in front of the third stage runs the operators between over the
    second stage's own records and hands those carried through it on: a ``key_by`` read as
    a plain stream, and a partitioning the ``key_by`` below makes moot, are left out."""
    nodes, readers, (first, second, third) = _three(between, reads_second=True)
    a, b, c = first._node.id, second._node.id, third._node.id
    assert {k: v.id for k, v in carry_plan(nodes, readers).carried.items()} == {a: b, b: c}
    _check_paths(nodes, readers, carry_plan(nodes, readers))
    _, carriers = with_carriers({}, nodes, carry_plan(nodes, readers), fanned_out=True)
    assert carriers[c] == Carry(b, True)
    # the pass runs the maps and filters between, in their order, and nothing else
    ops = [n.name for n in _path(third._node.inputs[0], second._node)]
    assert ops == [n.name for n in nodes if isinstance(n, ChainNode)
                   and n.id > second._node.id and n.id < third._node.id]


@pytest.mark.parametrize("carried_on", [False, True])
def test_a_stage_whose_side_output_is_read_is_carried_by_the_stage_below(carried_on):
    """Its side outputs travel with its records, through the keying pass reading it whole
    (and running the map between over its own records only)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.get_side_output(OutputTag("late", T)).print()
    second = _stage(first.map(lambda r: r, T))
    second.print()
    if carried_on:  # the carrier is carried on too, its own side output read
        second.get_side_output(OutputTag("late", T)).print()
        third = _stage(second)
        third.print()
    nodes, readers = _graph(env)
    a, b = first._node.id, second._node.id
    assert carry_plan(nodes, readers).carried[a].id == b
    _check_paths(nodes, readers, carry_plan(nodes, readers))
    tags = side_output_tags(nodes)
    _, carriers = with_carriers(tags, nodes, carry_plan(nodes, readers), fanned_out=True)
    assert carriers[b] == Carry(a, True)  # the keying pass reads its _tag rows
    if carried_on:
        assert carriers[third._node.id] == Carry(b, True)


@pytest.mark.parametrize("sinks", [True, False])
def test_a_stage_read_by_several_keyed_stages_is_relayed(sinks):
    """Carried through the first stage reading it, which is carried through the second,
    whose keying pass keys the first stage's records out of the first's output (a relay),
    and so on; the first stage's records go on past the last only where sinks read it."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    if sinks:
        first.print()
    second = _stage(first)
    second.print()
    third = _stage(first.map(lambda r: r, T))
    third.print()
    fourth = _stage(first.filter(lambda r: True))
    fourth.print()
    nodes, readers = _graph(env)
    a, b, c, d = (s._node.id for s in (first, second, third, fourth))
    plan = carry_plan(nodes, readers)
    assert {k: v.id for k, v in plan[0].items()} == {a: b, b: c, c: d}
    assert {k: (v.id, s.id) for k, (v, s) in plan[1].items()} == {c: (b, a), d: (c, a)}
    _check_paths(nodes, readers, carry_plan(nodes, readers))
    tags, carriers = with_carriers({}, nodes, carry_plan(nodes, readers), fanned_out=True)
    assert carriers == {b: Carry(a, False),
                        c: Carry(b, True, a, True),  # d reads them on
                        d: Carry(c, True, a, sinks)}
    assert carriers[c].for_pass() == (carry_tag(b), True, carry_tag(a), True, False, False)
    # a relay's reader reads the relay's output (via) for the records of the stage above it
    assert [(carriers[n].tag, carriers[n].via) for n in (b, c, d)] == [
        (carry_tag(a), None), (carry_tag(b), b), (carry_tag(c), c)]
    assert [relays(carriers, n) for n in (a, b, c, d)] == [False, True, True, False]
    assert tags[d] == frozenset({carry_tag(a), carry_tag(b), carry_tag(c)})


def test_the_stage_read_by_a_keyed_stage_is_the_last_relayed_to():
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    second, third = _stage(first), _stage(first)
    fourth = _stage(second)  # the second is read on: the third relays to it
    for stage in (second, third, fourth):
        stage.print()
    nodes, readers = _graph(env)
    a, b, c, d = (s._node.id for s in (first, second, third, fourth))
    assert {k: v.id for k, v in carry_plan(nodes, readers).carried.items()} == {a: c, c: b, b: d}
    _check_paths(nodes, readers, carry_plan(nodes, readers))


def test_a_stage_read_by_a_relay_and_carried_on_through_it():
    """The stage above a relay is carried through the relay's stages to the last one."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    second = _stage(first)
    second.print()
    third, fourth = _stage(second), _stage(second)
    third.print()
    fourth.print()
    nodes, readers = _graph(env)
    a, b, c, d = (s._node.id for s in (first, second, third, fourth))
    assert {k: v.id for k, v in carry_plan(nodes, readers).carried.items()} == {a: b, b: c, c: d}
    _check_paths(nodes, readers, carry_plan(nodes, readers))


@pytest.mark.parametrize("between", ["key_by_map", "rebalance", "shuffle"])
def test_a_stage_relayed_through_a_key_by_or_a_partitioning(between):
    """The relay's keying pass runs the operators from the first stage down to the third's
    ``key_by`` over the first stage's records, leaving out a ``key_by`` or partitioning."""
    nodes, readers, (first, second, third) = _three(between, reads_second=False)
    a, b, c = first._node.id, second._node.id, third._node.id
    plan = carry_plan(nodes, readers)
    assert {k: v.id for k, v in plan.carried.items()} == {a: b, b: c}
    assert {k: (v.id, s.id) for k, (v, s) in plan.sources.items()} == {c: (b, a)}
    _check_paths(nodes, readers, plan)


@pytest.mark.parametrize("depth", [1, 2])
def test_the_stages_above_a_carried_stage_are_held_once(depth):
    """A carried stage is held once, so are the keyed stages above it, which no sink reads."""
    env = StreamExecutionEnvironment.get_execution_environment()
    above = _stage(env.from_collection([("a", 1)], T))
    for _ in range(depth - 1):
        above = _stage(above.map(lambda r: r, T))
    carried = _stage(above)
    carried.print()
    below = _stage(carried)
    below.print()
    nodes, readers = _graph(env)
    plan = carry_plan(nodes, readers)
    assert {k: v.id for k, v in plan.carried.items()} == {carried._node.id: below._node.id}
    _check_paths(nodes, readers, plan)  # runs: nothing refused


@pytest.mark.parametrize("sinks", [True, False])
def test_a_tree_of_keyed_stages_runs_as_one_chain_in_breadth_first_order(sinks):
    """Two stages read the first and each goes on to a stage of its own: the query chains
    all four below the first, each keying its parent's records out of the one before."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    second, third = _stage(first), _stage(first.map(lambda r: r, T))
    if sinks:  # read apart too (else only by the stages below them)
        second.print()
        third.print()
    fourth = _stage(second.filter(lambda r: True))
    fifth = _stage(third)
    fourth.print()
    fifth.print()
    nodes, readers = _graph(env)
    plan = carry_plan(nodes, readers)
    a, b, c, d, e = (s._node.id for s in (first, second, third, fourth, fifth))
    assert {k: v.id for k, v in plan.carried.items()} == {a: b, b: c, c: d, d: e}
    assert {k: (v.id, s.id) for k, (v, s) in plan.sources.items()} == {
        c: (b, a), d: (c, b), e: (d, c)}
    _check_paths(nodes, readers, plan)  # runs: nothing refused
    _, carriers = with_carriers({}, nodes, plan, fanned_out=True)
    assert carriers[b] == Carry(a, False)
    assert carriers[e] == Carry(d, True, c, sinks)  # the last: the third's records on to sinks
    assert [carriers[k].via for k in (c, d, e)] == [b, c, d]


@pytest.mark.parametrize("other", ["union", "bad_tree"])
def test_a_tree_runs_beside_a_stage_another_plan_carries(other):
    """A tree of keyed stages, and beside it a stage that only another plan carries (through
    a union with records from elsewhere) or a tree of another shape (refused, naming it):
    each tree is planned on its own."""
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    second, third = _stage(first), _stage(first)
    _stage(second).print()
    third.print()
    apart = _stage(env.from_collection([("b", 2)], T))
    apart.print()
    if other == "union":  # read by sinks and through a union by the stage below
        below = _stage(apart.union(env.from_collection([("c", 3)], T)))
    else:  # read by sinks and by two keyed stages, one of them behind a broadcast
        _stage(apart).print()
        below = _stage(apart.broadcast().map(lambda r: r, T))
    below.print()
    nodes, readers = _graph(env)
    plan = carry_plan(nodes, readers)
    if other == "bad_tree":
        with pytest.raises(GraphBuildError, match=rf"id {apart._node.id}\).*3 times"):
            _check_paths(nodes, readers, plan)
        return
    _check_paths(nodes, readers, plan)  # runs: nothing refused
    assert plan.carried[first._node.id] is second._node
    assert plan.carried[apart._node.id] is below._node
    assert plan.unions[below._node.id].above is apart._node


@pytest.mark.parametrize("shape", ["broadcast", "custom"])
def test_a_stage_the_query_cannot_carry_is_refused(shape):
    env = StreamExecutionEnvironment.get_execution_environment()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    if shape == "broadcast":  # copies each record to every subtask of the map
        _stage(first.broadcast().map(lambda r: r, T)).print()
    else:  # the user's partitioner runs (and may fail the job)
        _stage(first.partition_custom(lambda k, n: 0, lambda r: r[0])).print()
    nodes, readers = _graph(env)
    assert first._node.id not in carry_plan(nodes, readers).carried
    with pytest.raises(GraphBuildError, match="times"):
        _check_paths(nodes, readers, carry_plan(nodes, readers))
