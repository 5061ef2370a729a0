"""The README's program shape, a typed DataFrame keyed by one field into a
``KeyedProcessFunction`` with timers, fed out-of-order events.

BATCH takes the typed single-field keyed path (Spark shuffles and sorts by the key column
and the timestamp): each key must see its records in timestamp order, so the README's
order-dependent ``Sessionize`` gives exactly the sessions of the sorted events. STREAMING
reads the same events through a file source, one file per micro-batch, arriving out of
order within the watermark's bound: an order-independent sessionizer's timers fire by
watermark and close each session exactly once; sessions whose timers lie beyond the final
watermark stay open (a file stream is unbounded). Expected values come from a plain-Python
model of the events (sessions split where the gap exceeds GAP).
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark_datastream import (
    Duration,
    KeyedProcessFunction,
    MapStateDescriptor,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

GAP = 30_000
BOUND = 5_000
SCHEMA = "user string, page string, ts long"


class Sessionize(KeyedProcessFunction):
    """The README's function: depends on seeing each key's events in timestamp order."""

    def open(self, runtime_context):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        prev = self.last.value()
        if prev is not None and value[2] - prev > GAP:
            yield (ctx.get_current_key(), prev)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(value[2] + GAP)

    def on_timer(self, timestamp, ctx):
        if self.last.value() == timestamp - GAP:
            yield (ctx.get_current_key(), self.last.value())


class BufferedSessions(KeyedProcessFunction):
    """Order-independent: buffers timestamps; the timer at ``end + GAP`` closes the session
    ending at ``end`` when no buffered event lies in ``(end, end + GAP]``."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_map_state(
            MapStateDescriptor("seen", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        ts = value[2]
        self.seen.put(ts, (self.seen.get(ts) or 0) + 1)
        ctx.timer_service().register_event_time_timer(ts + GAP)

    def on_timer(self, timestamp, ctx):
        end = timestamp - GAP
        stamps = sorted(self.seen.keys())
        if end not in stamps or any(end < t <= timestamp for t in stamps):
            return
        closed = [t for t in stamps if t <= end]
        count = sum(self.seen.get(t) for t in closed)
        for t in closed:
            self.seen.remove(t)
        yield (ctx.get_current_key(), closed[0], end, count)


def _events(seed: int, users: int = 40) -> list[tuple[str, str, int]]:
    """Sessions per user: gaps inside a session 1-25 s, between sessions 35-120 s (never
    near GAP, so the model is unambiguous)."""
    rng = random.Random(seed)
    out = []
    for u in range(users):
        t = rng.randrange(0, 60_000)
        for _ in range(rng.randint(1, 5)):
            for _ in range(rng.randint(1, 25)):
                out.append((f"user-{u:02d}", rng.choice("abc"), t))
                t += rng.randint(1_000, 25_000)
            t += rng.randint(35_000, 120_000)
    return out


def _model(events):
    by_user: dict[str, list[int]] = {}
    for user, _, ts in events:
        by_user.setdefault(user, []).append(ts)
    sessions = []
    for user, stamps in by_user.items():
        stamps.sort()
        start, count = stamps[0], 1
        for prev, ts in zip(stamps, stamps[1:]):
            if ts - prev > GAP:
                sessions.append((user, start, prev, count))
                start, count = ts, 0
            count += 1
        sessions.append((user, start, stamps[-1], count))
    return sorted(sessions)


def _write(folder: str, files: list[list[tuple[str, str, int]]]) -> None:
    os.makedirs(folder, exist_ok=True)
    for i, rows in enumerate(files):
        table = pa.table({"user": pa.array([r[0] for r in rows], pa.string()),
                          "page": pa.array([r[1] for r in rows], pa.string()),
                          "ts": pa.array([r[2] for r in rows], pa.int64())})
        path = os.path.join(folder, f"part-{i:02d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))  # file order = arrival order


def _keyed(ds):
    return (ds.assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND))
                .with_timestamp_assigner(lambda c, _: c[2]))
            .key_by(lambda c: c[0]))


def test_batch_typed_field_keyed_path_sorts_each_key_by_timestamp(spark, env_factory, tmp_path):
    events = _events(seed=7)
    rng = random.Random(11)
    shuffled = events[:]
    rng.shuffle(shuffled)  # every file out of order, and keys spread over all files
    src = str(tmp_path / "clicks")
    _write(src, [shuffled[i::5] for i in range(5)])
    expected = _model(events)

    env = env_factory("BATCH")
    clicks = env.from_dataframe(spark.read.schema(SCHEMA).parquet(src).repartition(3))
    ends = _keyed(clicks).process(Sessionize(), output_type=Types.TUPLE(
        [Types.STRING(), Types.LONG()]))
    got = sorted(ends.execute_and_collect("typed-sessionize"))
    assert got == sorted((u, end) for u, _, end, _ in expected)
    # the program took the typed single-field keyed path this test is about
    details = [row.get("detail") or "" for row in env.get_last_progress()]
    assert any("by column user" in d for d in details), details

    env = env_factory("BATCH")
    clicks = env.from_dataframe(spark.read.schema(SCHEMA).parquet(src).repartition(3))
    sessions = _keyed(clicks).process(BufferedSessions(), output_type=Types.TUPLE(
        [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]))
    assert sorted(sessions.execute_and_collect("typed-buffered")) == expected


def test_streaming_file_source_timers_fire_by_watermark_out_of_order(spark, env_factory, tmp_path):
    events = _events(seed=23)
    rng = random.Random(5)
    # arrival order: event time plus a delay below the watermark's bound, so nothing is late
    arrival = sorted(events, key=lambda e: e[2] + rng.randrange(0, BOUND * 4 // 5))
    chunk = -(-len(arrival) // 8)
    files = [arrival[i:i + chunk] for i in range(0, len(arrival), chunk)]
    for rows in files:
        rng.shuffle(rows)  # a micro-batch's rows in no particular order
    src = str(tmp_path / "clicks")
    _write(src, files)
    assert any(b[2] < a[2] for a, b in zip(arrival, arrival[1:])), "input is out of order"

    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    sessions = _keyed(env.from_dataframe(stream)).process(
        BufferedSessions(), output_type=Types.TUPLE(
            [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]))
    got = list(sessions.execute_and_collect("streaming-buffered"))
    # a file stream is unbounded: no end-of-input watermark, so a session whose closing
    # timer (end + GAP) lies beyond the final watermark (max event time - BOUND) stays pending
    final_watermark = max(e[2] for e in events) - BOUND
    closing = [s[2] + GAP for s in _model(events)]
    assert not any(final_watermark - 1 <= t <= final_watermark for t in closing), "ambiguous"
    expected = [s for s in _model(events) if s[2] + GAP < final_watermark]
    assert len(expected) < len(_model(events)), "some sessions are still open at the end"
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing}, unexpected {extra}"
    assert len(got) == len(set(got)), "a session was closed twice"
    progress = env.get_last_progress()
    assert len({r.get("batch") for r in progress}) >= len(files), progress
