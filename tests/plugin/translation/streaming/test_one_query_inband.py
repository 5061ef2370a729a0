"""Which keyed stages of the one query take their watermark in band, from a watermark
strategy assigned below the keyed stage above them or forwarded by an in-band stage above
them, and which such graphs it refuses (graph only, no Spark)."""

from __future__ import annotations

import pytest
from pyspark_datastream import GraphBuildError, StreamExecutionEnvironment, Types, WatermarkStrategy
from pyspark_datastream.plan.graph import consumers, reachable
from pyspark_datastream.translation.streaming.carried import carry_plan
from pyspark_datastream.translation.streaming.inband import (
    forwarded_from,
    forwarding,
    inband_strategy,
    inband_watermark,
)
from pyspark_datastream.translation.streaming.one_query import _check_graph

T = Types.TUPLE([Types.STRING(), Types.LONG()])
WS = WatermarkStrategy.for_bounded_out_of_orderness(5).with_timestamp_assigner(
    lambda r, ts: r[1])


def _stage(stream):
    return stream.key_by(lambda r: r[0]).reduce(lambda a, b: b)


def _check(env):
    nodes = reachable(list(env._sinks))
    readers = consumers(nodes)
    _check_graph(nodes, readers, carry_plan(nodes, readers))


def _env():
    return StreamExecutionEnvironment.get_execution_environment()


@pytest.mark.parametrize("between", ["", "map", "key_by_filter"])
def test_a_stage_below_a_strategy_below_a_keyed_stage_takes_it_in_band(between):
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T))
    assigned = first.map(lambda r: r, T).assign_timestamps_and_watermarks(WS)
    if between == "map":
        assigned = assigned.map(lambda r: (r[0], r[1] + 1), T)
    elif between == "key_by_filter":
        assigned = assigned.key_by(lambda r: r[1]).filter(lambda r: True)
    second = _stage(assigned)
    second.print()
    _check(env)  # runs
    strategy = next(n for n in reachable(list(env._sinks))
                    if getattr(n, "watermark_strategy", None) is not None)
    assert inband_strategy(second._node) is strategy
    assert inband_strategy(first._node) is None  # its watermark comes from Spark


def test_the_nearest_strategy_above_the_stage_is_the_one_it_takes():
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T).assign_timestamps_and_watermarks(WS))
    near = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda r, ts: r[1] * 2)
    second = _stage(first.assign_timestamps_and_watermarks(WS)
                    .assign_timestamps_and_watermarks(near))
    second.print()
    _check(env)
    assert inband_strategy(second._node).watermark_strategy is near


def test_a_strategy_below_a_keyed_stage_read_by_sinks_only_runs():
    env = _env()
    _stage(env.from_collection([("a", 1)], T)).assign_timestamps_and_watermarks(WS).print()
    _check(env)


@pytest.mark.parametrize("readers", [1, 2])
def test_the_stage_above_read_by_sinks_too_is_carried_through_the_in_band_stages(readers):
    """Carried through the stage below the strategy; a second such stage (its own strategy)
    keys them out of the first one's output (a relay), its assigner in that pass."""
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T))
    first.print()
    stages = [_stage(first.map(lambda r: r, T).assign_timestamps_and_watermarks(WS))
              for _ in range(readers)]
    for stage in stages:
        stage.print()
    _check(env)
    nodes = reachable(list(env._sinks))
    plan = carry_plan(nodes, consumers(nodes))
    ids = [first._node.id] + [s._node.id for s in stages]
    assert {k: v.id for k, v in plan.carried.items()} == dict(zip(ids, ids[1:]))
    assert all(inband_strategy(s._node) is not None for s in stages)


@pytest.mark.parametrize("between", ["", "map", "rebalance_key_by_filter"])
def test_a_stage_below_an_in_band_stage_takes_the_watermark_it_forwards(between):
    """As Flink forwards a watermark from operator to operator: the in-band stage hands it
    on, and so does a stage taking it from one (three keyed stages below the strategy)."""
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T))
    second = _stage(first.assign_timestamps_and_watermarks(WS))
    below = second
    if between == "map":
        below = below.map(lambda r: (r[0], r[1] + 1), T)
    elif between == "rebalance_key_by_filter":
        below = below.rebalance().key_by(lambda r: r[1]).filter(lambda r: True)
    third = _stage(below)
    fourth = _stage(third.map(lambda r: r, T))
    fourth.print()
    _check(env)  # runs
    strategy = inband_strategy(second._node)
    assert strategy is not None and inband_strategy(third._node) is None
    assert forwarded_from(third._node) is second._node
    assert forwarded_from(fourth._node) is third._node
    assert inband_watermark(third._node) is strategy is inband_watermark(fourth._node)
    nodes = reachable(list(env._sinks))
    assert {k: v.id for k, v in forwarding(nodes).items()} == {
        third._node.id: second._node.id, fourth._node.id: third._node.id}
    assert forwarded_from(second._node) is None and inband_watermark(first._node) is None


def test_the_in_band_stage_read_by_sinks_too_is_carried_through_the_stage_it_forwards_to():
    env = _env()
    second = _stage(_stage(env.from_collection([("a", 1)], T))
                    .assign_timestamps_and_watermarks(WS))
    second.print()
    third = _stage(second)
    third.print()
    _check(env)
    nodes = reachable(list(env._sinks))
    assert carry_plan(nodes, consumers(nodes)).carried[second._node.id] is third._node
    assert forwarded_from(third._node) is second._node


@pytest.mark.parametrize("shape", ["no_watermarks", "union", "relayed"])
def test_graphs_the_forwarded_watermark_does_not_reach_are_refused(shape):
    env = _env()
    second = _stage(_stage(env.from_collection([("a", 1)], T))
                    .assign_timestamps_and_watermarks(WS))
    if shape == "no_watermarks":  # Flink's operator for it forwards no watermark
        _stage(second.assign_timestamps_and_watermarks(
            WatermarkStrategy.no_watermarks())).print()
        match = "another watermark strategy"
    elif shape == "union":
        _stage(second.union(env.from_collection([("b", 2)], T))).print()
        match = "several inputs"
    else:  # the second reader keys the in-band stage's records out of the first's output
        _stage(second).print()
        _stage(second.map(lambda r: r, T)).print()
        match = "carried through another keyed stage"
    with pytest.raises(GraphBuildError, match=match):
        _check(env)


@pytest.mark.parametrize("shape", ["rebalanced", "union"])
def test_graphs_the_in_band_watermark_does_not_reach_are_refused(shape):
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T))
    assigned = first.assign_timestamps_and_watermarks(WS)
    if shape == "rebalanced":  # the assigner would run in a pass of its own
        _stage(assigned.rebalance()).print()
        match = "a partitioning its keying pass does not run"
    else:
        _stage(assigned.union(env.from_collection([("b", 2)], T))).print()
        match = "several inputs"
    with pytest.raises(GraphBuildError, match=match):
        _check(env)
