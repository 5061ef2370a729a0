"""pyspark_datastream.temporal_functions (the examples' sort and join) on the operator harness.

Watermarks are pushed explicitly here, which the Spark tests (bounded input, one
watermark at the end) cannot do: emission when the watermark passes, late
records, and the pruning of rates.
"""

from __future__ import annotations

import pytest
from pyspark_datastream.operators.harness import (
    KeyedCoProcessFunctionTestHarness,
    KeyedProcessFunctionTestHarness,
)
from pyspark_datastream.temporal_functions import TemporalJoin, TemporalSort

from examples.temporal_join import ORDER_TYPE, RATE_TYPE, convert
from examples.temporal_sort import EVENT_TYPE

BACKENDS = ["heap", "rocksdb"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sort_emits_in_time_order_when_the_watermark_passes(backend: str) -> None:
    sort = TemporalSort(EVENT_TYPE)
    with KeyedProcessFunctionTestHarness(sort, lambda e: e[0], backend=backend) as h:
        for ts, payload in [(30, "c"), (10, "a"), (20, "b"), (10, "a2"), (40, "d")]:
            h.process_element(("k", ts, payload), ts)
        h.process_element(("other", 15, "x"), 15)
        assert h.get_output() == []
        h.process_watermark(20)
        assert h.get_output() == [("k", 10, "a"), ("k", 10, "a2"), ("other", 15, "x"),
                                  ("k", 20, "b")]
        assert h.get_state("k", "buffer") == [(30, [("k", 30, "c")]), (40, [("k", 40, "d")])]
        h.clear_output()
        h.process_element(("k", 20, "late"), 20)  # at the watermark: late, dropped
        h.process_element(("k", 25, "ok"), 25)
        assert h.get_value_state("k", "dropped_late") == 1
        h.process_watermark(35)
        assert h.get_output() == [("k", 25, "ok"), ("k", 30, "c")]
        h.clear_output()
        h.end_input()
        assert h.get_output() == [("k", 40, "d")]
        assert h.get_state("k", "buffer") == []


def test_sort_in_batch_mode_on_the_single_key_backend() -> None:
    events = [("a", 5, "a5"), ("a", 1, "a1"), ("a", 5, "a5b"), ("b", 2, "b2"), ("b", 0, "b0")]
    with KeyedProcessFunctionTestHarness(TemporalSort(EVENT_TYPE), lambda e: e[0],
                                         backend="single_key", mode="BATCH") as h:
        for event in events:
            h.process_element(event, event[1])
        h.end_input()
        assert h.get_output() == [("a", 1, "a1"), ("a", 5, "a5"), ("a", 5, "a5b"),
                                  ("b", 0, "b0"), ("b", 2, "b2")]


def _join_harness(backend: str) -> KeyedCoProcessFunctionTestHarness:
    return KeyedCoProcessFunctionTestHarness(
        TemporalJoin(ORDER_TYPE, RATE_TYPE, convert), lambda order: order[1], lambda rate: rate[0],
        backend=backend,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_join_uses_the_rate_valid_at_the_order_time_and_prunes_old_rates(backend: str) -> None:
    with _join_harness(backend) as h:
        h.process_element1(("o-early", "EUR", 1.0, 5), 5)  # before any rate: no output
        h.process_element2(("EUR", 2.0, 10), 10)
        h.process_element2(("EUR", 3.0, 20), 20)
        h.process_element1(("o15", "EUR", 10.0, 15), 15)
        h.process_element1(("o20", "EUR", 10.0, 20), 20)
        h.process_element1(("o40", "EUR", 10.0, 40), 40)
        h.process_element2(("EUR", 4.0, 30), 30)
        h.process_element1(("usd", "USD", 7.0, 12), 12)  # another key, no USD rate
        h.process_watermark(25)
        assert sorted(h.get_output()) == [
            ("o15", "EUR", 10.0, 15, 2.0, 10, 20.0),
            ("o20", "EUR", 10.0, 20, 3.0, 20, 30.0),
        ]
        # the rate valid at 25 (t=20) and later ones remain; t=10 is pruned
        assert [t for t, _ in h.get_state("EUR", "right")] == [20, 30]
        assert [t for t, _ in h.get_state("EUR", "left")] == [40]
        h.clear_output()
        h.process_element1(("late", "EUR", 1.0, 22), 22)  # behind the watermark: dropped
        h.process_element2(("EUR", 5.0, 35), 35)
        h.end_input()
        assert h.get_output() == [("o40", "EUR", 10.0, 40, 5.0, 35, 50.0)]
        assert [t for t, _ in h.get_state("EUR", "right")] == [35]
        assert h.get_state("EUR", "left") == []
