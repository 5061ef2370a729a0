"""Keyed windows and FLIP-380 full-window partition processing on real Spark.

Windows run in both modes (a BATCH == STREAMING Hypothesis test compares them);
the FLIP-380 STREAMING error is tested for real.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark_datastream import (
    AggregateFunction,
    CountTrigger,
    EndOfStreamWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    GraphBuildError,
    MapPartitionFunction,
    Order,
    OutputTag,
    ProcessWindowFunction,
    PurgingTrigger,
    ReduceFunction,
    Row,
    SlidingEventTimeWindows,
    Time,
    TimestampAssigner,
    TumblingEventTimeWindows,
    Types,
    WatermarkStrategy,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
TRIPLE = Types.ROW_NAMED(["k", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])


class ByTs(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class SumV(ReduceFunction):
    def reduce(self, a, b):
        return (a[0], a[1], a[2] + b[2])


class AvgV(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield (key, w.start, w.end, sorted(e[2] for e in elements))


class CountValues(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield (key, sorted(e[2] for e in elements))


EVENTS = [("a", 1, 1), ("a", 4, 2), ("a", 12, 3), ("b", 2, 10), ("b", 25, 20), ("a", 26, 4),
          ("a", 15, 5)]


def _keyed(env, events=EVENTS):
    ds = env.from_collection(events, type_info=TRIPLE)
    ds = ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByTs()))
    return ds.key_by(lambda e: e[0], key_type=Types.STRING())


def _collect(ds):
    return sorted(ds.execute_and_collect(), key=repr)


# -- keyed windows, BATCH ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_tumbling_reduce_aggregate_and_process(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    ks = _keyed(env)
    w = ks.window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
    reduced = w.reduce(SumV())
    averaged = ks.window(TumblingEventTimeWindows.of(10)).aggregate(AvgV(),
                                                                    output_type=Types.DOUBLE())
    described = ks.window(TumblingEventTimeWindows.of(10)).process(Describe())
    assert _collect(reduced) == sorted([("a", 1, 3), ("a", 12, 8), ("a", 26, 4), ("b", 2, 10),
                                        ("b", 25, 20)], key=repr)
    assert sorted(averaged.execute_and_collect()) == [1.5, 4.0, 4.0, 10.0, 20.0]
    assert _collect(described) == sorted([("a", 0, 10, [1, 2]), ("a", 10, 20, [3, 5]),
                                          ("a", 20, 30, [4]), ("b", 0, 10, [10]),
                                          ("b", 20, 30, [20])], key=repr)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_sliding_and_sessions_with_bridge(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    ks = _keyed(env)
    sliding = ks.window(SlidingEventTimeWindows.of(10, 5)).process(Describe())
    got = _collect(sliding)
    assert ("a", 0, 10, [1, 2]) in got and ("a", 5, 15, [3]) in got
    assert ("a", 10, 20, [3, 5]) in got and ("b", -5, 5, [10]) in got
    assert len(got) == 11
    # sessions gap 10: a: 1,4,12,15 chain into one session (the out-of-order 15 and the 12
    # bridge [1,14) and [12,22)); 26 starts... [15,25) touches [26,36)? no -> a second session
    sessions = ks.window(EventTimeSessionWindows.with_gap(10)).process(Describe())
    assert _collect(sessions) == sorted([("a", 1, 25, [1, 2, 3, 5]), ("a", 26, 36, [4]),
                                         ("b", 2, 12, [10]), ("b", 25, 35, [20])], key=repr)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_global_count_and_end_of_stream(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    ks = _keyed(env)
    counted = ks.window(GlobalWindows.create()).trigger(
        PurgingTrigger.of(CountTrigger.of(2))).process(CountValues())
    # a has 5 elements -> 2 firings (the 5th never fires); b has 2 -> 1 firing
    got = _collect(counted)
    assert [g[0] for g in got] == ["a", "a", "b"] and got[-1] == ("b", [10, 20])
    eos_reduce = ks.window(EndOfStreamWindows.get()).reduce(SumV())
    eos_agg = ks.window(EndOfStreamWindows.get()).aggregate(AvgV())
    eos_proc = ks.window(EndOfStreamWindows.get()).process(CountValues())
    assert [(r[0], r[2]) for r in _collect(eos_reduce)] == [("a", 15), ("b", 30)]
    assert sorted(eos_agg.execute_and_collect()) == [3.0, 15.0]
    assert _collect(eos_proc) == [("a", [1, 2, 3, 4, 5]), ("b", [10, 20])]


def test_windows_typed_output_to_dataframe_and_late_tag_is_empty_in_batch(env_factory):
    env = env_factory("BATCH")
    late = OutputTag("late", TRIPLE)
    w = _keyed(env).window(TumblingEventTimeWindows.of(10)).side_output_late_data(late)
    result = w.reduce(SumV(), output_type=TRIPLE)
    rows = sorted(tuple(r) for r in result.to_dataframe().collect())
    assert rows[0] == ("a", 1, 3)
    assert list(result.get_side_output(late).execute_and_collect()) == []


def test_streaming_windows(env_factory, tmp_path):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    ds = _keyed(env).window(TumblingEventTimeWindows.of(10)).reduce(SumV())
    got = _collect(ds)
    assert ("a", 1, 3) in got


# -- FLIP-380 -------------------------------------------------------------------------------


class Summary(MapPartitionFunction):
    def map_partition(self, values):
        n = total = 0
        for v in values:
            n += 1
            total += v[2]
        yield (n, total)


class SumReduce(ReduceFunction):
    def reduce(self, a, b):
        return ("*", 0, a[2] + b[2])


def test_full_window_map_aggregate_reduce_non_keyed_keep_partitions(env_factory):
    env = env_factory("BATCH")
    ds = env.from_collection(EVENTS, type_info=TRIPLE)
    parts = env.spark.sparkContext.defaultParallelism  # slices of the collection source
    mapped = list(ds.full_window_partition().map_partition(Summary()).execute_and_collect())
    assert sum(n for n, _ in mapped) == len(EVENTS) and sum(t for _, t in mapped) == 45
    assert 1 <= len(mapped) <= parts
    lam = list(ds.full_window_partition().map_partition(
        lambda it: [sum(1 for _ in it)]).execute_and_collect())
    assert sum(lam) == len(EVENTS) and len(lam) == len(mapped)
    agg = list(ds.full_window_partition().aggregate(AvgV()).execute_and_collect())
    assert len(agg) == len(mapped)
    red = list(ds.full_window_partition().reduce(SumReduce()).execute_and_collect())
    assert sum(r[2] for r in red) == 45 and len(red) == len(mapped)


class SubtaskSummary(MapPartitionFunction):
    """Opened with its parallel instance's RuntimeContext (as Flink opens it), closed after."""

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.parallelism = runtime_context.get_number_of_parallel_subtasks()

    def map_partition(self, values):
        yield self.subtask, self.parallelism, sum(1 for _ in values)


@pytest.mark.parametrize("keyed", [False, True])
def test_full_window_functions_are_opened_with_their_runtime_context(env_factory, keyed):
    env = env_factory("BATCH")
    env.set_parallelism(2)
    ds = env.from_collection(EVENTS, type_info=TRIPLE)
    windowed = (ds.key_by(lambda e: e[0]) if keyed else ds).full_window_partition()
    got = list(windowed.map_partition(SubtaskSummary()).execute_and_collect())
    assert sum(n for _, _, n in got) == len(EVENTS)
    assert all(0 <= subtask < parallelism for subtask, parallelism, _ in got), got
    if keyed:  # one partition per key, on the key shuffle's 2 subtasks
        assert sorted(n for _, _, n in got) == [2, 5] and {p for _, p, _ in got} == {2}


def test_full_window_keyed_applies_per_key(env_factory):
    env = env_factory("BATCH")
    ks = env.from_collection(EVENTS, type_info=TRIPLE).key_by(lambda e: e[0])
    mapped = sorted(ks.full_window_partition().map_partition(Summary()).execute_and_collect())
    assert mapped == [(2, 30), (5, 15)]
    agg = sorted(ks.full_window_partition().aggregate(AvgV()).execute_and_collect())
    assert agg == [3.0, 15.0]
    red = sorted(ks.full_window_partition().reduce(SumV()).execute_and_collect())
    assert [(r[0], r[2]) for r in red] == [("a", 15), ("b", 30)]


def _by_v(e):
    return e[2]


class ByVSelector:
    def __call__(self, e):
        return (e[2] % 2, -e[2])  # a tuple key (not traceable): sorted in Python-computed bytes


ROWS = [Row(k=k, ts=t, v=v) for k, t, v in EVENTS]


@pytest.mark.parametrize("field", [2, "v", _by_v, lambda e: e.v])
@pytest.mark.parametrize("order", [Order.ASCENDING, Order.DESCENDING])
def test_sort_partition_every_field_form_and_order(env_factory, field, order):
    env = env_factory("BATCH")
    ds = env.from_collection(ROWS, type_info=TRIPLE)
    sorted_ds = ds.full_window_partition().sort_partition(field, order)
    # check order inside each partition with a following map_partition
    runs = list(sorted_ds.full_window_partition().map_partition(
        lambda it: [[r[2] for r in it]]).execute_and_collect())
    assert sorted(v for run in runs for v in run) == sorted(e[2] for e in EVENTS)
    for run in runs:
        assert run == sorted(run, reverse=order is Order.DESCENDING)


def test_sort_partition_native_typed_and_python_keys_on_keyed_stream(env_factory, spark):
    env = env_factory("BATCH")
    df = spark.createDataFrame([(k, t, v) for k, t, v in EVENTS], "k string, ts long, v long")
    typed = env.from_dataframe(df)
    out = typed.full_window_partition().sort_partition("v", Order.DESCENDING)
    assert sorted(r[2] for r in out.to_dataframe().collect()) == sorted(e[2] for e in EVENTS)
    ks = env.from_collection(EVENTS, type_info=TRIPLE).key_by(lambda e: e[0])
    per_key = ks.full_window_partition().sort_partition(ByVSelector(), Order.ASCENDING)
    # each Spark partition now holds whole keys, each sorted: read the runs back in order
    got = per_key.full_window_partition().map_partition(lambda it: [[(r[0], r[2]) for r in it]])
    runs: dict = {}
    for part in got.execute_and_collect():
        for k, v in part:
            runs.setdefault(k, []).append(v)
    assert runs == {"a": [4, 2, 5, 3, 1], "b": [20, 10]}


def test_full_window_fails_in_streaming(env_factory, tmp_path):
    env = env_factory("STREAMING")
    ds = env.from_collection(EVENTS, type_info=TRIPLE)
    with pytest.raises(GraphBuildError, match="full-window processing .* needs BATCH"):
        ds.full_window_partition()
    # mode decided later (AUTOMATIC resolved to STREAMING here): refused at translation
    env2 = env_factory("BATCH")
    mapped = env2.from_collection(EVENTS).full_window_partition().map_partition(Summary())
    env2.set_runtime_mode("STREAMING")
    with pytest.raises(GraphBuildError, match=r"operator 'Summary'.*needs BATCH"):
        mapped.execute_and_collect()


class PeakRss(MapPartitionFunction):
    """Streams the partition and reports (count, bytes seen, peak RSS growth in MB)."""

    def map_partition(self, values):
        import resource

        start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        n = size = 0
        for v in values:
            n += 1
            size += len(v[1])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        yield (n, size, (peak - start) // 1024)


def test_map_partition_streams_a_large_spark_partition(env_factory, spark):
    from pyspark.sql import functions as F

    env = env_factory("BATCH")
    n, width = 50_000, 12_000
    df = spark.range(n).repartition(1).select(
        F.col("id"), F.repeat(F.lit("x"), width).alias("payload"))
    got = list(env.from_dataframe(df).full_window_partition().map_partition(PeakRss())
               .execute_and_collect())
    assert len(got) == 1
    count, size, growth_mb = got[0]
    assert count == n and size == n * width  # 600 MB of payload went through one partition
    # one Arrow batch (10k rows, ~120 MB) plus its decoded strings may be resident at once
    assert growth_mb < 300, f"the Python worker grew by {growth_mb} MB"


_MEMORY_SCRIPT = textwrap.dedent("""
    import resource, sys
    from pyspark_datastream.operators.partition import PartitionOp, run_partition
    limit = 400 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    mode = sys.argv[1]
    def records():
        for i in range(4000):
            yield (i, bytes(1_000_000))   # 4 GB in total, 10x the address-space limit
    if mode == "stream":
        fn = lambda it: [sum(len(r[1]) for r in it)]
    else:
        fn = lambda it: [len(list(it))]
    try:
        print(list(run_partition(PartitionOp("map_partition", fn), records(), "mem")))
    except MemoryError:
        print("MemoryError")
""")


def test_map_partition_runner_never_materialises_under_rlimit(tmp_path):
    script = tmp_path / "mem.py"
    script.write_text(_MEMORY_SCRIPT)
    env = dict(os.environ)
    streamed = subprocess.run([sys.executable, str(script), "stream"], capture_output=True,
                              text=True, timeout=120, env=env)
    assert streamed.stdout.strip() == "[4000000000]", streamed.stderr[-2000:]
    # the control: a function that materialises the partition hits the limit
    hoarded = subprocess.run([sys.executable, str(script), "hoard"], capture_output=True,
                             text=True, timeout=120, env=env)
    assert "MemoryError" in hoarded.stdout + hoarded.stderr


_EVENT_LISTS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 60), st.integers(0, 9)),
    min_size=1, max_size=12)


@settings(max_examples=2, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenarios=st.lists(_EVENT_LISTS, min_size=10, max_size=10))
def test_batch_equals_streaming_windows_hypothesis(env_factory, tmp_path_factory, scenarios):
    """BATCH == STREAMING final window results when no element is late (in-order input).

    Each example packs ten independent event lists into one job (list j's keys are
    prefixed with j): windows never span keys, so every list is a separate case while
    the Spark queries are paid once per example.
    """
    events = [(f"{j}{k}", ts, v) for j, lst in enumerate(scenarios) for k, ts, v in lst]
    events = sorted(events, key=lambda e: e[1])  # in order: nothing is late in STREAMING
    results = []
    for mode in ("BATCH", "STREAMING"):
        ckpt = tmp_path_factory.mktemp("win-ckpt")
        env = env_factory(mode, {"execution.checkpointing.dir": str(ckpt)})
        keyed = _keyed(env, events)
        tumbling = keyed.window(TumblingEventTimeWindows.of(10)).process(Describe())
        sessions = keyed.window(EventTimeSessionWindows.with_gap(7)).process(Describe())
        results.append((_collect(tumbling), _collect(sessions)))
    assert results[0] == results[1]


def _add_events_file(folder, rows, name, mtime):
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.parquet")
    pq.write_table(pa.table({"k": [r[0] for r in rows],
                             "ts": pa.array([r[1] for r in rows], pa.int64()),
                             "v": pa.array([r[2] for r in rows], pa.int64())}), path)
    os.utime(path, (mtime, mtime))  # file order = arrival order


@pytest.mark.parametrize("lateness", [0, 20_000])
def test_streaming_late_elements_side_output_or_late_firing(spark, env_factory, tmp_path, lateness):
    """One file per micro-batch: the third element is behind the watermark (24_999) for its
    window [0, 10_000). Without allowed lateness it goes to the late side output; with 20 s of
    allowed lateness the window fires again with it."""
    src = str(tmp_path / "in")
    for i, rows in enumerate([[("a", 1_000, 1)], [("a", 25_000, 2)], [("a", 5_000, 3)]]):
        _add_events_file(src, rows, f"f{i}", 1_700_000_000 + 10 * i)
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    df = spark.readStream.schema("k string, ts bigint, v bigint").option(
        "maxFilesPerTrigger", 1).parquet(src)
    late = OutputTag("late-events")
    windowed = (env.from_dataframe(df)
                .assign_timestamps_and_watermarks(
                    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ByTs()))
                .key_by(lambda e: e[0], key_type=Types.STRING())
                .window(TumblingEventTimeWindows.of(10_000))
                .allowed_lateness(lateness)
                .side_output_late_data(late)
                .reduce(SumV()))
    main = [tuple(r) for r in windowed.execute_and_collect(f"late-{lateness}")]
    side = [tuple(r) for r in windowed.get_side_output(late).execute_and_collect(
        f"late-side-{lateness}")]
    if lateness == 0:
        assert main == [("a", 1_000, 1)]
        assert side == [("a", 5_000, 3)]
    else:
        assert main == [("a", 1_000, 1), ("a", 1_000, 4)]  # late firing with the late element
        assert side == []


def test_window_state_survives_a_savepoint_restore(env_factory, tmp_path):
    """BATCH(A) -> savepoint -> BATCH(B) equals BATCH(A + B): the window open at the end of A
    (its contents and its timer) lives in the savepoint."""
    from deltalake import DeltaTable

    a = [("a", 1_000, 1), ("a", 12_000, 2), ("b", 3_000, 7)]
    b = [("a", 15_000, 3), ("a", 25_000, 4), ("b", 13_000, 1)]

    def run(events, out, savepoint=None, restore=None):
        config = {"execution.savepoint.path": restore} if restore else {}
        env = env_factory("BATCH", config)
        (_keyed(env, events).window(TumblingEventTimeWindows.of(10_000)).reduce(
            SumV(), output_type=TRIPLE).uid("windows").sink_to_delta(str(tmp_path / out)))
        env.execute("windows", savepoint_path=savepoint)
        return sorted(tuple(r.values()) for r in
                      DeltaTable(str(tmp_path / out)).to_pyarrow_table().to_pylist())

    sp = str(tmp_path / "sp")
    first = run(a, "out-a", savepoint=sp)
    second = run(b, "out-b", restore=sp)
    together = run(a + b, "out-ab")
    assert first == [("a", 1_000, 1), ("b", 3_000, 7)]  # [10_000, 20_000) of a is still open
    assert sorted(first + second) == together
    assert ("a", 12_000, 5) in second  # 2 from A's saved window contents + 3 from B
