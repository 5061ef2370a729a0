"""The timer queue's bulk snapshot/restore and the fast canonical sort give exactly what the
per-entry code gave: the order of ``sorted(..., key=StateEntry.encoded_key)``, a lossless
round trip, the same firing order, and unchanged key-group state bytes."""

from __future__ import annotations

import random

import pytest
from pyspark_datastream import SavepointFormatError
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.keygroup import KeyGroupRuntime, decode_state
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.entries import (
    StateEntry,
    concat_canonical,
    decode_timestamp,
    encode_timestamp,
    is_canonical,
    sort_canonical,
)
from pyspark_datastream.state_store.namespaces import TimeWindow, TimeWindowSerializer
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.timer_queue import decode_timestamps

KS = GenericKeySerializer.INSTANCE
WINDOWS = TimeWindowSerializer()
EXTREMES = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**31, 2**63 - 2, 2**63 - 1]


def _random_key(rnd: random.Random) -> object:
    kind = rnd.randrange(4)
    if kind == 0:
        return rnd.randrange(-(10**12), 10**12)
    if kind == 1:
        return "k" * rnd.randrange(0, 12) + str(rnd.randrange(50))
    if kind == 2:
        return (rnd.randrange(5), "x" * rnd.randrange(3))
    return rnd.randrange(300)


def _random_stamp(rnd: random.Random) -> int:
    return rnd.choice(EXTREMES) if rnd.random() < 0.2 else rnd.randrange(-(10**6), 10**6)


@pytest.mark.parametrize("seed", range(8))
def test_canonical_sorted_is_the_encoded_key_order(seed: int) -> None:
    rnd = random.Random(seed)
    names = ["a", "ab", "b", "_timer/event", "_timer/processing", "é", "\u4e2d", "a\u00ff"]
    entries = []
    for _ in range(600):
        key = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 6)))
        ns = bytes(rnd.randrange(3) for _ in range(rnd.choice((0, 0, 1, 2, 16))))
        user_key = bytes(rnd.randrange(3) for _ in range(rnd.randrange(0, 4)))
        entries.append(StateEntry(rnd.randrange(4), rnd.choice(names), key, ns, user_key,
                                  bytes([rnd.randrange(256)])))
    entries += entries[:50]  # equal entry keys: the stable order must be kept
    expected = sorted(entries, key=StateEntry.encoded_key)
    got = sort_canonical(entries)
    assert len(got) == len(expected)
    assert all(a is b for a, b in zip(got, expected))


def test_canonical_sorted_raises_as_encoding_does() -> None:
    with pytest.raises(Exception) as nul:
        sort_canonical([StateEntry(0, "bad\x00name", b"k", b"", b"", b"")])
    with pytest.raises(type(nul.value)):
        StateEntry(0, "bad\x00name", b"k", b"", b"", b"").encoded_key()
    with pytest.raises(SavepointFormatError):
        sort_canonical([StateEntry(1 << 15, "s", b"k", b"", b"", b"")])


def test_concat_canonical_merges_runs_by_group_and_name() -> None:
    rnd = random.Random(3)
    entries = [StateEntry(rnd.randrange(3), rnd.choice(["a", "ab", "_timer/x", "z"]),
                          bytes([rnd.randrange(9)]), b"", bytes([i % 7]), b"") for i in range(300)]
    by_name: dict[str, list[StateEntry]] = {}
    for entry in entries:
        by_name.setdefault(entry.state_name, []).append(entry)
    runs = [sort_canonical(run) for run in by_name.values()]
    assert concat_canonical(runs) == sorted(entries, key=StateEntry.encoded_key)
    # overlapping runs (the same state in two runs) fall back to a sort
    half = [sort_canonical(entries[:150]), sort_canonical(entries[150:])]
    assert concat_canonical(half) == sorted(entries, key=StateEntry.encoded_key)
    assert concat_canonical([]) == []


def _filled_backend(seed: int, max_parallelism: int, windows: bool) -> HeapKeyedStateBackend:
    rnd = random.Random(seed)
    backend = HeapKeyedStateBackend(KS, max_parallelism)
    queue = backend.timer_queue("event", WINDOWS) if windows else backend.timer_queue("event")
    other = backend.timer_queue("processing")
    for _ in range(800):
        backend.set_current_key(_random_key(rnd))
        if windows:
            start = _random_stamp(rnd) // 2
            queue.add(_random_stamp(rnd), TimeWindow(start, start + rnd.randrange(1, 100)))
        else:
            queue.add(_random_stamp(rnd))
        if rnd.random() < 0.3:
            other.add(_random_stamp(rnd))
    return backend


@pytest.mark.parametrize("windows", [False, True])
@pytest.mark.parametrize("max_parallelism", [1, 7, 128])
@pytest.mark.parametrize("seed", range(3))
def test_timer_snapshot_order_and_round_trip(seed: int, max_parallelism: int, windows: bool) -> None:
    backend = _filled_backend(seed, max_parallelism, windows)
    queue = backend.timer_queue("event", WINDOWS) if windows else backend.timer_queue("event")
    entries = queue.snapshot_entries(max_parallelism)
    assert entries == sorted(entries, key=StateEntry.encoded_key)
    assert is_canonical(entries)
    assert len(entries) == len(queue)
    for entry in entries:
        assert entry.value == b"" and entry.user_key == encode_timestamp(decode_timestamp(entry.user_key))
    snapshot = list(backend.snapshot())
    assert snapshot == sorted(snapshot, key=StateEntry.encoded_key) and is_canonical(snapshot)

    restored = HeapKeyedStateBackend(KS, max_parallelism)
    restored.restore(backend.state_meta_infos(), snapshot)
    again = restored.timer_queue("event", WINDOWS if windows else queue.namespace_serializer)
    assert list(restored.snapshot()) == snapshot
    assert again.snapshot_entries(max_parallelism) == entries
    fired = [(t.timestamp, t.key_bytes, t.namespace) for t in queue.poll_until(2**63 - 1)]
    refired = [(t.timestamp, t.key_bytes, t.namespace) for t in again.poll_until(2**63 - 1)]
    assert fired == refired
    assert [f[:2] for f in fired] == sorted(f[:2] for f in fired)


def test_restore_into_a_live_queue_is_idempotent() -> None:
    backend = _filled_backend(5, 16, False)
    queue = backend.timer_queue("event")
    entries = queue.snapshot_entries(16)
    queue.restore_entries(entries[: len(entries) // 2])
    assert queue.snapshot_entries(16) == entries
    # a restore after the queue exists (timers of its state routed to the live queue)
    other = HeapKeyedStateBackend(KS, 16)
    live = other.timer_queue("event")
    other.restore(backend.state_meta_infos(), list(backend.snapshot()))
    other.restore(backend.state_meta_infos(), list(backend.snapshot()))
    assert live.snapshot_entries(16) == entries


def test_restored_keys_are_deserialized_once_per_distinct_key() -> None:
    calls: list[bytes] = []

    class Counting(GenericKeySerializer):
        def deserialize(self, data: bytes) -> object:
            calls.append(data)
            return super().deserialize(data)

    backend = HeapKeyedStateBackend(Counting(), 8)
    queue = backend.timer_queue("event")
    for n in range(300):
        backend.set_current_key(n % 10)
        queue.add(n)
    restored = HeapKeyedStateBackend(Counting(), 8)
    restored.restore(backend.state_meta_infos(), list(backend.snapshot()))
    restored.timer_queue("event")
    assert sorted(calls) == sorted(set(calls)) and len(calls) == 10


def test_decode_timestamps() -> None:
    keys = [encode_timestamp(t) for t in EXTREMES]
    assert decode_timestamps(keys) == EXTREMES
    assert decode_timestamps([]) == []
    with pytest.raises(SavepointFormatError):
        decode_timestamps(keys + [b"\x00" * 7])


def test_poll_until_fires_timers_added_and_skips_timers_deleted_while_firing() -> None:
    backend = HeapKeyedStateBackend(KS, 4)
    queue = backend.timer_queue("event")
    model: set[tuple[int, bytes]] = set()
    rnd = random.Random(11)
    for n in range(200):
        backend.set_current_key(n % 13)
        queue.add(rnd.randrange(1000))
    model = {(t, kb) for t, kb, _ in queue._live}  # noqa: SLF001 - the test's reference model
    fired: list[tuple[int, bytes]] = []
    for timer in queue.poll_until(700):
        expected = min(model)
        assert (timer.timestamp, timer.key_bytes) == expected
        model.discard(expected)
        fired.append(expected)
        backend.set_current_key(timer.key, timer.key_bytes)
        if rnd.random() < 0.3:  # due now, or later than the bound
            stamp = timer.timestamp + rnd.choice((0, 1, 500))
            queue.add(stamp)
            model.add((stamp, timer.key_bytes))
        if rnd.random() < 0.3 and model:
            victim = max(model)
            backend.set_current_key(KS.deserialize(victim[1]), victim[1])
            queue.delete(victim[0])
            model.discard(victim)
        model_due = {m for m in model if m[0] <= 700}
        if not model_due:
            break
    assert all(t > 700 for t, _ in model)
    assert fired == sorted(fired)
    assert {(t, kb) for t, kb, _ in queue._live} == model  # noqa: SLF001


def test_key_group_state_bytes_survive_a_round_trip_unchanged() -> None:
    from pyspark_datastream.operators.functions import KeyedProcessFunction

    class Timers(KeyedProcessFunction):
        def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
            ctx.timer_service().register_event_time_timer(value)
            return ()

        def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
            yield (ctx.get_current_key(), timestamp)

    config = OperatorConfig.for_mode("STREAMING", operator_name="t", max_parallelism=128)
    runtime = KeyGroupRuntime("process", Timers(), KS, config)
    rnd = random.Random(2)
    rows = [(KS.serialize(rnd.randrange(40)), None, rnd.randrange(-500, 500), 0) for _ in range(400)]
    first = runtime.run(None, rows)
    assert first.state is not None
    _, entries = decode_state(first.state)
    assert entries == sorted(entries, key=StateEntry.encoded_key)
    again = runtime.run(first.state, [], watermark=-1000)
    assert again.state == first.state
    fired = runtime.run(first.state, [], watermark=100)
    outputs = [o[1] for o in fired.outputs]
    assert [o[1] for o in outputs] == sorted(o[1] for o in outputs)
    assert all(o[1] <= 100 for o in outputs)
