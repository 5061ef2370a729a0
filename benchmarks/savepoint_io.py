"""Savepoints as users pay for them: what a BATCH job pays to take one, what a STREAMING job
pays to start from one.

``python -m benchmarks.savepoint_io [--keys 1000000]`` generates, once (under ``--data``),
clicks ``(user, page, ts)`` of ``--keys`` users as Parquet: a history of
``--history-clicks`` clicks per user (``--files`` files, each a stretch of the log in time
order) and, after it, ``--new-clicks`` more per user (4 files of disjoint users, each in time
order). The program is a sessionizer that keeps, per user, the number of sessions so far
(``ValueState`` kept for good) and the last click of the open session (cleared when the
session's timer closes it), and emits ``(user, session_end, session_number)``; its sink is
a Delta table (``sink_to_delta``), so the jobs run through ``env.execute``.

* ``batch_savepoint_ratio``: BATCH over the history with ``env.execute(name,
  savepoint_path=...)`` (the job's state at the end of input written as a savepoint: one
  user's counter per key, plus the open sessions and their pending timers) vs the same
  job without ``savepoint_path`` (target <= 1.3).
* ``streaming_restore_ratio``: STREAMING over the new clicks (a file stream, available-now)
  started from that savepoint (``execution.savepoint.path``) vs the same run started
  empty plus a plain ``spark.read.parquet`` of the savepoint's own Parquet files (every
  row read, ``noop`` sink) (target <= 1.3).

The two variants of each pair alternate, ``--repeat`` rounds after one untimed round; the
medians count. Every run's output is checked against session ends computed here with
pandas from the input files (a BATCH run with a savepoint and a STREAMING run emit only
the sessions whose timer, last click + gap, is not after their final watermark, max event
time - 5 s - 1 ms; the others are open: in the savepoint, or in the checkpoint), and
BATCH history with a savepoint + STREAMING restored from it must equal one run over all
clicks. The run fails loudly if one differs. ``--quick``: 5,000 users, one round, no
warm-up (a smoke run: its figures mean nothing). The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
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
from pyspark_datastream.savepoint import Savepoint

from benchmarks.common import RssSampler, load, local_session, progress

__all__ = ["SessionCounter", "main"]

GAP = 30_000  # ms without a click that ends a session
OUT_OF_ORDERNESS = 5_000  # ms, the watermark strategy's bound
UID = "sessions"
TARGETS = {"batch_savepoint_ratio": 1.3, "streaming_restore_ratio": 1.3}


class SessionCounter(KeyedProcessFunction):
    """Emits ``(user, session_end, session_number)``; keeps each user's session count."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))
        self.count = runtime_context.get_state(ValueStateDescriptor("sessions", Types.LONG()))

    def _close(self, key, end):  # type: ignore[no-untyped-def]
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        return (key, end, n)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        prev = self.last.value()
        if prev is not None and value[2] - prev > GAP:
            yield self._close(ctx.get_current_key(), prev)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(value[2] + GAP)

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        last = self.last.value()
        if last == timestamp - GAP:
            self.last.clear()
            yield self._close(ctx.get_current_key(), last)


def _gaps(rng: np.random.Generator, n: int) -> np.ndarray:
    """80% of the gaps between a user's clicks are 1-25 s (the session goes on), 20% are
    31 s - 1 h (it ends)."""
    return np.where(rng.random(n) < 0.2, rng.integers(GAP + 1_000, 3_600_000, size=n),
                    rng.integers(1_000, 25_000, size=n))


def generate(path: str, keys: int, history: int, new: int, files: int, seed: int = 11) -> None:
    """``path/history`` and ``path/new``, Parquet ``(user string, page string, ts long)``.

    Every user's history starts in the first hour; the new clicks start within half an
    hour after 4 s before the last history click, so none is late for the watermark
    strategy (all are after the history's final watermark)."""
    if os.path.exists(os.path.join(path, "_SUCCESS_GEN")):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    start = rng.integers(0, 3_600_000, size=keys)
    hist = start[:, None] + np.cumsum(
        np.concatenate([np.zeros((keys, 1), np.int64), _gaps(rng, keys * (history - 1)).reshape(
            keys, history - 1)], axis=1), axis=1)
    cut = int(hist.max()) - (OUT_OF_ORDERNESS - 1_000)
    first_new = cut + rng.integers(0, 1_800_000, size=keys)
    fresh = first_new[:, None] + np.cumsum(np.concatenate(
        [np.zeros((keys, 1), np.int64), _gaps(rng, keys * (new - 1)).reshape(keys, new - 1)],
        axis=1), axis=1)
    names = pa.array([f"u{i:07d}" for i in range(keys)])
    pages = pa.array([f"/page/{i}" for i in range(50)])

    def table(user: np.ndarray, ts: np.ndarray) -> Any:
        page = rng.integers(0, 50, size=len(user))
        return pa.table({
            "user": pa.DictionaryArray.from_arrays(pa.array(user), names).cast(pa.string()),
            "page": pa.DictionaryArray.from_arrays(pa.array(page), pages).cast(pa.string()),
            "ts": pa.array(ts.astype(np.int64)),
        })

    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "history"))
    os.makedirs(os.path.join(tmp, "new"))
    users = np.repeat(np.arange(keys), history)
    ts = hist.reshape(-1)
    order = np.argsort(ts, kind="stable")  # the log in time order, cut into stretches
    users, ts = users[order], ts[order]
    bounds = np.linspace(0, len(ts), files + 1).astype(np.int64)
    for f in range(files):
        pq.write_table(table(users[bounds[f]:bounds[f + 1]], ts[bounds[f]:bounds[f + 1]]),
                       os.path.join(tmp, "history", f"part-{f:03d}.parquet"))
    users = np.repeat(np.arange(keys), new)
    ts = fresh.reshape(-1)
    for f in range(4):  # disjoint users per file, each file in time order
        mine = np.flatnonzero(users % 4 == f)
        mine = mine[np.argsort(ts[mine], kind="stable")]
        pq.write_table(table(users[mine], ts[mine]), os.path.join(tmp, "new", f"part-{f:03d}.parquet"))
    open(os.path.join(tmp, "_SUCCESS_GEN"), "w").close()
    shutil.rmtree(path, ignore_errors=True)
    os.rename(tmp, path)


# -- expected results (pandas, from the input files) ------------------------------------------
def _clicks(*folders: str) -> Any:
    import pyarrow.parquet as pq

    frames = [pq.read_table(f, columns=["user", "ts"]).to_pandas() for f in folders]
    return pd.concat(frames, ignore_index=True)


def session_ends(clicks: Any, watermark: int | None) -> Any:
    """``(user, session_end, session_number)`` sorted; with a ``watermark``, a user's last
    session is left out when its timer (last click + GAP) is after the watermark (open)."""
    c = clicks.sort_values(["user", "ts"], ignore_index=True)
    user, ts = c["user"].to_numpy(), c["ts"].to_numpy()
    last_of_user = np.ones(len(c), dtype=bool)
    last_of_user[:-1] = user[1:] != user[:-1]
    end = last_of_user.copy()
    end[:-1] |= (ts[1:] - ts[:-1]) > GAP
    if watermark is not None:
        end &= ~(last_of_user & (ts + GAP > watermark))
    ends = c[end].reset_index(drop=True).rename(columns={"ts": "session_end"})
    ends["session_number"] = ends.groupby("user").cumcount() + 1
    return ends.sort_values(["user", "session_end"], ignore_index=True)


def final_watermark(clicks: Any) -> int:
    return int(clicks["ts"].max()) - OUT_OF_ORDERNESS - 1


def read_delta(path: str) -> Any:
    from deltalake import DeltaTable

    df = DeltaTable(path).to_pyarrow_table().to_pandas()
    df.columns = ["user", "session_end", "session_number"]
    return df


def check(got: Any, expected: Any, what: str) -> None:
    got = got.sort_values(["user", "session_end"], ignore_index=True)
    if not got.equals(expected):
        merged = got.merge(expected, how="outer", indicator=True)
        extra = merged[merged["_merge"] == "left_only"]
        missing = merged[merged["_merge"] == "right_only"]
        raise SystemExit(
            f"savepoint_io {what}: {len(got)} session ends vs {len(expected)} expected; "
            f"{len(extra)} unexpected (e.g. {extra.head(3).values.tolist()}), {len(missing)} "
            f"missing (e.g. {missing.head(3).values.tolist()})")


# -- the jobs -------------------------------------------------------------------------------
def job(env: StreamExecutionEnvironment, clicks_df: Any, out: str) -> None:
    (env.from_dataframe(clicks_df)
     .assign_timestamps_and_watermarks(WatermarkStrategy.for_bounded_out_of_orderness(
         Duration.of_millis(OUT_OF_ORDERNESS)).with_timestamp_assigner(lambda c, _: c[2]))
     .key_by(lambda c: c[0], key_type=Types.STRING())
     .process(SessionCounter(),
              output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
     .uid(UID)
     .sink_to_delta(out))


class Runs:
    def __init__(self, spark: Any, data: str, work: str) -> None:
        self.spark = spark
        self.data = data
        self.work = work
        self.schema = spark.read.parquet(os.path.join(data, "new")).schema
        self._n = 0

    def path(self, what: str) -> str:
        self._n += 1
        return os.path.join(self.work, f"{what}-{self._n}")

    def batch(self, savepoint: str | None) -> str:
        """BATCH over the history into a new Delta table (and a savepoint when given)."""
        out = self.path("batch-out")
        env = StreamExecutionEnvironment.get_execution_environment(spark=self.spark)
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        job(env, self.spark.read.parquet(os.path.join(self.data, "history")), out)
        env.execute("sessions-history", savepoint_path=savepoint)
        return out

    def streaming(self, savepoint: str | None) -> str:
        """A new STREAMING job (its own checkpoint root) over the new clicks, available-now."""
        out = self.path("streaming-out")
        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", out + "-ckpt")
        conf.set_string("execution.streaming.trigger", "available-now")
        if savepoint is not None:
            conf.set_string("execution.savepoint.path", savepoint)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=self.spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        stream = self.spark.readStream.schema(self.schema).parquet(os.path.join(self.data, "new"))
        job(env, stream, out)
        env.execute("sessions-new")
        return out


def _clock(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--history-clicks", type=int, default=4, help="per user")
    parser.add_argument("--new-clicks", type=int, default=2, help="per user")
    parser.add_argument("--files", type=int, default=8, help="history files")
    parser.add_argument("--data", default=".bench-data")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed rounds, median counts (default 3; --quick: 1)")
    parser.add_argument("--quick", action="store_true",
                        help="5,000 users, one round, no warm-up (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.keys, args.files = 5_000, 4
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    warmup = not args.quick

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    data = os.path.abspath(os.path.join(
        args.data, f"savepoint-{args.keys}-{args.history_clicks}-{args.new_clicks}-{args.files}"))
    t0 = time.perf_counter()
    generate(data, args.keys, args.history_clicks, args.new_clicks, args.files)
    generate_s = time.perf_counter() - t0
    spark = local_session()
    work = tempfile.mkdtemp(prefix="savepoint-io-bench-")
    try:
        history = _clicks(os.path.join(data, "history"))
        new = _clicks(os.path.join(data, "new"))
        watermark_a, watermark_ab = final_watermark(history), final_watermark(new)
        want = {
            "batch": session_ends(history, None),
            "batch_savepoint": session_ends(history, watermark_a),
            "streaming_empty": session_ends(new, watermark_ab),
            # BATCH history with a savepoint + STREAMING restored from it == one run over all
            "handoff": session_ends(pd.concat([history, new], ignore_index=True), watermark_ab),
        }
        del history, new
        runs = Runs(spark, data, work)
        times: dict[str, list[float]] = {k: [] for k in (
            "batch", "batch_savepoint", "streaming_empty", "streaming_restore", "plain_read")}
        with RssSampler() as rss:
            spark.read.parquet(os.path.join(data, "history")).count()  # JVM, file listing
            savepoint = batch_out_with_sp = None
            # (a) BATCH without / with a savepoint, alternating
            with rss.phase("batch"):
                for i in range(repeat + warmup):
                    for with_sp in (False, True):
                        sp = runs.path("savepoint") if with_sp else None
                        seconds, out = _clock(lambda sp=sp: runs.batch(sp))
                        got = read_delta(out)
                        check(got, want["batch_savepoint" if with_sp else "batch"],
                              "BATCH with a savepoint" if with_sp else "BATCH")
                        if i >= warmup:
                            times["batch_savepoint" if with_sp else "batch"].append(seconds)
                        progress(f"BATCH {'with' if with_sp else 'without'} a savepoint, "
                                 f"{'warm-up' if i < warmup else f'round {i + 1 - warmup}'}: "
                                 f"{seconds:.2f} s, checked")
                        if with_sp and savepoint is None:
                            savepoint, batch_out_with_sp = sp, got  # the one (b) restores
                        elif sp is not None:
                            shutil.rmtree(sp, ignore_errors=True)
                        shutil.rmtree(out, ignore_errors=True)
            assert savepoint is not None
            # the savepoint's own Parquet files (the Delta table's data files) as plain Parquet
            from deltalake import DeltaTable

            files = DeltaTable(savepoint).file_uris()
            entries = Savepoint.load(savepoint, spark).entries(UID)
            sp_rows = spark.read.parquet(*files).count()
            sp_entries = entries.count()
            sp_keys = entries.select("key").distinct().count()
            sp_states = {r["state_name"]: r["count"]
                         for r in entries.groupBy("state_name").count().collect()}
            sp_bytes = sum(os.path.getsize(f.removeprefix("file://")) for f in files)

            def plain_read() -> None:
                spark.read.parquet(*files).write.format("noop").mode("overwrite").save()

            # (b) STREAMING started empty (+ a plain read of the savepoint) / restored, alternating
            with rss.phase("streaming"):
                for i in range(repeat + warmup):
                    for restore in (False, True):
                        seconds, out = _clock(lambda r=restore: runs.streaming(
                            savepoint if r else None))
                        got = read_delta(out)
                        if restore:
                            check(pd.concat([batch_out_with_sp, got], ignore_index=True),
                                  want["handoff"],
                                  "BATCH with a savepoint + STREAMING restored from it")
                        else:
                            check(got, want["streaming_empty"], "STREAMING started empty")
                        if i >= warmup:
                            times["streaming_restore" if restore else "streaming_empty"].append(
                                seconds)
                        progress(f"STREAMING {'restored' if restore else 'started empty'}, "
                                 f"{'warm-up' if i < warmup else f'round {i + 1 - warmup}'}: "
                                 f"{seconds:.2f} s, checked")
                        shutil.rmtree(out, ignore_errors=True)
                        shutil.rmtree(out + "-ckpt", ignore_errors=True)
                    seconds, _ = _clock(plain_read)
                    if i >= warmup:
                        times["plain_read"].append(seconds)
                    progress(f"plain read of the savepoint's files: {seconds:.2f} s")
        med = {k: statistics.median(v) for k, v in times.items()}
        ratios = {
            "batch_savepoint_ratio": med["batch_savepoint"] / med["batch"],
            "streaming_restore_ratio": med["streaming_restore"] / (
                med["streaming_empty"] + med["plain_read"]),
        }
        result = {
            "benchmark": "savepoint_io",
            "keys": args.keys, "history_clicks": args.keys * args.history_clicks,
            "new_clicks": args.keys * args.new_clicks,
            "quick": args.quick, "repeat": repeat, "warmup": warmup,
            "savepoint_entries": sp_entries, "savepoint_rows": sp_rows,
            "savepoint_keys": sp_keys, "savepoint_entries_by_state": sp_states,
            "savepoint_mib": round(sp_bytes / 2**20, 1),
            "batch_s": round(med["batch"], 3),
            "batch_savepoint_s": round(med["batch_savepoint"], 3),
            "streaming_empty_s": round(med["streaming_empty"], 3),
            "plain_read_savepoint_s": round(med["plain_read"], 3),
            "streaming_restore_s": round(med["streaming_restore"], 3),
            **{k: round(v, 3) for k, v in ratios.items()},
            # what the restore adds to the empty run, over what reading its rows costs
            "restore_cost_over_plain_read": round(
                (med["streaming_restore"] - med["streaming_empty"]) / med["plain_read"], 3),
            "targets": TARGETS,
            "targets_met": {k: ratios[k] <= t for k, t in TARGETS.items()},
            "checked": ["batch", "batch_savepoint", "streaming_empty",
                        "batch_savepoint+streaming_restore"],
            "results_equal": True,
            "runs": {k: [round(t, 2) for t in v] for k, v in times.items()},
            "peak_rss_mib": rss.summary(),
            "peak_rss_mib_by_phase": rss.by_phase(),
            "generate_s": round(generate_s, 1),
            "load": load(),
        }
        print(f"keys={args.keys}: BATCH {med['batch']:.2f}s, with a savepoint "
              f"{med['batch_savepoint']:.2f}s ({ratios['batch_savepoint_ratio']:.2f}x); "
              f"STREAMING empty {med['streaming_empty']:.2f}s + plain read "
              f"{med['plain_read']:.2f}s vs restored {med['streaming_restore']:.2f}s "
              f"({ratios['streaming_restore_ratio']:.2f}x)")
        print(json.dumps(result))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
