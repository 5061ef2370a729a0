"""register_next_fire_timestamp, PyFlink's helper of the continuous triggers: each firing
is kept and registered one interval after the time it counts from, capped at the window's
max timestamp (Flink's ``min(time + interval, window.maxTimestamp())``); a subclass that
overrides it sees every registration of a window's run."""

from __future__ import annotations

from pyspark_datastream.operators.windows import (
    ContinuousEventTimeTrigger,
    TumblingEventTimeWindows,
    WindowOperator,
    WindowSpec,
)

REGISTERED: list[tuple[int, int]] = []


class Recording(ContinuousEventTimeTrigger):
    def register_next_fire_timestamp(self, time, window, ctx, fire_timestamp_state):
        super().register_next_fire_timestamp(time, window, ctx, fire_timestamp_state)
        REGISTERED.append((time, fire_timestamp_state.get()))


def add(a, b):
    return (a[0], a[1] + b[1])


def test_each_next_firing_is_one_interval_later_capped_at_the_window_end(drive):
    REGISTERED.clear()
    d = drive(WindowOperator(WindowSpec(TumblingEventTimeWindows.of(10), "reduce", add,
                                        trigger=Recording(4))))
    d.push("k", ("k", 1), 1)  # window [0, 10): counts from 0, fires at 4
    fired = [o.value for o in d.operator.advance_watermark(20) if o.tag is None]
    # fires at 4 (next 8), at 8 (next min(12, 9) = 9), and at 9, the window's end, once
    assert REGISTERED == [(0, 4), (4, 8), (8, 9)]
    assert fired == [("k", 1), ("k", 1), ("k", 1)]
