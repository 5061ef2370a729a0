"""BATCH execution on a real local[2] SparkSession (FLIP-134 / FLIP-140)."""

from __future__ import annotations

import glob
import json
import os

import pytest
from pyspark_datastream import (
    Duration,
    GraphBuildError,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ListStateDescriptor,
    MapStateDescriptor,
    OutputTag,
    ProcessFunction,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)
from pyspark_datastream.plan.config import RuntimeMode

CLICK = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()])


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Sessionize(KeyedProcessFunction):
    def open(self, runtime_context):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        prev = self.last.value()
        if prev is not None and value[2] - prev > 30_000:
            yield (ctx.get_current_key(), prev)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(value[2] + 30_000)

    def on_timer(self, timestamp, ctx):
        if self.last.value() == timestamp - 30_000:
            yield (ctx.get_current_key(), self.last.value())


def clicks():
    out = []
    for u, base in (("alice", 0), ("bob", 1_000), ("carol", 500)):
        t = base
        for gap in (1_000, 2_000, 40_000, 1_000, 60_000, 5_000):
            t += gap
            out.append((u, "page", t))
    # deliberately out of order: BATCH sorts by (key, timestamp)
    return list(reversed(out))


def expected_sessions(data):
    by_user = {}
    for u, _p, t in data:
        by_user.setdefault(u, []).append(t)
    out = []
    for u, ts in by_user.items():
        ts.sort()
        for a, b in zip(ts, ts[1:]):
            if b - a > 30_000:
                out.append((u, a))
        out.append((u, ts[-1]))
    return sorted(out)


def run_sessionize(env, data):
    ds = env.from_collection(data, type_info=CLICK)
    ds = ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_timestamp_assigner(Ts()))
    out = ds.key_by(lambda c: c[0]).process(
        Sessionize(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    with out.execute_and_collect() as results:
        return sorted(results)


def test_issue_example_sessionize_timers_at_end_of_key(env_factory):
    data = clicks()
    assert run_sessionize(env_factory("BATCH"), data) == expected_sessions(data)


def test_sorted_and_hash_execution_agree(env_factory):
    data = clicks()
    sorted_rows = run_sessionize(env_factory("BATCH"), data)
    for backend in ("hashmap", "rocksdb"):
        env = env_factory("BATCH", {"execution.sorted-inputs.enabled": "false",
                                    "state.backend.type": backend})
        assert run_sessionize(env, sorted(data, key=lambda c: c[2])) == sorted_rows


def test_map_flat_map_filter_chain(env_factory):
    env = env_factory("BATCH")
    out = (env.from_collection(list(range(20)))
           .map(lambda x: x * 3)
           .filter(lambda x: x % 2 == 0)
           .flat_map(lambda x: [x, -x]))
    assert sorted(out.execute_and_collect()) == sorted(
        v for x in range(20) if (x * 3) % 2 == 0 for v in (x * 3, -(x * 3)))


def test_reduce_emits_only_final_value_per_key(env_factory):
    env = env_factory("BATCH", {"execution.batch.pre-aggregation.enabled": "false"})
    data = [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5)]
    out = env.from_collection(data).key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    assert sorted(out.execute_and_collect()) == [("a", 8), ("b", 7)]


@pytest.mark.parametrize("pre_aggregate", ["true", "false"])
def test_field_keyed_reduce_folds_identical_records_in_timestamp_order(env_factory,
                                                                       pre_aggregate):
    """A typed reduce keyed by a field: with pre-aggregation Spark counts identical records
    (same fields and timestamp) and the pass folds each in as often as counted; the result is
    the per-record fold in timestamp order either way (an order-sensitive function)."""
    from pyspark_datastream import ReduceFunction

    class Concat(ReduceFunction):
        def reduce(self, a, b):
            return (a[0], a[1] + b[1], b[2])

    env = env_factory("BATCH", {"execution.batch.pre-aggregation.enabled": pre_aggregate})
    rows = [("a", "x", 3), ("a", "x", 1), ("b", "z", 5), ("a", "y", 2), ("a", "x", 1),
            ("a", "x", 3), ("b", "z", 5), ("c", "w", 9), ("a", "x", 1)]
    df = env.spark.createDataFrame(rows, "k string, v string, ts bigint").repartition(3)
    typed = (env.from_dataframe(df)
             .assign_timestamps_and_watermarks(
                 WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                     lambda r, _ts: r[2]))
             .map(lambda r: (r[0], r[1], r[2]), output_type=CLICK))
    out = typed.key_by(lambda r: r[0]).reduce(Concat())
    assert sorted(out.execute_and_collect()) == [("a", "xxxyxx", 3), ("b", "zz", 5),
                                                 ("c", "w", 9)]
    details = " ".join(row.get("detail") or "" for row in env.get_last_progress())
    assert "by column" in details
    assert ("identical records counted" in details) == (pre_aggregate == "true"), details


@pytest.mark.parametrize("pushdown", ["true", "false"])
def test_builtin_aggregations(env_factory, pushdown):
    env = env_factory("BATCH", {"execution.batch.native-pushdown.enabled": pushdown})
    t = Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
    data = [("a", 5, "x", 3), ("a", 2, "y", 1), ("a", 9, "z", 2), ("b", 1, "q", 9), ("b", 1, "p", 4)]
    df = env.spark.createDataFrame(data, "k string, v bigint, tag string, ts bigint")
    typed = (env.from_dataframe(df)
             .assign_timestamps_and_watermarks(
                 WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                     lambda r, _ts: r[3]))
             .map(lambda r: (r[0], r[1], r[2]), output_type=t))

    def run(agg):
        return sorted(getattr(typed.key_by(lambda r: r[0]), agg)(1).execute_and_collect())

    # sum/min/max keep the first record (by event time) and replace only the field
    assert run("sum") == [("a", 16, "y"), ("b", 2, "p")]
    assert run("min") == [("a", 2, "y"), ("b", 1, "p")]
    assert run("max") == [("a", 9, "y"), ("b", 1, "p")]
    # min_by/max_by return the whole record; the earliest one on ties
    assert run("min_by") == [("a", 2, "y"), ("b", 1, "p")]
    assert run("max_by") == [("a", 9, "z"), ("b", 1, "p")]


def test_native_pushdown_gives_identical_results(env_factory, spark):
    data = [(f"w{i % 7}",) for i in range(200)]
    df = spark.createDataFrame(data, "word string")
    results = []
    for pushdown in ("true", "false"):
        env = env_factory("BATCH", {"execution.batch.native-pushdown.enabled": pushdown})
        ds = env.from_dataframe(df).map(lambda r: (r[0], 1),
                                        output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        reduced = ds.key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
        summed = ds.key_by(lambda x: x[0]).sum(1)
        results.append((sorted(reduced.execute_and_collect()), sorted(summed.execute_and_collect())))
    assert results[0] == results[1]
    assert dict(results[0][0]) == {f"w{i}": len([j for j in range(200) if j % 7 == i]) for i in range(7)}


class CountWithTimer(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.seen = ctx.get_list_state(ListStateDescriptor("seen", Types.LONG()))
        self.by_page = ctx.get_map_state(MapStateDescriptor("pages", Types.STRING(), Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.seen.add(value[2])
        self.by_page.put(value[1], (self.by_page.get(value[1]) or 0) + 1)
        assert ctx.timer_service().current_watermark() == -(2**63)
        ctx.timer_service().register_event_time_timer(value[2])

    def on_timer(self, timestamp, ctx):
        assert ctx.timer_service().current_watermark() == 2**63 - 1
        yield (ctx.get_current_key(), timestamp, self.count.value(), len(list(self.seen.get())),
               dict(self.by_page.items()))


def test_timers_fire_in_timestamp_order_with_perfect_watermark(env_factory):
    env = env_factory("BATCH")
    data = [("k", "a", 30), ("k", "b", 10), ("k", "a", 20), ("j", "a", 5)]
    ds = env.from_collection(data).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts()))
    out = list(ds.key_by(lambda r: r[0]).process(CountWithTimer()).execute_and_collect())
    ks = [r for r in out if r[0] == "k"]
    assert [r[1] for r in ks] == [10, 20, 30]
    assert all(r[2] == 3 and r[3] == 3 and r[4] == {"a": 2, "b": 1} for r in ks)
    assert [r for r in out if r[0] == "j"] == [("j", 5, 1, 1, {"a": 1})]


class UsesProcessingTime(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)
        yield value

    def on_timer(self, timestamp, ctx):
        yield ("timer", timestamp)


def test_processing_time_fail_ignore_allow(env_factory):
    data = [("a", 1), ("b", 2)]
    env = env_factory("BATCH")
    out = env.from_collection(data).key_by(lambda x: x[0]).process(UsesProcessingTime())
    with pytest.raises(Exception, match="pipeline.processing-time.allow"):
        list(out.execute_and_collect())
    env = env_factory("BATCH", {"pipeline.processing-time.allow": "IGNORE"})
    out = env.from_collection(data).key_by(lambda x: x[0]).process(UsesProcessingTime())
    assert sorted(out.execute_and_collect()) == data
    env = env_factory("BATCH", {"pipeline.processing-time.allow": "ALLOW",
                                "pipeline.processing-time.end-of-input": "FIRE_AND_QUIESCE"})
    out = env.from_collection(data).key_by(lambda x: x[0]).process(UsesProcessingTime())
    rows = list(out.execute_and_collect())
    assert sorted(r for r in rows if r[0] != "timer") == data
    assert len([r for r in rows if r[0] == "timer"]) == 2


def test_side_outputs(env_factory):
    env = env_factory("BATCH")
    late = OutputTag("odd")

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 2:
                ctx.output(late, value)
            else:
                yield value

    main = env.from_collection(list(range(10))).process(Split())
    side = main.get_side_output(late)
    assert sorted(main.execute_and_collect()) == [0, 2, 4, 6, 8]
    assert sorted(side.execute_and_collect()) == [1, 3, 5, 7, 9]


def test_union_and_keyed_co_process(env_factory):
    env = env_factory("BATCH")

    class Join(KeyedCoProcessFunction):
        def open(self, ctx):
            self.rate = ctx.get_state(ValueStateDescriptor("rate", Types.DOUBLE()))
            self.pending = ctx.get_list_state(ListStateDescriptor("pending", Types.LONG()))

        def process_element1(self, value, ctx):
            rate = self.rate.value()
            if rate is None:
                self.pending.add(value[1])
            else:
                yield (value[0], value[1] * rate)

        def process_element2(self, value, ctx):
            self.rate.update(value[1])
            for amount in self.pending.get():
                yield (value[0], amount * value[1])
            self.pending.clear()

    orders = env.from_collection([("EUR", 10), ("USD", 5)]).union(env.from_collection([("EUR", 1)]))
    rates = env.from_collection([("EUR", 2.0), ("USD", 1.0)])
    out = orders.connect(rates).key_by(lambda o: o[0], lambda r: r[0]).process(Join())
    assert sorted(out.execute_and_collect()) == [("EUR", 2.0), ("EUR", 20.0), ("USD", 5.0)]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_union_of_keyed_outputs_and_their_side_output(env_factory, mode):
    """A union whose later inputs end in keyed operators: the keyed passes run inside the
    union's partitions (numbered after the earlier inputs'), each still one subtask."""
    env = env_factory(mode)
    big = OutputTag("big", Types.TUPLE([Types.STRING(), Types.LONG()]))

    class Flag(KeyedProcessFunction):
        def open(self, runtime_context):
            self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

        def process_element(self, value, ctx):
            total = (self.total.value() or 0) + value[1]
            self.total.update(total)
            if value[1] >= 50:
                ctx.output(big, (value[0], value[1]))
            yield value[0], total

    data = [(f"u{i % 7}", (i * 37) % 101) for i in range(300)]
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    src = env.from_collection(data, type_info=pair)
    flagged = src.key_by(lambda v: v[0]).process(Flag(), output_type=pair)
    sums = env.from_collection(data, type_info=pair).key_by(lambda v: v[0]).reduce(
        lambda a, b: (a[0], a[1] + b[1]))
    # a plain input first, so the keyed inputs' partitions come after it in the union
    plain = env.from_collection([("x", -1), ("y", -2), ("z", -3)], type_info=pair)
    out = sorted(plain.union(flagged, flagged.get_side_output(big), sums).execute_and_collect())

    totals, running, expected = {}, [], [("x", -1), ("y", -2), ("z", -3)]
    for user, amount in data:
        totals[user] = totals.get(user, 0) + amount
        running.append((user, totals[user]))
        if amount >= 50:
            expected.append((user, amount))
    expected += running
    if mode == "BATCH":  # a BATCH reduce emits each key's final value only
        expected += sorted(totals.items())
    else:  # a STREAMING reduce emits every running value
        expected += running
    assert out == sorted(expected)


@pytest.mark.compat
def test_two_stage_keyed_job(env_factory):
    env = env_factory("BATCH")
    data = [("u1", "fr"), ("u2", "fr"), ("u1", "fr"), ("u3", "de"), ("u3", "de"), ("u4", "de")]

    class CountPerCountry(KeyedProcessFunction):
        def open(self, ctx):
            self.n = ctx.get_state(ValueStateDescriptor("n", Types.LONG()))

        def process_element(self, value, ctx):
            self.n.update((self.n.value() or 0) + value[2])
            ctx.timer_service().register_event_time_timer(0)

        def on_timer(self, ts, ctx):
            yield (ctx.get_current_key(), self.n.value())

    per_user = (env.from_collection(data).map(lambda r: (r[0], r[1], 1))
                .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1], a[2] + b[2])))
    out = per_user.key_by(lambda r: r[1]).process(CountPerCountry())
    assert sorted(out.execute_and_collect()) == [("de", 3), ("fr", 3)]


def test_from_dataframe_to_dataframe_round_trip(env_factory, spark):
    df = spark.createDataFrame([("a", 1, 2.5), ("b", 2, None)], "name string, n bigint, x double")
    env = env_factory("BATCH")
    back = env.from_dataframe(df).filter(lambda r: r[1] > 0).to_dataframe()
    assert back.columns == ["name", "n", "x"]
    assert sorted(tuple(r) for r in back.collect()) == [("a", 1, 2.5), ("b", 2, None)]
    named = env.from_dataframe(df).map(
        lambda r: (r[0].upper(), r[1] * 10),
        output_type=Types.ROW_NAMED(["NAME", "N10"], [Types.STRING(), Types.LONG()])).to_dataframe()
    assert named.columns == ["NAME", "N10"]
    assert sorted(tuple(r) for r in named.collect()) == [("A", 10), ("B", 20)]


def test_graph_build_errors_name_the_operator(env_factory):
    env = env_factory("BATCH")
    ds = env.from_collection([1, 2, 3])
    with pytest.raises(GraphBuildError, match="Sessionize.*key_by"):
        ds.process(Sessionize())
    with pytest.raises(GraphBuildError, match="to_dataframe\\(\\) needs a typed stream.*output_type"):
        ds.map(lambda x: x + 1).to_dataframe()
    with pytest.raises(GraphBuildError, match="deterministic"):
        ds.key_by(lambda x: {x: 1}, key_type=Types.MAP(Types.LONG(), Types.LONG()))


def test_automatic_mode_picks_batch_for_bounded_sources(env_factory):
    env = env_factory("AUTOMATIC")
    ds = env.from_collection([("a", 1), ("a", 2)])
    out = ds.key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    assert env.runtime_mode_for([ds._node]) is RuntimeMode.BATCH
    # BATCH emits only the final value (STREAMING would emit ("a", 1) first).
    assert list(out.execute_and_collect()) == [("a", 3)]


PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


def _streaming_sums(spark, env, tmp_path):
    """A streaming DataFrame over one Parquet folder of (k, v) rows, and ``env``'s sums of
    its values per key: ``(a, 4), (b, 2)``."""
    src = tmp_path / "in"
    spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "k string, v bigint").write.parquet(str(src))
    stream_df = spark.readStream.schema("k string, v bigint").parquet(str(src))
    return stream_df, (env.from_dataframe(stream_df).map(tuple, output_type=PAIR)
                       .key_by(lambda r: r[0]).sum(1))


def test_streaming_dataframe_source_runs_as_trigger_once_batch(env_factory, spark, tmp_path,
                                                               monkeypatch):
    """A streaming DataFrame read once in BATCH; the copy of its input staged for the job is
    gone when the job ends (collected, written, failed), and a to_dataframe() DataFrame's
    stays while the process can still run it."""
    import tempfile

    from deltalake import DeltaTable
    from pyspark_datastream import UserFunctionError
    from pyspark_datastream.translation.batch import trigger_once

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where the staging folders go
    env = env_factory("BATCH")
    stream_df, out = _streaming_sums(spark, env, tmp_path)
    assert sorted(out.execute_and_collect()) == [("a", 4), ("b", 2)]
    assert os.listdir(temp) == []

    out.map(lambda r: r, output_type=PAIR).sink_to_delta(str(tmp_path / "sums"))
    env.execute("trigger-once-sums")
    rows = DeltaTable(str(tmp_path / "sums")).to_pyarrow_table().to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == [("a", 4), ("b", 2)]
    assert os.listdir(temp) == []

    env.from_dataframe(stream_df).map(lambda r: 1 // (r[1] - 2)).print()
    with pytest.raises(UserFunctionError, match="ZeroDivisionError"):
        env.execute("trigger-once-fails")
    assert os.listdir(temp) == []

    frame = out.to_dataframe()
    assert len(os.listdir(temp)) == 1  # staged while the DataFrame may run
    assert sorted(frame.toPandas().itertuples(index=False, name=None)) == [
        ("a", 4), ("b", 2)]
    trigger_once._remove_all()  # what the interpreter runs at exit
    assert os.listdir(temp) == []


def test_a_streaming_dataframe_source_is_staged_under_a_root_given_as_a_uri(
        env_factory, spark, tmp_path):
    """With a checkpoint root (here a file: URI), BATCH stages a streaming DataFrame's read
    there, not in the driver's temporary folder, and removes it when the job ends."""
    root = tmp_path / "root"
    env = env_factory("BATCH", {"execution.checkpointing.dir": root.as_uri()})
    _, out = _streaming_sums(spark, env, tmp_path)
    frame = out.to_dataframe()
    staged = [p.name for p in root.iterdir()]
    assert len(staged) == 1 and staged[0].startswith("_batch-read-"), staged
    assert sorted(frame.toPandas().itertuples(index=False, name=None)) == [("a", 4), ("b", 2)]
    assert sorted(out.execute_and_collect()) == [("a", 4), ("b", 2)]
    assert [p.name for p in root.iterdir()] == staged  # the collect's own read is gone


def test_user_function_error_is_clear(env_factory):
    env = env_factory("BATCH")
    out = env.from_collection([1, 0]).map(lambda x: 1 // x)
    with pytest.raises(Exception, match="ZeroDivisionError"):
        list(out.execute_and_collect())


@pytest.mark.compat
@pytest.mark.parametrize("writer", ["delta-rs", "spark"])
def test_sink_to_delta_and_print(env_factory, tmp_path, capsys, request, writer):
    from deltalake import DeltaTable

    if writer == "spark":
        request.getfixturevalue("spark_delta")  # Spark's format("delta") writes the sink

    env = env_factory("BATCH")
    ds = env.from_collection([("a", 1), ("b", 2)]).map(
        lambda r: r, output_type=Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.LONG()]))
    path = str(tmp_path / "out_delta")
    ds.sink_to_delta(path)
    ds.print("out")
    result = env.execute("delta-and-print")
    table = DeltaTable(path)
    assert sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["k"]) == [
        {"k": "a", "v": 1}, {"k": "b", "v": 2}]
    assert "out> " in capsys.readouterr().out
    assert sum(result.sink_counts.values()) == 4
    env2 = env_factory("BATCH")
    env2.from_collection([("c", 3)]).map(
        lambda r: r, output_type=Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.LONG()])
    ).sink_to_delta(path, mode="append")
    env2.execute()
    assert DeltaTable(path).version() == 1
    assert len(DeltaTable(path).to_pyarrow_table()) == 3
    engines = [json.loads(line)["commitInfo"].get("engineInfo", "")
               for name in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))
               for line in open(name, encoding="utf-8") if '"commitInfo"' in line]
    assert [("Delta-Lake/" in e) for e in engines] == [writer == "spark"] * 2


def test_native_key_bytes_equal_python_serializers(spark):
    import random
    import zlib

    from pyspark.sql import functions as F
    from pyspark_datastream.spark_io.key_columns import native_key_bytes
    from pyspark_datastream.state_store.serializers import (
        GenericKeySerializer,
        LexicographicLongSerializer,
        LexicographicStringSerializer,
    )

    strs = ["", "a", "a\x00b", "\x00", "\x00\x00", "é😀", "x\x00", "L\x07H\x00", "\x10\x00"]
    longs = [0, 1, -1, 2**63 - 1, -(2**63), 12345678901, -5, 7, 8]
    # random strings over NUL, ASCII, 2-, 3- and 4-byte UTF-8 characters and NUL-like bytes
    # inside multi-byte characters (U+0100, U+4E00, U+10000 end in 0x80 bytes)
    rng = random.Random(17)
    alphabet = "\x00\x00a0Z\x7f\xff\u0100\u4e00\U00010000é😀"
    for _ in range(300):
        strs.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(12))))
        longs.append(rng.randrange(-(2**63), 2**63))
    df = spark.createDataFrame(list(zip(strs, longs)), "s string, l bigint")
    g = GenericKeySerializer()
    rows = df.select(
        "s", "l",
        native_key_bytes(F.col("s"), "STRING", g).alias("gs"),
        native_key_bytes(F.col("l"), "LONG", g).alias("gl"),
        native_key_bytes(F.col("s"), "STRING", LexicographicStringSerializer.INSTANCE).alias("ls"),
        native_key_bytes(F.col("l"), "LONG", LexicographicLongSerializer.INSTANCE).alias("ll"),
        F.pmod(F.crc32(native_key_bytes(F.col("s"), "STRING", g)), F.lit(128)).alias("kg"),
    ).collect()
    assert len(rows) == len(strs)
    for r in rows:
        assert bytes(r.gs) == g.serialize(r.s)
        assert bytes(r.gl) == g.serialize(r.l)
        assert bytes(r.ls) == LexicographicStringSerializer.INSTANCE.serialize(r.s)
        assert bytes(r.ll) == LexicographicLongSerializer.INSTANCE.serialize(r.l)
        assert r.kg == zlib.crc32(g.serialize(r.s)) % 128


class SubtaskOfKey(KeyedProcessFunction):
    """Emits (key, index of this subtask) for each key's first record."""

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.BOOLEAN()))

    def process_element(self, value, ctx):
        if not self.seen.value():
            self.seen.update(True)
            yield (ctx.get_current_key(), self.index)


@pytest.mark.parametrize("sorted_inputs", ["true", "false"])
def test_each_key_runs_on_the_subtask_of_its_key_group_range(env_factory, sorted_inputs):
    """As in Flink, the subtask of a key is ``key_group * parallelism // max_parallelism``
    (key groups in contiguous ranges, ``KeyGroupRangeAssignment``), with a Python key
    selector (the key-group shuffle), sorted or hashed execution; expected subtasks are
    computed from the key bytes here."""
    from pyspark_datastream.state_store.keygroups import assign_key_group
    from pyspark_datastream.state_store.serializers import GenericKeySerializer

    env = env_factory("BATCH", {"execution.sorted-inputs.enabled": sorted_inputs})
    env.set_parallelism(3)
    env.set_max_parallelism(64)
    keys = [f"user-{i}" for i in range(300)]
    got = dict(env.from_collection([(k, 1) for k in keys] * 2)
               .key_by(lambda r: r[0].upper())  # not traceable: the key-group shuffle
               .process(SubtaskOfKey(), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
               .execute_and_collect())
    assert len(got) == len(keys)
    serialize = GenericKeySerializer.INSTANCE.serialize
    expected = {k.upper(): assign_key_group(serialize(k.upper()), 64) * 3 // 64 for k in keys}
    assert got == expected
    assert set(got.values()) == {0, 1, 2}
