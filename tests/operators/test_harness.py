"""The user-facing test harness (no Spark), including the Sessionize example."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    ConfigurationError,
    JobExecutionError,
    ProcessingTimeError,
    StateError,
)
from pyspark_datastream.operators import aggregations as agg
from pyspark_datastream.operators.base import MAX_WATERMARK, Output
from pyspark_datastream.operators.functions import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    TimeDomain,
)
from pyspark_datastream.operators.harness import (
    FiredTimer,
    KeyedCoProcessFunctionTestHarness,
    KeyedOperatorTestHarness,
    KeyedProcessFunctionTestHarness,
    TimestampedValue,
)
from pyspark_datastream.operators.keyed_process import KeyedProcessOperator
from pyspark_datastream.operators.keyed_reduce import ReduceOperator
from pyspark_datastream.state_store.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.types import Types


class Sessionize(KeyedProcessFunction):
    def open(self, runtime_context):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        prev = self.last.value()
        if prev is not None and value[2] - prev > 30_000:
            yield (ctx.get_current_key(), prev)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(value[2] + 30_000)

    def on_timer(self, timestamp, ctx):
        if self.last.value() == timestamp - 30_000:
            yield (ctx.get_current_key(), self.last.value())


CLICKS = [
    ("alice", "click", 1_000),
    ("alice", "click", 5_000),
    ("bob", "click", 2_000),
    ("alice", "click", 50_000),
]


def test_sessionize_streaming_with_watermarks() -> None:
    h = KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0])
    for event in CLICKS[:3]:
        h.process_element(event, event[2])
    assert h.num_event_time_timers() == 3
    assert h.process_watermark(34_000) == [Output(None, ("bob", 2_000), 32_000)]
    assert h.get_value_state("alice", "last") == 5_000
    h.process_watermark(40_000)  # alice's 35_000 timer closes her first session
    h.process_element(CLICKS[3], CLICKS[3][2])  # a gap > 30 s: the previous session is reported again
    h.end_input()
    assert h.get_output() == [("bob", 2_000), ("alice", 5_000), ("alice", 5_000), ("alice", 50_000)]
    assert h.get_output_records()[0] == TimestampedValue(("bob", 2_000), 32_000)
    assert h.get_output_records()[2] == TimestampedValue(("alice", 5_000), 50_000)
    assert [t.timestamp for t in h.fired_timers()] == [31_000, 32_000, 35_000, 80_000]
    assert h.fired_timers()[1] == FiredTimer(32_000, "bob", TimeDomain.EVENT_TIME)
    assert h.num_event_time_timers() == 0
    h.close()


@pytest.mark.parametrize("backend", ["heap", "single_key", "rocksdb"])
def test_sessionize_batch_on_every_backend(backend, tmp_path) -> None:
    options = {"directory": str(tmp_path)} if backend == "rocksdb" else None
    h = KeyedProcessFunctionTestHarness(
        Sessionize(), lambda e: e[0], Types.STRING(), backend=backend, mode="BATCH",
        backend_options=options,
    )
    events = sorted(CLICKS) if backend == "single_key" else CLICKS  # sorted input for single_key
    for event in events:
        h.process_element(event, event[2])
    assert h.process_watermark(1_000_000) == []  # ignored in BATCH
    h.end_input()
    assert sorted(h.get_output()) == [("alice", 5_000), ("alice", 50_000), ("bob", 2_000)]
    h.close()


class Counter(KeyedProcessFunction):
    LATE = OutputTag("late")

    def open(self, rc):
        self.count = rc.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.seen = rc.get_list_state(ListStateDescriptor("seen", Types.STRING()))
        self.by_kind = rc.get_map_state(MapStateDescriptor("by_kind", Types.STRING(), Types.LONG()))

    def process_element(self, value, ctx):
        key, kind = value
        self.count.update((self.count.value() or 0) + 1)
        self.seen.add(kind)
        self.by_kind.put(kind, (self.by_kind.get(kind) or 0) + 1)
        if ctx.timestamp() is not None and ctx.timestamp() < ctx.timer_service().current_watermark():
            yield self.LATE, value
            return
        if kind == "remind":
            ctx.timer_service().register_processing_time_timer(
                ctx.timer_service().current_processing_time() + 100
            )
        yield (key, self.count.value())

    def on_timer(self, timestamp, ctx):
        yield ("reminder", ctx.get_current_key(), timestamp, ctx.time_domain().name)


def test_state_side_outputs_and_processing_time() -> None:
    h = KeyedProcessFunctionTestHarness(Counter(), lambda v: v[0], operator_name="counter")
    h.process_element(("a", "x"), 10)
    h.set_processing_time(1_000)
    h.process_element(("a", "remind"), 20)
    h.process_element(("b", "x"))
    assert h.num_processing_time_timers() == 1
    assert h.set_processing_time(1_099) == []
    assert h.set_processing_time(1_100) == [Output(None, ("reminder", "a", 1_100, "PROCESSING_TIME"), 1_100)]
    h.process_watermark(50)
    h.process_element(("b", "late"), 5)
    assert h.get_side_output(Counter.LATE) == [("b", "late")]
    assert h.get_side_output("late") == [("b", "late")]
    assert h.get_output() == [("a", 1), ("a", 2), ("b", 1), ("reminder", "a", 1_100, "PROCESSING_TIME")]
    # state reads by name and by descriptor, for any key; the current key is kept
    assert h.get_value_state("a", "count") == 2
    assert h.get_state("a", ListStateDescriptor("seen", Types.STRING())) == ["x", "remind"]
    assert h.get_state("b", "by_kind") == {"x": 1, "late": 1}
    assert h.get_value_state("nobody", "count") is None
    with pytest.raises(StateError, match="no state named 'nope' was acquired by the function"):
        h.get_state("a", "nope")
    h.process_element(("b", "y"), 60)
    assert h.get_value_state("b", "count") == 3
    assert h.fired_timers() == [FiredTimer(1_100, "a", TimeDomain.PROCESSING_TIME)]


def test_batch_harness_fails_on_processing_time_with_the_config_key() -> None:
    h = KeyedProcessFunctionTestHarness(Counter(), lambda v: v[0], mode="BATCH", operator_name="counter")
    with pytest.raises(ProcessingTimeError, match="operator 'counter'.*pipeline.processing-time.allow is FAIL"):
        h.process_element(("a", "remind"))
    ok = KeyedProcessFunctionTestHarness(
        Counter(), lambda v: v[0], mode="BATCH", processing_time_allow="IGNORE"
    )
    ok.process_element(("a", "remind"))
    assert ok.num_processing_time_timers() == 0


def test_single_key_harness_rules() -> None:
    h = KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0], backend="single_key", mode="BATCH")
    h.process_element(("a", "c", 1))
    # the next key ends the previous one: its timer fires right away
    assert h.process_element(("b", "c", 2)) == [Output(None, ("a", 1), 30_001)]
    with pytest.raises(StateError, match="only holds the current key's state"):
        h.get_value_state("a", "last")
    assert h.get_value_state("b", "last") == 2
    with pytest.raises(StateError, match="records of a key to be contiguous"):
        h.process_element(("a", "c", 3))
    with pytest.raises(ConfigurationError, match="single_key backend is BATCH-only"):
        KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0], backend="single_key")


def test_end_input_closes_the_input() -> None:
    h = KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0])
    h.end_input()
    with pytest.raises(JobExecutionError, match="end_input\\(\\) was called"):
        h.process_element(("a", "c", 1))


def test_unknown_backend_and_key_type() -> None:
    with pytest.raises(ConfigurationError, match="unknown state backend 'memory'; registered: "):
        KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0], backend="memory")
    with pytest.raises(ConfigurationError, match="key_type must be a TypeInformation"):
        KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0], key_type="STRING")
    with pytest.raises(ConfigurationError, match="unknown option\\(s\\) \\['colour'\\]"):
        KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0], colour="red")


class Enrich(KeyedCoProcessFunction):
    def open(self, rc):
        self.profile = rc.get_state(ValueStateDescriptor("profile", Types.STRING()))

    def process_element1(self, value, ctx):
        self.profile.update(value["name"])

    def process_element2(self, value, ctx):
        yield (ctx.get_current_key(), self.profile.value(), value[1])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), timestamp)


def test_two_input_harness_with_two_key_selectors() -> None:
    h = KeyedCoProcessFunctionTestHarness(Enrich(), lambda p: p["id"], lambda o: o[0])
    h.process_element1({"id": 7, "name": "Ann"})
    h.process_element2((7, "book"), 100)
    h.process_element2((8, "pen"), 200)
    assert h.get_output() == [(7, "Ann", "book"), (8, None, "pen")]
    assert h.process_watermark(150) == [Output(None, ("timer", 7, 101), 101)]
    assert h.get_value_state(7, "profile") == "Ann"


def test_generic_harness_runs_the_reduce_operator() -> None:
    h = KeyedOperatorTestHarness(ReduceOperator(agg.sum(1)), lambda v: v[0], mode="BATCH")
    for v in [("a", 1), ("b", 2), ("a", 3)]:
        h.process_element(v)
    assert h.get_output() == []
    assert h.get_value_state("a", "_reduce") == ("a", 4)
    h.end_input()
    assert sorted(h.get_output_records()) == [
        TimestampedValue(("a", 4), MAX_WATERMARK),
        TimestampedValue(("b", 2), MAX_WATERMARK),
    ]
    stream = KeyedOperatorTestHarness(KeyedProcessOperator(Sessionize()), [lambda e: e[0]])
    stream.process_element(("x", "c", 1), 1)
    assert stream.num_event_time_timers() == 1


def test_one_input_harness_refuses_a_second_input() -> None:
    """A keyed process function has one input: ``input_index=1`` is an error naming the
    operator and the value, and nothing was processed."""
    h = KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0])
    with pytest.raises(ConfigurationError, match=r"Sessionize.*input_index=1"):
        h.process_element(("a", "c", 1), 1, 1)
    assert h.process_element(("a", "c", 1), 1, 0) == h.process_element(("b", "c", 1), 1) == []
