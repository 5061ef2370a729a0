"""Keyed process operators: contexts, timers, BATCH/STREAMING time semantics, processing time."""

from __future__ import annotations

import pytest
from pyspark import cloudpickle
from pyspark_datastream import (
    GraphBuildError,
    JobExecutionError,
    ProcessingTimeError,
    StateDescriptorError,
    StateError,
)
from pyspark_datastream.operators.base import MAX_WATERMARK, MIN_WATERMARK, OperatorConfig, Output
from pyspark_datastream.operators.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    TimeDomain,
)
from pyspark_datastream.operators.keyed_process import KeyedCoProcessOperator, KeyedProcessOperator
from pyspark_datastream.state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.functions import AggregateFunction
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer
from pyspark_datastream.state_store.types import Types

SIDE = OutputTag("side")


def values(outputs):
    return [o.value for o in outputs if o.tag is None]


class Recorder(KeyedProcessFunction):
    """Records what the contexts say; registers timers on request."""

    def __init__(self) -> None:
        self.log: list = []

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        ts = ctx.timer_service()
        self.log.append(("element", value, ctx.timestamp(), ctx.get_current_key(), ts.current_watermark()))
        self.count.update((self.count.value() or 0) + 1)
        kind, at = value if isinstance(value, tuple) else (value, None)
        if kind == "event":
            ts.register_event_time_timer(at)
        elif kind == "proc":
            ts.register_processing_time_timer(at)
        elif kind == "del-event":
            ts.delete_event_time_timer(at)
        elif kind == "del-proc":
            ts.delete_processing_time_timer(at)
        elif kind == "side":
            ctx.output(SIDE, "via-ctx")
            yield SIDE, "via-yield"
        elif kind == "now":
            yield ts.current_processing_time()
        yield (ctx.get_current_key(), self.count.value())

    def on_timer(self, timestamp, ctx):
        ts = ctx.timer_service()
        self.log.append(
            ("timer", timestamp, ctx.timestamp(), ctx.get_current_key(), ctx.time_domain(), ts.current_watermark())
        )
        yield ("fired", ctx.get_current_key(), timestamp, ctx.time_domain().name)
        ctx.output(SIDE, ("side-fired", timestamp))


# -- contexts ------------------------------------------------------------------------------


def test_process_context_timestamp_key_outputs(drive) -> None:
    fn = Recorder()
    d = drive(KeyedProcessOperator(fn))
    assert d.push("a", "x", 17) == [Output(None, ("a", 1), 17)]
    assert d.push("a", "x", None) == [Output(None, ("a", 2), None)]
    assert d.push("b", "side", 5) == [
        Output("side", "via-ctx", 5),
        Output("side", "via-yield", 5),
        Output(None, ("b", 1), 5),
    ]
    assert fn.log[0] == ("element", "x", 17, "a", MIN_WATERMARK)
    assert fn.log[1][2] is None


def test_runtime_context_all_state_kinds_and_task_info(drive) -> None:
    class Sum(AggregateFunction):
        def create_accumulator(self):
            return 0

        def add(self, value, accumulator):
            return accumulator + value

        def get_result(self, accumulator):
            return accumulator * 10

    class AllStates(KeyedProcessFunction):
        def open(self, rc):
            self.info = (
                rc.get_task_name(),
                rc.get_index_of_this_subtask(),
                rc.get_number_of_parallel_subtasks(),
                rc.get_max_number_of_parallel_subtasks(),
                rc.get_job_parameter("threshold", 0),
                rc.get_job_parameter("missing", "dflt"),
                rc.get_job_parameter("missing", default_value=1),
                rc.get_job_parameter("missing", default=2),
            )
            self.value = rc.get_state(ValueStateDescriptor("v", Types.STRING()))
            self.list = rc.get_list_state(ListStateDescriptor("l", Types.LONG()))
            self.map = rc.get_map_state(MapStateDescriptor("m", Types.STRING(), Types.LONG()))
            self.red = rc.get_reducing_state(ReducingStateDescriptor("r", lambda a, b: a + b, Types.LONG()))
            self.agg = rc.get_aggregating_state(AggregatingStateDescriptor("g", Sum(), Types.LONG()))
            self.sorted = rc.get_binary_sorted_state(
                BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.STRING())
            )
            self.tv = rc.get_temporal_value_state(ValueStateDescriptor("tv", Types.STRING()))
            self.tl = rc.get_temporal_list_state(ListStateDescriptor("tl", Types.STRING()))

        def process_element(self, value, ctx):
            self.value.update(value)
            self.list.add(len(value))
            self.map.put(value, len(value))
            self.red.add(1)
            self.agg.add(2)
            self.sorted.add(ctx.timestamp(), value)
            self.tv.update(ctx.timestamp(), value)
            self.tl.add(ctx.timestamp(), value)
            yield (
                self.value.value(),
                list(self.list.get()),
                dict(self.map.items()),
                self.red.get(),
                self.agg.get(),
                self.sorted.first_entry(),
                self.tv.value_at_or_before(100).value,
                self.tl.get_at(ctx.timestamp()).value,
            )

    fn = AllStates()
    d = drive(
        KeyedProcessOperator(fn),
        operator_name="all-states",
        subtask_index=1,
        parallelism=2,
        max_parallelism=64,
        job_parameters={"threshold": 5},
    )
    assert fn.info == ("all-states", 1, 2, 64, 5, "dflt", 1, 2)
    d.push("k", "ab", 10)
    out = values(d.push("k", "xyz", 5))
    assert out == [("xyz", [2, 3], {"ab": 2, "xyz": 3}, 2, 40, (5, ["xyz"]), "ab", ["xyz"])]
    # another key sees its own state
    assert values(d.push("other", "q", 1))[0][:4] == ("q", [1], {"q": 1}, 1)


def test_runtime_context_checks_descriptor_kind(drive) -> None:
    class Wrong(KeyedProcessFunction):
        def open(self, rc):
            rc.get_list_state(ValueStateDescriptor("v", Types.LONG()))

        def process_element(self, value, ctx):
            return None

    with pytest.raises(StateDescriptorError, match="'op-under-test': get_list_state\\(\\) needs a ListStateDescriptor, got ValueStateDescriptor"):
        drive(KeyedProcessOperator(Wrong()))


# -- STREAMING event time ----------------------------------------------------------------------


def test_streaming_event_timers_fire_across_keys_in_timestamp_key_order(drive) -> None:
    fn = Recorder()
    d = drive(KeyedProcessOperator(fn))
    d.push("b", ("event", 20), 1)
    d.push("a", ("event", 20), 1)
    d.push("a", ("event", 10), 1)
    d.push("c", ("event", 30), 1)
    d.push("c", ("event", 30), 1)  # idempotent: one timer
    assert list(d.operator.advance_watermark(9)) == []
    out = list(d.operator.advance_watermark(25))
    assert values(out) == [("fired", "a", 10, "EVENT_TIME"), ("fired", "a", 20, "EVENT_TIME"), ("fired", "b", 20, "EVENT_TIME")]
    # timer outputs carry the timer timestamp, side outputs too
    assert out[0] == Output(None, ("fired", "a", 10, "EVENT_TIME"), 10)
    assert out[1] == Output("side", ("side-fired", 10), 10)
    timer_logs = [e for e in fn.log if e[0] == "timer"]
    assert timer_logs[0] == ("timer", 10, 10, "a", TimeDomain.EVENT_TIME, 25)
    # the watermark is remembered and never goes back
    assert list(d.operator.advance_watermark(12)) == []
    d.push("z", "x", 1)
    assert fn.log[-1][4] == 25
    assert values(d.operator.end_input()) == [("fired", "c", 30, "EVENT_TIME")]


def test_delete_event_timer_and_timer_in_the_past(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()))
    d.push("a", ("event", 10))
    d.push("a", ("del-event", 10))
    assert len(d.operator.event_queue) == 0
    list(d.operator.advance_watermark(50))
    d.push("a", ("event", 40))  # behind the watermark: fires with the next advance
    assert values(d.operator.advance_watermark(51)) == [("fired", "a", 40, "EVENT_TIME")]


def test_timer_registered_in_on_timer_fires_in_the_same_advance(drive) -> None:
    class Chain(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(10)

        def on_timer(self, timestamp, ctx):
            if timestamp < 30:
                ctx.timer_service().register_event_time_timer(timestamp + 10)
            yield timestamp

    d = drive(KeyedProcessOperator(Chain()))
    d.push("k", 1)
    assert values(d.operator.advance_watermark(25)) == [10, 20]
    assert values(d.operator.advance_watermark(100)) == [30]


@pytest.mark.parametrize("seed", range(3))
def test_streaming_timers_fire_alike_with_and_without_a_timer_listener(drive, seed) -> None:
    """STREAMING fires eagerly in the operator's own loop unless a timer listener watches
    (then lazily, one timer at a time): random timers over many keys, timers re-armed in
    on_timer, watermarks in steps; both fire the same outputs, each advance in (timestamp,
    key) order, every timer up to the last watermark once."""
    import random

    class Rearm(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            if timestamp % 3 == 0:  # due in the same advance when <= its watermark
                ctx.timer_service().register_event_time_timer(timestamp + 7)
            yield (ctx.get_current_key(), timestamp)
            yield SIDE, timestamp

    rnd = random.Random(seed)
    pushes = [(rnd.randrange(40), rnd.randrange(1, 400)) for _ in range(600)]
    marks = sorted(rnd.sample(range(0, 420), 8)) + [500]
    runs = []
    for listened in (False, True):
        d = drive(KeyedProcessOperator(Rearm()))
        heard: list[tuple[int, object]] = []
        if listened:
            d.operator.timer_listener = lambda ts, key, domain, heard=heard: heard.append((ts, key))
        for key, ts in pushes:
            d.push(key, ts, ts)
        fired = [list(d.operator.advance_watermark(mark)) for mark in marks]
        runs.append(fired)
        if listened:
            assert len(heard) == sum(len(out) for out in fired) // 2
    assert runs[0] == runs[1]
    expected: set[tuple[int, int]] = set()
    for key, ts in pushes:
        while (key, ts) not in expected and ts <= marks[-1]:
            expected.add((key, ts))
            if ts % 3:
                break
            ts += 7
    main = [[o.value for o in out if o.tag is None] for out in runs[0]]
    for out in main:
        assert out == sorted(out, key=lambda kt: (kt[1], d.backend.key_serializer.serialize(kt[0])))
    assert sorted(kt for out in main for kt in out) == sorted(expected)


# -- BATCH: perfect watermark per key ---------------------------------------------------------------


@pytest.mark.parametrize("backend", ["heap", "single_key"])
def test_batch_perfect_watermark_and_timers_at_end_of_key(drive, backend) -> None:
    class Batchy(KeyedProcessFunction):
        def __init__(self):
            self.seen = []
            self.rearmed = False

        def process_element(self, value, ctx):
            self.seen.append(("element", ctx.timer_service().current_watermark()))
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            self.seen.append(("timer", timestamp, ctx.timer_service().current_watermark()))
            if timestamp == 20 and not self.rearmed:
                self.rearmed = True
                ctx.timer_service().register_event_time_timer(25)  # later: fires too
                ctx.timer_service().register_event_time_timer(20)  # same: fires again
            yield (ctx.get_current_key(), timestamp)

    fn = Batchy()
    d = drive(KeyedProcessOperator(fn), "BATCH", backend)
    for v in (30, 10, 20):
        d.push("a", v)
    # watermarks from the driver are ignored in BATCH
    assert list(d.operator.advance_watermark(1000)) == []
    assert all(e == ("element", MIN_WATERMARK) for e in fn.seen)
    out = list(d.operator.end_key())
    assert values(out) == [("a", 10), ("a", 20), ("a", 20), ("a", 25), ("a", 30)]
    assert [o.timestamp for o in out] == [10, 20, 20, 25, 30]
    assert all(e[2] == MAX_WATERMARK for e in fn.seen if e[0] == "timer")
    # the next key starts again at MIN
    d.push("b", 5)
    assert fn.seen[-1] == ("element", MIN_WATERMARK)
    assert values(d.operator.end_key()) == [("b", 5)]
    assert values(d.operator.end_input()) == []


@pytest.mark.parametrize("backend", ["heap", "single_key"])
def test_batch_end_of_key_timers_give_what_end_of_input_gives(drive, backend) -> None:
    """BATCH fires a key's event timers at end_key on an inlined path; each timer's main and
    side outputs, in order and with the timer's timestamp, and what on_timer's context says,
    equal what the general path gives when end_input fires the same timers."""
    pushes = [("event", 30), "side", ("event", 10), ("event", 30), ("event", 20)]

    def run(end: str) -> tuple[list, list]:
        fn = Recorder()
        d = drive(KeyedProcessOperator(fn), "BATCH", backend)
        for v in pushes:
            d.push("k", v)
        out = list(getattr(d.operator, end)())
        return ([(o.tag, o.value, o.timestamp) for o in out],
                [e for e in fn.log if e[0] == "timer"])

    by_key, by_input = run("end_key"), run("end_input")
    assert by_key == by_input
    outputs, timers = by_key
    assert outputs == [
        (None, ("fired", "k", 10, "EVENT_TIME"), 10), (SIDE.tag_id, ("side-fired", 10), 10),
        (None, ("fired", "k", 20, "EVENT_TIME"), 20), (SIDE.tag_id, ("side-fired", 20), 20),
        (None, ("fired", "k", 30, "EVENT_TIME"), 30), (SIDE.tag_id, ("side-fired", 30), 30),
    ]
    assert timers == [("timer", t, t, "k", TimeDomain.EVENT_TIME, MAX_WATERMARK)
                      for t in (10, 20, 30)]


@pytest.mark.parametrize("backend", ["heap", "single_key"])
def test_batch_end_of_key_orders_timers_changed_while_firing(drive, backend) -> None:
    """Watermark MAX fires every timer in timestamp order, as Flink polls its queue one timer
    at a time: one registered by on_timer earlier than the pending ones fires before them,
    a pending one it deletes never fires; a yielded ``(tag, value)`` is a side output."""

    class Rewire(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            timers = ctx.timer_service()
            if timestamp == 10:
                timers.register_event_time_timer(15)  # before the pending 20: fires next
                timers.delete_event_time_timer(30)  # pending: never fires
            if timestamp == 15:
                timers.register_event_time_timer(12)  # in the past of the watermark: due now
                yield SIDE, ("side", timestamp)
            yield timestamp

    d = drive(KeyedProcessOperator(Rewire()), "BATCH", backend)
    for v in (30, 40, 10, 20):
        d.push("a", v)
    out = [(o.tag, o.value, o.timestamp) for o in d.operator.end_key()]
    assert out == [(None, 10, 10), (SIDE.tag_id, ("side", 15), 15), (None, 15, 15),
                   (None, 12, 12), (None, 20, 20), (None, 40, 40)]


@pytest.mark.parametrize("backend", ["heap", "single_key"])
def test_batch_on_timer_error_at_end_of_key_names_operator_and_timer(drive, backend) -> None:
    class Boom(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            if timestamp == 7:
                raise KeyError("nope")
            yield timestamp

    d = drive(KeyedProcessOperator(Boom()), "BATCH", backend, operator_name="boom")
    for v in (7, 3):
        d.push("a", v)
    with pytest.raises(JobExecutionError,
                       match=r"operator 'boom': on_timer \(EVENT_TIME\) failed on 7: KeyError") as info:
        list(d.operator.end_key())
    assert isinstance(info.value.__cause__, KeyError)


def test_batch_hash_mode_fires_everything_at_end_input(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()), "BATCH", "heap")
    d.push("b", ("event", 5))
    d.push("a", ("event", 7))
    d.push("b", ("event", 1))
    assert values(d.operator.end_input()) == [
        ("fired", "b", 1, "EVENT_TIME"),
        ("fired", "b", 5, "EVENT_TIME"),
        ("fired", "a", 7, "EVENT_TIME"),
    ]


def test_single_key_backend_refuses_to_drop_a_key_with_pending_timers(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()), "BATCH", "single_key")
    d.push("a", ("event", 5))
    with pytest.raises(JobExecutionError, match="still has 1 pending timer\\(s\\).*must call end_key\\(\\)"):
        d.push("b", "x")


# -- processing time ------------------------------------------------------------------------------


def test_processing_time_fail_in_batch_names_operator_and_key(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()), "BATCH", operator_name="sessionizer")
    message = (
        "operator 'sessionizer': current_processing_time\\(\\) is not allowed because "
        "pipeline.processing-time.allow is FAIL"
    )
    with pytest.raises(ProcessingTimeError, match=message):
        d.push("a", "now")
    with pytest.raises(ProcessingTimeError, match="register_processing_time_timer\\(\\).*pipeline.processing-time.allow"):
        d.push("a", ("proc", 5))
    with pytest.raises(ProcessingTimeError, match="delete_processing_time_timer"):
        d.push("a", ("del-proc", 5))


def test_processing_time_fail_can_be_set_in_streaming(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()), "STREAMING", processing_time_allow="FAIL")
    with pytest.raises(ProcessingTimeError, match="pipeline.processing-time.allow is FAIL"):
        d.push("a", ("proc", 5))


def test_processing_time_ignore_drops_timers_but_answers_time(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()), "BATCH", processing_time_allow="IGNORE")
    list(d.operator.advance_processing_time(777))
    assert values(d.push("a", "now"))[0] == 777
    d.push("a", ("proc", 5))
    assert len(d.operator.processing_queue) == 0
    assert values(d.operator.end_input()) == []


def test_processing_time_allow_streaming_fires_on_advance(drive) -> None:
    fn = Recorder()
    d = drive(KeyedProcessOperator(fn))
    list(d.operator.advance_processing_time(100))
    assert values(d.push("a", "now")) == [100, ("a", 1)]
    d.push("a", ("proc", 150))
    d.push("b", ("proc", 120))
    d.push("b", ("proc", 500))
    d.push("b", ("del-proc", 500))
    assert values(d.operator.advance_processing_time(149)) == [("fired", "b", 120, "PROCESSING_TIME")]
    assert values(d.operator.advance_processing_time(150)) == [("fired", "a", 150, "PROCESSING_TIME")]
    timer_logs = [e for e in fn.log if e[0] == "timer"]
    assert timer_logs[0][4] is TimeDomain.PROCESSING_TIME
    assert len(d.operator.processing_queue) == 0


def test_fire_and_quiesce_at_end_of_input(drive) -> None:
    class Rearm(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_processing_time_timer(value)

        def on_timer(self, timestamp, ctx):
            ctx.timer_service().register_processing_time_timer(timestamp + 1)  # ignored: quiescing
            yield timestamp

    d = drive(KeyedProcessOperator(Rearm()))
    d.push("a", 1_000)
    d.push("b", 2_000)
    assert values(d.operator.end_input()) == [1_000, 2_000]
    assert len(d.operator.processing_queue) == 0


def test_end_of_input_ignore_leaves_processing_timers(drive) -> None:
    class Arm(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_processing_time_timer(value)

        def on_timer(self, timestamp, ctx):
            yield timestamp

    d = drive(KeyedProcessOperator(Arm()), processing_time_end_of_input="IGNORE")
    d.push("a", 1_000)
    assert values(d.operator.end_input()) == []
    assert len(d.operator.processing_queue) == 1


def test_batch_allow_fires_processing_timers_at_end_of_key(drive) -> None:
    d = drive(
        KeyedProcessOperator(Recorder()),
        "BATCH",
        "single_key",
        processing_time_allow="ALLOW",
        processing_time_end_of_input="FIRE_AND_QUIESCE",
    )
    d.push("a", ("proc", 50))
    d.push("a", ("event", 60))
    # BATCH: processing time advances do not fire; the key's end does (event timers first)
    assert list(d.operator.advance_processing_time(100)) == []
    assert values(d.operator.end_key()) == [
        ("fired", "a", 60, "EVENT_TIME"),
        ("fired", "a", 50, "PROCESSING_TIME"),
    ]


def test_bad_timer_timestamp(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()))
    with pytest.raises(StateError, match="register_event_time_timer\\(\\) needs an int timestamp"):
        d.push("a", ("event", "soon"))


# -- adapters and two inputs ----------------------------------------------------------------------


def test_plain_functions_on_a_keyed_stream_can_use_keyed_state(drive) -> None:
    class CountingMap(MapFunction):
        def open(self, rc):
            self.n = rc.get_state(ValueStateDescriptor("n", Types.LONG()))

        def map(self, value):
            self.n.update((self.n.value() or 0) + 1)
            return (value, self.n.value())

    class Dup(FlatMapFunction):
        def flat_map(self, value):
            return [value, value]

    class Even(FilterFunction):
        def filter(self, value):
            return value % 2 == 0

    class P(ProcessFunction):
        def process_element(self, value, ctx):
            yield ctx.timestamp()

    d = drive(KeyedProcessOperator(CountingMap()))
    assert values(d.push("a", "x")) == [("x", 1)]
    assert values(d.push("b", "y")) == [("y", 1)]
    assert values(d.push("a", "z")) == [("z", 2)]
    assert values(drive(KeyedProcessOperator(Dup())).push("k", 1)) == [1, 1]
    e = drive(KeyedProcessOperator(Even()))
    assert values(e.push("k", 1)) == [] and values(e.push("k", 2)) == [2]
    assert values(drive(KeyedProcessOperator(P())).push("k", 1, 99)) == [99]
    with pytest.raises(GraphBuildError, match="must be a KeyedProcessFunction"):
        KeyedProcessOperator(lambda v: v)


class Join(KeyedCoProcessFunction):
    def open(self, rc):
        self.left = rc.get_state(ValueStateDescriptor("left", Types.STRING()))

    def process_element1(self, value, ctx):
        self.left.update(value)
        ctx.timer_service().register_event_time_timer(100)

    def process_element2(self, value, ctx):
        yield (ctx.get_current_key(), self.left.value(), value)

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), self.left.value())


def test_keyed_co_process_operator(drive) -> None:
    d = drive(KeyedCoProcessOperator(Join()))
    assert d.push("k", "L", 1, 0) == []
    assert d.push("k", "R", 2, 1) == [Output(None, ("k", "L", "R"), 2)]
    assert values(d.push("j", "R2", 3, 1)) == [("j", None, "R2")]
    assert values(d.operator.end_input()) == [("timer", "k", "L")]
    with pytest.raises(JobExecutionError, match="input_index must be 0 or 1"):
        d.push("k", "x", 1, 2)


def test_keyed_co_adapters(drive) -> None:
    class M(CoMapFunction):
        def map1(self, value):
            return ("1", value)

        def map2(self, value):
            return ("2", value)

    class F(CoFlatMapFunction):
        def flat_map1(self, value):
            return [value] * 2

        def flat_map2(self, value):
            return []

    d = drive(KeyedCoProcessOperator(M()))
    assert values(d.push("k", 5, None, 1)) == [("2", 5)]
    d = drive(KeyedCoProcessOperator(F()))
    assert values(d.push("k", 5, None, 0)) == [5, 5]
    assert values(d.push("k", 5, None, 1)) == []


# -- errors, pickling, lifecycle ------------------------------------------------------------------------


def test_user_errors_are_wrapped_with_operator_name(drive) -> None:
    class Boom(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield 1 // value

        def on_timer(self, timestamp, ctx):
            raise KeyError("nope")

    d = drive(KeyedProcessOperator(Boom()), operator_name="boom")
    with pytest.raises(JobExecutionError, match="operator 'boom': process_element failed on 0: ZeroDivisionError") as info:
        d.push("a", 0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_operators_pickle_without_runtime_bindings(drive) -> None:
    fn = Recorder()
    op = KeyedProcessOperator(fn, name="rec")
    d = drive(op)
    d.push("a", ("event", 5))
    clone = cloudpickle.loads(cloudpickle.dumps(op))
    assert not clone.is_open and clone.name == "rec"
    d2 = drive(clone)
    assert values(d2.push("a", "x")) == [("a", 1)]


def test_open_twice_is_refused(drive) -> None:
    d = drive(KeyedProcessOperator(Recorder()))
    with pytest.raises(JobExecutionError, match="already open"):
        d.operator.open(d.backend, OperatorConfig.for_mode("STREAMING", operator_name="op-under-test"))
