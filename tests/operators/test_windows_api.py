"""Count windows, dynamic-gap sessions and the other window functions without Spark:
their state round-trips through every backend's snapshot, and bad input is refused with a
typed error naming what is wrong."""

from __future__ import annotations

import random

import pytest
from pyspark_datastream import GraphBuildError, JobExecutionError
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.count_windows import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
)
from pyspark_datastream.operators.driver import run_sorted_keyed
from pyspark_datastream.operators.window_functions import (
    AllWindowFunction,
    WindowFunction,
    as_process_window_function,
)
from pyspark_datastream.operators.windows import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SessionWindowTimeGapExtractor,
    WindowOperator,
    WindowSpec,
)
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.namespaces import CountWindow, CountWindowSerializer
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KEY_SERIALIZER = GenericKeySerializer.INSTANCE


class Ids(WindowFunction):
    def apply(self, key, window, inputs):
        yield (key, window.id, [v for _, v in inputs])


class BadGap(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return element[1]


def _run(assigner, function, rows):
    function = as_process_window_function(function, "test")
    operator = WindowOperator(WindowSpec(assigner, "process", function))
    config = OperatorConfig.for_mode("BATCH", operator_name="win")
    backend = SingleKeyStateBackend(KEY_SERIALIZER, config.max_parallelism)
    keyed = [(KEY_SERIALIZER.serialize(k), ts, (k, v), 0) for k, ts, v in rows]
    try:
        return [o.value for o in run_sorted_keyed(operator, backend, keyed, KEY_SERIALIZER, config)]
    finally:
        backend.close()


def test_count_windows_fire_full_windows_only_per_key():
    rows = [("a", i, i) for i in range(7)] + [("b", 10, 100), ("b", 11, 101)]
    assert _run(CountTumblingWindowAssigner.of(3), Ids(), rows) == [
        ("a", 0, [0, 1, 2]), ("a", 1, [3, 4, 5])]
    # sliding 3 every 2: windows start at elements 0, 2, 4 (the one at 6 is not full)
    assert _run(CountSlidingWindowAssigner.of(3, 2), Ids(), rows) == [
        ("a", 0, [0, 1, 2]), ("a", 1, [2, 3, 4]), ("a", 2, [4, 5, 6])]
    # a slide larger than the size skips elements, as in PyFlink
    assert _run(CountSlidingWindowAssigner.of(2, 3), Ids(), rows) == [
        ("a", 0, [0, 1]), ("a", 1, [3, 4]), ("b", 0, [100, 101])]


def test_count_window_serializer_round_trips_and_keeps_order():
    s = CountWindowSerializer()
    ids = [-(2**63), -5, -1, 0, 1, 7, 2**40, 2**63 - 1]
    rng = random.Random(1)
    rng.shuffle(ids)
    for i in ids:
        assert s.deserialize(s.serialize(CountWindow(i))) == CountWindow(i)
    assert sorted(ids) == [s.deserialize(b).id for b in sorted(s.serialize(CountWindow(i))
                                                                  for i in ids)]
    assert s.deserialize_nested(b"x" + s.serialize(CountWindow(3)), 1) == (CountWindow(3), 9)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_count_sizes_are_checked(bad):
    with pytest.raises(GraphBuildError, match="must be an int >= 1"):
        CountTumblingWindowAssigner.of(bad)
    with pytest.raises(GraphBuildError, match="must be an int >= 1"):
        CountSlidingWindowAssigner.of(3, bad)


def test_dynamic_gap_needs_an_extractor_and_a_positive_gap():
    with pytest.raises(GraphBuildError, match="needs a SessionWindowTimeGapExtractor"):
        EventTimeSessionWindows.with_dynamic_gap(lambda e: 10)
    sessions = EventTimeSessionWindows.with_dynamic_gap(BadGap())
    with pytest.raises(JobExecutionError, match=r"BadGap.extract\(\) returned 0 for record"):
        _run(sessions, Ids(), [("a", 5, 0)])


def test_window_functions_are_checked_for_their_stream_kind():
    with pytest.raises(GraphBuildError, match="ProcessWindowFunction or a WindowFunction"):
        as_process_window_function(lambda k, w, i: i, "apply()")

    class All(AllWindowFunction):
        def apply(self, window, inputs):
            yield window

    with pytest.raises(GraphBuildError, match="ProcessWindowFunction or a WindowFunction"):
        as_process_window_function(All(), "apply()")
    with pytest.raises(GraphBuildError, match="ProcessAllWindowFunction or an AllWindowFunction"):
        as_process_window_function(Ids(), "window_all(...).apply()", keyed=False)
    assert isinstance(as_process_window_function(All(), "x", keyed=False), ProcessWindowFunction)
