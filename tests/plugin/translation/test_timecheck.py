"""processing_time_use: what a keyed operator's code shows about processing-time timers."""

from __future__ import annotations

from pyspark_datastream import (
    CountTrigger,
    Duration,
    EventTimeTrigger,
    KeyedProcessFunction,
    ProcessingTimeTrigger,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from pyspark_datastream.operators.windows import WindowSpec
from pyspark_datastream.translation.timecheck import processing_time_use


class EventOnly(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(1)
        return iter(())


class Base(KeyedProcessFunction):
    def helper(self, ctx):
        ctx.timer_service().register_processing_time_timer(5)


class Inherits(Base):
    def process_element(self, value, ctx):
        self.helper(ctx)
        return iter(())


class InLambda(EventOnly):
    def on_timer(self, timestamp, ctx):
        fire = lambda: ctx.timer_service().register_processing_time_timer(timestamp)  # noqa: E731
        fire()
        return iter(())


def _window(assigner, trigger=None):
    return WindowSpec(assigner, "reduce", lambda a, b: a, trigger=trigger)


def test_functions_are_read_through_their_class_hierarchy_and_nested_code():
    assert processing_time_use(EventOnly()) is None
    assert processing_time_use(Inherits()) == "Inherits calls register_processing_time_timer()"
    assert processing_time_use(InLambda()) == "InLambda calls register_processing_time_timer()"
    assert processing_time_use(lambda a, b: a) is None
    assert processing_time_use(None) is None


def test_windows_are_read_through_assigner_and_trigger():
    five = Duration.of_seconds(5)
    assert processing_time_use(_window(TumblingEventTimeWindows.of(five))) is None
    assert processing_time_use(_window(TumblingEventTimeWindows.of(five), CountTrigger.of(3))) is None
    assert processing_time_use(_window(TumblingEventTimeWindows.of(five), EventTimeTrigger.create())) is None
    assert processing_time_use(_window(TumblingProcessingTimeWindows.of(five))) == (
        "its window assigner TumblingProcessingTimeWindows runs on processing time")
    assert processing_time_use(
        _window(TumblingEventTimeWindows.of(five), ProcessingTimeTrigger.create())) == (
        "its trigger ProcessingTimeTrigger calls register_processing_time_timer()")
