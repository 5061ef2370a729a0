"""Window operator: assigners, triggers, functions, lateness, merging, snapshot/restore."""

from __future__ import annotations

import pytest
from pyspark import cloudpickle
from pyspark_datastream import GraphBuildError, JobExecutionError, ProcessingTimeError
from pyspark_datastream.api.time import Duration, Time
from pyspark_datastream.operators.base import MAX_WATERMARK, MIN_WATERMARK, OperatorConfig
from pyspark_datastream.operators.driver import run_sorted_keyed
from pyspark_datastream.operators.functions import OutputTag
from pyspark_datastream.operators.windows import (
    CountTrigger,
    EndOfStreamWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    ProcessWindowFunction,
    PurgingTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowOperator,
    WindowSpec,
    to_window_millis,
)
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.functions import AggregateFunction
from pyspark_datastream.state_store.namespaces import GlobalWindow, TimeWindow
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KEY_SERIALIZER = GenericKeySerializer.INSTANCE

LATE = OutputTag("late")


def main(outputs):
    return [o.value for o in outputs if o.tag is None]


def add(a, b):
    return (a[0], a[1] + b[1])


class Collect(ProcessWindowFunction):
    """Emits (key, start, end, sorted values, watermark)."""

    def __init__(self):
        self.cleared = []

    def process(self, key, context, elements):
        w = context.window()
        yield (key, w.start, w.end, sorted(e[1] for e in elements), context.current_watermark())

    def clear(self, context):
        self.cleared.append(context.window())


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value[1], accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def op(assigner, kind="reduce", function=add, **kw):
    return WindowOperator(WindowSpec(assigner, kind, function, **kw))


# -- assigners ---------------------------------------------------------------------------


def test_sizes_accept_time_duration_and_int():
    assert to_window_millis(Time.seconds(2), "size") == 2000
    assert to_window_millis(Duration.of_minutes(1), "size") == 60_000
    assert to_window_millis(5, "size") == 5
    assert TumblingEventTimeWindows.of(Time.seconds(1)).size == 1000
    with pytest.raises(GraphBuildError, match=r"of\(size\) must be a Time, Duration or int"):
        TumblingEventTimeWindows.of("10s")
    with pytest.raises(GraphBuildError, match="must be > 0 ms, got 0"):
        SlidingEventTimeWindows.of(10, 0)
    with pytest.raises(GraphBuildError, match=r"abs\(offset\) < size"):
        TumblingEventTimeWindows.of(10, offset=10)


def test_tumbling_and_sliding_assignment_with_offsets():
    ctx = None
    assert TumblingEventTimeWindows.of(10).assign_windows("x", 25, ctx) == [TimeWindow(20, 30)]
    assert TumblingEventTimeWindows.of(10, 3).assign_windows("x", 25, ctx) == [TimeWindow(23, 33)]
    assert TumblingEventTimeWindows.of(10).assign_windows("x", -1, ctx) == [TimeWindow(-10, 0)]
    got = SlidingEventTimeWindows.of(10, 5).assign_windows("x", 12, ctx)
    assert sorted(got) == [TimeWindow(5, 15), TimeWindow(10, 20)]
    with pytest.raises(JobExecutionError, match="has no timestamp"):
        TumblingEventTimeWindows.of(10).assign_windows("x", None, ctx)


# -- event-time windows, STREAMING --------------------------------------------------------


def test_tumbling_reduce_fires_when_watermark_passes_end(drive):
    d = drive(op(TumblingEventTimeWindows.of(10)))
    assert d.push("a", ("a", 1), 1) == []
    d.push("a", ("a", 2), 9)
    d.push("a", ("a", 5), 12)
    d.push("b", ("b", 7), 3)
    assert list(d.operator.advance_watermark(8)) == []
    fired = list(d.operator.advance_watermark(9))
    assert [(o.value, o.timestamp) for o in fired] == [(("a", 3), 9), (("b", 7), 9)]
    assert main(d.operator.end_input()) == [("a", 5)]
    assert len(d.operator.event_queue) == 0


def test_sliding_aggregate_and_process_window_function(drive):
    d = drive(op(SlidingEventTimeWindows.of(10, 5), "aggregate", Avg()))
    for ts, v in [(1, 2), (6, 4), (11, 6)]:
        d.push("k", ("k", v), ts)
    # windows [-5,5) [0,10) [5,15) [10,20)
    assert main(d.operator.end_input()) == [2.0, 3.0, 5.0, 6.0]

    fn = Collect()
    d = drive(op(SlidingEventTimeWindows.of(10, 5), "process", fn))
    for ts, v in [(1, 2), (6, 4)]:
        d.push("k", ("k", v), ts)
    out = main(d.operator.advance_watermark(9))
    assert out == [("k", -5, 5, [2], 9), ("k", 0, 10, [2, 4], 9)]
    assert fn.cleared == [TimeWindow(-5, 5), TimeWindow(0, 10)]


def test_reduce_with_process_window_function_gets_the_single_result(drive):
    d = drive(op(TumblingEventTimeWindows.of(10), window_function=Collect()))
    d.push("k", ("k", 1), 1)
    d.push("k", ("k", 2), 2)
    assert main(d.operator.end_input()) == [("k", 0, 10, [3], MAX_WATERMARK)]


def test_late_elements_dropped_or_sent_to_side_output(drive):
    d = drive(op(TumblingEventTimeWindows.of(10), late_output_tag=LATE))
    d.push("k", ("k", 1), 5)
    assert main(d.operator.advance_watermark(10)) == [("k", 1)]
    out = d.push("k", ("k", 2), 3)
    assert [(o.tag, o.value, o.timestamp) for o in out] == [("late", ("k", 2), 3)]
    d2 = drive(op(TumblingEventTimeWindows.of(10)))
    list(d2.operator.advance_watermark(10))
    assert d2.push("k", ("k", 2), 3) == []


def test_allowed_lateness_refires_then_cleans_up(drive):
    fn = Collect()
    d = drive(op(TumblingEventTimeWindows.of(10), "process", fn, allowed_lateness=5,
                 late_output_tag=LATE))
    d.push("k", ("k", 1), 5)
    assert main(d.operator.advance_watermark(9)) == [("k", 0, 10, [1], 9)]
    assert fn.cleared == []
    # late but within lateness: fires at once with all contents so far
    assert main(d.push("k", ("k", 2), 4)) == [("k", 0, 10, [1, 2], 9)]
    assert main(d.operator.advance_watermark(14)) == []
    assert fn.cleared == [TimeWindow(0, 10)]
    out = d.push("k", ("k", 3), 4)
    assert [(o.tag, o.value) for o in out] == [("late", ("k", 3))]


def test_purging_count_trigger_on_global_windows(drive):
    class Values(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield (context.window(), [e[1] for e in elements])

    d = drive(op(GlobalWindows.create(), "process", Values(),
                 trigger=PurgingTrigger.of(CountTrigger.of(2))))
    outs = []
    for i in range(5):
        outs += main(d.push("k", ("k", i), None))
    assert outs == [(GlobalWindow(), [0, 1]), (GlobalWindow(), [2, 3])]
    assert main(d.operator.end_input()) == []  # the global window never ends


def test_count_trigger_without_purge_keeps_contents(drive):
    d = drive(op(GlobalWindows.create(), trigger=CountTrigger.of(2)))
    outs = []
    for i in range(1, 5):
        outs += d.push("k", ("k", i), None)
    assert [(o.value, o.timestamp) for o in outs] == [
        (("k", 3), GlobalWindow().max_timestamp()), (("k", 10), GlobalWindow().max_timestamp())]


def test_end_of_stream_windows_fire_once_at_end(drive):
    d = drive(op(EndOfStreamWindows.get(), "aggregate", Avg()))
    d.push("k", ("k", 1), 5)
    d.push("k", ("k", 3), 10**12)
    assert list(d.operator.advance_watermark(10**15)) == []
    assert main(d.operator.end_input()) == [2.0]


# -- sessions -----------------------------------------------------------------------------


def test_sessions_merge_and_a_late_bridge_element_joins_two_sessions(drive):
    d = drive(op(EventTimeSessionWindows.with_gap(10), "process", Collect()))
    d.push("k", ("k", 1), 1)
    d.push("k", ("k", 2), 5)   # merges into [1, 15)
    d.push("k", ("k", 3), 30)  # a second session [30, 40)
    assert list(d.operator.advance_watermark(12)) == []
    d.push("k", ("k", 4), 20)  # [20, 30) touches [30, 40): merged into [20, 40)
    d.push("k", ("k", 5), 13)  # out of order; [13, 23) bridges [1, 15) and [20, 40)
    assert len(d.operator.event_queue) == 1  # one session, one timer (its end)
    out = main(d.operator.advance_watermark(100))
    assert out == [("k", 1, 40, [1, 2, 3, 4, 5], 100)]


def test_late_bridge_element_merges_fired_sessions_within_lateness(drive):
    d = drive(op(EventTimeSessionWindows.with_gap(10), "aggregate", Avg(), allowed_lateness=100,
                 late_output_tag=LATE))
    d.push("k", ("k", 2), 0)    # [0, 10)
    d.push("k", ("k", 4), 15)   # [15, 25)
    assert main(d.operator.advance_watermark(30)) == [2.0, 4.0]
    # late element (ts 8 < watermark 30) whose window [8, 18) bridges both sessions
    out = d.push("k", ("k", 6), 8)
    assert main(out) == [4.0]  # fired at once: (2 + 4 + 6) / 3
    assert [w for w in d.operator._live_windows()] == [TimeWindow(0, 25)]
    assert main(d.operator.advance_watermark(200)) == []
    assert d.operator._live_windows() == []


def test_session_count_trigger_merges_trigger_state(drive):
    d = drive(op(EventTimeSessionWindows.with_gap(10), trigger=CountTrigger.of(3)))
    assert d.push("k", ("k", 1), 0) == []
    assert d.push("k", ("k", 1), 20) == []
    out = d.push("k", ("k", 1), 10)  # bridges: counts 1 + 1 merged, + 1 = 3 -> fires
    assert main(out) == [("k", 3)]


def test_merging_assigner_needs_a_merging_trigger():
    class NoMerge(EventTimeTrigger):
        def can_merge(self):
            return False

    with pytest.raises(GraphBuildError, match="cannot merge windows"):
        WindowSpec(EventTimeSessionWindows.with_gap(5), "reduce", add, trigger=NoMerge())


# -- BATCH ----------------------------------------------------------------------------------


def test_batch_sorted_execution_fires_each_key_at_end_of_key():
    spec = WindowSpec(EventTimeSessionWindows.with_gap(10), "process", Collect())
    operator = WindowOperator(spec)
    config = OperatorConfig.for_mode("BATCH", operator_name="win")
    backend = SingleKeyStateBackend(KEY_SERIALIZER, config.max_parallelism)
    rows = [(KEY_SERIALIZER.serialize(k), ts, (k, v), 0)
            for k, ts, v in [("a", 1, 1), ("a", 50, 2), ("a", 5, 3), ("b", 7, 4)]]
    out = list(run_sorted_keyed(operator, backend, rows, KEY_SERIALIZER, config))
    assert [(o.value, o.timestamp) for o in out] == [
        (("a", 1, 15, [1, 3], MAX_WATERMARK), 14),
        (("a", 50, 60, [2], MAX_WATERMARK), 59),
        (("b", 7, 17, [4], MAX_WATERMARK), 16),
    ]
    backend.close()


def test_batch_ignores_watermarks_so_nothing_is_late(drive):
    d = drive(op(TumblingEventTimeWindows.of(10), late_output_tag=LATE), mode="BATCH")
    d.push("k", ("k", 1), 50)
    assert list(d.operator.advance_watermark(100)) == []
    assert main(d.push("k", ("k", 2), 1)) == []
    assert main(d.operator.end_input()) == [("k", 2), ("k", 1)]
    assert d.operator.clock.watermark == MAX_WATERMARK


# -- processing time -------------------------------------------------------------------------


def test_processing_time_windows_streaming(drive):
    d = drive(op(TumblingProcessingTimeWindows.of(10)))
    list(d.operator.advance_processing_time(3))
    d.push("k", ("k", 1), None)
    list(d.operator.advance_processing_time(8))
    d.push("k", ("k", 2), None)
    list(d.operator.advance_processing_time(12))
    d.push("k", ("k", 5), None)
    assert main(d.operator.advance_processing_time(9)) == []  # time never goes back
    assert main(d.operator.advance_processing_time(19)) == [("k", 5)]


def test_processing_time_windows_follow_batch_rules(drive):
    d = drive(op(SlidingProcessingTimeWindows.of(10, 5)), mode="BATCH")
    with pytest.raises(ProcessingTimeError, match="pipeline.processing-time.allow is FAIL"):
        d.push("k", ("k", 1), None)
    # ALLOW + FIRE_AND_QUIESCE: windows fire at end of input
    d = drive(op(ProcessingTimeSessionWindows.with_gap(10)), mode="BATCH",
              processing_time_allow="ALLOW", processing_time_end_of_input="FIRE_AND_QUIESCE")
    list(d.operator.advance_processing_time(100))
    d.push("k", ("k", 1), None)
    d.push("k", ("k", 2), None)
    assert main(d.operator.end_input()) == [("k", 3)]
    # IGNORE: processing-time timers are dropped, nothing fires
    d = drive(op(TumblingProcessingTimeWindows.of(10)), mode="BATCH",
              processing_time_allow="IGNORE", processing_time_end_of_input="IGNORE")
    list(d.operator.advance_processing_time(100))
    d.push("k", ("k", 1), None)
    assert main(d.operator.end_input()) == []


def test_allowed_lateness_is_refused_for_processing_time():
    with pytest.raises(GraphBuildError, match="event-time windows only"):
        WindowSpec(TumblingProcessingTimeWindows.of(10), "reduce", add, allowed_lateness=5)


# -- errors, pickling, snapshot/restore ---------------------------------------------------------


def test_bad_functions_are_refused_with_clear_messages():
    with pytest.raises(GraphBuildError, match="needs an AggregateFunction"):
        WindowSpec(TumblingEventTimeWindows.of(10), "aggregate", add)
    with pytest.raises(GraphBuildError, match="needs a ProcessWindowFunction"):
        WindowSpec(TumblingEventTimeWindows.of(10), "process", add)
    with pytest.raises(GraphBuildError, match="count must be an int >= 1"):
        CountTrigger.of(0)
    with pytest.raises(GraphBuildError, match="allowed_lateness must be an int >= 0"):
        WindowSpec(TumblingEventTimeWindows.of(10), "reduce", add, allowed_lateness=-1)


def test_user_errors_name_the_operator_and_call(drive):
    def boom(a, b):
        raise ValueError("bad reduce")

    d = drive(op(TumblingEventTimeWindows.of(10), function=boom))
    d.push("k", 1, 1)
    with pytest.raises(JobExecutionError, match=r"'op-under-test': window add failed .*bad reduce"):
        d.push("k", 2, 2)


def test_trigger_results_and_spec_pickles():
    assert TriggerResult.FIRE_AND_PURGE.is_fire() and TriggerResult.FIRE_AND_PURGE.is_purge()
    assert not TriggerResult.CONTINUE.is_fire()
    spec = WindowSpec(EventTimeSessionWindows.with_gap(Time.seconds(1)), "process", Collect(),
                      trigger=PurgingTrigger.of(CountTrigger.of(3)), late_output_tag=LATE)
    copy = cloudpickle.loads(cloudpickle.dumps(WindowOperator(spec)))
    assert copy.spec.assigner == spec.assigner
    assert copy.spec.trigger.nested_trigger.count == 3
    assert copy.spec.late_output_tag == LATE


@pytest.mark.parametrize("target", ["heap", "rocksdb"])
def test_window_state_and_timers_survive_snapshot_restore(tmp_path, target):
    config = OperatorConfig.for_mode("STREAMING", operator_name="win")
    spec = WindowSpec(EventTimeSessionWindows.with_gap(10), "process", Collect())
    key_ser = GenericKeySerializer.INSTANCE
    first = HeapKeyedStateBackend(key_ser, config.max_parallelism)
    operator = WindowOperator(spec)
    operator.open(first, config)
    for key, ts, v in [("a", 1, 1), ("a", 5, 2), ("b", 3, 3), ("a", 30, 4)]:
        first.set_current_key(key, key_ser.serialize(key))
        assert list(operator.process_element((key, v), ts)) == []
    metas, entries = first.state_meta_infos(), list(first.snapshot())
    operator.close()
    first.close()

    if target == "heap":
        second = HeapKeyedStateBackend(key_ser, config.max_parallelism)
    else:
        second = RocksDBKeyedStateBackend(key_ser, config.max_parallelism,
                                             directory=str(tmp_path / "db"))
    second.restore(metas, entries)
    restored = WindowOperator(spec)
    restored.open(second, config)
    second.set_current_key("a", key_ser.serialize("a"))
    list(restored.process_element(("a", 5), 12))  # extends [1, 15) to [1, 22)
    out = main(restored.end_input())
    assert out == [("b", 3, 13, [3], MAX_WATERMARK), ("a", 1, 22, [1, 2, 5], MAX_WATERMARK),
                   ("a", 30, 40, [4], MAX_WATERMARK)]
    restored.close()
    second.close()


def test_min_watermark_constant_is_initial(drive):
    d = drive(op(TumblingEventTimeWindows.of(10)))
    assert d.operator.clock.watermark == MIN_WATERMARK


class _Lifecycle(ProcessWindowFunction):
    """Counts its open() and close() calls."""

    def __init__(self):
        self.opened = self.closed = 0

    def open(self, runtime_context):
        self.opened += 1

    def close(self):
        self.closed += 1

    def process(self, key, context, elements):
        yield key, len(list(elements))


def test_a_process_window_function_is_opened_and_closed_once(drive):
    """As Flink: the window function is opened once and closed once (a ``process`` window's
    function is also the spec's function; it was closed twice)."""
    function = _Lifecycle()
    d = drive(op(TumblingEventTimeWindows.of(10), kind="process", function=function))
    d.push("k", ("k", 1), 1)
    d.operator.close()
    assert (function.opened, function.closed) == (1, 1)
