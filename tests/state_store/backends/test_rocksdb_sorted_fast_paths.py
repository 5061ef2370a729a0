"""The RocksDB sorted state's fast paths against the heap backend, step by step.

``RocksSortedState`` stages adds in a write batch, defers the deletes of rows
below a floor, deletes the rows of a just-read range without a second scan,
answers "new key?" from a cache that knows every key of a prefix, memoizes the
lexicographic bytes of int keys and reads small ranges at once. Each of these is
only right under invariants spelled out in its docstring; this Hypothesis state
machine drives random operation sequences (several keys, two namespaces, keys at
the long range's ends) through the heap backend, a plain RocksDB backend and a
change-tracking one, and checks after every step that all read the same, that
their snapshots are byte-identical, that restoring a snapshot and replaying the
captured changes both rebuild the same state. It runs once with the modules'
limits and once with tiny ones, so the limit paths (cache clears, batch flushes,
streamed reads, stale-cache purges) run too.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from pyspark_datastream import StateError
from pyspark_datastream.state_store.backend import KeyedStateBackend
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.rocksdb import (
    RocksDBKeyedStateBackend,
    sorted_state,
    states,
)
from pyspark_datastream.state_store.backends.rocksdb import backend as rocksdb_backend
from pyspark_datastream.state_store.descriptors import BinarySortedStateDescriptor
from pyspark_datastream.state_store.namespaces import TimeWindow, TimeWindowSerializer
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer
from pyspark_datastream.state_store.types import Types

MIN_LONG, MAX_LONG = -(1 << 63), (1 << 63) - 1
#: mostly colliding small times (several values per key, fronts cleared and refilled),
#: sometimes the ends of the range (their successor bound leaves the key's prefix)
TIMES = st.one_of(st.integers(0, 6), st.sampled_from([MIN_LONG, MAX_LONG, MAX_LONG - 1]))
KEYS = st.sampled_from(["a", "b", "c"])
WINDOWS = [TimeWindow(0, 10), TimeWindow(10, 20)]
TINY_LIMITS = {
    "BATCH_LIMIT": 3,
    "_EAGER_ROWS": 2,
    "INDEX_CACHE_LIMIT": 2,
    "_STALE_LIMIT": 1,
    "_LEX_MEMO_LIMIT": 2,
}
#: the RocksDB modules reading the limits: each reads a shared one under its own name
ROCKSDB_MODULES = (states, sorted_state, rocksdb_backend)


def _set_limit(monkeypatch: pytest.MonkeyPatch, name: str, value: int) -> None:
    """Set a limit in every RocksDB module that reads it."""
    readers = [module for module in ROCKSDB_MODULES if hasattr(module, name)]
    assert readers, f"no RocksDB module has a limit {name}"
    for module in readers:
        monkeypatch.setattr(module, name, value)


def _sorted_state(backend: KeyedStateBackend, name: str) -> Any:
    return backend.get_binary_sorted_state(
        BinarySortedStateDescriptor(name, LexicographicLongSerializer.INSTANCE, Types.LONG()),
        TimeWindowSerializer(),
    )


def _rocks(track: bool = False) -> RocksDBKeyedStateBackend:
    return RocksDBKeyedStateBackend(
        Types.STRING().create_serializer(), 128, write_buffer_size=2 << 20,
        block_cache_size=4 << 20, track_changes=track,
    )


class FastPathMachine(RuleBasedStateMachine):
    """Heap (the reference), RocksDB and change-tracking RocksDB, driven alike."""

    @initialize()
    def setup(self) -> None:
        self.heap = HeapKeyedStateBackend(Types.STRING().create_serializer(), 128)
        self.rocks = _rocks()
        self.tracked = _rocks(track=True)
        #: rebuilt from the tracked backend's captured changes only
        self.replica = _rocks()
        self.backends: list[KeyedStateBackend] = [self.heap, self.rocks, self.tracked]
        self.states = [_sorted_state(b, "s") for b in self.backends]
        # a neighbouring state with rows on both sides: leaking bounds would show
        for backend in self.backends:
            neighbour = _sorted_state(backend, "r")
            for key in ("a", "b"):
                backend.set_current_key(key)
                neighbour.set_current_namespace(WINDOWS[0])
                neighbour.add(5, 500)
        self.counter = 0
        self.key = "a"
        self.window = WINDOWS[0]
        self._select("a", WINDOWS[0])

    def _select(self, key: str, window: TimeWindow) -> None:
        self.key, self.window = key, window
        for backend, state in zip(self.backends, self.states, strict=True):
            backend.set_current_key(key)
            state.set_current_namespace(window)

    def _same(self, call: Any) -> Any:
        """``call(state)`` on every backend; all must return the same."""
        results = [call(state) for state in self.states]
        assert results[1] == results[0], f"rocksdb differs from heap: {results[1]} != {results[0]}"
        assert results[2] == results[0], f"tracked differs from heap: {results[2]} != {results[0]}"
        return results[0]

    def _next_value(self) -> int:
        self.counter += 1
        return self.counter

    # -- context -------------------------------------------------------------------------------
    @rule(key=KEYS, window=st.sampled_from(WINDOWS))
    def switch(self, key: str, window: TimeWindow) -> None:
        self._select(key, window)

    # -- writes --------------------------------------------------------------------------------
    @rule(t=TIMES)
    def add(self, t: int) -> None:
        value = self._next_value()
        self._same(lambda s: s.add(t, value))

    @rule(t=TIMES, count=st.integers(0, 3))
    def put(self, t: int, count: int) -> None:
        values = [self._next_value() for _ in range(count)]
        self._same(lambda s: s.put(t, values))

    @rule(t=TIMES)
    def clear_entry_at(self, t: int) -> None:
        self._same(lambda s: s.clear_entry_at(t))

    @rule(t=TIMES, inclusive=st.booleans())
    def read_then_clear_until(self, t: int, inclusive: bool) -> None:
        # the temporal sort / join pattern: the clear deletes the rows the read saw
        self._same(lambda s: list(s.read_range_until(t, inclusive)))
        self._same(lambda s: s.clear_range_until(t, inclusive))

    @rule(t=TIMES, inclusive=st.booleans(), t2=TIMES)
    def read_write_then_clear_until(self, t: int, inclusive: bool, t2: int) -> None:
        # a write between the read and the clear: the remembered rows must not be used
        self._same(lambda s: list(s.read_range_until(t, inclusive)))
        value = self._next_value()
        self._same(lambda s: s.add(t2, value))
        self._same(lambda s: s.clear_range_until(t, inclusive))

    @rule(t=TIMES, inclusive=st.booleans())
    def clear_range_until(self, t: int, inclusive: bool) -> None:
        self._same(lambda s: s.clear_range_until(t, inclusive))

    @rule(low=TIMES, high=TIMES, inclusive=st.booleans(), read_first=st.booleans())
    def clear_range(self, low: int, high: int, inclusive: bool, read_first: bool) -> None:
        if read_first:
            self._same(lambda s: list(s.read_range(low, high, inclusive)))
        self._same(lambda s: s.clear_range(low, high, inclusive))

    @rule(low=TIMES, read_first=st.booleans())
    def clear_range_from(self, low: int, read_first: bool) -> None:
        if read_first:
            self._same(lambda s: list(s.read_range_from(low)))
        self._same(lambda s: s.clear_range_from(low))

    @rule()
    def clear(self) -> None:
        self._same(lambda s: s.clear())

    # -- reads ---------------------------------------------------------------------------------
    @rule(t=TIMES)
    def values_at(self, t: int) -> None:
        self._same(lambda s: s.values_at(t))

    @rule(t=st.one_of(st.none(), TIMES))
    def first_entry(self, t: int | None) -> None:
        self._same(lambda s: s.first_entry(t))

    @rule(t=st.one_of(st.none(), TIMES))
    def last_entry(self, t: int | None) -> None:
        self._same(lambda s: s.last_entry(t))

    @rule(low=TIMES, high=TIMES, inclusive=st.booleans())
    def read_range(self, low: int, high: int, inclusive: bool) -> None:
        self._same(lambda s: list(s.read_range(low, high, inclusive)))

    # -- whole-backend operations --------------------------------------------------------------
    @rule()
    def restore_rocks_from_its_snapshot(self) -> None:
        # a fresh database and fresh caches holding what the old one held
        metas, entries = self.rocks.state_meta_infos(), list(self.rocks.snapshot())
        restored = _rocks()
        restored.restore(metas, entries)
        self.rocks.close()
        self.rocks = restored
        self.backends[1] = restored
        self.states[1] = _sorted_state(restored, "s")
        _sorted_state(restored, "r")
        self._select(self.key, self.window)

    @rule()
    def replay_changes(self) -> None:
        changes = self.tracked.take_changes()
        assert changes is not None
        self.replica.apply_changes(changes.items())
        assert list(self.replica.snapshot()) == list(self.tracked.snapshot())

    @rule()
    def same_snapshots(self) -> None:
        # (a rule, not an invariant: a snapshot writes what is staged, and staged writes
        # must also be exercised across several steps)
        heap_entries = list(self.heap.snapshot())
        assert list(self.rocks.snapshot()) == heap_entries
        assert list(self.tracked.snapshot()) == heap_entries
        assert list(self.rocks.raw_items()) == list(self.tracked.raw_items())

    @rule()
    def same_contents(self) -> None:
        # (a rule too: an invariant would read after every step, and a read writes the
        # staged adds, so staged adds would never meet the other operations)
        self._same(lambda s: list(s.read_range_from(MIN_LONG)))

    def teardown(self) -> None:
        if hasattr(self, "states"):  # the final contents agree too
            self.same_contents()
            self.same_snapshots()
        for backend in (getattr(self, name, None) for name in ("heap", "rocks", "tracked", "replica")):
            if backend is not None:
                backend.close()


@pytest.mark.parametrize("limits", ["module", "tiny"])
def test_rocksdb_sorted_fast_paths_match_heap(
    limits: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if limits == "tiny":
        for name, value in TINY_LIMITS.items():
            _set_limit(monkeypatch, name, value)
    FastPathMachine.TestCase.settings = settings(
        max_examples=15,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    FastPathMachine.TestCase().runTest()


# -- the individual mechanisms, on purpose ----------------------------------------------------

@pytest.fixture
def rocks_sorted() -> Any:
    yield from _backend_and_state(track=False)


@pytest.fixture
def tracked_sorted() -> Any:
    """A change-tracking backend and its sorted state, current key set."""
    yield from _backend_and_state(track=True)


def _backend_and_state(track: bool) -> Any:
    backend = _rocks(track=track)
    state = backend.get_binary_sorted_state(
        BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.LONG())
    )
    backend.set_current_key("k")
    yield backend, state
    backend.close()


def _rows_of(backend: RocksDBKeyedStateBackend) -> int:
    return sum(1 for _ in backend.db.keys())


def test_adds_are_staged_until_a_read_or_a_flush(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    for t in (3, 1, 3):
        state.add(t, t * 10)
    assert _rows_of(backend) == 0  # pending, not written yet
    # the prefix's cache knows every key: the read is served from memory, nothing written
    assert list(state.read_range_until(3, True)) == [(1, [10]), (3, [30, 30])]
    assert _rows_of(backend) == 0
    # an iterator read writes the pending rows first
    assert state.values_at(3) == [30, 30]
    assert _rows_of(backend) == 3
    state.add(7, 70)
    backend.flush()
    assert _rows_of(backend) == 4


def test_rows_added_and_cleared_while_pending_are_never_written(tracked_sorted: Any) -> None:
    backend, state = tracked_sorted
    for t in (1, 2, 2, 3):
        state.add(t, t * 10)
    assert list(state.read_range_until(2, True)) == [(1, [10]), (2, [20, 20])]
    state.clear_range_until(2, True)
    backend.flush()
    # only the row still alive was written; the three cleared ones left no put, no delete
    assert _rows_of(backend) == 1
    changes = backend.take_changes()
    assert changes is not None and list(changes.values()) == [
        Types.LONG().create_serializer().serialize(30)
    ]
    assert list(state.read_range_until(9, True)) == [(3, [30])]


def test_a_known_range_mixes_written_and_pending_rows(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    state.add(1, 10)
    state.add(2, 20)
    backend.flush()  # 1 and 2 written
    state.add(2, 21)  # pending, under a key that has a written row
    state.add(3, 30)
    assert _rows_of(backend) == 2
    assert list(state.read_range_until(2, True)) == [(1, [10]), (2, [20, 21])]
    state.clear_range_until(2, True)  # two staged deletes, one pending row dropped
    assert state.first_entry() == (3, [30])
    backend.flush()
    assert _rows_of(backend) == 1


def test_a_put_replaces_pending_rows(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    for value in (1, 2, 3):
        state.add(5, value)
    state.put(5, [9])  # rows 1 and 2 were pending: they must not come back at the flush
    assert list(state.read_range_until(5, True)) == [(5, [9])]
    backend.flush()
    assert state.values_at(5) == [9]
    assert _rows_of(backend) == 1


def test_deletes_below_the_floor_wait_and_stay_invisible(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    for t in range(6):
        state.add(t, t)
    backend.flush()  # written (rows still pending would be dropped unwritten instead)
    assert [k for k, _ in state.read_range_until(2, True)] == [0, 1, 2]
    state.clear_range_until(2, True)
    assert _rows_of(backend) == 6  # the three deletes are staged
    # no read sees the rows waiting for deletion
    assert state.values_at(1) is None
    assert state.first_entry() == (3, [3])
    assert state.last_entry(2) is None
    assert list(state.read_range(0, 4, True)) == [(3, [3]), (4, [4])]
    # a write below the floor writes the staged deletes first: the old rows stay gone
    state.add(1, 11)
    assert _rows_of(backend) == 3  # deletes written; the add is staged
    assert state.values_at(1) == [11]
    assert _rows_of(backend) == 4
    assert list(state.read_range_until(9, True)) == [(1, [11]), (3, [3]), (4, [4]), (5, [5])]


def test_snapshot_and_change_capture_include_staged_writes(tracked_sorted: Any) -> None:
    backend, state = tracked_sorted
    state.add(1, 10)
    state.add(2, 20)
    assert len(list(backend.snapshot())) == 2
    list(state.read_range_until(1, True))
    state.clear_range_until(1, True)  # its delete is staged
    changes = backend.take_changes()  # writes the staged delete first
    assert changes is not None
    assert sorted(changes.values(), key=lambda v: v or b"") == [
        None, Types.LONG().create_serializer().serialize(20)
    ]
    assert [entry.user_key[:8] for entry in backend.snapshot()] == [
        LexicographicLongSerializer.INSTANCE.serialize(2)
    ]


def test_a_clear_after_a_read_of_another_range_scans(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    for t in range(5):
        state.add(t, t)
    list(state.read_range_until(1, True))
    state.clear_range_until(3, True)  # not the range read: found by a scan
    assert list(state.read_range_until(9, True)) == [(4, [4])]


def test_large_ranges_stream(rocks_sorted: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _set_limit(monkeypatch, "_EAGER_ROWS", 4)
    backend, state = rocks_sorted
    for t in range(6):
        state.add(t // 2, t)
    groups = state.read_range_until(10, True)
    assert next(groups) == (0, [0, 1])
    assert list(groups) == [(1, [2, 3]), (2, [4, 5])]
    state.clear_range_until(10, True)  # not remembered (streamed): scanned
    assert state.first_entry() is None


def test_put_replaces_known_and_unknown_keys(rocks_sorted: Any) -> None:
    backend, state = rocks_sorted
    state.add(4, 1)
    state.add(4, 2)
    state.add(4, 3)
    state.put(4, [9])  # known key: index 0 overwritten, 1 and 2 deleted
    assert state.values_at(4) == [9]
    metas, entries = backend.state_meta_infos(), list(backend.snapshot())
    restored = _rocks()
    try:
        restored.restore(metas, entries)
        again = restored.get_binary_sorted_state(
            BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.LONG())
        )
        restored.set_current_key("k")
        again.put(4, [7, 8])  # restored key, unknown to the new caches: scanned
        again.add(4, 10)
        assert again.values_at(4) == [7, 8, 10]
    finally:
        restored.close()


@pytest.mark.parametrize("forget", ["restore", "cache limit"])
def test_adds_append_to_keys_the_caches_do_not_know(
    forget: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a key with rows but no cache entry (restored, or the cache was cleared at its limit)
    # must not be taken for new: its next index comes from the database
    backend = _rocks()
    try:
        state = _sorted_state(backend, "s")
        backend.set_current_key("k")
        state.set_current_namespace(WINDOWS[0])
        state.add(1, 10)
        state.add(1, 11)
        if forget == "restore":
            metas, entries = backend.state_meta_infos(), list(backend.snapshot())
            backend.close()
            backend = _rocks()
            backend.restore(metas, entries)
            state = _sorted_state(backend, "s")
            backend.set_current_key("k")
            state.set_current_namespace(WINDOWS[0])
        else:
            _set_limit(monkeypatch, "INDEX_CACHE_LIMIT", 1)
            state.set_current_namespace(WINDOWS[1])
            state.add(5, 50)  # a second prefix: the cache of the first one is cleared
            state.set_current_namespace(WINDOWS[0])
        state.add(1, 12)
        state.add(2, 20)
        assert state.values_at(1) == [10, 11, 12]
        assert list(state.read_range_until(2, True)) == [(1, [10, 11, 12]), (2, [20])]
    finally:
        backend.close()


def test_keys_written_again_below_a_dropped_floor_keep_their_order(
    rocks_sorted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, state = rocks_sorted
    for t in (1, 1, 2):
        state.add(t, t)
    list(state.read_range_until(1, True))
    state.clear_range_until(1, True)  # floor above 1; the cache entry of 1 is now stale
    state.add(1, 10)  # below the floor: floor dropped, stale entries forgotten -> index 0
    _set_limit(monkeypatch, "INDEX_CACHE_LIMIT", 1)
    backend.set_current_key("other")
    state.add(0, 0)  # another prefix: the whole index cache is cleared
    backend.set_current_key("k")
    state.add(1, 11)  # found in the database again: appended after index 0
    assert state.values_at(1) == [10, 11]


def test_forgetting_floors_forgets_the_stale_cache_entries_below_them(
    rocks_sorted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, state = rocks_sorted
    _set_limit(monkeypatch, "INDEX_CACHE_LIMIT", 2)
    state.add(1, 1)
    state.add(1, 2)
    list(state.read_range_until(1, True))
    state.clear_range_until(1, True)  # floor of "k"; its cache entry of 1 is now stale
    for key in ("x", "y"):  # more floors (no cache entries): at the limit all are forgotten
        backend.set_current_key(key)
        state.clear_range_until(0, True)
    backend.set_current_key("k")
    state.add(1, 10)  # no floor any more: the stale next index must not be reused
    for key in ("third", "fourth"):  # the index cache reaches its limit: cleared
        backend.set_current_key(key)
        state.add(0, 0)
    backend.set_current_key("k")
    state.add(1, 11)  # found in the database: appended after the first value
    assert state.values_at(1) == [10, 11]


def test_flush_refuses_a_closed_backend() -> None:
    backend = _rocks()
    backend.close()
    with pytest.raises(StateError, match="closed"):
        backend.flush()


def test_a_windowed_sorted_state_needs_a_key_then_a_window() -> None:
    # the row-key parts start unset, as does the namespace part where the window serializer
    # cannot encode the void namespace: each access fails with the error naming what is missing
    backend = _rocks()
    state = backend.get_binary_sorted_state(
        BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.LONG()),
        TimeWindowSerializer(),
    )
    with pytest.raises(StateError, match="no current key.*'s'"):
        state.add(1, 10)
    backend.set_current_key("k")
    with pytest.raises(StateError, match="'s': no namespace set"):
        state.add(1, 10)
    state.set_current_namespace(WINDOWS[0])
    state.add(1, 10)
    assert state.values_at(1) == [10]
    backend.close()
