"""ContinuousEventTimeTrigger / ContinuousProcessingTimeTrigger against Flink's semantics.

A window's first element schedules a firing at the end of its interval (intervals aligned to
multiples of ``interval``, capped at the window's max timestamp); each firing schedules the
next; the window's own end fires too, once even when an interval ends there as well.
"""

from __future__ import annotations

import pytest
from pyspark import cloudpickle
from pyspark_datastream import GraphBuildError
from pyspark_datastream.api.time import Time
from pyspark_datastream.operators.windows import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    EventTimeSessionWindows,
    PurgingTrigger,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowOperator,
    WindowSpec,
)


def main(outputs):
    return [o.value for o in outputs if o.tag is None]


def add(a, b):
    return (a[0], a[1] + b[1])


def op(assigner, trigger):
    return WindowOperator(WindowSpec(assigner, "reduce", add, trigger=trigger))


def test_event_time_fires_every_interval_and_at_the_window_end(drive):
    d = drive(op(TumblingEventTimeWindows.of(10), ContinuousEventTimeTrigger.of(Time.milliseconds(5))))
    d.push("k", ("k", 1), 1)
    d.push("k", ("k", 2), 2)
    assert main(d.operator.advance_watermark(4)) == []
    assert main(d.operator.advance_watermark(5)) == [("k", 3)]  # contents kept (no purge)
    d.push("k", ("k", 4), 6)
    assert main(d.operator.advance_watermark(9)) == [("k", 7)]  # interval end = window end: once
    d.push("k", ("k", 5), 12)  # window [10, 20): fires at 15 and at its end 19
    assert main(d.operator.advance_watermark(30)) == [("k", 5), ("k", 5)]
    assert main(d.operator.end_input()) == []


def test_purging_continuous_trigger_emits_only_what_came_since_the_last_firing(drive):
    d = drive(op(TumblingEventTimeWindows.of(10),
                 PurgingTrigger.of(ContinuousEventTimeTrigger.of(5))))
    d.push("k", ("k", 1), 1)
    d.push("k", ("k", 2), 2)
    assert main(d.operator.advance_watermark(5)) == [("k", 3)]
    d.push("k", ("k", 4), 6)
    assert main(d.operator.advance_watermark(9)) == [("k", 4)]


def test_merging_sessions_keep_the_earliest_firing_time(drive):
    d = drive(op(EventTimeSessionWindows.with_gap(10), ContinuousEventTimeTrigger.of(5)))
    d.push("k", ("k", 1), 1)  # session [1, 11): first firing at 5
    d.push("k", ("k", 2), 8)  # [8, 18) merges into [1, 18); its own firing (10) is later
    assert main(d.operator.advance_watermark(5)) == [("k", 3)]
    # then 10, 15 and the session's end 17
    assert main(d.operator.advance_watermark(20)) == [("k", 3)] * 3


def test_processing_time_fires_every_interval_and_at_the_window_end(drive):
    d = drive(op(TumblingProcessingTimeWindows.of(10), ContinuousProcessingTimeTrigger.of(4)))
    list(d.operator.advance_processing_time(1))
    d.push("k", ("k", 1), None)  # window [0, 10): first firing at 4
    assert main(d.operator.advance_processing_time(3)) == []
    assert main(d.operator.advance_processing_time(4)) == [("k", 1)]
    d.push("k", ("k", 2), None)
    assert main(d.operator.advance_processing_time(8)) == [("k", 3)]
    assert main(d.operator.advance_processing_time(9)) == [("k", 3)]  # next = min(12, 9): once


def test_intervals_are_checked_and_survive_pickling():
    trigger = ContinuousEventTimeTrigger.of(Time.seconds(2))
    assert trigger.get_interval() == 2000
    again = cloudpickle.loads(cloudpickle.dumps(trigger))
    assert isinstance(again, ContinuousEventTimeTrigger) and again.get_interval() == 2000
    assert ContinuousProcessingTimeTrigger.of(7).can_merge()
    with pytest.raises(GraphBuildError, match=r"ContinuousEventTimeTrigger.of\(interval\)"):
        ContinuousEventTimeTrigger.of("5s")
    with pytest.raises(GraphBuildError, match="must be > 0 ms, got 0"):
        ContinuousProcessingTimeTrigger.of(0)
