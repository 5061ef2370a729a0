"""FLIP-140's WordCount at 1/10 scale: native Spark vs BATCH reduce vs BATCH sum vs
STREAMING reduce (the same files as a file stream, available-now), twice.

``python -m benchmarks.wordcount [--records 4000000] [--keys 400000]`` generates its
input as Parquet once (reused across runs), then in one process and one
SparkSession times: native ``groupBy().count()``, the project's BATCH
``key_by().reduce(lambda)`` with a Python reduce function, and BATCH ``sum(1)``.
STREAMING runs ``reduce(lambda a, b: (a[0], a[1] + b[1]))``, which the planner traces into
a per-key running sum computed on the key group's columns (``streaming``), and the same
reduce as a ``ReduceFunction`` class, called once per record (``streaming_python``).
Results are checked against pandas. Each variant, the baseline included, runs
once untimed (JVM code compilation, Python worker start-up; not with ``--quick``, a smoke
run of 20,000 records in 4 files whose figures mean nothing), then ``--repeat`` timed
rounds run every variant once each, in turn (a slow spell of the machine then falls on
all variants alike, not on the one that happened to be running); the median counts, and
``runs`` in the JSON lists every timed run. The
last line is JSON with ratios measured in this run, and the peak resident set size
(``peak_rss_mib``, MiB) of the driver, the JVM and the Python workers (their sum),
sampled every 0.25 s in a background thread, overall and per variant (a variant's
Python-worker figure counts the workers that ran in it, not idle ones kept from before).

``--floor`` also times Spark's ``applyInPandasWithState`` alone over the columns the
STREAMING job gives it, with a function that reads them and does nothing
(``streaming_floor_ratio`` against native, ``streaming_over_floor`` for the job against it):
the part of the STREAMING figure that no work in this library can remove. It also times
the same query emitting one record per input record, as both STREAMING jobs do, from a
function that hands its input columns back (``streaming_emit_floor_ratio``;
``streaming_over_emit_floor`` and ``streaming_python_over_emit_floor`` for the two jobs):
the floor under any STREAMING job whose output is as large as its input.

``--driver-memory`` sizes the local session's JVM heap; ``--state-store rocksdb`` runs the
STREAMING variants on Spark's RocksDB state store provider (state off the JVM heap) instead
of Spark's default HDFS-backed one (``make bench-scale`` runs 40M records so).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


QUICK_RECORDS, QUICK_KEYS, QUICK_FILES = 20_000, 2_000, 4


def generate(path: str, records: int, keys: int, seed: int = 42,
             chunk: int = 1_000_000) -> None:
    """``records`` words drawn from ``keys`` distinct ones (seeded) as Parquet files of
    ``chunk`` records each, under ``path`` (once: an existing folder is reused).

    Args:
        path: the folder.
        records: the number of words.
        keys: the number of distinct words.
        seed: the random generator's seed.
        chunk: records per file (the last file holds the rest).
    """
    if os.path.exists(os.path.join(path, "_SUCCESS_GEN")):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i, start in enumerate(range(0, records, chunk)):
        n = min(chunk, records - start)
        ids = rng.integers(0, keys, size=n)
        words = pd.Series(ids).map(lambda k: f"w{k:07d}")
        pq.write_table(pa.table({"word": words.to_numpy()}), os.path.join(path, f"part-{i:03d}.parquet"))
    open(os.path.join(path, "_SUCCESS_GEN"), "w").close()


def expected_counts(path: str) -> pd.Series:
    df = pd.read_parquet(path)
    return df.groupby("word").size()


def check(rows: list, expected: pd.Series, what: str) -> None:
    got = pd.Series({w: c for w, c in rows})
    if len(got) != len(expected) or not (got.sort_index() == expected.sort_index()).all():
        raise SystemExit(f"{what}: result differs from pandas ({len(got)} vs {len(expected)} keys)")


def python_reduce() -> object:
    """A reduce function no planner can read: a ``ReduceFunction`` subclass, every call
    Python (defined on use: importing this module needs no Spark)."""
    from pyspark_datastream import ReduceFunction

    class PythonReduce(ReduceFunction):
        def reduce(self, a: tuple, b: tuple) -> tuple:
            return (a[0], a[1] + b[1])

    return PythonReduce()


def streaming_reduce(spark: object, path: str, schema: object, expected: pd.Series,
                     python: bool = False, root: str | None = None,
                     backend: str | None = None) -> float:
    """STREAMING: the same Parquet files read as a file stream, available-now, reduced by
    the traceable lambda (``python``: by :func:`python_reduce`, one call per record).

    Every intermediate count is emitted (an upsert stream) into a Parquet file sink;
    the check takes the last (largest) count per word. Returns the query's seconds.
    ``root``: the folder (a path or an ``s3a://`` URI, left in place) of the job's checkpoint
    root, its sink's checkpoint and its output, instead of a temporary folder; ``backend``:
    its ``state.backend.type``.
    """
    import shutil
    import tempfile

    from pyspark_datastream import (
        Configuration,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        Types,
    )

    work = root or tempfile.mkdtemp(prefix="wordcount-streaming-")
    try:
        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", os.path.join(work, "ckpt"))
        if backend is not None:
            conf.set_string("state.backend.type", backend)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        stream = spark.readStream.schema(schema).parquet(path)  # type: ignore[attr-defined]
        counts = (env.from_dataframe(stream)
                  .map(lambda r: (r[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
                  .key_by(lambda x: x[0])
                  .reduce(python_reduce() if python else lambda a, b: (a[0], a[1] + b[1])))
        out = os.path.join(work, "out")
        t = time.time()
        query = (counts.to_dataframe().writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", os.path.join(work, "sink"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        seconds = time.time() - t
        from pyspark.sql import functions as F

        result = spark.read.parquet(out)  # type: ignore[attr-defined]
        first, second = result.columns[:2]
        final = result.groupBy(first).agg(F.max(second)).collect()
        check([(r[0], r[1]) for r in final], expected, "streaming")
        return seconds
    finally:
        if root is None:
            shutil.rmtree(work, ignore_errors=True)


def _floor_input(spark: object, path: str, schema: object) -> object:
    """The file stream as the STREAMING job hands it to ``applyInPandasWithState``: the
    record's two fields, the file order columns, a null record timestamp and the range key
    (the key group plus the salt that puts it on its range's partition)."""
    from pyspark.sql import functions as F
    from pyspark_datastream.spark_io.key_group_ranges import RANGE_KEY, range_key_column

    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))  # type: ignore[attr-defined]
    word = F.col("word")
    stream = (spark.readStream.schema(schema).parquet(path)  # type: ignore[attr-defined]
              .select(F.lit(None).cast("long").alias("_ts"),
                      F.pmod(F.crc32(word.cast("binary")), F.lit(128)).cast("int").alias("_kg"),
                      word.alias("f0"), F.lit(1).cast("long").alias("f1"),
                      F.unix_millis(F.col("_metadata.file_modification_time")).alias("_seq"),
                      F.col("_metadata.row_index").alias("_seq_row")))
    return stream.withColumn(RANGE_KEY, range_key_column(F.col("_kg"), 128, partitions)).drop("_kg")


def _timed_parquet_query(out: object, work: str) -> float:
    """Runs ``out`` available-now into a Parquet sink under ``work``; its seconds."""
    query = (out.writeStream.format("parquet")  # type: ignore[attr-defined]
             .option("path", os.path.join(work, "out"))
             .option("checkpointLocation", os.path.join(work, "sink"))
             .trigger(availableNow=True))
    t = time.time()
    running = query.start()
    running.awaitTermination()
    return time.time() - t


def streaming_floor(spark: object, path: str, schema: object) -> float:
    """What Spark's ``applyInPandasWithState`` itself costs on this input: the columns the
    STREAMING job hands it (:func:`_floor_input`), grouped as the job groups them and with
    its timeout kind (``NoTimeout``: no watermark strategy, so nothing can time out), to a
    function that reads every frame and returns nothing, available-now into a Parquet sink.
    No state, no output: the floor under any STREAMING keyed job on this API. Returns the
    query's seconds.
    """
    import shutil
    import tempfile

    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark_datastream.spark_io.key_group_ranges import RANGE_KEY

    def consume(key: tuple, frames: object, state: object) -> object:
        for _ in frames:  # type: ignore[attr-defined]
            pass
        return iter(())

    work = tempfile.mkdtemp(prefix="wordcount-floor-")
    try:
        out = (_floor_input(spark, path, schema).groupBy(RANGE_KEY)  # type: ignore[attr-defined]
               .applyInPandasWithState(consume, "_b binary", "s binary", "append",
                                       GroupStateTimeout.NoTimeout))
        return _timed_parquet_query(out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: records per output row of :func:`streaming_emit_floor` (as the job chunks its outputs)
EMIT_CHUNK = 1 << 16


def streaming_emit_floor(spark: object, path: str, schema: object,
                         expected: pd.Series) -> float:
    """:func:`streaming_floor` that also emits what the job emits: one output record per
    input record. Its function hands each key group's ``f0``/``f1`` columns back as Python
    lists of at most :data:`EMIT_CHUNK` records per output row, which the query explodes
    into the same Parquet sink, as the job's records leave: no state, no reduce. What
    STREAMING's one-result-per-record output costs on this API, whatever computes it.
    The sink's counts per word are checked against pandas. Returns the query's seconds.
    """
    import shutil
    import tempfile

    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark_datastream.spark_io.key_group_ranges import RANGE_KEY

    def chunks(values: list) -> np.ndarray:
        rows = np.empty((len(values) + EMIT_CHUNK - 1) // EMIT_CHUNK, dtype=object)
        for i in range(len(rows)):
            rows[i] = values[i * EMIT_CHUNK:(i + 1) * EMIT_CHUNK]
        return rows

    def emit(key: tuple, frames: object, state: object) -> object:
        got = [f for f in frames if len(f)]  # type: ignore[attr-defined]
        if not got:
            return iter(())
        words = [w for f in got for w in f["f0"].tolist()]
        ones = [n for f in got for n in f["f1"].tolist()]
        return iter([pd.DataFrame({"f0": chunks(words), "f1": chunks(ones)})])

    work = tempfile.mkdtemp(prefix="wordcount-emit-floor-")
    try:
        out = (_floor_input(spark, path, schema).groupBy(RANGE_KEY)  # type: ignore[attr-defined]
               .applyInPandasWithState(emit, "f0 array<string>, f1 array<bigint>", "s binary",
                                       "append", GroupStateTimeout.NoTimeout)
               .select(F.inline(F.arrays_zip("f0", "f1"))))
        seconds = _timed_parquet_query(out, work)
        emitted = (spark.read.parquet(os.path.join(work, "out"))  # type: ignore[attr-defined]
                   .groupBy("f0").agg(F.sum("f1")).collect())
        check([(r[0], r[1]) for r in emitted], expected, "streaming_emit_floor")
        return seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _streaming_figures(native_s: float, reduce_s: float | None, streaming_s: float | None,
                       python_s: float | None) -> dict[str, float]:
    """The STREAMING fields of the JSON (none with --batch-only; no BATCH comparison with
    --streaming-only)."""
    if streaming_s is None or python_s is None:
        return {}
    figures = {
        "streaming_s": round(streaming_s, 3),
        "streaming_ratio": round(streaming_s / native_s, 3),
        # the same STREAMING job with a reduce function called once per record
        "streaming_python_s": round(python_s, 3),
        "streaming_python_ratio": round(python_s / native_s, 3),
    }
    if reduce_s is not None:
        figures["batch_speedup"] = round(streaming_s / reduce_s, 3)
        figures["batch_speedup_python"] = round(python_s / reduce_s, 3)
    return figures


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print its JSON line.

    Args:
        argv: the command line's arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--keys", type=int, default=400_000)
    parser.add_argument("--data", default=".bench-data")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per variant (median)")
    parser.add_argument("--floor", action="store_true",
                        help="also time Spark's applyInPandasWithState alone on the same input "
                             "(streaming_floor_ratio: what STREAMING cannot go below)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_RECORDS:,} records, {QUICK_KEYS:,} keys in {QUICK_FILES} "
                             "files, one timed run, no warm-up (a smoke run)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the untimed round (as --quick does) at any --records/--keys: "
                             "for a smoke run whose figures mean nothing (benchmarks.memory "
                             "--quick)")
    parser.add_argument("--driver-memory", default=None,
                        help="the JVM heap of the local session, e.g. 2g (default: Spark's, 1g)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--batch-only", action="store_true",
                      help="native and the BATCH variants only: the Python workers then run "
                           "nothing but BATCH, so their peak RSS is BATCH's own (compare it "
                           "across --keys)")
    only.add_argument("--streaming-only", action="store_true",
                      help="native and the STREAMING variants only: the Python workers then "
                           "run nothing but STREAMING, so their peak RSS is STREAMING's own "
                           "(compare it with --batch-only's, and across --keys)")
    parser.add_argument("--state-store", choices=sorted(STATE_STORES), default="hdfs",
                        help="Spark's state store provider for the STREAMING variants: hdfs "
                             "(Spark's default: state on the JVM heap) or rocksdb (off the heap)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.keys, args.repeat = QUICK_RECORDS, QUICK_KEYS, 1
    warmup = not (args.quick or args.no_warmup)

    from pyspark_datastream import (
        Configuration,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        Types,
    )

    from benchmarks.common import RssSampler, local_session

    path = os.path.abspath(os.path.join(args.data, f"words-{args.records}-{args.keys}"))
    generate(path, args.records, args.keys,
             **({"chunk": QUICK_RECORDS // QUICK_FILES} if args.quick else {}))
    expected = expected_counts(path)
    spark = local_session(args.driver_memory)
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", STATE_STORES[args.state_store])
    words = spark.read.parquet(path)
    words.count()  # warm up file listing and the JVM

    # Every variant is run once untimed (the JVM compiles its code paths, Python workers
    # start and import the library), then --repeat timed rounds run each variant in turn;
    # the median counts. The baseline brings its result to the driver the way
    # execute_and_collect does (Arrow), so the ratios compare the computation, not two ways
    # of collecting.
    def native() -> list:
        rows = words.groupBy("word").count().toArrow().to_pylist()
        return [(r["word"], r["count"]) for r in rows]

    def job(pushdown: bool = True) -> object:
        conf = Configuration()
        # Traceable lambdas (the map, the key) run natively; the reduce below stays Python.
        conf.set_boolean("execution.batch.native-pushdown.enabled", pushdown)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        return env.from_dataframe(words).map(
            lambda r: (r[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))

    def reduce() -> list:
        with job().key_by(lambda x: x[0]).reduce(python_reduce()).execute_and_collect() as it:
            return list(it)

    def sum_() -> list:
        with job().key_by(lambda x: x[0]).sum(1).execute_and_collect() as it:
            return list(it)

    def clocked(run: Callable[[], list], what: str) -> Callable[[], float]:
        """``run`` as a checked run returning its seconds (the check is not timed)."""
        def once() -> float:
            t = time.time()
            rows = run()
            seconds = time.time() - t
            check(rows, expected, what)
            return seconds
        return once

    variants: dict[str, Callable[[], float]] = {
        "native": clocked(native, "native"),
        "reduce": clocked(reduce, "reduce"),
        "sum": clocked(sum_, "sum"),
        "streaming": lambda: streaming_reduce(spark, path, words.schema, expected),
        "streaming_python": lambda: streaming_reduce(spark, path, words.schema, expected, True),
    }
    if args.floor:
        variants["streaming_floor"] = lambda: streaming_floor(spark, path, words.schema)
        variants["streaming_emit_floor"] = lambda: streaming_emit_floor(
            spark, path, words.schema, expected)
    if args.batch_only:
        variants = {name: run for name, run in variants.items()
                    if name in ("native", "reduce", "sum")}
    if args.streaming_only:
        variants = {name: run for name, run in variants.items()
                    if name == "native" or name.startswith("streaming")}
    runs: dict[str, list[float]] = {name: [] for name in variants}
    # peak RSS of the driver, the JVM and the Python workers, sampled while the variants run
    with RssSampler() as rss:
        # (without --quick) round 0 warms every variant up
        for timed_round in range(args.repeat + warmup):
            for name, run in variants.items():
                with rss.phase(name):
                    seconds = run()
                if timed_round >= warmup:
                    runs[name].append(seconds)
    median = {name: statistics.median(times) for name, times in runs.items()}
    native_s, reduce_s, sum_s = median["native"], median.get("reduce"), median.get("sum")
    streaming_s, python_s = median.get("streaming"), median.get("streaming_python")
    floor_s, emit_s = median.get("streaming_floor"), median.get("streaming_emit_floor")

    result = {
        "native_s": round(native_s, 3),
        **({"reduce_s": round(reduce_s, 3), "sum_s": round(sum_s, 3),
            "reduce_ratio": round(reduce_s / native_s, 3), "sum_ratio": round(sum_s / native_s, 3)}
           if reduce_s is not None and sum_s is not None else {}),
        **_streaming_figures(native_s, reduce_s, streaming_s, python_s),
        # with --floor: applyInPandasWithState alone on the same input, and the rest
        **({"streaming_floor_s": round(floor_s, 3),
            "streaming_floor_ratio": round(floor_s / native_s, 3),
            "streaming_over_floor": round(streaming_s / floor_s, 3)} if floor_s and streaming_s else {}),
        # with --floor: the same, emitting one record per input record (what the jobs emit)
        **({"streaming_emit_floor_s": round(emit_s, 3),
            "streaming_emit_floor_ratio": round(emit_s / native_s, 3),
            "streaming_over_emit_floor": round(streaming_s / emit_s, 3),
            "streaming_python_over_emit_floor": round(python_s / emit_s, 3)}
           if emit_s and streaming_s and python_s else {}),
        "records": args.records, "keys": args.keys,
        # the heap the session got (unset: Spark's default, 1g)
        "driver_memory": spark.sparkContext.getConf().get("spark.driver.memory", "1g"),
        "state_store": args.state_store,
        "batch_only": args.batch_only,
        "streaming_only": args.streaming_only,
        # other work on the machine skews every ratio: report the 1/5/15-minute load with them
        "load": [round(x, 2) for x in os.getloadavg()],
        "runs": {name: [round(t, 2) for t in times] for name, times in runs.items()},
        # MiB; a Python worker's RSS counts pages it shares with the daemon it forked from
        "peak_rss_mib": rss.summary(),
        "peak_rss_mib_by_variant": rss.by_phase(),
    }
    streaming = ("" if streaming_s is None or python_s is None else
                 f", streaming {streaming_s:.2f}s, streaming_python {python_s:.2f}s")
    batch = ("" if reduce_s is None or sum_s is None else
             f", reduce {reduce_s:.2f}s, sum {sum_s:.2f}s")
    print(f"records={args.records} keys={args.keys}: native {native_s:.2f}s{batch}{streaming}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
