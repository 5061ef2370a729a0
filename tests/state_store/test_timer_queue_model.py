"""The timer queue against a plain reference model: a sorted list of
``(timestamp, key bytes, namespace bytes)`` triples.

Random sequences of add, delete, poll (with timers added and deleted while firing, and
polls abandoned half-way), peek, drop_key, clear, snapshot and restore (into an empty
queue, and again into a live one), and the columns a STREAMING key group keeps its timers
in (taken out, pickled, restored before or after the queue exists) must fire, peek, count
and snapshot exactly what the model says. Only public APIs are used.
"""

from __future__ import annotations

import pickle
import random
from bisect import insort
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from pyspark_datastream import KeyGroupError, SavepointFormatError
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.entries import (
    StateEntry,
    encode_timestamp,
    timer_state_name,
)
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.namespaces import TimeWindow, TimeWindowSerializer
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.timer_queue import Timer, TimerColumns, TimerQueue

KS = GenericKeySerializer.INSTANCE
WINDOWS = TimeWindowSerializer()
MAX_PARALLELISM = 16
KEYS: list[Any] = [0, 1, 2, -7, "a", "b", "ab", (1, "x"), 10**12, "k" * 9]
NAMESPACES = [TimeWindow(0, 10), TimeWindow(0, 11), TimeWindow(-5, 3), TimeWindow(7, 8)]
STAMPS = [-(2**63), -1, 0, 1, 2, 3, 5, 8, 13, 100, 2**63 - 1]

Triple = tuple[int, bytes, bytes]


class QueueAndModel:
    """A heap backend's ``"event"`` queue (TimeWindow namespaces) and its reference model."""

    def __init__(self) -> None:
        self.backend = HeapKeyedStateBackend(KS, MAX_PARALLELISM)
        self.queue: TimerQueue = self.backend.timer_queue("event", WINDOWS)
        #: the model: every live timer, sorted
        self.model: list[Triple] = []
        self.objects: dict[bytes, Any] = {}

    def _triple(self, timestamp: int, key: Any, namespace: TimeWindow) -> Triple:
        key_bytes, ns_bytes = KS.serialize(key), WINDOWS.serialize(namespace)
        self.objects[key_bytes], self.objects[ns_bytes] = key, namespace
        return (timestamp, key_bytes, ns_bytes)

    def add(self, timestamp: int, key: Any, namespace: TimeWindow) -> None:
        self.backend.set_current_key(key)
        self.queue.add(timestamp, namespace)
        triple = self._triple(timestamp, key, namespace)
        if triple not in self.model:
            insort(self.model, triple)

    def delete(self, timestamp: int, key: Any, namespace: TimeWindow) -> None:
        self.backend.set_current_key(key)
        self.queue.delete(timestamp, namespace)
        triple = self._triple(timestamp, key, namespace)
        if triple in self.model:
            self.model.remove(triple)

    def drop_key(self, key: Any) -> None:
        key_bytes = KS.serialize(key)
        self.queue.drop_key(key_bytes)
        self.model = [t for t in self.model if t[1] != key_bytes]

    def clear(self) -> None:
        self.queue.clear()
        self.model = []

    def poll(self, timestamp: int, rnd: random.Random, limit: int | None = None) -> None:
        """Poll up to ``timestamp``, changing timers while firing; stop after ``limit``."""
        fired = 0
        plain = rnd.random() < 0.5  # the same timers as plain tuples
        polled = (self.queue.poll_tuples_until(timestamp) if plain
                  else self.queue.poll_until(timestamp))
        for timer in polled:
            assert type(timer) is (tuple if plain else Timer)
            timer = Timer(*timer)
            expected = self.model.pop(0)
            assert expected[0] <= timestamp
            assert (timer.timestamp, timer.key_bytes, WINDOWS.serialize(timer.namespace)) == expected
            assert timer == (expected[0], self.objects[expected[1]], self.objects[expected[2]],
                             expected[1])
            fired += 1
            if limit is not None and fired >= limit:
                return  # the generator is abandoned half-way
            roll = rnd.random()
            if roll < 0.25:  # due now (maybe the very timer that fired), or later
                stamp = min(timer.timestamp + rnd.choice((0, 0, 1, 50)), 2**63 - 1)
                self.add(stamp, timer.key, rnd.choice(NAMESPACES))
            elif roll < 0.4 and self.model:
                victim = rnd.choice(self.model)
                self.delete(victim[0], self.objects[victim[1]], self.objects[victim[2]])
            elif roll < 0.45:
                self.drop_key(rnd.choice(KEYS))
        assert not self.model or self.model[0][0] > timestamp

    def expected_entries(self) -> list[StateEntry]:
        name = timer_state_name("event")
        entries = [StateEntry(assign_key_group(kb, MAX_PARALLELISM), name, kb, nsb,
                              encode_timestamp(ts), b"") for ts, kb, nsb in self.model]
        return sorted(entries, key=StateEntry.encoded_key)

    def restore_fresh(self) -> None:
        """Snapshot the backend and continue on a new backend restored from it."""
        metas, entries = self.backend.state_meta_infos(), list(self.backend.snapshot())
        self.backend = HeapKeyedStateBackend(KS, MAX_PARALLELISM)
        self.backend.restore(metas, entries)
        self.queue = self.backend.timer_queue("event", WINDOWS)

    def restore_via_columns(self, rnd: random.Random) -> None:
        """Take the timers out as columns, pickle them (as a key group's state bytes do) and
        continue on a new backend restored from the snapshot plus the columns, restored
        into the live queue or left pending until the queue is created."""
        metas = self.backend.state_meta_infos()
        taken = self.backend.take_timer_columns()
        assert sum(columns.timer_count() for _, columns in taken) == len(self.model)
        assert not self.queue and list(self.backend.snapshot()) == []
        taken = pickle.loads(pickle.dumps(taken))
        self.backend = HeapKeyedStateBackend(KS, MAX_PARALLELISM)
        self.backend.restore(metas, [])
        if rnd.random() < 0.5:
            self.queue = self.backend.timer_queue("event", WINDOWS)
        for name, columns in taken:
            self.backend.restore_timer_columns(name, columns)
        if rnd.random() < 0.5:  # still pending, or already in the queue: the same entries
            assert sorted(self.backend.timer_entries(), key=StateEntry.encoded_key) == \
                self.expected_entries()
        self.queue = self.backend.timer_queue("event", WINDOWS)

    def restore_into_live(self, rnd: random.Random) -> None:
        """Restore into the live queue a random part of its own snapshot (no change) and
        of the entries of timers it does not hold (they join it)."""
        entries = [e for e in self.queue.snapshot_entries(MAX_PARALLELISM) if rnd.random() < 0.5]
        name = timer_state_name("event")
        for _ in range(rnd.randrange(1, 30)):
            triple = self._triple(rnd.randrange(-50, 500), rnd.choice(KEYS), rnd.choice(NAMESPACES))
            entries.append(StateEntry(assign_key_group(triple[1], MAX_PARALLELISM), name,
                                      triple[1], triple[2], encode_timestamp(triple[0]), b""))
            if triple not in self.model:
                insort(self.model, triple)
        rnd.shuffle(entries)
        self.queue.restore_entries(entries)

    def check(self) -> None:
        queue, model = self.queue, self.model
        assert len(queue) == len(model) and bool(queue) == bool(model)
        assert queue.peek_timestamp() == (model[0][0] if model else None)
        assert queue.snapshot_entries(MAX_PARALLELISM) == self.expected_entries()


def _random_run(seed: int, steps: int, stamps: int) -> None:
    rnd = random.Random(seed)
    qm = QueueAndModel()
    for _ in range(steps):
        roll = rnd.random()
        key, ns = rnd.choice(KEYS), rnd.choice(NAMESPACES)
        stamp = rnd.choice(STAMPS) if rnd.random() < 0.05 else rnd.randrange(stamps)
        if roll < 0.55:
            qm.add(stamp, key, ns)
        elif roll < 0.7:
            qm.delete(stamp, key, ns)
        elif roll < 0.72:
            qm.drop_key(key)
        elif roll < 0.76:
            qm.restore_fresh()
        elif roll < 0.8:
            qm.restore_via_columns(rnd)
        elif roll < 0.82:
            qm.restore_into_live(rnd)
        elif roll < 0.87:
            qm.poll(stamp, rnd, limit=rnd.randrange(1, 5))
        elif roll < 0.97:
            qm.poll(stamp, rnd)
        elif roll < 0.975:
            qm.clear()
        else:
            backend, queue = qm.backend, qm.queue
            backend.set_current_key(key)
            key_bytes = KS.serialize(key)
            assert queue.timers_for_current_key() == [
                (t[0], qm.objects[t[2]]) for t in qm.model if t[1] == key_bytes]
        if rnd.random() < 0.1:
            qm.check()
    qm.check()
    qm.poll(2**63 - 1, rnd)
    qm.check()


@pytest.mark.parametrize("seed", range(12))
def test_random_operations_match_the_model(seed: int) -> None:
    _random_run(seed, steps=1500, stamps=400)


@pytest.mark.parametrize("seed", range(4))
def test_many_timers_per_timestamp_match_the_model(seed: int) -> None:
    _random_run(100 + seed, steps=2500, stamps=6)


def test_restored_timers_fire_in_order_when_polled_in_steps() -> None:
    # restored timers are first split at the poll's bound: the due ones, then the rest
    rnd = random.Random(4)
    qm = QueueAndModel()
    for _ in range(3000):
        qm.add(rnd.randrange(10_000), rnd.choice(KEYS), rnd.choice(NAMESPACES))
    qm.restore_fresh()
    for bound in (-5, 2_000, 2_000, 2_500, 7_000, 20_000):
        qm.poll(bound, rnd)
        qm.check()
    qm.restore_fresh()
    assert qm.queue.peek_timestamp() == (qm.model[0][0] if qm.model else None)


def test_a_restored_queue_fires_what_the_queue_it_came_from_fires() -> None:
    rnd = random.Random(8)
    qm = QueueAndModel()
    for _ in range(2000):
        qm.add(rnd.randrange(500), rnd.choice(KEYS), rnd.choice(NAMESPACES))
    qm.poll(300, rnd, limit=50)  # abandoned half-way: due timers are left
    metas, entries = qm.backend.state_meta_infos(), list(qm.backend.snapshot())
    copy = HeapKeyedStateBackend(KS, MAX_PARALLELISM)
    copy.restore(metas, entries)

    def fired(queue: TimerQueue) -> list[tuple[int, bytes, Any]]:
        return [(t.timestamp, t.key_bytes, t.namespace) for t in queue.poll_until(2**63 - 1)]

    expected = fired(qm.queue)
    assert len(expected) == len(qm.model) and expected == sorted(
        expected, key=lambda t: (t[0], t[1], WINDOWS.serialize(t[2])))
    assert fired(copy.timer_queue("event", WINDOWS)) == expected


@pytest.mark.parametrize("namespaces", [NAMESPACES, NAMESPACES[:1]], ids=["several", "one"])
def test_columns_hold_what_the_entries_hold(namespaces: list[TimeWindow]) -> None:
    """Several namespaces, and one (every timer's the same, as a keyed process function's
    VOID namespace): the columns hold every timer once, restore into a queue that fires
    what the model holds, in order."""
    rnd = random.Random(11)
    qm = QueueAndModel()
    for _ in range(1500):
        qm.add(rnd.choice(STAMPS + [rnd.randrange(-100, 100)]), rnd.choice(KEYS),
               rnd.choice(namespaces))
    expected = qm.expected_entries()
    [(name, columns)] = qm.backend.take_timer_columns()
    assert name == timer_state_name("event") and columns.timer_count() == len(expected)
    assert sorted(columns.entries(name, MAX_PARALLELISM), key=StateEntry.encoded_key) == expected
    assert len(columns.pairs) == len({(e.key, e.namespace) for e in expected})
    assert len(qm.queue) == 0
    qm.queue.restore_columns(columns)
    fired = [(t.timestamp, t.key_bytes, WINDOWS.serialize(t.namespace))
             for t in qm.queue.poll_until(2**63 - 1)]
    assert fired == [(ts, kb, nsb) for ts, kb, nsb in qm.model]


def _columns(pairs: list[tuple[bytes, bytes]], index: list[int], stamps: list[int]) -> TimerColumns:
    from array import array

    return TimerColumns(pairs, array("I", index).tobytes(), array("q", stamps).tobytes())


def test_inconsistent_columns_are_a_format_error() -> None:
    pair = (KS.serialize("a"), WINDOWS.serialize(TimeWindow(0, 10)))
    with pytest.raises(SavepointFormatError, match="2 pair indexes, 1 timestamps"):
        _columns([pair], [0, 0], [5]).decoded()
    with pytest.raises(SavepointFormatError, match="pair 3 of only 1"):
        _columns([pair], [3], [5]).decoded()
    with pytest.raises(SavepointFormatError, match="unreadable"):
        TimerColumns([pair], b"\x00" * 3, b"\x00" * 8).decoded()


def test_restored_columns_are_checked_against_meta_and_key_groups() -> None:
    source = QueueAndModel()
    source.add(5, "a", TimeWindow(0, 10))
    metas = source.backend.state_meta_infos()
    [(name, columns)] = source.backend.take_timer_columns()
    without_meta = HeapKeyedStateBackend(KS, MAX_PARALLELISM)
    with pytest.raises(SavepointFormatError, match="no timer meta info"):
        without_meta.restore_timer_columns(name, columns)
    group = assign_key_group(KS.serialize("a"), MAX_PARALLELISM)
    others = [g for g in range(MAX_PARALLELISM) if g != group]
    elsewhere = HeapKeyedStateBackend(KS, MAX_PARALLELISM, range(others[0], others[0] + 1))
    elsewhere.restore(metas, [])
    with pytest.raises(KeyGroupError, match=f"key group {group}, outside"):
        elsewhere.restore_timer_columns(name, columns)


class TimerQueueMachine(RuleBasedStateMachine):
    """Hypothesis drives the same operations; the model is checked after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.qm = QueueAndModel()

    @rule(stamp=st.sampled_from(STAMPS), key=st.sampled_from(KEYS), ns=st.sampled_from(NAMESPACES))
    def add(self, stamp: int, key: Any, ns: TimeWindow) -> None:
        self.qm.add(stamp, key, ns)

    @rule(stamp=st.sampled_from(STAMPS), key=st.sampled_from(KEYS), ns=st.sampled_from(NAMESPACES))
    def delete(self, stamp: int, key: Any, ns: TimeWindow) -> None:
        self.qm.delete(stamp, key, ns)

    @rule(key=st.sampled_from(KEYS))
    def drop_key(self, key: Any) -> None:
        self.qm.drop_key(key)

    @rule(stamp=st.sampled_from(STAMPS), seed=st.integers(0, 2**16),
          limit=st.one_of(st.none(), st.integers(1, 3)))
    def poll(self, stamp: int, seed: int, limit: int | None) -> None:
        self.qm.poll(stamp, random.Random(seed), limit)

    @rule()
    def restore_fresh(self) -> None:
        self.qm.restore_fresh()

    @rule(seed=st.integers(0, 2**16))
    def restore_via_columns(self, seed: int) -> None:
        self.qm.restore_via_columns(random.Random(seed))

    @rule(seed=st.integers(0, 2**16))
    def restore_into_live(self, seed: int) -> None:
        self.qm.restore_into_live(random.Random(seed))

    @rule()
    def clear(self) -> None:
        self.qm.clear()

    @invariant()
    def matches_the_model(self) -> None:
        self.qm.check()


TestTimerQueueMachine = TimerQueueMachine.TestCase
TestTimerQueueMachine.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
