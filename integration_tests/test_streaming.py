"""STREAMING execution on real Spark Structured Streaming queries (applyInPandasWithState).

Every query costs seconds on 2 cores: each test runs few queries, on tiny inputs.
"""

from __future__ import annotations

import json
import os

import pytest
from helpers import KV_SCHEMA, add_file, spark_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark_datastream import (
    CheckpointMismatchError,
    ConfigurationError,
    KeyedProcessFunction,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
SCHEMA = KV_SCHEMA


class ByV(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class SeenAndTimer(KeyedProcessFunction):
    """Emits ('seen', key, ts, watermark) per element and ('timer', key, ts, count) 5 s later."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5_000)
        yield ("seen", value[0], ctx.timestamp(), ctx.timer_service().current_watermark())

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), timestamp, self.count.value())


def _streaming_env(env_factory, tmp_path, **extra):
    config = {"execution.checkpointing.dir": str(tmp_path / "ckpt")}
    config.update(extra)
    return env_factory("STREAMING", config)


def _per_key(records, key_index):
    out: dict = {}
    for r in records:
        out.setdefault(r[key_index], []).append(r)
    return out


@pytest.mark.compat
def test_running_reduce_emits_every_value_and_a_second_run_continues_from_checkpoint(
        spark, env_factory, tmp_path):
    src = str(tmp_path / "in")
    add_file(src, [("a", 1), ("b", 10), ("a", 2)], "f1")
    add_file(src, [("a", 3), ("b", 20)], "f2")

    def run():
        env = _streaming_env(env_factory, tmp_path)
        df = spark.readStream.schema(SCHEMA).parquet(src)
        ds = env.from_dataframe(df).key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
        return list(ds.execute_and_collect("running-sum"))

    first = run()
    assert _per_key(first, 0) == {"a": [("a", 1), ("a", 3), ("a", 6)],
                                  "b": [("b", 10), ("b", 30)]}
    add_file(src, [("b", 5), ("a", 100)], "f3")
    second = run()  # only the new file, on top of the checkpointed running values
    assert sorted(second) == [("a", 106), ("b", 35)]


def test_event_timers_fire_by_watermark_across_micro_batches_and_late_data(
        spark, env_factory, tmp_path):
    src = str(tmp_path / "in")
    add_file(src, [("a", 1_000), ("b", 1_000)], "f1")
    add_file(src, [("c", 20_000)], "f2")
    add_file(src, [("a", 2_000)], "f3")  # late: the watermark is 18_999 by then
    add_file(src, [("d", 40_000)], "f4")
    env = _streaming_env(env_factory, tmp_path)
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    ws = WatermarkStrategy.for_bounded_out_of_orderness(1_000).with_timestamp_assigner(ByV())
    ds = (env.from_dataframe(df).assign_timestamps_and_watermarks(ws)
          .key_by(lambda r: r[0]).process(SeenAndTimer()))
    out = list(ds.execute_and_collect("timers"))
    by_key = _per_key(out, 1)
    wm_min = -(2**63)
    # b gets no element after f1: its timer fires from the watermark alone
    assert by_key["b"] == [("seen", "b", 1_000, wm_min), ("timer", "b", 6_000, 1)]
    # a's late element is processed; its timer (7_000, already behind the watermark)
    # fires on the next watermark advance, after the timer of its first element
    assert by_key["a"] == [("seen", "a", 1_000, wm_min), ("timer", "a", 6_000, 1),
                           ("seen", "a", 2_000, 18_999), ("timer", "a", 7_000, 2)]
    assert by_key["c"] == [("seen", "c", 20_000, wm_min), ("timer", "c", 25_000, 1)]
    # unbounded source: d's timer (45_000) is beyond the last watermark (39_000) and waits
    assert by_key["d"] == [("seen", "d", 40_000, 18_999)]
    # b's timer fires in the micro-batch of a's late element (watermark 18_999), before a's
    # second timer (the next batch): key groups 1 (a) and 88 (b) run in partitions 0 and 2
    # (contiguous ranges), so collected rows list a's before b's within one micro-batch
    assert out.index(("timer", "b", 6_000, 1)) < out.index(("timer", "a", 7_000, 2))


def test_bounded_collection_fires_every_timer_at_end_of_input_and_matches_batch(
        spark, env_factory, tmp_path):
    data = [("x", 1_000), ("y", 3_000), ("x", 2_000), ("z", 50_000)]
    ws = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByV())

    def build(env):
        return (env.from_collection(data, PAIR).assign_timestamps_and_watermarks(ws)
                .key_by(lambda r: r[0]).process(SeenAndTimer()))

    env = _streaming_env(env_factory, tmp_path)
    streaming = list(build(env).execute_and_collect("bounded"))
    timers = sorted(r for r in streaming if r[0] == "timer")
    assert timers == [("timer", "x", 6_000, 2), ("timer", "x", 7_000, 2),
                      ("timer", "y", 8_000, 1), ("timer", "z", 55_000, 1)]
    batch = list(build(env_factory("BATCH")).execute_and_collect())
    assert sorted(r for r in batch if r[0] == "timer") == timers


class SumThenReport(KeyedProcessFunction):
    """Second stage: per parity, sum what arrives; report the sum from a timer at 10 s."""

    def open(self, runtime_context):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        self.last.update((self.last.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(10_000)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), self.last.value())


@pytest.mark.compat
def test_multi_stage_job_runs_as_chained_checkpointed_queries(spark, env_factory, tmp_path):
    data = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 6)]
    env = _streaming_env(env_factory, tmp_path)
    ws = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByV())
    ds = (env.from_collection(data, PAIR).assign_timestamps_and_watermarks(ws)
          .key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
          .map(lambda r: ("odd" if r[1] % 2 else "even", r[1]), output_type=PAIR)
          .key_by(lambda r: r[0]).process(SumThenReport()))
    out = sorted(ds.execute_and_collect("two-stages"))
    # stage 1 emits every running sum (a:1,4 b:2,8 c:4); stage 2 sums them per parity and
    # reports once, when end of input moves its watermark past the 10 s timer
    assert out == [("even", 4 + 2 + 8 + 4), ("odd", 1)]
    folders = os.listdir(tmp_path / "ckpt" / "two-stages")
    staged = [d for d in folders if d.endswith("-input") and not d.endswith("end-of-input")]
    if spark_line(spark) >= (4, 0):  # the default mapping: one query, nothing staged
        assert staged == [] and "collect" in folders
    else:  # Spark 3.5: the second keyed stage read its input from a staging table
        assert len(staged) == 1


def test_execute_with_a_durable_sink_needs_a_checkpoint_dir(env_factory, tmp_path):
    # print()-only jobs run on a temporary checkpoint (test_job_lifecycle.py); a Delta sink's
    # progress must outlive the run
    env = env_factory("STREAMING")
    env.from_collection([("a", 1)], PAIR).key_by(lambda r: r[0]).reduce(
        lambda x, y: x).sink_to_delta(str(tmp_path / "out"))
    with pytest.raises(ConfigurationError, match="execution.checkpointing.dir"):
        env.execute("no-ckpt")


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["p", "q", "r", "s"]), st.integers(0, 50)),
                min_size=1, max_size=12))
def test_batch_equals_streaming_final_reduce_values(spark, env_factory, tmp_path_factory, rows):
    def build(env):
        return env.from_collection(rows, PAIR).key_by(lambda r: r[0]).reduce(
            lambda x, y: (x[0], x[1] + y[1]))

    tmp = tmp_path_factory.mktemp("diff")
    streaming = list(build(_streaming_env(env_factory, tmp)).execute_and_collect("diff"))
    last = {}
    for k, v in streaming:  # an upsert stream: the last value per key is the result
        last[k] = v
    batch = dict(build(env_factory("BATCH")).execute_and_collect())
    assert last == batch


class AllStates(KeyedProcessFunction):
    """Value, list and map state per key; an event-time timer reports them."""

    def open(self, runtime_context):
        from pyspark_datastream import ListStateDescriptor, MapStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.values = runtime_context.get_list_state(ListStateDescriptor("values", Types.LONG()))
        self.by_mod = runtime_context.get_map_state(
            MapStateDescriptor("by_mod", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.values.add(value[1])
        self.by_mod.put(value[1] % 3, (self.by_mod.get(value[1] % 3) or 0) + value[1])
        ctx.timer_service().register_event_time_timer(value[1] + 10)
        return ()

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp, self.count.value(),
               tuple(sorted(self.values.get())), tuple(sorted(self.by_mod.items())))


@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["p", "q", "r"]), st.integers(0, 40)),
                min_size=1, max_size=10))
def test_batch_equals_streaming_process_with_value_list_map_state_and_timers(
        spark, env_factory, tmp_path_factory, rows):
    ws = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByV())

    def build(env):
        return (env.from_collection(rows, PAIR).assign_timestamps_and_watermarks(ws)
                .key_by(lambda r: r[0]).process(AllStates()))

    tmp = tmp_path_factory.mktemp("diff-process")
    env = _streaming_env(env_factory, tmp, **{"state.backend.type": "rocksdb"})
    streaming = sorted(build(env).execute_and_collect("diff-process"))
    batch = sorted(build(env_factory("BATCH")).execute_and_collect())
    assert streaming == batch and len(batch) >= 1


def test_spark_hash_partitioning_puts_every_key_group_on_its_range(spark):
    """Spark's own hash agrees with key_group_ranges, for random ints and longs, and for every
    key group of two layouts: BATCH's (key group, salt) ints and STREAMING's long range key;
    the end-of-input sentinel (-1) keeps its key group."""
    import random

    import numpy as np
    from pyspark.sql import functions as F
    from pyspark_datastream.spark_io.key_group_ranges import (
        range_key_column,
        salt_column,
        spark_partition,
        spark_partition_of_longs,
    )
    from pyspark_datastream.state_store.keygroups import key_group_of_range_key

    rng = random.Random(11)
    rows = [(rng.randrange(-2**31, 2**31), rng.randrange(-2**31, 2**31),
             rng.randrange(-2**63, 2**63)) for _ in range(500)]
    df = spark.createDataFrame(rows, "a int, b int, c long")
    got = df.select(F.pmod(F.hash("a", "b"), F.lit(7)), F.pmod(F.hash("c"), F.lit(7))).collect()
    assert [r[0] for r in got] == spark_partition([np.array([r[0] for r in rows]),
                                                   np.array([r[1] for r in rows])], 7).tolist()
    assert [r[1] for r in got] == spark_partition_of_longs(np.array([r[2] for r in rows]),
                                                           7).tolist()
    for max_parallelism, partitions in ((128, 4), (1000, 7)):
        kg = spark.range(-1, max_parallelism).select(F.col("id").cast("int").alias("_kg"))
        placed = (kg.withColumn("_kgs", salt_column(F.col("_kg"), max_parallelism, partitions))
                  .repartition(partitions, "_kg", "_kgs")
                  .select("_kg", "_kgs", F.spark_partition_id().alias("p")).collect())
        assert len(placed) == max_parallelism + 1
        for r in placed:
            if r._kg < 0:
                assert r._kgs == 0
            else:
                assert r.p == r._kg * partitions // max_parallelism, r
        keyed = (kg.withColumn("_kgr", range_key_column(F.col("_kg"), max_parallelism,
                                                        partitions))
                 .repartition(partitions, "_kgr")
                 .select("_kg", "_kgr", F.spark_partition_id().alias("p")).collect())
        assert len(keyed) == max_parallelism + 1
        for r in keyed:
            assert key_group_of_range_key(r._kgr) == r._kg
            if r._kg >= 0:
                assert r.p == r._kg * partitions // max_parallelism, r


def test_a_restart_with_other_shuffle_partitions_fails_clearly(spark, env_factory, tmp_path):
    """With key-group ranges, the salts follow the planned number of partitions: a restart
    planned for another number than the checkpoint's is refused when the job is built,
    before anything is written, and planned with the checkpoint's number again the running
    sums continue."""
    src = str(tmp_path / "in")
    add_file(src, [("a", 1), ("b", 10), ("a", 2)], "f1")

    def run():
        env = _streaming_env(env_factory, tmp_path)
        df = spark.readStream.schema(SCHEMA).parquet(src)
        ds = env.from_dataframe(df).key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
        return sorted(ds.execute_and_collect("restart-partitions"))

    before = spark.conf.get("spark.sql.shuffle.partitions")
    assert before != "3"  # the restart below plans for another number than the first run
    assert run() == [("a", 1), ("a", 3), ("b", 10)]
    add_file(src, [("a", 5), ("b", 1)], "f2")
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        with pytest.raises(CheckpointMismatchError,
                           match=r"number of Spark partitions of its keyed operators .*changed, "
                                 rf"{before} -> 3"):
            run()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert run() == [("a", 8), ("b", 11)]


def _running_sums(rows):
    totals: dict = {}
    out = []
    for k, v in rows:
        totals[k] = totals.get(k, 0) + v
        out.append((k, totals[k]))
    return out


def test_a_keyed_stage_keeps_its_parallelism_across_a_checkpoint(spark, env_factory, tmp_path):
    """A STREAMING keyed stage runs the job's parallelism, not the session's shuffle
    partitions: at parallelism 3 over 2 partitions every subtask reports 3 instances and an
    index in [0, 3), each key always the same one. A restart with another parallelism is
    refused when built (its key groups would run away from their state); with the same one
    the running sums continue."""
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    src = str(tmp_path / "in")
    first = [(f"k{i % 17}", i) for i in range(60)]
    add_file(src, first, "f1")

    class Sum(KeyedProcessFunction):
        def open(self, runtime_context):
            self.sub = runtime_context.get_index_of_this_subtask()
            self.n = runtime_context.get_number_of_parallel_subtasks()
            self.total = runtime_context.get_state(ValueStateDescriptor("t", Types.LONG()))

        def process_element(self, value, ctx):
            self.total.update((self.total.value() or 0) + value[1])
            yield value[0], self.total.value(), self.sub, self.n

    def run(parallelism):
        env = _streaming_env(env_factory, tmp_path)
        env.set_parallelism(parallelism)
        df = spark.readStream.schema(SCHEMA).parquet(src)
        out = (env.from_dataframe(df).key_by(lambda r: r[0])
               .process(Sum(), output_type=Types.TUPLE([Types.STRING(), Types.LONG(),
                                                         Types.INT(), Types.INT()]))
               .uid("sums"))
        return list(out.execute_and_collect("parallel-sums"))

    got = run(3)
    assert sorted((k, t) for k, t, _, _ in got) == sorted(_running_sums(first))
    assert {n for *_, n in got} == {3}
    subtasks = {k: {s for kk, _, s, _ in got if kk == k} for k, *_ in got}
    assert all(len(s) == 1 for s in subtasks.values())  # a key stays on its subtask
    assert set().union(*subtasks.values()) == {0, 1, 2}  # 17 keys over 128 key groups
    second = [(f"k{i % 5}", 100 + i) for i in range(10)]
    add_file(src, second, "f2")
    with pytest.raises(CheckpointMismatchError,
                       match=r"parallelism of its keyed operators changed, 3 -> 2"):
        run(2)
    got = run(3)
    expected = _running_sums(first + second)[len(first):]
    assert sorted((k, t) for k, t, _, _ in got) == sorted(expected)
    assert all(s in subtasks[k] for k, _, s, _ in got)


def test_a_checkpoint_of_the_previous_release_resumes_at_its_parallelism(spark, env_factory,
                                                                           tmp_path):
    """A checkpoint whose manifest records no placement (the previous release ran a keyed
    stage on one instance per Spark partition) resumes when the job's parallelism is the
    session's partitions, and is refused when built, naming the way over, otherwise."""
    src = str(tmp_path / "in")
    first = [(f"k{i % 7}", i) for i in range(30)]
    add_file(src, first, "f1")

    def run(parallelism=None):
        env = _streaming_env(env_factory, tmp_path)
        if parallelism is not None:
            env.set_parallelism(parallelism)
        df = spark.readStream.schema(SCHEMA).parquet(src)
        ds = env.from_dataframe(df).key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
        return sorted(ds.execute_and_collect("previous-release"))

    assert run() == sorted(_running_sums(first))
    manifests = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "ckpt") for f in fs
                 if f == "_job.json"]
    assert len(manifests) == 1
    with open(manifests[0]) as f:
        record = json.load(f)
    del record["evolution"]["placement"]  # as the previous release wrote it
    with open(manifests[0], "w") as f:
        json.dump(record, f)
    second = [("k1", 1000), ("k2", 2000)]
    add_file(src, second, "f2")
    with pytest.raises(CheckpointMismatchError,
                       match=r"earlier release.*set_parallelism\(2\).*savepoint"):
        run(1)
    assert run() == sorted(_running_sums(first + second)[len(first):])
