"""The README's ``Sessionize`` program in BATCH and STREAMING vs hand-written Spark.

``python -m benchmarks.sessionize [--clicks 4000000] [--users 100000] [--files 8]``
generates ``(user, page, ts)`` clicks once (reused across runs, under ``--data``) as
Parquet: ``--files`` files, each a stretch of the click log in time order, so every
file holds each user's clicks in time order and a user's clicks span the files. A
second copy holds the same files with the rows of each file shuffled.

In one process and one SparkSession it times, each written to Parquet:

* ``baseline``: Spark computing the same session ends by hand: ``lead(ts)`` over
  ``(user ORDER BY ts)``; a click ends a session when the next click of its user is more
  than the gap later, or when it is the user's last;
* ``batch``: the program in BATCH over the ordered files (``to_dataframe()``);
* ``streaming``: the program in STREAMING over the same files as a file stream, run
  available-now (a query writing Parquet);
* ``baseline_shuffled`` and ``batch_shuffled``: both over the shuffled files (BATCH
  sorts each key's records by time, so its result must not change);
* with ``--breakdown``: ``batch_nothing``/``streaming_nothing``, the same job over the
  ordered files with a function that does nothing, and ``batch_timers``/``streaming_timers``
  with one that only registers the program's timer per click (``breakdown_ratios``: each
  over the baseline; each checked to emit nothing).

Every result is checked against the baseline's, and the run fails if one differs. The
file stream is unbounded, so the STREAMING run ends with the watermark of its input
(max event time - 5 s - 1 ms): a session whose timer (last click + gap) is later is still
open and not emitted yet; its check expects exactly the baseline's other session ends.
An untimed round runs every variant once, then ``--repeat`` rounds run every variant in
turn (a slow spell of the machine falls on all of them alike); each median counts (``--quick``:
a small input, one timed run, no warm-up: a smoke run whose figures mean nothing). The
last line is JSON; the ratios are the variants' medians over the baseline's in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np
from pyspark_datastream import (
    Configuration,
    Duration,
    KeyedProcessFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

from benchmarks.common import RssSampler, load, local_session, timed_rounds

__all__ = ["Sessionize", "main"]

GAP = 30_000  # ms without a click that ends a session
OUT_OF_ORDERNESS = 5_000  # ms, the watermark strategy's bound
#: the latest targets (the benchmarks page lists each with its history)
TARGETS = {"batch_ratio": 2.0, "streaming_ratio": 3.0, "batch_shuffled_ratio": 2.5}


class Sessionize(KeyedProcessFunction):
    """The README's program, as printed there: emits ``(user, session_end)``."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        prev = self.last.value()
        if prev is not None and value[2] - prev > 30_000:
            yield (ctx.get_current_key(), prev)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(value[2] + 30_000)

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        if self.last.value() == timestamp - 30_000:
            yield (ctx.get_current_key(), self.last.value())


class DoNothing(KeyedProcessFunction):
    """``--breakdown``: the same job with a function that does nothing per click."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        return None


class TimersOnly(KeyedProcessFunction):
    """``--breakdown``: registers :class:`Sessionize`'s timer per click; no state, no output."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_event_time_timer(value[2] + 30_000)

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        return None


#: ``--breakdown`` variants: name -> (function class, STREAMING)
BREAKDOWN = {
    "batch_nothing": (DoNothing, False), "streaming_nothing": (DoNothing, True),
    "batch_timers": (TimersOnly, False), "streaming_timers": (TimersOnly, True),
}


def generate(path: str, clicks: int, users: int, files: int, seed: int = 7) -> None:
    """``path/ordered`` and ``path/shuffled``: ``files`` Parquet files of ``(user, page, ts)``.

    Each user gets ``clicks / users`` clicks on average (uniformly drawn), starting at a
    random time in the first hour; 80% of the gaps between a user's clicks are 1-25 s
    (the session goes on), 20% are 31 s - 1 h (it ends). Timestamps are distinct per user.
    """
    if os.path.exists(os.path.join(path, "_SUCCESS_GEN")):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    user = np.sort(rng.integers(0, users, size=clicks))
    first = np.ones(clicks, dtype=bool)
    first[1:] = user[1:] != user[:-1]
    long_gap = rng.random(clicks) < 0.2
    gaps = np.where(long_gap, rng.integers(GAP + 1_000, 3_600_000, size=clicks),
                    rng.integers(1_000, 25_000, size=clicks))
    start = rng.integers(0, 3_600_000, size=users)
    gaps[first] = start[user[first]]  # a user's first click is at its start time
    total = np.cumsum(gaps)
    # cumulative sum within each user: subtract the total before the user's first click
    offset = np.maximum.accumulate(np.where(first, total - gaps, 0))
    ts = (total - offset).astype(np.int64)
    order = np.argsort(ts, kind="stable")  # the click log, in time order
    user, ts = user[order], ts[order]
    names = pa.array([f"u{i:07d}" for i in range(users)])
    pages = pa.array([f"/page/{i}" for i in range(50)])
    page = rng.integers(0, 50, size=clicks)
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for kind in ("ordered", "shuffled"):
        os.makedirs(os.path.join(tmp, kind))
    bounds = np.linspace(0, clicks, files + 1).astype(np.int64)
    for f in range(files):
        lo, hi = bounds[f], bounds[f + 1]
        table = pa.table({
            "user": pa.DictionaryArray.from_arrays(pa.array(user[lo:hi]), names).cast(pa.string()),
            "page": pa.DictionaryArray.from_arrays(pa.array(page[lo:hi]), pages).cast(pa.string()),
            "ts": pa.array(ts[lo:hi]),
        })
        pq.write_table(table, os.path.join(tmp, "ordered", f"part-{f:03d}.parquet"))
        shuffled = table.take(pa.array(rng.permutation(hi - lo)))
        pq.write_table(shuffled, os.path.join(tmp, "shuffled", f"part-{f:03d}.parquet"))
    open(os.path.join(tmp, "_SUCCESS_GEN"), "w").close()
    shutil.rmtree(path, ignore_errors=True)
    os.rename(tmp, path)


def sessions(env: StreamExecutionEnvironment, clicks_df: Any,
             function: type[KeyedProcessFunction] = Sessionize) -> Any:
    """The README's pipeline around :class:`Sessionize` (or ``function``), as a DataFrame
    ``(f0 user, f1 end)``."""
    clicks = env.from_dataframe(clicks_df)  # (user, page, ts) tuples
    return (clicks
            .assign_timestamps_and_watermarks(WatermarkStrategy.for_bounded_out_of_orderness(
                Duration.of_seconds(5)).with_timestamp_assigner(lambda c, _: c[2]))
            .key_by(lambda c: c[0])
            .process(function(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
            .to_dataframe())


def baseline(df: Any) -> Any:
    """Session ends by hand: a click whose user's next click is more than GAP later, or none."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    nxt = F.lead("ts").over(Window.partitionBy("user").orderBy("ts"))
    return (df.select("user", "ts", nxt.alias("next"))
            .where(F.col("next").isNull() | (F.col("next") - F.col("ts") > GAP))
            .select("user", F.col("ts").alias("session_end")))


class Bench:
    def __init__(self, spark: Any, data: str, work: str) -> None:
        self.spark = spark
        self.data = data
        self.work = work
        self.schema = spark.read.parquet(os.path.join(data, "ordered")).schema
        self._n = 0

    def out(self) -> str:
        self._n += 1
        return os.path.join(self.work, f"out-{self._n}")

    def files(self, kind: str) -> str:
        return os.path.join(self.data, kind)

    def baseline(self, kind: str) -> str:
        out = self.out()
        baseline(self.spark.read.parquet(self.files(kind))).write.parquet(out)
        return out

    def batch(self, kind: str, function: type[KeyedProcessFunction] = Sessionize) -> str:
        env = StreamExecutionEnvironment.get_execution_environment(spark=self.spark)
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        out = self.out()
        sessions(env, self.spark.read.parquet(self.files(kind)), function).write.parquet(out)
        return out

    def streaming(self, function: type[KeyedProcessFunction] = Sessionize) -> str:
        """A new job (its own checkpoint root) over every file, available-now."""
        out = self.out()
        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", out + "-ckpt")
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=self.spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        stream = self.spark.readStream.schema(self.schema).parquet(self.files("ordered"))
        query = (sessions(env, stream, function).writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", out + "-sink").trigger(availableNow=True).start())
        query.awaitTermination()
        self.micro_batches = len(query.recentProgress)
        return out

    @staticmethod
    def read(out: str) -> Any:
        """A result folder as a pandas frame ``(user, session_end)``, sorted (files named
        ``_*``/``.*``, Spark's markers and the file sink's log, are not read)."""
        import pyarrow.parquet as pq

        df = pq.read_table(out).to_pandas()
        df.columns = ["user", "session_end"]
        return df.sort_values(["user", "session_end"], ignore_index=True)

    def check(self, out: str, expected: Any, what: str) -> None:
        """Fail loudly unless ``out`` holds exactly the rows of ``expected``; then delete it."""
        got = self.read(out)
        if not got.equals(expected):
            merged = got.merge(expected, how="outer", indicator=True)
            extra = merged[merged["_merge"] == "left_only"]
            missing = merged[merged["_merge"] == "right_only"]
            raise SystemExit(
                f"sessionize {what}: result differs from the baseline's: {len(got)} session "
                f"ends vs {len(expected)}; {len(extra)} not in the baseline's (e.g. "
                f"{extra.head(3).values.tolist()}), {len(missing)} missing (e.g. "
                f"{missing.head(3).values.tolist()})")
        self.remove(out)

    def check_empty(self, out: str, what: str) -> None:
        """Fail loudly unless ``out`` holds no row (a ``--breakdown`` job); then delete it."""
        got = self.read(out)
        if len(got):
            raise SystemExit(f"sessionize {what}: emitted {len(got)} rows, none expected "
                             f"(e.g. {got.head(3).values.tolist()})")
        self.remove(out)

    @staticmethod
    def remove(out: str) -> None:
        for path in (out, out + "-ckpt", out + "-sink"):
            shutil.rmtree(path, ignore_errors=True)


def still_open(expected: Any) -> Any:
    """The session ends a STREAMING run over the file stream has not emitted when it ends:
    each user's last click (its last session end) whose timer, ``last + GAP``, is later than
    the run's final watermark (max event time - out-of-orderness - 1 ms). The latest click
    of all is a session end too, so both come from the baseline's result."""
    watermark = int(expected["session_end"].max()) - OUT_OF_ORDERNESS - 1
    last = expected.groupby("user", sort=False)["session_end"].transform("max")
    return (expected["session_end"] == last) & (expected["session_end"] + GAP > watermark)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=4_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--data", default=".bench-data")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed runs per variant, median counts (default 3; --quick: 1)")
    parser.add_argument("--quick", action="store_true",
                        help="20k clicks of 500 users in 4 files, one timed run, no warm-up")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the BATCH and STREAMING job (ordered files) with a "
                             "function doing nothing and with one registering Sessionize's "
                             "timers only (each checked to emit nothing): what the mapping, "
                             "the timers and the rest (state, the function, its output) take")
    args = parser.parse_args(argv)
    if args.quick:
        args.clicks, args.users, args.files = 20_000, 500, 4
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    warmup = not args.quick

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    data = os.path.abspath(os.path.join(args.data, f"sessionize-{args.clicks}-{args.users}-{args.files}"))
    t0 = time.perf_counter()
    generate(data, args.clicks, args.users, args.files)
    generate_s = time.perf_counter() - t0
    spark = local_session()
    work = tempfile.mkdtemp(prefix="sessionize-bench-")
    try:
        with RssSampler() as rss:
            bench = Bench(spark, data, work)
            spark.read.parquet(bench.files("ordered")).count()  # file listing, JVM start
            # the baseline's first result is the expected one; its later runs must equal it
            expected: Any = None
            expected_streaming: Any = None
            open_at_end: Any = None

            def check_baseline(out: str) -> None:
                nonlocal expected, expected_streaming, open_at_end
                if expected is None:
                    expected = bench.read(out)
                    open_at_end = still_open(expected)
                    expected_streaming = expected[~open_at_end].reset_index(drop=True)
                bench.check(out, expected, "baseline (run to run)")

            def against(name: str, streaming: bool = False) -> Any:
                return lambda out: bench.check(
                    out, expected_streaming if streaming else expected, name)

            def breakdown_run(function: type[KeyedProcessFunction], streaming: bool) -> Any:
                return ((lambda: bench.streaming(function)) if streaming
                        else (lambda: bench.batch("ordered", function)))

            breakdown = {
                name: (breakdown_run(function, streaming),
                       lambda out, name=name: bench.check_empty(out, name))
                for name, (function, streaming) in BREAKDOWN.items()} if args.breakdown else {}
            # the baseline runs first in every round, so the others compare with its result
            results = timed_rounds({
                "baseline": (lambda: bench.baseline("ordered"), check_baseline),
                "batch": (lambda: bench.batch("ordered"), against("batch")),
                "streaming": (bench.streaming, against("streaming", streaming=True)),
                "baseline_shuffled": (lambda: bench.baseline("shuffled"),
                                      against("baseline_shuffled")),
                "batch_shuffled": (lambda: bench.batch("shuffled"), against("batch_shuffled")),
                **breakdown,
            }, repeat, warmup, rss)
        med = {name: r[0] for name, r in results.items()}
        ratios = {
            "batch_ratio": med["batch"] / med["baseline"],
            "streaming_ratio": med["streaming"] / med["baseline"],
            "batch_shuffled_ratio": med["batch_shuffled"] / med["baseline_shuffled"],
        }
        result = {
            "benchmark": "sessionize",
            "clicks": args.clicks, "users": args.users, "files": args.files,
            "gap_ms": GAP, "quick": args.quick, "repeat": repeat, "warmup": warmup,
            "session_ends": len(expected),
            "streaming_sessions_open_at_end": int(open_at_end.sum()),
            "streaming_micro_batches": bench.micro_batches,
            **{f"{name}_s": round(s, 3) for name, s in med.items()},
            **{k: round(v, 3) for k, v in ratios.items()},
            "targets": TARGETS,
            "targets_met": {k: ratios[k] <= t for k, t in TARGETS.items()},
            # with --breakdown: each such job over the baseline (ordered files)
            **({"breakdown_ratios": {name: round(med[name] / med["baseline"], 3)
                                     for name in BREAKDOWN}} if args.breakdown else {}),
            # every variant's result was compared with the baseline's (the run fails if one
            # differs); the --breakdown ones were checked to emit nothing
            "checked_equal_to_baseline": sorted(n for n in results
                                                if n != "baseline" and n not in BREAKDOWN),
            "checked_empty": sorted(n for n in results if n in BREAKDOWN),
            "results_equal": True,
            "runs": {name: [round(t, 2) for t in r[1]] for name, r in results.items()},
            "peak_rss_mib": rss.summary(),
            "peak_rss_mib_by_variant": rss.by_phase(),
            "generate_s": round(generate_s, 1),
            "load": load(),
        }
        print(f"clicks={args.clicks} users={args.users}: baseline {med['baseline']:.2f}s, "
              f"BATCH {med['batch']:.2f}s ({ratios['batch_ratio']:.2f}x), STREAMING "
              f"{med['streaming']:.2f}s ({ratios['streaming_ratio']:.2f}x), shuffled files: "
              f"BATCH {med['batch_shuffled']:.2f}s ({ratios['batch_shuffled_ratio']:.2f}x)")
        print(json.dumps(result))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
