"""The one-query STREAMING mapping (``execution.streaming.query-mapping=one-query``).

A job of three keyed stages that fire event-time timers (per-key 5 s sums, then per-window
key lists, then 20 s groups of windows) runs as ONE Spark query, and what it emits is what a
plain-Python model of Flink's semantics computes: a stage's timers fire once the job's
watermark passes them, including timers registered for records the stage above emitted in
the same micro-batch. Out-of-order events over several files and micro-batches; a second run
continues from the checkpoint; a savepoint of the first run restores into BATCH and into
STREAMING; BATCH gives the same on a bounded input. A checkpoint of one mapping is refused by
the other when the job is built; graphs the mapping does not run yet are refused the same way.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from helpers import KV_SCHEMA, ByV, QueryCounter, add_file, run_to_delta, spark_line
from pyspark_datastream import (
    CheckpointMismatchError,
    GraphBuildError,
    KeyedProcessFunction,
    ListStateDescriptor,
    MapStateDescriptor,
    Types,
    UnsupportedSparkFeatureError,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BUCKET, GROUP, DELAY = 5_000, 20_000, 3_000
MAPPING = "execution.streaming.query-mapping"


class BucketSums(KeyedProcessFunction):
    """Per key: the sum of ``ts % 97`` per 5 s bucket, emitted by a timer at its end."""

    def open(self, runtime_context):
        self.sums = runtime_context.get_map_state(
            MapStateDescriptor("sums", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        end = value[1] // BUCKET * BUCKET + BUCKET - 1
        self.sums.put(end, (self.sums.get(end) or 0) + value[1] % 97)
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp, self.sums.get(timestamp))
        self.sums.remove(timestamp)


class WindowKeys(KeyedProcessFunction):
    """Per bucket end (the key): every (key, sum) the stage above emitted for it, listed by
    a timer at that end: it fires once the watermark reaches the records' own time."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(
            ListStateDescriptor("seen", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        self.seen.add((value[0], value[2]))
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield ("w", timestamp, tuple(sorted(self.seen.get())))
        self.seen.clear()


class Groups(KeyedProcessFunction):
    """Per 20 s group of bucket ends: the windows listed, emitted at the group's end."""

    def open(self, runtime_context):
        self.windows = runtime_context.get_list_state(
            ListStateDescriptor("windows", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        self.windows.add((value[1], value[2]))
        ctx.timer_service().register_event_time_timer(
            ctx.get_current_key() * GROUP + GROUP - 1)

    def on_timer(self, timestamp, ctx):
        yield repr((ctx.get_current_key(), tuple(sorted(self.windows.get()))))
        self.windows.clear()


def program(ds):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    return (ds.assign_timestamps_and_watermarks(ws)
            .key_by(lambda r: r[0]).process(BucketSums()).uid("sums")
            .key_by(lambda r: r[1]).process(WindowKeys()).uid("windows")
            .key_by(lambda r: r[1] // GROUP).process(Groups(), Types.STRING()).uid("groups"))


def model(records, watermark):
    """Flink's output: every timer at or before ``watermark`` (the operators' last one) has
    fired, at each stage (a record's timestamp is the timer's that emitted it)."""
    sums = defaultdict(int)
    for key, ts in records:
        sums[(key, ts // BUCKET * BUCKET + BUCKET - 1)] += ts % 97
    windows = defaultdict(list)
    for (key, end), total in sums.items():
        if end <= watermark:
            windows[end].append((key, total))
    groups = defaultdict(list)
    for end, seen in windows.items():
        groups[end // GROUP].append((end, tuple(sorted(seen))))
    return sorted(repr((g, tuple(sorted(w)))) for g, w in groups.items()
                  if g * GROUP + GROUP - 1 <= watermark)


def files(seed, count, per_file, keys, start=0):
    """``count`` files of (key, ts) rows, each file later than the one before, shuffled
    within less than the watermark's delay (no record is late)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        base = start + i * 12_000
        rows = [(f"k{rng.randrange(keys)}", base + rng.randrange(12_000)) for _ in range(per_file)]
        rows.sort(key=lambda r: r[1] + rng.randrange(DELAY))
        out.append(rows)
    return out


def _needs_4(spark):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (refused on 3.5: the bounded test)")


def _env(env_factory, tmp_path, mapping, **extra):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    MAPPING: mapping, **extra})
    env.set_parallelism(2)
    return env


def test_three_timer_stages_run_as_one_query_fire_as_flink_and_hand_their_state_over(
        spark, env_factory, tmp_path):
    """Unbounded file source, one file per micro-batch, RocksDB: what fires is decided by the
    watermark alone, at every stage, in one query. The first run also writes a savepoint
    (stop-with-savepoint, no drain: every stage's pending sums, windows and timers); the job
    then continues from its checkpoint, and BATCH and a one-query STREAMING job restored from
    the savepoint fire the rest: each, with the first run's output, is the model."""
    _needs_4(spark)
    src, rest = str(tmp_path / "in"), str(tmp_path / "rest")
    batches = files(7, 4, 300, 40)  # two micro-batches per run: the watermark crosses them
    for i, rows in enumerate(batches[:2]):
        add_file(src, rows, f"f{i}")
    for i, rows in enumerate(batches[2:]):
        add_file(rest, rows, f"f{i}")
    savepoint = str(tmp_path / "savepoint")

    def run(out, savepoint_path=None):
        env = _env(env_factory, tmp_path, "one-query", **{"state.backend.type": "rocksdb"})
        df = spark.readStream.schema(KV_SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
        with QueryCounter(spark) as queries:
            rows = run_to_delta(env, program(env.from_dataframe(df)), str(tmp_path / out),
                                "three-timers", savepoint_path)
        assert len(queries.started) == 1, queries.started  # not one per keyed stage
        return [r[0] for r in rows]

    first = run("out-1", savepoint)
    seen = [r for rows in batches[:2] for r in rows]
    assert sorted(first) == model(seen, max(ts for _, ts in seen) - DELAY - 1)
    everything = [r for rows in batches for r in rows]
    expected_all = model(everything, 2**62)
    assert first and len(expected_all) > len(first)  # some fired, some pending

    for i, rows in enumerate(batches[2:], start=2):
        add_file(src, rows, f"f{i}")
    second = run("out-2")
    expected = model(everything, max(ts for _, ts in everything) - DELAY - 1)
    assert sorted(first + second) == expected and second  # nothing twice, nothing lost

    later = spark.read.schema(KV_SCHEMA).parquet(rest)
    restored = env_factory("BATCH", {"execution.savepoint.path": savepoint})
    got = list(program(restored.from_dataframe(later)).execute_and_collect())
    assert sorted(first + got) == expected_all
    restored = _env(env_factory, tmp_path, "one-query", **{"execution.savepoint.path": savepoint})
    got = list(program(restored.from_dataframe(later)).execute_and_collect("restored"))
    assert sorted(first + got) == expected_all


@pytest.mark.compat
def test_a_bounded_input_fires_every_timer_as_in_batch(spark, env_factory, tmp_path):
    """A bounded input ends with the watermark at +inf: every timer of every stage fires,
    as in BATCH, equal to the model with no watermark limit. On Spark 3.5 the mapping is
    refused when the job is built, naming the line and the way (run on every claimed line)."""
    rows = [r for batch in files(11, 3, 200, 25) for r in batch]
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    env = _env(env_factory, tmp_path, "one-query")
    if spark_line(spark) < (4, 0):
        with pytest.raises(UnsupportedSparkFeatureError,
                           match=r"query-mapping=one-query needs Spark 4\.0 or newer.*per-stage"):
            program(env.from_collection(rows, pair)).execute_and_collect("bounded")
        assert not (tmp_path / "ckpt").exists()
        return
    got = sorted(program(env.from_collection(rows, pair)).execute_and_collect("bounded"))
    expected = model(rows, 2**62)
    assert got == expected
    batch = sorted(program(env_factory("BATCH").from_collection(rows, pair)).execute_and_collect())
    assert batch == expected


def test_a_checkpoint_resumes_only_under_the_mapping_that_wrote_it(
        spark, env_factory, tmp_path):
    """Per-stage -> one-query and back: refused when the job is built, naming both mappings
    and the savepoint way over; the same mapping resumes."""
    _needs_4(spark)
    src = str(tmp_path / "in")
    add_file(src, [("a", 1_000), ("b", 2_000)], "f0")

    def build(mapping):
        env = _env(env_factory, tmp_path, mapping)
        df = spark.readStream.schema(KV_SCHEMA).parquet(src)
        return (env.from_dataframe(df).key_by(lambda r: r[0])
                .reduce(lambda a, b: (a[0], a[1] + b[1])))

    assert sorted(build("per-stage").execute_and_collect("upgrade")) == [
        ("a", 1_000), ("b", 2_000)]
    with pytest.raises(CheckpointMismatchError,
                       match="per-stage query mapping.*one-query.*savepoint"):
        build("one-query").execute_and_collect("upgrade")
    add_file(src, [("a", 5)], "f1")
    assert list(build("per-stage").execute_and_collect("upgrade")) == [("a", 1_005)]

    add_file(src, [("b", 7)], "f2")
    assert sorted(build("one-query").execute_and_collect("upgrade-2")) == [
        ("a", 1_000), ("a", 1_005), ("b", 2_000), ("b", 2_007)]
    with pytest.raises(CheckpointMismatchError,
                       match="one-query query mapping.*per-stage.*savepoint"):
        build("per-stage").execute_and_collect("upgrade-2")


def test_graphs_the_mapping_does_not_run_yet_are_refused_when_built(
        spark, env_factory, tmp_path):
    """Each refused before anything ran or was written, naming the operator and the mapping
    that runs it (several sinks and side outputs: test_one_query_sinks)."""
    _needs_4(spark)
    ws = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByV())

    def keyed(env):
        return (env.from_collection([("a", 1)]).key_by(lambda r: r[0])
                .reduce(lambda a, b: (a[0], a[1] + b[1])))

    env = _env(env_factory, tmp_path, "one-query")
    shared = keyed(env).map(lambda r: r)  # one sink, but two keyed stages read the map
    shared.key_by(lambda r: r[0]).reduce(lambda a, b: a).union(
        shared.key_by(lambda r: r[1]).reduce(lambda a, b: b)).print()
    with pytest.raises(GraphBuildError, match=r"Reduce.*2 times.*per-stage"):
        env.execute("fan-out")
    env = _env(env_factory, tmp_path, "one-query")
    # the stage below the strategy takes its watermark in band (test_one_query_inband_
    # watermark) and forwards it to the one below, but not through another strategy
    (keyed(env).assign_timestamps_and_watermarks(ws).key_by(lambda r: r[0])
     .reduce(lambda a, b: b).assign_timestamps_and_watermarks(WatermarkStrategy.no_watermarks())
     .key_by(lambda r: r[1]).reduce(lambda a, b: b).print())
    with pytest.raises(GraphBuildError,
                       match=r"Reduce.*watermark strategy.*below a keyed stage.*per-stage"):
        env.execute("watermark-below")
    assert not (tmp_path / "ckpt").exists()  # nothing ran, nothing was written
