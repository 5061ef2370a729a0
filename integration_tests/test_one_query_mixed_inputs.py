"""Records a keyed stage emitted meeting records of a source, in the one-query STREAMING
mapping: a keyed two-input operator, a union or a connect's CoMapFunction read by a keyed
stage, a keyed broadcast operator (either side broadcast), and a union only a sink reads.

Events go through a keyed stage (per-key sums per 5 s bucket, fired by event-time timers);
a second source's targets meet those sums in an operator that, at each bucket's end, emits
the key's sum and its number of targets. That operator's watermark is the lesser of its
inputs' (Flink's rule for several inputs; Spark keeps one watermark per query, the least of
its sources'). Out-of-order records over several files and micro-batches; a second run
continues from the checkpoint; a bounded input fires every timer as in BATCH. Expected
values come from a plain-Python model.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from helpers import KV_SCHEMA, ByV, QueryCounter, add_file, run_to_delta, spark_line
from pyspark_datastream import (
    CoMapFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    MapStateDescriptor,
    Types,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BUCKET, DELAY, SPAN = 5_000, 3_000, 12_000
MAPPING = "execution.streaming.query-mapping"
OUT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])


def bucket_end(ts):
    return ts // BUCKET * BUCKET + BUCKET - 1


class BucketSums(KeyedProcessFunction):
    """Per key: the sum of ``ts % 97`` per bucket, emitted at the bucket's end."""

    def open(self, runtime_context):
        self.sums = runtime_context.get_map_state(
            MapStateDescriptor("sums", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        end = bucket_end(value[1])
        self.sums.put(end, (self.sums.get(end) or 0) + value[1] % 97)
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.sums.get(timestamp)
        self.sums.remove(timestamp)


class Tally:
    """Per key and bucket end: the sum the stage above emitted (-1: none) and the number of
    targets in the bucket, emitted by a timer at the bucket's end (each shape's operator)."""

    def open(self, runtime_context):
        get = runtime_context.get_map_state
        self.sums = get(MapStateDescriptor("sums", Types.LONG(), Types.LONG()))
        self.counts = get(MapStateDescriptor("counts", Types.LONG(), Types.LONG()))

    def add_sum(self, end, total, ctx):
        self.sums.put(end, total)
        ctx.timer_service().register_event_time_timer(end)

    def add_target(self, ts, ctx):
        end = bucket_end(ts)
        self.counts.put(end, (self.counts.get(end) or 0) + 1)
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        total = self.sums.get(timestamp)
        yield (ctx.get_current_key(), timestamp, -1 if total is None else total,
               self.counts.get(timestamp) or 0)
        self.sums.remove(timestamp)
        self.counts.remove(timestamp)


class SumsAndTargets(Tally, KeyedCoProcessFunction):
    """Sums on the first input, targets on the second."""

    def process_element1(self, value, ctx):
        self.add_sum(value[1], value[2], ctx)

    def process_element2(self, value, ctx):
        self.add_target(value[1], ctx)


def program(events, targets):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    sums = (events.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums"))
    return (sums.connect(targets.assign_timestamps_and_watermarks(ws))
            .key_by(lambda r: r[0], lambda r: r[0])
            .process(SumsAndTargets(), OUT).uid("meet"))


class Meet(Tally, KeyedProcessFunction):
    """Over one input: ``("s", key, end, sum)`` and ``("t", key, ts, 1)`` records."""

    def process_element(self, value, ctx):
        if value[0] == "s":
            self.add_sum(value[2], value[3], ctx)
        else:
            self.add_target(value[2], ctx)


def union_program(events, targets):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    sums = (events.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums")
            .map(lambda r: ("s", r[0], r[1], r[2])))
    tagged = targets.assign_timestamps_and_watermarks(ws).map(lambda r: ("t", r[0], r[1], 1))
    return (sums.union(tagged).key_by(lambda r: r[1])
            .process(Meet(), OUT).uid("meet"))


class Tag(CoMapFunction):
    """The union's tagging as a non-keyed connect."""

    def map1(self, value):
        return "s", value[0], value[1], value[2]

    def map2(self, value):
        return "t", value[0], value[1], 1


def comap_program(events, targets):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    sums = (events.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums"))
    return (sums.connect(targets.assign_timestamps_and_watermarks(ws)).map(Tag())
            .key_by(lambda r: r[1]).process(Meet(), OUT).uid("meet"))


COUNTS = MapStateDescriptor("counts", Types.STRING(), Types.LONG())


class BroadcastCounts(KeyedBroadcastProcessFunction):
    """Targets broadcast, counted per key and bucket end; a sum from the stage above
    registers a timer at its bucket's end, which emits it with the targets counted then."""

    def open(self, runtime_context):
        self.sums = runtime_context.get_map_state(
            MapStateDescriptor("sums", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        self.sums.put(value[1], value[2])
        ctx.timer_service().register_event_time_timer(value[1])

    def process_broadcast_element(self, value, ctx):
        slot = f"{value[0]}@{bucket_end(value[1])}"
        counts = ctx.get_broadcast_state(COUNTS)
        counts.put(slot, (counts.get(slot) or 0) + 1)

    def on_timer(self, timestamp, ctx):
        key = ctx.get_current_key()
        count = ctx.get_broadcast_state(COUNTS).get(f"{key}@{timestamp}") or 0
        yield key, timestamp, self.sums.get(timestamp), count
        self.sums.remove(timestamp)


def broadcast_program(events, targets):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    sums = (events.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums"))
    return (sums.key_by(lambda r: r[0])
            .connect(targets.assign_timestamps_and_watermarks(ws).broadcast(COUNTS))
            .process(BroadcastCounts(), OUT).uid("meet"))


def model(events, targets, watermark, only=""):
    """Flink's output once the watermark reached ``watermark``: each stage fires its timers
    at or before it (a sum leaves the stage above at its bucket's end, its timestamp);
    ``only``: ``"sums"`` (``"counts"``), only where the stage above emitted a sum (where a
    target was counted): the broadcast shapes, whose timers the keyed input registers."""
    sums, counts = defaultdict(int), defaultdict(int)
    for key, ts in events:
        sums[(key, bucket_end(ts))] += ts % 97
    for key, ts in targets:
        counts[(key, bucket_end(ts))] += 1
    fired = {kb for kb in ([] if only == "counts" else list(sums))
             + ([] if only == "sums" else list(counts)) if kb[1] <= watermark}
    return sorted((k, end, sums.get((k, end), -1), counts.get((k, end), 0))
                  for k, end in fired)


def files(seed, count, per_file, keys):
    """``count`` files of (key, ts) rows, each later than the one before, shuffled within
    less than the watermark's delay (no record is late)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rows = [(f"k{rng.randrange(keys)}", i * SPAN + rng.randrange(SPAN))
                for _ in range(per_file)]
        rows.sort(key=lambda r: r[1] + rng.randrange(DELAY))
        out.append(rows)
    return out


def _streams(spark, env, tmp_path, events, targets, upto):
    """The first ``upto`` files of each input added to its folder; both folders as unbounded
    file streams of ``env``, one file each per micro-batch."""
    streams = []
    for name, batches in (("events", events), ("targets", targets)):
        folder = str(tmp_path / name)
        for i in range(upto):
            add_file(folder, batches[i], f"{name}{i}")
        df = spark.readStream.schema(KV_SCHEMA).option("maxFilesPerTrigger", 1).parquet(folder)
        streams.append(env.from_dataframe(df))
    return streams


def _env(env_factory, tmp_path, mapping, **extra):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    MAPPING: mapping, **extra})
    env.set_parallelism(2)
    return env


class BroadcastSums(KeyedBroadcastProcessFunction):
    """Sums broadcast (by the stage above), kept per key and bucket end; a target counted in
    keyed state registers a timer at its bucket's end, which emits the count with the sum
    known then."""

    def open(self, runtime_context):
        self.counts = runtime_context.get_map_state(
            MapStateDescriptor("counts", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        end = bucket_end(value[1])
        self.counts.put(end, (self.counts.get(end) or 0) + 1)
        ctx.timer_service().register_event_time_timer(end)

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(COUNTS).put(f"{value[0]}@{value[1]}", value[2])

    def on_timer(self, timestamp, ctx):
        key = ctx.get_current_key()
        total = ctx.get_broadcast_state(COUNTS).get(f"{key}@{timestamp}")
        yield key, timestamp, -1 if total is None else total, self.counts.get(timestamp)
        self.counts.remove(timestamp)


def broadcast_sums_program(events, targets):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    sums = (events.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums"))
    return (targets.assign_timestamps_and_watermarks(ws).key_by(lambda r: r[0])
            .connect(sums.broadcast(COUNTS))
            .process(BroadcastSums(), OUT).uid("meet"))


SHAPES = {"keyed-connect": program, "union": union_program, "connect-map": comap_program,
          "broadcast": broadcast_program, "broadcast-sums": broadcast_sums_program}
#: the broadcast shapes' timers fire only for the keys of their keyed input
ONLY = {"broadcast": "sums", "broadcast-sums": "counts"}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_keyed_stage_meets_a_source_in_one_query(spark, env_factory, tmp_path, shape):
    """Unbounded file sources, one file of each per micro-batch: what fires is decided by
    the lesser watermark, in one query; a second run (one shape) continues from the checkpoint. The
    two inputs meet in a connected keyed operator, a union or a connect's CoMapFunction read
    by a keyed stage, or a keyed broadcast operator (the targets broadcast, or the sums)."""
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+")
    events, targets = files(3, 4, 300, 30), files(4, 4, 120, 30)
    # the targets' files end earlier: their watermark is the lesser one
    targets = [[(k, ts - 2_000) for k, ts in rows] for rows in targets]

    def run(out, upto):
        env = _env(env_factory, tmp_path, "one-query")
        streams = _streams(spark, env, tmp_path, events, targets, upto)
        with QueryCounter(spark) as queries:
            rows = run_to_delta(env, SHAPES[shape](*streams), str(tmp_path / out), "mixed")
        assert len(queries.started) == 1, queries.started
        ev = [r for rows in events[:upto] for r in rows]
        tg = [r for rows in targets[:upto] for r in rows]
        watermark = min(max(ts for _, ts in ev), max(ts for _, ts in tg)) - DELAY - 1
        return rows, ev, tg, watermark

    only = ONLY.get(shape, "")
    first, ev, tg, watermark = run("out-1", 2)
    assert sorted(first) == model(ev, tg, watermark, only) and first
    # the lesser watermark decides: the events' alone would fire more
    assert model(ev, tg, watermark, only) != model(ev, tg, max(ts for _, ts in ev) - DELAY - 1,
                                                   only)
    assert model(ev, tg, watermark, only) != model(ev, [], watermark, only)  # targets count
    if shape != "keyed-connect":  # the restart is the same for every shape: the suite's time
        return
    second, ev, tg, watermark = run("out-2", 4)
    # nothing twice, nothing lost
    assert sorted(first + second) == model(ev, tg, watermark, only)
    assert second and len(model(ev, tg, 2**62, only)) > len(first) + len(second)  # pending


@pytest.mark.parametrize("shape", ["keyed-connect", "union"])
def test_a_bounded_input_fires_every_timer_as_in_batch(spark, env_factory, tmp_path, shape):
    """Bounded inputs end with the watermark at +inf on both sides: every timer fires, in
    the one query as in BATCH, equal to the model with no watermark limit."""
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+")
    events = [r for rows in files(5, 3, 200, 20) for r in rows]
    targets = [r for rows in files(6, 3, 80, 20) for r in rows]
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    expected = model(events, targets, 2**62)

    def collect(env, job):
        return sorted(SHAPES[shape](env.from_collection(events, pair),
                                    env.from_collection(targets, pair)).execute_and_collect(job))

    assert collect(_env(env_factory, tmp_path, "one-query"), "bounded-oq") == expected
    assert collect(env_factory("BATCH"), "bounded-batch") == expected



def test_a_union_no_keyed_stage_reads_keeps_the_keyed_stages_watermark(
        spark, env_factory, tmp_path):
    """A keyed stage's outputs and a source's records in a union that only a sink reads: the
    source brings no watermark into the query (no keyed stage needs it), so the stage above
    fires by its own input's watermark, as in Flink, not held back by the source's."""
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+")
    events, targets = files(8, 2, 300, 30), files(9, 2, 120, 30)
    targets = [[(k, ts - 2_000) for k, ts in rows] for rows in targets]
    env = _env(env_factory, tmp_path, "one-query")
    event_stream, target_stream = _streams(spark, env, tmp_path, events, targets, 2)
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    row = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG(), Types.LONG()])
    sums = (event_stream.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums")
            .map(lambda r: ("s", r[0], r[1], r[2]), output_type=row))
    tagged = (target_stream.assign_timestamps_and_watermarks(ws)
              .map(lambda r: ("t", r[0], r[1], 1), output_type=row))
    with QueryCounter(spark) as queries:
        got = run_to_delta(env, sums.union(tagged), str(tmp_path / "out"), "union-to-sink")
    assert len(queries.started) == 1, queries.started
    ev = [r for rows in events for r in rows]
    tg = [r for rows in targets for r in rows]

    def fired(watermark):
        return [("s", k, end, total) for k, end, total, _ in model(ev, [], watermark)]

    own = max(ts for _, ts in ev) - DELAY - 1
    least = min(own, max(ts for _, ts in tg) - DELAY - 1)
    assert fired(least) != fired(own)  # the source's watermark would have held it back
    assert sorted(got) == sorted(fired(own) + [("t", k, ts, 1) for k, ts in tg])
