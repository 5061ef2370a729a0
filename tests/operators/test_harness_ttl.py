"""State TTL through the test harness: its processing time is the TTL clock.

Expected outputs follow Flink's documented TTL semantics (processing time; expired once
``last access + ttl <= now``; BATCH with sorted inputs applies no TTL, Flink's BATCH state
backend does not wrap states with TTL; hash-based BATCH uses the regular backends, which do).
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark_datastream import (
    KeyedProcessFunction,
    KeyedProcessFunctionTestHarness,
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    Time,
    Types,
    ValueStateDescriptor,
)


def _ttl(ms: int, update: Any = StateTtlConfig.UpdateType.OnCreateAndWrite,
         visibility: Any = StateTtlConfig.StateVisibility.NeverReturnExpired) -> StateTtlConfig:
    return (StateTtlConfig.new_builder(Time.milliseconds(ms)).set_update_type(update)
            .set_state_visibility(visibility).build())


class Dedup(KeyedProcessFunction):
    """Emits an element the first time its key is seen within the TTL."""

    def __init__(self, config: StateTtlConfig) -> None:
        self.config = config

    def open(self, runtime_context: Any) -> None:
        seen = ValueStateDescriptor("seen", Types.BOOLEAN())
        seen.enable_time_to_live(self.config)
        self.seen = runtime_context.get_state(seen)

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.seen.value() is None:
            self.seen.update(True)
            yield value


class RecentItems(KeyedProcessFunction):
    """Keeps the key's items (list state, per-element TTL) and counts per item (map state,
    per-entry TTL); emits (key, live items, live counts) after each element."""

    def __init__(self, config: StateTtlConfig) -> None:
        self.config = config

    def open(self, runtime_context: Any) -> None:
        items = ListStateDescriptor("items", Types.STRING())
        counts = MapStateDescriptor("counts", Types.STRING(), Types.LONG())
        items.enable_time_to_live(self.config)
        counts.enable_time_to_live(self.config)
        self.items = runtime_context.get_list_state(items)
        self.counts = runtime_context.get_map_state(counts)

    def process_element(self, value: Any, ctx: Any) -> Any:
        key, item = value
        self.items.add(item)
        self.counts.put(item, (self.counts.get(item) or 0) + 1)
        yield key, list(self.items.get()), dict(self.counts.items())


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_dedup_forgets_a_key_after_the_ttl_streaming(backend: str) -> None:
    with KeyedProcessFunctionTestHarness(Dedup(_ttl(1_000)), lambda e: e[0],
                                         key_type=Types.STRING(), backend=backend) as h:
        assert h.get_processing_time() == 0
        h.process_element(("a", 1))
        h.process_element(("b", 1))
        h.set_processing_time(999)
        h.process_element(("a", 2))  # within the TTL: dropped (the read does not prolong)
        h.set_processing_time(1_000)
        h.process_element(("a", 3))  # 0 + 1000 <= 1000: expired, new again (stamped 1000)
        h.advance_processing_time(500)
        h.process_element(("a", 4))
        h.process_element(("b", 2))
        assert h.get_output() == [("a", 1), ("b", 1), ("a", 3), ("b", 2)]
        assert h.get_processing_time() == 1_500
        assert h.get_state("a", "seen") is True
        h.advance_processing_time(1_000)
        assert h.get_state("a", "seen") is None


def test_on_read_and_write_keeps_a_key_alive_while_it_is_read() -> None:
    config = _ttl(1_000, update=StateTtlConfig.UpdateType.OnReadAndWrite)
    with KeyedProcessFunctionTestHarness(Dedup(config), lambda e: e[0]) as h:
        for now in (0, 900, 1_800, 2_700):  # each read restamps: never 1000 ms apart
            h.set_processing_time(now)
            h.process_element(("a", now))
        h.set_processing_time(3_700)
        h.process_element(("a", 3_700))
        assert h.get_output() == [("a", 0), ("a", 3_700)]


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_return_expired_if_not_cleaned_up(backend: str) -> None:
    builder = (StateTtlConfig.new_builder(Time.seconds(1)).return_expired_if_not_cleaned_up()
               .disable_cleanup_in_background())
    with KeyedProcessFunctionTestHarness(Dedup(builder.build()), lambda e: e[0],
                                         backend=backend) as h:
        h.process_element(("a", 1))
        h.set_processing_time(5_000)
        h.process_element(("a", 2))  # the expired value is returned once (and removed)
        h.process_element(("a", 3))  # now it is gone: new again
        assert h.get_output() == [("a", 1), ("a", 3)]


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_return_expired_after_background_cleanup(backend: str) -> None:
    """With background cleanup (the default) each access first cleans up some keys: on the
    heap the next 5 keys of its cursor, on RocksDB the next 5 rows; here that includes the
    key being read, so its expired value is gone before the read."""
    config = _ttl(1_000, visibility=StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
    with KeyedProcessFunctionTestHarness(Dedup(config), lambda e: e[0],
                                         backend=backend, max_parallelism=1) as h:
        h.process_element(("a", 1))
        h.set_processing_time(5_000)
        h.process_element(("a", 2))
        assert h.get_output() == [("a", 1), ("a", 2)]


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_list_and_map_expire_per_element_and_entry(backend: str) -> None:
    with KeyedProcessFunctionTestHarness(RecentItems(_ttl(100)), lambda e: e[0],
                                         backend=backend) as h:
        h.process_element(("k", "x"))
        h.set_processing_time(60)
        h.process_element(("k", "y"))
        h.set_processing_time(100)  # x (stamped 0) expired, y (60) not
        h.process_element(("k", "x"))
        h.set_processing_time(200)  # every element of the first two expired; x at 100 too
        h.process_element(("k", "z"))
        assert h.get_output() == [
            ("k", ["x"], {"x": 1}),
            ("k", ["x", "y"], {"x": 1, "y": 1}),
            ("k", ["y", "x"], {"y": 1, "x": 1}),
            ("k", ["z"], {"z": 1}),
        ]


def test_sorted_batch_applies_no_ttl() -> None:
    with KeyedProcessFunctionTestHarness(Dedup(_ttl(1_000)), lambda e: e[0],
                                         backend="single_key", mode="BATCH") as h:
        h.process_element(("a", 1))
        h.advance_processing_time(10_000)
        h.process_element(("a", 2))
        h.process_element(("b", 1))
        h.end_input()
        assert h.get_output() == [("a", 1), ("b", 1)]


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_hash_batch_applies_ttl(backend: str) -> None:
    with KeyedProcessFunctionTestHarness(Dedup(_ttl(1_000)), lambda e: e[0],
                                         backend=backend, mode="BATCH") as h:
        h.process_element(("a", 1))
        h.advance_processing_time(1_000)
        h.process_element(("a", 2))
        h.end_input()
        assert h.get_output() == [("a", 1), ("a", 2)]
