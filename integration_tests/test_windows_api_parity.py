"""PyFlink's window API beyond the basics, in both modes, against plain-Python models of
Flink's documented semantics: ``count_window(size)`` / ``count_window(size, slide)``
(only full windows fire; window ``j`` of a sliding count window holds a key's elements
``j*slide .. j*slide+size-1``), ``EventTimeSessionWindows.with_dynamic_gap`` (windows
``[ts, ts + gap(element))`` merged while they intersect), ``WindowedStream.apply`` with a
``WindowFunction``, ``aggregate``/``reduce`` with a ``window_function``, and
``window_all`` / ``count_window_all`` with ``AllWindowFunction`` /
``ProcessAllWindowFunction``.

All pipelines of one mode run as one job (their outputs unioned, each tagged), so the
test costs two jobs.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from pyspark_datastream import (
    AggregateFunction,
    AllWindowFunction,
    CountWindow,
    Duration,
    EventTimeSessionWindows,
    ProcessAllWindowFunction,
    ReduceFunction,
    SessionWindowTimeGapExtractor,
    TimeWindow,
    TumblingEventTimeWindows,
    Types,
    WatermarkStrategy,
    WindowFunction,
)

EVENT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])  # key, ts, v


class CountContents(WindowFunction[tuple, tuple, str, CountWindow]):
    def __init__(self, label: str) -> None:
        self.label = label

    def apply(self, key, window, inputs):
        yield (self.label, key, window.id, tuple(sorted(e[1] for e in inputs)))


class GapFromValue(SessionWindowTimeGapExtractor[tuple]):
    def extract(self, element):
        return element[2] * 10  # v in 1..9 -> gaps of 10..90 ms


class CountAgg(AggregateFunction[tuple, int, int]):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a + acc_b


class SessionOf(WindowFunction[int, tuple, str, TimeWindow]):
    def apply(self, key, window, inputs):
        (count,) = list(inputs)
        yield ("dyn", key, window.start, window.end, count)


class SumV(ReduceFunction[tuple]):
    def reduce(self, value1, value2):
        return (value1[0], max(value1[1], value2[1]), value1[2] + value2[2])


class TotalOf(WindowFunction[tuple, tuple, str, TimeWindow]):
    def apply(self, key, window, inputs):
        (total,) = list(inputs)
        yield ("red", key, window.start, total[2])


class AllSum(AllWindowFunction[tuple, tuple, TimeWindow]):
    def apply(self, window, inputs):
        yield ("all", window.start, sum(e[2] for e in inputs))


class AllCount(ProcessAllWindowFunction[tuple, tuple, CountWindow]):
    def process(self, context, elements):
        yield ("call", context.window().id, len(list(elements)))


def _events(seed: int = 3):
    rng = random.Random(seed)
    out = []
    for k in range(12):
        ts = rng.randrange(0, 50)
        for _ in range(rng.randint(4, 30)):
            out.append((f"k{k:02d}", ts, rng.randint(1, 9)))
            ts += rng.choice([1, 3, 7, 20, 45, 90, 200])
    return sorted(out, key=lambda e: (e[1], e[0]))  # arrival in time order


def _model(events):
    by_key = defaultdict(list)
    for e in events:
        by_key[e[0]].append(e)
    out = []
    for key, es in by_key.items():
        es.sort(key=lambda e: e[1])
        stamps = [e[1] for e in es]
        out += [("ct", key, j, tuple(stamps[3 * j:3 * j + 3])) for j in range(len(es) // 3)]
        j = 0
        while 2 * j + 4 <= len(es):  # count_window(4, 2): only full windows fire
            out.append(("cs", key, j, tuple(stamps[2 * j:2 * j + 4])))
            j += 1
        windows = sorted((e[1], e[1] + e[2] * 10) for e in es)  # dynamic gaps, then merge
        start, end, n = windows[0][0], windows[0][1], 1
        for s, t in windows[1:]:
            if s <= end:  # Flink's TimeWindow.intersects: touching windows merge too
                end, n = max(end, t), n + 1
            else:
                out.append(("dyn", key, start, end, n))
                start, end, n = s, t, 1
        out.append(("dyn", key, start, end, n))
        totals = defaultdict(int)
        for e in es:
            totals[e[1] - e[1] % 100] += e[2]
        out += [("red", key, start, total) for start, total in totals.items()]
    totals = defaultdict(int)
    for e in events:
        totals[e[1] - e[1] % 250] += e[2]
    out += [("all", start, total) for start, total in totals.items()]
    out += [("call", j, 25) for j in range(len(events) // 25)]
    return sorted(out, key=repr)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_window_api_parity(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    env.set_parallelism(1)  # count windows depend on each key's arrival order
    events = _events()
    ds = env.from_collection(events, type_info=EVENT).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10_000))
        .with_timestamp_assigner(lambda e, _: e[1]))
    keyed = ds.key_by(lambda e: e[0], key_type=Types.STRING())
    outputs = [
        keyed.count_window(3).apply(CountContents("ct")),
        keyed.count_window(4, 2).apply(CountContents("cs")),
        keyed.window(EventTimeSessionWindows.with_dynamic_gap(GapFromValue()))
        .aggregate(CountAgg(), window_function=SessionOf()),
        keyed.window(TumblingEventTimeWindows.of(100)).reduce(SumV(), window_function=TotalOf()),
        ds.window_all(TumblingEventTimeWindows.of(250)).apply(AllSum()),
        ds.count_window_all(25).process(AllCount()),
    ]
    got = sorted(outputs[0].union(*outputs[1:]).execute_and_collect(), key=repr)
    expected = _model(events)
    assert {g[0] for g in got} == {"ct", "cs", "dyn", "red", "all", "call"}
    missing = [e for e in expected if e not in got]
    extra = [g for g in got if g not in expected]
    assert not missing and not extra, f"missing {missing[:8]}, unexpected {extra[:8]}"
