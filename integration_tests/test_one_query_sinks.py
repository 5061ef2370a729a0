"""The one-query STREAMING mapping fanning a job out to several sinks, in one Spark query.

An event-time window whose results go to two Delta tables (all of them, and a filtered
copy) and whose late records, read apart as a side output, go to a third, while the raw
events go to a fourth: one query, whose four sinks each equal a plain-Python model of
Flink's semantics, over out-of-order files with late records, one file per micro-batch. A
driver that died after the sinks wrote a micro-batch and before Spark logged it runs the
batch again: no sink writes it twice. A keyed stage the query would run three times is refused; a
sink added or removed leaves the query's checkpoint and state where they were.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers import (
    KV_SCHEMA,
    ByV,
    QueryCounter,
    add_file,
    delta_rows,
    drop_last_commit,
    spark_line,
)
from pyspark_datastream import (
    CheckpointMismatchError,
    GraphBuildError,
    OutputTag,
    ProcessWindowFunction,
    TumblingEventTimeWindows,
    Types,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SIZE, DELAY, SPAN = 5_000, 3_000, 12_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
WINDOW = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])
MAPPING = "execution.streaming.query-mapping"


class CountWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield (key, w.start, w.end, len(list(elements)))


def files(seed, count, per_file, keys, start=0):
    """``count`` files of (key, ts) rows, each later than the one before and shuffled within
    less than the watermark's delay; from the fourth on, each also holds a few records of
    the first window, which every watermark after the second file has passed (late)."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + count):
        base = i * SPAN
        rows = [(f"k{rng.randrange(keys)}", base + rng.randrange(SPAN)) for _ in range(per_file)]
        rows.sort(key=lambda r: r[1] + rng.randrange(DELAY))
        if i >= 3:
            for _ in range(rng.randrange(1, 5)):
                rows.insert(rng.randrange(len(rows) + 1), (f"k{rng.randrange(keys)}",
                                                           rng.randrange(1_000)))
        out.append(rows)
    return out


def model(batches):
    """Flink's outputs after ``batches``: windows of on-time records fired by the last
    watermark (max timestamp - delay - 1), late records (the first window's, from the
    fourth file on) apart, every record doubled."""
    on_time = [r for i, rows in enumerate(batches) for r in rows if i < 3 or r[1] >= 1_000]
    late = sorted(r for i, rows in enumerate(batches) for r in rows if i >= 3 and r[1] < 1_000)
    watermark = max(ts for _, ts in on_time) - DELAY - 1
    counts = Counter((k, ts // SIZE * SIZE) for k, ts in on_time)
    windows = sorted((k, s, s + SIZE, n) for (k, s), n in counts.items()
                     if s + SIZE - 1 <= watermark)
    raw = sorted((k, 2 * ts) for rows in batches for k, ts in rows)
    busy = sorted([w for w in windows if w[3] >= 3] + [w for w in windows if w[3] >= 5])
    return {"windows": windows, "busy": busy, "late": late, "raw": raw}


def program(env, spark, src, out):
    """Four sinks: every window, the busy ones (those of 5 records or more twice: a union of
    two paths from the windows, which runs in the sink's tail), the late records, the raw
    events doubled."""
    ws = WatermarkStrategy.for_bounded_out_of_orderness(DELAY).with_timestamp_assigner(ByV())
    df = spark.readStream.schema(KV_SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    events = env.from_dataframe(df).assign_timestamps_and_watermarks(ws)
    late = OutputTag("late", PAIR)
    windowed = (events.key_by(lambda r: r[0]).window(TumblingEventTimeWindows.of(SIZE))
                .side_output_late_data(late).process(CountWindow(), WINDOW).uid("windows"))
    windowed.sink_to_delta(f"{out}/windows")
    windowed.filter(lambda w: w[3] >= 3).union(windowed.filter(lambda w: w[3] >= 5)) \
        .sink_to_delta(f"{out}/busy")
    windowed.get_side_output(late).sink_to_delta(f"{out}/late")
    events.map(lambda r: (r[0], 2 * r[1]), PAIR).sink_to_delta(f"{out}/raw")


def _needs_4(spark):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")


def _env(env_factory, tmp_path):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    MAPPING: "one-query", "state.backend.type": "rocksdb"})
    env.set_parallelism(2)
    return env


def test_four_sinks_one_query_each_sink_as_flink_and_exactly_once(spark, env_factory, tmp_path):
    """One query (counted by a listener) writes all four sinks; each equals the model after
    the first run, after a batch run again, and after more files on the same checkpoint.
    The first run's savepoint restores into BATCH."""
    _needs_4(spark)
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    batches = files(3, 7, 250, 30)
    for i, rows in enumerate(batches[:4]):
        add_file(src, rows, f"f{i}")

    savepoint = str(tmp_path / "savepoint")

    provider = "spark.sql.streaming.stateStore.providerClass"
    session_provider = spark.conf.get(provider, None)

    def run(savepoint_path=None):
        env = _env(env_factory, tmp_path)
        program(env, spark, src, out)
        with QueryCounter(spark) as queries:
            env.execute("four-sinks", savepoint_path=savepoint_path)
        assert len(queries.started) == 1, queries.started
        # the query started with RocksDB's state store provider; the session keeps its own
        assert spark.conf.get(provider, None) == session_provider
        return {name: delta_rows(f"{out}/{name}", missing_ok=True)
                for name in ("windows", "busy", "late", "raw")}

    got = run(savepoint)
    expected = model(batches[:4])
    assert got == expected
    assert all(expected.values())  # each sink got records: late ones, busy windows, ...
    assert any(w[3] >= 5 for w in expected["windows"])  # both paths of the union

    # the savepoint holds the windows not fired yet: BATCH restores them under the rest of
    # the input (in BATCH no record is late) and fires every window at the end
    on_time = [r for i, rows in enumerate(batches[:4]) for r in rows if i < 3 or r[1] >= 1_000]
    fired = {(k, s) for k, s, _, _ in expected["windows"]}
    pending = [(k, ts) for k, ts in on_time if (k, ts // SIZE * SIZE) not in fired]
    rest = [r for rows in batches[4:] for r in rows]
    counts = Counter((k, ts // SIZE * SIZE) for k, ts in pending + rest)
    restored = env_factory("BATCH", {"execution.savepoint.path": savepoint})
    late = OutputTag("late", PAIR)
    got_batch = sorted(tuple(r) for r in (
        restored.from_collection(rest, PAIR).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByV()))
        .key_by(lambda r: r[0]).window(TumblingEventTimeWindows.of(SIZE))
        .side_output_late_data(late).process(CountWindow(), WINDOW).uid("windows")
        .execute_and_collect()))
    assert got_batch == sorted((k, s, s + SIZE, n) for (k, s), n in counts.items())
    assert pending  # the savepoint held windows in flight

    # the driver died after the sinks wrote the last micro-batch, before Spark logged it
    drop_last_commit(tmp_path / "ckpt")
    for i, rows in enumerate(batches[4:], start=4):
        add_file(src, rows, f"f{i}")
    got = run()
    assert got == model(batches)  # the batch run again wrote nothing twice; none lost


def test_a_keyed_stage_the_query_would_run_twice_is_refused_a_sink_added_resumes(
        spark, env_factory, tmp_path):
    """A keyed stage read by a sink and, through a custom partitioning (the user's
    partitioner would run), by another keyed stage would run twice in the query (the query
    carries a stage's records through the keyed stages below it along operators its keying
    passes run: test_one_query_carried.py, test_one_query_branches.py): refused when the
    job is built, naming it and the mapping that runs it; nothing written.
    A sink added to a job, then removed, leaves its query and state where they were; a keyed
    stage or a source added is refused, naming the savepoint way over."""
    _needs_4(spark)
    env = _env(env_factory, tmp_path)
    counts = (env.from_collection([("a", 1)], PAIR).key_by(lambda r: r[0])
              .reduce(lambda a, b: (a[0], a[1] + b[1])))
    counts.print()
    (counts.partition_custom(lambda k, n: 0, lambda r: r[0]).key_by(lambda r: r[0])
     .reduce(lambda a, b: b).print())
    with pytest.raises(GraphBuildError, match=r"Reduce.*2 times.*per-stage"):
        env.execute("twice")
    assert not (tmp_path / "ckpt").exists()

    src = str(tmp_path / "in")
    add_file(src, [("a", 1_000), ("b", 2_000)], "f0")

    def build(sinks, stages=1, sources=1):
        env = _env(env_factory, tmp_path)
        df = spark.readStream.schema(KV_SCHEMA).parquet(src)
        summed = env.from_dataframe(df)
        if sources > 1:
            summed = summed.union(env.from_collection([("z", 1)], PAIR))
        for i in range(stages):
            summed = (summed.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
                      .uid(f"sum-{i}").map(lambda r: r, PAIR))
        for i in range(sinks):
            summed.sink_to_delta(str(tmp_path / f"out-{i}"))
        return env

    build(1).execute("grown")
    add_file(src, [("a", 5), ("c", 1)], "f1")
    build(2).execute("grown")  # a sink added: the query and its state carry on
    assert delta_rows(str(tmp_path / "out-0")) == [("a", 1_000), ("a", 1_005), ("b", 2_000),
                                                   ("c", 1)]
    assert delta_rows(str(tmp_path / "out-1")) == [("a", 1_005), ("c", 1)]
    add_file(src, [("b", 3)], "f2")
    build(1).execute("grown")  # and removed again
    assert delta_rows(str(tmp_path / "out-0"))[-2:] == [("b", 2_003), ("c", 1)]
    assert delta_rows(str(tmp_path / "out-1")) == [("a", 1_005), ("c", 1)]
    # a keyed stage added: Spark keeps a stage's state under its place in the query
    with pytest.raises(CheckpointMismatchError, match=r"keyed stages changed.*savepoint"):
        build(1, stages=2).execute("grown")
    # a source added: Structured Streaming refuses a query whose sources changed
    with pytest.raises(CheckpointMismatchError, match=r"sources changed.*savepoint"):
        build(1, sources=2).execute("grown")
    assert delta_rows(str(tmp_path / "out-0"))[-2:] == [("b", 2_003), ("c", 1)]
