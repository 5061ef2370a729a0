"""PyFlink declares its window classes ``Generic``; user code subscripts them.

A PyFlink program writes ``class F(ProcessWindowFunction[tuple, tuple, str, TimeWindow])``
and annotates ``ctx: ProcessWindowFunction.Context[TimeWindow]``: both must work here
unchanged, and the subscripted subclasses must still run (and pickle, as they travel to
executors).
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pyspark_datastream import (
    AggregateFunction,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessWindowFunction,
    ReduceFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from pyspark_datastream.operators.windows import (
    EventTimeTrigger,
    MergingWindowAssigner,
    Trigger,
    TriggerResult,
    WindowAssigner,
)
from pyspark_datastream.state_store.namespaces import TimeWindow


class Counted(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Any) -> Any:
        yield (key, context.window().start, len(list(elements)))


class Fire(Trigger[tuple, TimeWindow]):
    def on_element(self, element, timestamp, window, ctx):  # type: ignore[no-untyped-def]
        return TriggerResult.FIRE

    def on_processing_time(self, time, window, ctx):  # type: ignore[no-untyped-def]
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):  # type: ignore[no-untyped-def]
        return TriggerResult.CONTINUE

    def clear(self, window, ctx):  # type: ignore[no-untyped-def]
        return None


class Sum(ReduceFunction[int]):
    def reduce(self, value1: int, value2: int) -> int:
        return value1 + value2


class Avg(AggregateFunction[int, tuple, float]):
    def create_accumulator(self) -> tuple:
        return (0, 0)

    def add(self, value: int, accumulator: tuple) -> tuple:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple) -> float:
        return accumulator[0] / accumulator[1]


@pytest.mark.parametrize("generic", [
    ProcessWindowFunction[tuple, tuple, str, TimeWindow],
    ProcessWindowFunction.Context[TimeWindow],
    Trigger[tuple, TimeWindow],
    WindowAssigner[tuple, TimeWindow],
    MergingWindowAssigner[tuple, TimeWindow],
    TumblingEventTimeWindows[tuple],
    SlidingEventTimeWindows[tuple],
    EventTimeSessionWindows[tuple],
    GlobalWindows[tuple],
    ReduceFunction[int],
    AggregateFunction[int, tuple, float],
])
def test_pyflink_generic_classes_subscript(generic: Any) -> None:
    assert generic.__origin__ is not None


def test_subscripted_subclasses_run_and_pickle() -> None:
    f = pickle.loads(pickle.dumps(Counted()))
    assert isinstance(f, ProcessWindowFunction)

    class Ctx(ProcessWindowFunction.Context[TimeWindow]):
        def window(self) -> TimeWindow:
            return TimeWindow(0, 10)

        def current_processing_time(self) -> int:
            return 0

        def current_watermark(self) -> int:
            return 0

        def window_state(self) -> Any:
            return None

        def global_state(self) -> Any:
            return None

        def output(self, output_tag: Any, value: Any) -> None:
            return None

    assert list(f.process("a", Ctx(), [1, 2, 3])) == [("a", 0, 3)]
    assert Sum().reduce(2, 3) == 5
    assert Avg().get_result(Avg().add(4, Avg().add(2, Avg().create_accumulator()))) == 3.0
    assert Fire().on_element(None, 0, TimeWindow(0, 1), None) is TriggerResult.FIRE
    assert isinstance(pickle.loads(pickle.dumps(Fire())), Trigger)


def test_assigners_keep_their_behaviour_and_equality() -> None:
    a = TumblingEventTimeWindows(10)
    assert a == pickle.loads(pickle.dumps(a))
    assert list(a.assign_windows(("x",), 15, None)) == [TimeWindow(10, 20)]
    assert isinstance(EventTimeTrigger.create(), Trigger)
    trig = CountTrigger.of(2)
    assert isinstance(trig, Trigger)
