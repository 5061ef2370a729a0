"""Which keyed stages of the one query may key their records for the next keyed stage in
their own call (translation/streaming/handoff.py; graph only, no Spark)."""

from __future__ import annotations

import pytest
from pyspark_datastream import OutputTag, StreamExecutionEnvironment, Types, WatermarkStrategy
from pyspark_datastream.plan.graph import consumers, reachable
from pyspark_datastream.runtime.encoding import typed_encoding
from pyspark_datastream.translation.steps import side_output_tags
from pyspark_datastream.translation.streaming.handoff import handoff_of, handoff_plan
from pyspark_datastream.translation.streaming.one_query import carry_plan, with_carriers

T = Types.TUPLE([Types.STRING(), Types.LONG()])


def _env():
    return StreamExecutionEnvironment.get_execution_environment()


def _stage(stream, name):
    return stream.key_by(lambda r: r[0]).reduce(lambda a, b: b).name(name)


def _plan(env):
    nodes = reachable(list(env._sinks))
    readers = consumers(nodes)
    _, carriers = with_carriers(side_output_tags(nodes), nodes, carry_plan(nodes, readers),
                                False)
    return {n.name: p for n in nodes for i, p in handoff_plan(nodes, readers, carriers).items()
            if n.id == i}


@pytest.mark.parametrize("between", ["", "map_filter", "rebalance", "key_by_map"])
def test_a_stage_read_only_by_the_next_one_hands_its_records_to_it(between):
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T), "first")
    down = first
    if between == "map_filter":
        down = first.map(lambda r: r, T).filter(lambda r: True)
    elif between == "rebalance":
        down = first.rebalance()
    elif between == "key_by_map":
        down = first.key_by(lambda r: r[1]).map(lambda r: r, T)
    second = _stage(down, "second")
    _stage(second, "third").print()
    plan = _plan(env)
    assert set(plan) == {"first", "second"}
    assert plan["first"].consumer.name == "second" and plan["second"].consumer.name == "third"
    assert [s.name for s in plan["first"].path] == {
        "": [], "map_filter": ["Map", "Filter"], "rebalance": [],
        "key_by_map": ["Map"]}[between]


def test_a_stage_read_by_anything_else_keeps_the_keying_pass():
    env = _env()
    first = _stage(env.from_collection([("a", 1)], T), "first")
    _stage(first, "second").print()
    first.map(lambda r: r, T).print()  # a sink reads it too: carried, not handed off
    assert "first" not in _plan(env)


def test_side_outputs_two_input_stages_and_in_band_watermarks_keep_the_keying_pass():
    env = _env()
    tag = OutputTag("late", T)
    first = _stage(env.from_collection([("a", 1)], T), "first")
    first.get_side_output(tag).print()
    _stage(first, "second").print()
    assert "first" not in _plan(env)

    env = _env()
    one = _stage(env.from_collection([("a", 1)], T), "one")
    two = _stage(env.from_collection([("b", 1)], T), "two")
    one.union(two).key_by(lambda r: r[0]).reduce(lambda a, b: b).print()
    assert _plan(env) == {}  # a union between

    env = _env()
    ws = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda r, ts: r[1])
    first = _stage(env.from_collection([("a", 1)], T), "first")
    _stage(first.assign_timestamps_and_watermarks(ws), "second").print()
    assert "first" not in _plan(env)  # the stage below takes its watermark in band


def test_the_hand_off_falls_back_where_the_chain_is_no_plain_lambdas():
    from pyspark_datastream import MapFunction

    class Same(MapFunction):
        def map(self, value):
            return value

    env = _env()
    first = _stage(env.from_collection([("a", 1)], T), "first")
    _stage(first.map(Same(), T), "second").print()
    plan = _plan(env)
    stage = next(n for n in reachable(list(env._sinks)) if n.name == "first")
    assert handoff_of(plan["first"], stage, typed_encoding(T), 128) is None

    env = _env()
    first = _stage(env.from_collection([("a", 1)], T), "first")
    _stage(first.map(lambda r: r, T), "second").print()
    stage = next(n for n in reachable(list(env._sinks)) if n.name == "first")
    assert handoff_of(_plan(env)["first"], stage, typed_encoding(T), 128) is not None
