"""The BinarySortedState benchmark's core on tiny data, and the RocksDB sorted state's floor.

The benchmark's two implementations of each workload must produce the same
outputs, and those outputs must be right (checked against expectations computed
here from the records alone). Speed is not asserted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.descriptors import BinarySortedStateDescriptor
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer
from pyspark_datastream.state_store.types import Types

from benchmarks import sorted_state


def _expected_sort(workload: sorted_state.Workload) -> dict[str, list[Any]]:
    per_key: dict[str, list[Any]] = {}
    for key, _, value, _, _ in workload.records:
        per_key.setdefault(key, []).append(value)
    return {key: sorted(values, key=lambda v: v[1]) for key, values in per_key.items()}


def _by_key(outputs: list[Any]) -> dict[str, list[Any]]:
    per_key: dict[str, list[Any]] = {}
    for record in outputs:
        per_key.setdefault(record[0], []).append(record)
    return per_key


@pytest.mark.parametrize("dup", [1, 3])
def test_sort_implementations_agree_and_sort_each_key(dup: int) -> None:
    workload = sorted_state.sort_workload(keys=3, events_per_key=40, dup=dup, watermark_every=7)
    sorted_out, _ = sorted_state.run_once(sorted_state.sorted_sort(), workload)
    map_out, _ = sorted_state.run_once(sorted_state.SortWithMapState(), workload)
    assert sorted_out == map_out
    assert _by_key(sorted_out) == _expected_sort(workload)
    # watermarks fired timers before the end: the output is not one final flush per key
    assert [r[0] for r in sorted_out[:40]] != sorted(r[0] for r in sorted_out[:40])


def test_join_implementations_agree_and_pick_the_valid_rate() -> None:
    workload = sorted_state.join_workload(currencies=2, orders_per_currency=30, orders_per_ts=2,
                                          rate_every_ms=150, watermark_every=5)
    sorted_out, _ = sorted_state.run_once(sorted_state.sorted_join(), workload)
    map_out, _ = sorted_state.run_once(sorted_state.JoinWithMapState(), workload)
    assert sorted_out == map_out
    rates = [(value[0], value[2], value[1]) for *_, value, _, side in
             [(r[0], r[1], r[2], r[3], r[4]) for r in workload.records] if side == 1]
    expected = []
    for _, _, value, _, side in workload.records:
        if side == 0:
            order_id, currency, amount, t = value
            valid = [(rt, rate) for c, rt, rate in rates if c == currency and rt <= t]
            rate_time, rate = max(valid)
            expected.append((order_id, currency, amount, t, rate, rate_time, amount * rate))
    assert sorted(sorted_out) == sorted(expected)
    assert len(expected) == 60


def test_compare_rejects_implementations_that_disagree() -> None:
    workload = sorted_state.sort_workload(keys=2, events_per_key=10, dup=2)

    class Broken(sorted_state.SortWithMapState):
        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            return iter(list(super().on_timer(timestamp, ctx))[:1])

    with pytest.raises(AssertionError, match=r"sort: the BinarySortedState and MapState implementations produced "
                       r"different outputs \(20 vs 11 records\)"):
        sorted_state.compare(sorted_state.sorted_sort, Broken, workload, repeat=1)


def test_main_prints_the_json_summary_last(capsys: pytest.CaptureFixture[str]) -> None:
    summary = sorted_state.main(["--quick", "--repeat", "1", "--scale", "0.04"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert json.loads(lines[-1]) == summary
    assert set(summary) == {"sort_speedup", "join_speedup"}
    assert all(value > 0 for value in summary.values())
    assert any("identical" in line for line in lines)


# -- RocksDB sorted state: the floor left by clear_range_until --------------------------------

@pytest.fixture
def rocks_sorted() -> Any:
    backend = RocksDBKeyedStateBackend(Types.STRING().key_serializer(), 128)
    state = backend.get_binary_sorted_state(
        BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.LONG())
    )
    backend.set_current_key("k")
    yield backend, state
    backend.close()


def test_rocksdb_writes_below_a_cleared_front_stay_visible(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    for t in range(10):
        state.add(t, t)
    state.clear_range_until(5, True)  # rows 0..5 deleted: later seeks start at 6
    assert state.first_entry() == (6, [6])
    # cached next indices: kept for the surviving key 8, forgotten for the deleted key 3
    state.add(8, 80)
    state.add(3, 30)
    assert state.values_at(8) == [8, 80] and state.values_at(3) == [30]
    state.clear_entry_at(3)
    state.add(2, 20)  # below the floor: must be found again
    state.add(2, 21)
    assert state.first_entry() == (2, [20, 21])
    assert state.last_entry(4) == (2, [20, 21])
    assert list(state.read_range_until(6, True)) == [(2, [20, 21]), (6, [6])]
    state.clear_range_until(7, False)
    state.put(-1, [1, 2])
    assert list(state.read_range(-5, 7, True)) == [(-1, [1, 2]), (7, [7])]
    assert state.last_entry(6) == (-1, [1, 2])
    # another key has no floor of its own
    backend.set_current_key("other")
    state.add(0, 0)
    assert state.first_entry() == (0, [0])
    backend.set_current_key("k")
    state.clear()
    state.add(1, 1)
    assert list(state.read_range_until(100, True)) == [(1, [1])]


def test_rocksdb_floor_survives_snapshot_restore(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    for t in range(6):
        state.add(t, t)
    state.clear_range_until(3, True)
    metas, entries = backend.state_meta_infos(), list(backend.snapshot())
    restored = RocksDBKeyedStateBackend(Types.STRING().key_serializer(), 128)
    try:
        restored.restore(metas, entries)
        again = restored.get_binary_sorted_state(
            BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.LONG())
        )
        restored.set_current_key("k")
        again.add(0, 10)
        assert list(again.read_range_until(10, True)) == [(0, [10]), (4, [4]), (5, [5])]
    finally:
        restored.close()
