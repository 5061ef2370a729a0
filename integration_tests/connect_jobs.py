"""Jobs run over Spark Connect (``SparkSession.builder.remote("local[2]")``).

Databricks serverless and shared clusters run Spark Connect, so the product
must use only DataFrame APIs. This script runs in its own process (a Connect
session and a classic one do not mix in one interpreter) and prints one JSON
line of results for ``test_connect.py`` to check.
"""

from __future__ import annotations

import json
import os
import sys

import pyspark


def main(workdir: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    from pyspark_datastream import (
        KeyedProcessFunction,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        Types,
        UnsupportedSparkFeatureError,
        ValueStateDescriptor,
    )
    from pyspark_datastream.spark_io.delta_io import read_delta

    # defined here, not imported from the tests: the Connect server's Python workers cannot
    # import the test modules, and a class local to this function travels by value
    class Total(KeyedProcessFunction):
        def open(self, ctx):
            self.total = ctx.get_state(ValueStateDescriptor("total", Types.LONG()))

        def process_element(self, value, ctx):
            self.total.update((self.total.value() or 0) + value[1])
            ctx.timer_service().register_event_time_timer(0)

        def on_timer(self, ts, ctx):
            yield (ctx.get_current_key(), self.total.value())

    env = StreamExecutionEnvironment.get_execution_environment(spark=spark)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    data = [("a", 1), ("b", 2), ("a", 3), ("c", 5)]
    results: dict[str, object] = {}
    reduced = env.from_collection(data).key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    results["reduce"] = sorted(reduced.execute_and_collect())
    words = spark.createDataFrame([("w1",), ("w2",), ("w1",)], "word string")
    summed = (env.from_dataframe(words)
              .map(lambda r: (r[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
              .key_by(lambda x: x[0]).sum(1))
    results["sum"] = sorted(summed.execute_and_collect())
    processed = env.from_collection(data).key_by(lambda x: x[0]).process(
        Total(), output_type=Types.ROW_NAMED(["k", "total"], [Types.STRING(), Types.LONG()]))
    results["process_df"] = sorted(tuple(r) for r in processed.to_dataframe().collect())
    path = os.path.join(workdir, "delta_out")
    processed.sink_to_delta(path)
    result = env.execute("connect-delta")
    # stage counts come from DataFrame.observe: they must work over Connect too
    results["progress"] = [[r["kind"], r["rows_in"], r["rows_out"]] for r in result.get_progress()]
    results["delta"] = sorted(tuple(r) for r in read_delta(spark, path).collect())
    # a bootstrap savepoint over Connect (its source rows ordered by key group by Spark),
    # read back with the State Processor API and restored by a BATCH job
    from pyspark_datastream import Configuration
    from pyspark_datastream.savepoint import Savepoint, SavepointWriter

    boot = os.path.join(workdir, "bootstrap_sp")
    seed = spark.createDataFrame([("a", 100), ("z", 7)], "k string, total bigint")
    total = ValueStateDescriptor("total", Types.LONG())
    SavepointWriter(128).with_keyed_state("totals", seed, "k", {"total": total}).write(boot)
    results["bootstrap_read"] = sorted(
        tuple(r) for r in Savepoint.load(boot, spark).read_keyed_state("totals", total).collect())
    rconf = Configuration()
    rconf.set_string("execution.savepoint.path", boot)
    renv = StreamExecutionEnvironment.get_execution_environment(rconf, spark=spark)
    renv.set_runtime_mode(RuntimeExecutionMode.BATCH)
    restored = (renv.from_collection(data).key_by(lambda x: x[0], key_type=Types.STRING())
                .process(Total(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
                .uid("totals"))
    results["bootstrap_restored"] = sorted(restored.execute_and_collect())
    # STREAMING over Connect: a running reduce over a file stream, every intermediate value
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = os.path.join(workdir, "stream_in")
    os.makedirs(src)
    pq.write_table(pa.table({"k": ["a", "b", "a"], "v": pa.array([1, 2, 3], pa.int64())}),
                   os.path.join(src, "f1.parquet"))
    conf = Configuration()
    conf.set_string("execution.checkpointing.dir", os.path.join(workdir, "stream_ckpt"))
    senv = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    senv.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    running = (senv.from_dataframe(spark.readStream.schema("k string, v long").parquet(src))
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
    results["streaming"] = sorted(running.execute_and_collect("connect-stream"))
    line = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
    if line >= (4, 0):  # the one-query mapping: the two keyed stages in one Connect query
        conf.set_string("execution.streaming.query-mapping", "one-query")
        oq = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        oq.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        counts = (oq.from_dataframe(spark.readStream.schema("k string, v long").parquet(src))
                  .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
                  .map(lambda r: (r[0], 1))
                  .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
        try:
            results["one_query"] = sorted(counts.execute_and_collect("connect-one-query"))
        except UnsupportedSparkFeatureError as exc:  # Spark Connect 4.0 has no such operator
            results["one_query"] = str(exc)
        else:
            # the per-stage mapping would have staged the second stage's input in the job
            # folder
            job = os.path.join(workdir, "stream_ckpt", "connect-one-query")
            results["one_query_staged"] = sorted(
                n for n in os.listdir(job) if n.endswith("-input"))
            _fanned_out(spark, workdir, results)
            results["one_query_inband"] = _inband(spark, conf, src)
    # a STREAMING Delta sink: its foreachBatch function runs in the Connect server's process
    stream_delta = os.path.join(workdir, "stream_delta")
    running.sink_to_delta(stream_delta)
    done = senv.execute("connect-stream-delta")
    results["streaming_delta"] = sorted(tuple(r) for r in read_delta(spark, stream_delta).collect())
    results["streaming_counts"] = done.sink_counts
    print(json.dumps(results))
    spark.stop()

def _inband(spark, conf, src: str) -> list:
    """A keyed stage below a watermark strategy assigned below a keyed stage: its watermark
    comes in band (runtime/inband.py), its timers fire in the same micro-batch."""
    from pyspark_datastream import (
        KeyedProcessFunction,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        WatermarkStrategy,
    )

    class Stamp(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)
            yield value[0], ctx.timestamp(), ctx.timer_service().current_watermark()

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), timestamp, ctx.timer_service().current_watermark()

    env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    tens = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda r, ts: r[1] * 10)
    stamped = (env.from_dataframe(spark.readStream.schema("k string, v long").parquet(src))
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
               .assign_timestamps_and_watermarks(tens)
               .key_by(lambda r: r[0]).process(Stamp()))
    return sorted(stamped.execute_and_collect("connect-one-query-inband"))


def _fanned_out(spark, workdir: str, results: dict[str, object]) -> None:
    """A keyed stage's main output and side output to two Delta sinks in the job's one query
    (its foreachBatch function runs in the Connect server's Python process), stopped with a
    savepoint."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark_datastream import (
        Configuration,
        KeyedProcessFunction,
        OutputTag,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        Types,
        ValueStateDescriptor,
    )
    from pyspark_datastream.savepoint import Savepoint
    from pyspark_datastream.spark_io.delta_io import read_delta

    odd = OutputTag("odd", Types.LONG())
    total = ValueStateDescriptor("total", Types.LONG())

    class Split(KeyedProcessFunction):  # a running total per key; odd values aside
        def open(self, ctx):
            self.total = ctx.get_state(total)

        def process_element(self, value, ctx):
            self.total.update((self.total.value() or 0) + value[1])
            if value[1] % 2:
                ctx.output(odd, value[1])
            yield value[0], self.total.value()

    src = os.path.join(workdir, "fan_in")
    os.makedirs(src)
    conf = Configuration()
    conf.set_string("execution.checkpointing.dir", os.path.join(workdir, "fan_ckpt"))
    conf.set_string("execution.streaming.query-mapping", "one-query")
    main_out, side_out = os.path.join(workdir, "fan_main"), os.path.join(workdir, "fan_side")
    savepoint = os.path.join(workdir, "fan_savepoint")
    for i, rows in enumerate(FAN_INPUT):
        pq.write_table(pa.table({"k": [k for k, _ in rows],
                                 "v": pa.array([v for _, v in rows], pa.int64())}),
                       os.path.join(src, f"f{i}.parquet"))
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        split = (env.from_dataframe(spark.readStream.schema("k string, v long").parquet(src))
                 .key_by(lambda r: r[0], key_type=Types.STRING())
                 .process(Split(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
                 .uid("split"))
        split.sink_to_delta(main_out)
        split.get_side_output(odd).map(lambda v: (v,), output_type=Types.TUPLE(
            [Types.LONG()])).sink_to_delta(side_out)
        last = i == len(FAN_INPUT) - 1
        done = env.execute("connect-fan-out", savepoint_path=savepoint if last else None)
        results[f"fan_counts_{i}"] = done.sink_counts
        results[f"fan_main_{i}"] = sorted(
            tuple(r) for r in read_delta(spark, main_out).collect())
        results[f"fan_side_{i}"] = sorted(r[0] for r in read_delta(spark, side_out).collect())
    job = os.path.join(workdir, "fan_ckpt", "connect-fan-out")
    results["fan_queries"] = sorted(n for n in os.listdir(job) if not n.startswith("_"))
    results["fan_savepoint"] = sorted(
        tuple(r) for r in Savepoint.load(savepoint, spark).read_keyed_state("split", total)
        .collect())


#: the fanned-out job's input, one file per run (test_connect.py computes what it expects);
#: its continuation from a checkpoint is tested locally (test_one_query_sinks.py)
FAN_INPUT = [[("a", 1), ("b", 2), ("a", 3), ("b", 5), ("a", 4), ("c", 7)]]

if __name__ == "__main__":
    main(sys.argv[1])
