"""Throughput of a three-keyed-stage job: this project's BATCH and STREAMING vs two one-query routes.

``python -m benchmarks.routes [--records 4000000] [--users 400000] [--files 8]
[--files-per-batch 1]
[--variants batch,streaming,streaming_one_query,tws_chain,arrow_chain,tws_chain_rowbased]
[--repeat 1] [--restart-check] [--quick] [--alone VARIANT [--no-warmup]]``

The job, over ``(user, ts, value)`` records (``ts``: ms, distinct and ascending in the log
order, so each user's records are in time order; ``--files`` Parquet files, each a stretch of
the log, their modification times in log order), with per-key state in every stage:

1. ``key_by(user)``: a running count ``n`` per user;
2. ``key_by(user % 1000)`` (the bucket): a running sum ``s`` of ``n`` per bucket;
3. ``key_by(user % 1000 % 10)``: a running count ``c`` and a running max ``m`` of ``s``.

Every stage emits one record per input record, ``(user, ts, value, n, s, c, m)`` at the end.
The project's program declares ``ts`` the event time (``for_monotonous_timestamps``): BATCH
sorts each key's records by it, STREAMING carries a watermark and ends each keyed stage's
query with its end-of-input batch.
Variants, each its own run in one ``local[2]`` session, each reading the same files:

* ``batch`` (the baseline): the program in BATCH (``to_dataframe().write.parquet``);
* ``streaming``: the program in STREAMING, available-now, over the files as a file stream
  (``maxFilesPerTrigger`` = ``--files-per-batch``); each keyed stage is its own query, staged
  through Parquet, the last one into a Parquet file sink;
* ``streaming_one_query``: the same on the one-query mapping
  (``execution.streaming.query-mapping=one-query``): one query, each keyed stage a
  ``transformWithStateInPandas`` of the project's per-key-group call;
* ``tws_chain``: plain PySpark, one query: three ``groupBy(kg).transformWithStateInPandas``
  stages, ``kg = pmod(hash(key), 128)``, each call handling one key group's records of the
  micro-batch sorted by ``ts`` with its keys' states in one pickled ``{key: state}`` blob in a
  ValueState (read once and written once per call), RocksDB state store provider (set for
  that query only), chained through ``eventTimeColumnName`` (watermark 0 s on ``ts``); a
  Parquet file sink;
* ``tws_chain_rowbased``: the same with Spark 4.1's Row-based ``transformWithState``;
* ``arrow_chain``: plain PySpark, one query, no Spark state: each stage is ``repartition(P,
  kg)`` + ``mapInArrow``; a task sorts its partition by ``(kg, ts)`` and, per key group,
  loads the group's pickled ``{key: state}`` from a local folder (``<stage>/<kg>/<batch>``:
  the newest version older than the micro-batch's id, the task-local property
  ``streaming.sql.batchId``, so a retried micro-batch re-reads the previous version), runs
  its records and writes the version of this micro-batch (temp file + rename; versions older
  than the previous one are deleted; a directory listing per key group and micro-batch here,
  a pointer file or manifest on object storage). No event time, watermark or timer: nothing
  runs without new data. Each task adds up the state bytes it read and wrote in
  a small file; ``arrow_state_read_bytes_per_batch`` sums them per micro-batch: on a cluster
  nothing pins a partition to an executor, so every micro-batch reads every state it touches
  from storage. What exactly-once would additionally need: the state folder on shared,
  durable storage with atomic rename or put-if-absent; versions garbage-collected only behind
  Spark's committed batches (``minBatchesToRetain``), and a restart from an older checkpoint
  purging newer versions; a deterministic order within a micro-batch (``ts`` here; a real
  stage needs a total order such as (batch, upstream partition, row)); an idempotent sink
  (the file sink here is); and a savepoint/rescale story for the key-group files.
  ``--restart-check`` (and ``--quick`` unless ``--no-restart-check``), untimed: the query fails in stage 3 of a micro-batch
  after stages 1 and 2 wrote that batch's versions, restarts from its checkpoint, and its
  output is checked (a sink's files are read from its ``_spark_metadata`` log: a failed
  batch leaves files no reader may count).

Both prototypes do what a real keyed stage must do, no more: group records by key group,
restore each key's record order within the micro-batch (sort by ``ts``), read and write each
touched key group's state once per micro-batch, call Python per record on a dict. They do not
run a user's function through state objects, timers, side outputs, pickled records or
serializer choices (this project's stages do).

**Check** (independent, pandas, over the input): exactly one output row per input record
with its ``value``; ``n`` equals the record's rank in its user's time order (stage 1 kept each
user's order across micro-batches); per bucket, rows sorted by ``s`` have distinct ``s`` whose
successive differences are each row's ``n`` (a running sum in some order) and each user's
``n`` ascends in that order (its records kept their order); per stage-3 key, ``c`` is a
permutation of ``1..count`` (a running count), each bucket's ``c`` ascends with its ``s``
(order kept), and ``m`` equals the running max of ``s`` in ``c`` order. Any order in which
each key's records keep their order passes; a wrong result fails the run loudly.

Each variant runs once per round (``--repeat`` rounds, median; an untimed round first unless
``--quick``: 20k records of 2,000 users in 4 files unless ``--files`` says, one run, figures
that mean nothing). The last line is JSON: seconds, ratio over ``batch``, micro-batches
(counted by a query listener over every query of the run), rows out, checked. ``--alone VARIANT`` runs that variant only,
with no BATCH baseline (no ratio), and adds ``peak_rss_mib``: each process's peak RSS sampled
while it ran (``benchmarks.memory`` runs ``batch`` and ``streaming_one_query`` each alone, so
no Python worker carries memory over from the other mode).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext
from typing import Any

import numpy as np
import pandas as pd
from pyspark_datastream import (
    Configuration,
    KeyedProcessFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

from benchmarks.common import RssSampler, load, local_session, progress, timed_rounds

__all__ = ["main", "expected_ranks", "check"]

BUCKETS = 1000  # stage 2 keys
KEYS3 = 10  # stage 3 keys: bucket % KEYS3
GROUPS = 128  # key groups of every stage (the project's default max parallelism)
COLUMNS = ["user", "ts", "value", "n", "s", "c", "m"]
VARIANTS = ("batch", "streaming", "streaming_one_query", "tws_chain", "arrow_chain",
            "tws_chain_rowbased")
_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"


# -- the input -------------------------------------------------------------------------------
def generate(path: str, records: int, users: int, files: int, seed: int = 11) -> None:
    """``files`` Parquet files of ``(user, ts, value)`` longs under ``path``, a stretch of the
    log each (``ts`` ascending, 10 ms apart), modification times in log order."""
    if os.path.exists(os.path.join(path, "_SUCCESS_GEN")):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    user = rng.integers(0, users, size=records, dtype=np.int64)
    ts = 1_700_000_000_000 + 10 * np.arange(records, dtype=np.int64)
    value = rng.integers(0, 1_000_000, size=records, dtype=np.int64)
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    bounds = np.linspace(0, records, files + 1).astype(np.int64)
    now = time.time() - 3600
    for f in range(files):
        lo, hi = bounds[f], bounds[f + 1]
        name = os.path.join(tmp, f"part-{f:03d}.parquet")
        pq.write_table(pa.table({"user": user[lo:hi], "ts": ts[lo:hi], "value": value[lo:hi]}), name)
        os.utime(name, (now + f, now + f))  # the file source takes files oldest first
    open(os.path.join(tmp, "_SUCCESS_GEN"), "w").close()
    shutil.rmtree(path, ignore_errors=True)
    os.rename(tmp, path)


# -- the check (independent of every variant) ------------------------------------------------
def expected_ranks(source: pd.DataFrame) -> pd.DataFrame:
    """``(user, ts, value, n_expected)``: each record's rank in its user's time order."""
    src = source.sort_values("ts", kind="stable", ignore_index=True)
    src["n_expected"] = src.groupby("user", sort=False).cumcount() + 1
    return src


def check(got: pd.DataFrame, expected: pd.DataFrame, what: str) -> None:
    """Raise SystemExit unless ``got`` (COLUMNS) is a correct output (see the module doc)."""
    def fail(why: str, rows: Any = None) -> None:
        sample = "" if rows is None else f" (e.g. {rows.head(3).to_dict('records')})"
        raise SystemExit(f"routes {what}: wrong result: {why}{sample}")

    if len(got) != len(expected):
        fail(f"{len(got)} rows out for {len(expected)} records")
    merged = expected.merge(got, on=["user", "ts"], how="left", suffixes=("", "_got"),
                            validate="one_to_one")
    if merged["n"].isna().any():
        fail("records missing from the output", merged[merged["n"].isna()])
    bad = merged[(merged["value"] != merged["value_got"]) | (merged["n"] != merged["n_expected"])]
    if len(bad):
        fail("stage 1: value or running count per user differs", bad)
    df = merged.drop(columns=["value_got", "n_expected"]).astype("int64")
    df["bucket"] = df["user"] % BUCKETS
    df["k3"] = df["bucket"] % KEYS3
    df = df.sort_values(["bucket", "s"], kind="stable", ignore_index=True)
    prev = df.groupby("bucket", sort=False)["s"].shift(1).fillna(0).astype("int64")
    bad = df[df["s"] - prev != df["n"]]
    if len(bad):
        fail("stage 2: per bucket, successive sums do not differ by the record's n", bad)
    if (df.groupby(["bucket", "user"], sort=False)["n"].diff().dropna() <= 0).any():
        fail("stage 2: a user's records reached its bucket out of order")
    if (df.groupby("bucket", sort=False)["c"].diff().dropna() <= 0).any():
        fail("stage 3: a bucket's records reached their key out of order")
    df = df.sort_values(["k3", "c"], kind="stable", ignore_index=True)
    rank = df.groupby("k3", sort=False).cumcount() + 1
    bad = df[df["c"] != rank]
    if len(bad):
        fail("stage 3: the running counts per key are not 1..count", bad)
    bad = df[df["m"] != df.groupby("k3", sort=False)["s"].cummax()]
    if len(bad):
        fail("stage 3: m is not the running max of s in the key's processing order", bad)


def sink_files(out: str) -> list[str] | None:
    """The files a streaming file sink at ``out`` committed (its ``_spark_metadata`` log: the
    latest ``<n>.compact`` and the batches after it), or None when ``out`` has no such log.
    A failed micro-batch can leave files the log does not list: they are no output."""
    from urllib.parse import unquote, urlparse

    log = os.path.join(out, "_spark_metadata")
    if not os.path.isdir(log):
        return None
    names = set(os.listdir(log))
    compacts = [int(n[:-8]) for n in names if n.endswith(".compact") and n[:-8].isdigit()]
    start = max(compacts, default=-1)
    logs = ([f"{start}.compact"] if compacts else []) + [
        n for n in sorted((n for n in names if n.isdigit()), key=int) if int(n) > start]
    paths: set[str] = set()
    for name in logs:
        with open(os.path.join(log, name)) as f:
            for line in f.read().splitlines()[1:]:  # the first line is the log's version
                entry = json.loads(line)
                (paths.add if entry["action"] == "add" else paths.discard)(entry["path"])
    return sorted(unquote(urlparse(p).path) for p in paths)


def read_out(out: str) -> pd.DataFrame:
    """A result folder as COLUMNS: a streaming sink's committed files, else every Parquet
    file under it (``_*``/``.*`` skipped)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sink_files(out)
    table = pq.read_table(out) if files is None else pa.concat_tables(
        [pq.read_table(f) for f in files])
    df = table.to_pandas()
    if "f0" in df.columns:  # the project's tuples
        df.columns = COLUMNS
    return df[COLUMNS].astype("int64")


# -- the project's program -------------------------------------------------------------------
class RunningCount(KeyedProcessFunction):
    """Stage 1: ``(user, ts, value)`` -> ``(user, ts, value, n)``."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        n = (self.n.value() or 0) + 1
        self.n.update(n)
        yield (value[0], value[1], value[2], n)


class BucketSum(KeyedProcessFunction):
    """Stage 2: ``+ s``, the running sum of ``n`` per bucket."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.s = runtime_context.get_state(ValueStateDescriptor("s", Types.LONG()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        s = (self.s.value() or 0) + value[3]
        self.s.update(s)
        yield (*value, s)


class CountMax(KeyedProcessFunction):
    """Stage 3: ``+ c, m``, the running count and max of ``s`` per key."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.cm = runtime_context.get_state(
            ValueStateDescriptor("cm", Types.TUPLE([Types.LONG(), Types.LONG()])))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        c, m = self.cm.value() or (0, 0)
        c, m = c + 1, max(m, value[4])
        self.cm.update((c, m))
        yield (*value, c, m)


def program(env: StreamExecutionEnvironment, df: Any) -> Any:
    """The three keyed stages over ``df`` ``(user, ts, value)``, as a DataFrame ``f0..f6``."""
    def longs(n: int) -> Any:
        return Types.TUPLE([Types.LONG()] * n)

    return (env.from_dataframe(df)
            .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps()
                                              .with_timestamp_assigner(lambda r, _: r[1]))
            .key_by(lambda r: r[0], key_type=Types.LONG())
            .process(RunningCount(), output_type=longs(4)).uid("count")
            .key_by(lambda r: r[0] % BUCKETS, key_type=Types.LONG())
            .process(BucketSum(), output_type=longs(5)).uid("bucket-sum")
            .key_by(lambda r: r[0] % BUCKETS % KEYS3, key_type=Types.LONG())
            .process(CountMax(), output_type=longs(7)).uid("count-max")
            .to_dataframe())


# -- the prototypes' per-key-group work (shared by both routes) ------------------------------
def stage_key(stage: int, user: Any) -> Any:
    """The key of ``stage`` from the user column (a Spark Column: the key-group column)."""
    return user if stage == 1 else user % BUCKETS if stage == 2 else user % BUCKETS % KEYS3


def run_records(stage: int, users: list, xs: list, state: dict) -> dict[str, list]:
    """Records of one key group in their order through ``stage``: one Python step per record
    on ``state`` (``{key: state}``, updated). ``xs``: the field the stage reads (stage 2:
    ``n``, stage 3: ``s``). Returns the stage's output columns."""
    keys = (users if stage == 1 else [u % BUCKETS for u in users] if stage == 2
            else [u % BUCKETS % KEYS3 for u in users])
    if stage == 1:
        n = []
        for k in keys:
            state[k] = v = state.get(k, 0) + 1
            n.append(v)
        return {"n": n}
    if stage == 2:
        s = []
        for k, x in zip(keys, xs):
            state[k] = v = state.get(k, 0) + x
            s.append(v)
        return {"s": s}
    c, m = [], []
    for k, x in zip(keys, xs):
        cnt, mx = state.get(k, (0, 0))
        state[k] = cm = (cnt + 1, max(mx, x))
        c.append(cm[0])
        m.append(cm[1])
    return {"c": c, "m": m}


#: the field each stage reads besides the key
_READS = {1: "user", 2: "n", 3: "s"}


def run_group(stage: int, pdf: pd.DataFrame, state: dict) -> pd.DataFrame:
    """One key group's records of a micro-batch (any order) through ``stage``, sorted by
    ``ts`` first (each key's order); returns the frame with the stage's columns set."""
    pdf = pdf.sort_values("ts", kind="stable", ignore_index=True)
    out = run_records(stage, pdf["user"].tolist(), pdf[_READS[stage]].tolist(), state)
    for name, column in out.items():
        pdf[name] = column
    return pdf


def run_rows(stage: int, rows: Any, state: dict) -> Any:
    """:func:`run_group` on Rows (the Row-based ``transformWithState``); yields Rows."""
    from pyspark.sql import Row

    rows = sorted(rows, key=lambda r: r.ts)
    out = run_records(stage, [r.user for r in rows], [r[_READS[stage]] for r in rows], state)
    names = list(out)
    for i, r in enumerate(rows):
        d = r.asDict()
        for name in names:
            d[name] = out[name][i]
        yield Row(**d)


def _source(spark: Any, files: str, schema: Any, per_batch: int) -> Any:
    from pyspark.sql import functions as F

    zero = F.lit(0).cast("long")
    return (spark.readStream.schema(schema).option("maxFilesPerTrigger", per_batch).parquet(files)
            .select("user", "ts", "value", *(zero.alias(c) for c in "nscm")))


def _with_kg(df: Any, stage: int) -> Any:
    from pyspark.sql import functions as F

    kg = F.pmod(F.hash(stage_key(stage, F.col("user"))), F.lit(GROUPS)).cast("long")
    return df.withColumn("kg", kg)


def _tws_processor(stage: int, rowbased: bool) -> Any:
    """A transformWithState(InPandas) processor: a key group's records through ``stage``,
    its ``{key: state}`` pickled in one ValueState, read and written once per call."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class Stage(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.blob = handle.getValueState("blob", StructType([StructField("b", BinaryType())]))

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            state = pickle.loads(self.blob.get()[0]) if self.blob.exists() else {}
            if rowbased:
                out = list(run_rows(stage, rows, state))
            else:
                out = [run_group(stage, pd.concat(list(rows), ignore_index=True), state)]
            self.blob.update((pickle.dumps(state),))
            yield from out

        def close(self) -> None:
            pass

    return Stage()


def _arrow_stage(stage: int, root: str) -> Any:
    """A mapInArrow function: a partition's key groups through ``stage``, each key group's
    state in versioned files under ``root/state``, bytes counted under ``root/io``."""
    def versions(folder: str) -> list[int]:
        try:
            return sorted(int(n) for n in os.listdir(folder) if n.isdigit())
        except FileNotFoundError:
            return []

    def run(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        batch_id = int(ctx.getLocalProperty("streaming.sql.batchId"))
        got = list(batches)
        if not got or not sum(b.num_rows for b in got):
            return
        pdf = pa.Table.from_batches(got).to_pandas()
        read = written = 0
        outs = []
        for kg, group in pdf.groupby("kg", sort=False):
            folder = os.path.join(root, "state", str(stage), str(kg))
            older = [v for v in versions(folder) if v < batch_id]
            state: dict = {}
            if older:
                with open(os.path.join(folder, str(older[-1])), "rb") as f:
                    data = f.read()
                read += len(data)
                state = pickle.loads(data)
            outs.append(run_group(stage, group, state))
            data = pickle.dumps(state)
            os.makedirs(folder, exist_ok=True)
            tmp = os.path.join(folder, f".{batch_id}.{ctx.taskAttemptId()}")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(folder, str(batch_id)))
            written += len(data)
            for v in older[:-1]:  # keep the previous version for a retry of this batch
                os.remove(os.path.join(folder, str(v)))
        io_dir = os.path.join(root, "io", str(batch_id))
        os.makedirs(io_dir, exist_ok=True)
        with open(os.path.join(io_dir, f"{stage}-{ctx.partitionId()}.json"), "w") as f:
            json.dump({"read": read, "written": written}, f)  # a retry overwrites its attempt
        yield pa.RecordBatch.from_pandas(pd.concat(outs, ignore_index=True), preserve_index=False)

    return run


def _failing_once(function: Any, batch_id: int, marker: str) -> Any:
    """``function`` raising in micro-batch ``batch_id`` until ``marker`` exists (it creates it)."""
    def run(batches: Any) -> Any:
        from pyspark import TaskContext

        if (int(TaskContext.get().getLocalProperty("streaming.sql.batchId")) == batch_id
                and not os.path.exists(marker)):
            open(marker, "w").close()
            raise RuntimeError(f"injected failure in micro-batch {batch_id}")
        yield from function(batches)

    return run


class BatchCounter:
    """Counts the micro-batches of every streaming query (a StreamingQueryListener)."""

    def __init__(self, spark: Any) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        seen: set = set()
        self.seen = seen

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                progress = event.progress
                seen.add((str(progress.id), progress.name, progress.batchId))

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        spark.streams.addListener(Listener())

    def since(self, before: set) -> dict[str, int]:
        """The micro-batches of each query (by name) not in ``before`` (a copy of ``seen``
        taken earlier), once the listener's events have settled (they arrive asynchronously)."""
        last, deadline = -1, time.time() + 10
        while len(self.seen) != last and time.time() < deadline:
            last = len(self.seen)
            time.sleep(1.0)
        counts: dict[str, int] = {}
        for _, name, _ in self.seen - before:
            counts[str(name)] = counts.get(str(name), 0) + 1
        return counts


# -- the variants ----------------------------------------------------------------------------
class Bench:
    def __init__(self, spark: Any, files: str, work: str, per_batch: int) -> None:
        self.spark = spark
        self.files = files
        self.work = work
        self.per_batch = per_batch
        self.schema = spark.read.parquet(files).schema
        self.counter = BatchCounter(spark)
        self.micro_batches: dict[str, dict[str, int]] = {}
        self.state_io: dict[str, Any] = {}
        self.restart: dict[str, int] = {}
        self._n = 0

    def folder(self, name: str) -> str:
        self._n += 1
        path = os.path.join(self.work, f"{name}-{self._n}")
        os.makedirs(path)
        return path

    def batch(self) -> str:
        env = StreamExecutionEnvironment.get_execution_environment(spark=self.spark)
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        out = os.path.join(self.folder("batch"), "out")
        program(env, self.spark.read.parquet(self.files)).write.parquet(out)
        return out

    def _sink(self, name: str, df: Any, work: str) -> str:
        out = os.path.join(work, "out")
        query = (df.writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", os.path.join(work, "sink"))
                 .trigger(availableNow=True).queryName(f"routes-{name}").start())
        query.awaitTermination()
        return out

    def streaming(self, mapping: str = "per-stage") -> str:
        name = "streaming" if mapping == "per-stage" else "streaming_one_query"
        work = self.folder(name)
        mark = self.counter.seen.copy()
        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", os.path.join(work, "ckpt"))
        conf.set_string("execution.streaming.query-mapping", mapping)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=self.spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        stream = (self.spark.readStream.schema(self.schema)
                  .option("maxFilesPerTrigger", self.per_batch).parquet(self.files))
        out = self._sink(name, program(env, stream), work)
        self._marks = (name, mark)
        return out

    def streaming_one_query(self) -> str:
        return self.streaming("one-query")

    def tws_chain(self, rowbased: bool = False) -> str:
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType, StructField, StructType, TimestampType

        name = "tws_chain_rowbased" if rowbased else "tws_chain"
        work = self.folder(name)
        mark = self.counter.seen.copy()
        fields = [StructField(c, LongType()) for c in ("kg", *COLUMNS)]
        schema = StructType([*fields, StructField("event_time", TimestampType())])
        df = (_source(self.spark, self.files, self.schema, self.per_batch)
              .withColumn("event_time", F.timestamp_millis("ts"))
              .withWatermark("event_time", "0 seconds"))
        for stage in (1, 2, 3):
            grouped = _with_kg(df, stage).select(*schema.fieldNames()).groupBy("kg")
            tws = grouped.transformWithState if rowbased else grouped.transformWithStateInPandas
            df = tws(_tws_processor(stage, rowbased), schema, "Append", "None",
                     eventTimeColumnName="event_time")
        previous = self.spark.conf.get(_PROVIDER, None)
        self.spark.conf.set(_PROVIDER, _ROCKSDB)  # needed by transformWithState; per checkpoint
        try:
            out = self._sink(name, df.select(*COLUMNS), work)
        finally:
            if previous is None:
                self.spark.conf.unset(_PROVIDER)
            else:
                self.spark.conf.set(_PROVIDER, previous)
        self._marks = (name, mark)
        return out

    def arrow_chain(self) -> str:
        work = self.folder("arrow_chain")
        mark = self.counter.seen.copy()
        out = self._sink("arrow_chain", self._arrow_query(work), work)
        per_batch: dict[str, list[int]] = {}
        for name in glob.glob(os.path.join(work, "io", "*", "*.json")):
            with open(name) as f:
                io = json.load(f)
            sums = per_batch.setdefault(os.path.basename(os.path.dirname(name)), [0, 0])
            sums[0] += io["read"]
            sums[1] += io["written"]
        self.state_io = {
            "arrow_state_read_bytes_per_batch": [per_batch[b][0] for b in sorted(per_batch, key=int)],
            "arrow_state_written_bytes_per_batch": [per_batch[b][1]
                                                    for b in sorted(per_batch, key=int)]}
        self._marks = ("arrow_chain", mark)
        return out

    def _arrow_query(self, work: str, fail_in_batch: int | None = None) -> Any:
        partitions = int(self.spark.conf.get("spark.sql.shuffle.partitions"))
        df = _source(self.spark, self.files, self.schema, self.per_batch)
        for stage in (1, 2, 3):
            staged = _with_kg(df, stage).select("kg", *COLUMNS).repartition(partitions, "kg")
            function = _arrow_stage(stage, work)
            if stage == 3 and fail_in_batch is not None:
                function = _failing_once(function, fail_in_batch, os.path.join(work, "failed"))
            df = staged.mapInArrow(function, staged.schema)
        return df.select(*COLUMNS)

    def arrow_restart(self, fail_in_batch: int = 2) -> str:
        """``arrow_chain`` failing in stage 3 of micro-batch ``fail_in_batch`` (after stages
        1 and 2 wrote that batch's state versions), then restarted from its checkpoint: the
        rerun batch must read the versions before it (the run's output is then checked)."""
        from pyspark.errors import StreamingQueryException

        work = self.folder("arrow_restart")
        try:
            self._sink("arrow_restart", self._arrow_query(work, fail_in_batch), work)
        except StreamingQueryException as e:
            if "injected failure" not in str(e):
                raise
        else:
            raise SystemExit("routes arrow_restart: the injected failure did not fail the query")
        written = glob.glob(os.path.join(work, "state", "1", "*", str(fail_in_batch)))
        if not written:
            raise SystemExit(f"routes arrow_restart: stage 1 wrote no version {fail_in_batch} "
                             "before the failure: nothing to re-read around")
        self.restart = {"failed_in_batch": fail_in_batch,
                        "stage1_versions_written_before_failure": len(written)}
        return self._sink("arrow_restart", self._arrow_query(work), work)

    def count_batches(self) -> None:
        """After a streaming run (outside its timing): its micro-batches, all queries."""
        name, mark = self._marks
        self.micro_batches[name] = self.counter.since(mark)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--users", type=int, default=400_000)
    parser.add_argument("--files", type=int, help="input files (default 8; 4 with --quick)")
    parser.add_argument("--files-per-batch", type=int, default=1,
                        help="maxFilesPerTrigger of every streaming variant's file stream")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated subset of " + ",".join(VARIANTS) + " (batch always runs)")
    parser.add_argument("--data", default=".bench-data")
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds (median counts)")
    parser.add_argument("--quick", action="store_true",
                        help="20k records of 2,000 users in 4 files, one run, no warm-up; "
                             "with the restart check")
    parser.add_argument("--alone", choices=VARIANTS,
                        help="run this variant only (no BATCH baseline), sampling peak RSS")
    parser.add_argument("--no-warmup", action="store_true", help="no untimed round first")
    parser.add_argument("--restart-check", action="store_true",
                        help="after the timed rounds, untimed: arrow_chain failed mid "
                             "micro-batch and restarted from its checkpoint, then checked")
    parser.add_argument("--no-restart-check", action="store_true",
                        help="with --quick: leave the restart check out (the suite runs "
                             "the one-query chain only; make bench-quick runs the check)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.users = 20_000, 2_000
    args.files = args.files or (4 if args.quick else 8)
    variants = ["batch", *(v for v in args.variants.split(",") if v and v != "batch")]
    if args.alone:
        variants = [args.alone]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"--variants: unknown {unknown}; known: {', '.join(VARIANTS)}")
    from pyspark.sql.group import GroupedData

    for variant, method in (("tws_chain", "transformWithStateInPandas"),
                            ("streaming_one_query", "transformWithStateInPandas"),
                            ("tws_chain_rowbased", "transformWithState")):
        if variant in variants and not hasattr(GroupedData, method):  # Spark 4.0 / 4.1
            parser.error(f"--variants: {variant} needs GroupedData.{method}, which this "
                         f"PySpark does not have; leave it out")
    warmup = not (args.quick or args.no_warmup)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    data = os.path.abspath(os.path.join(args.data, f"routes-{args.records}-{args.users}-{args.files}"))
    generate(data, args.records, args.users, args.files)
    spark = local_session()
    work = tempfile.mkdtemp(prefix="routes-bench-")
    try:
        bench = Bench(spark, data, work, args.files_per_batch)
        expected = expected_ranks(pd.read_parquet(data))
        rows_out: dict[str, int] = {}

        def checker(name: str) -> Any:
            def run_check(out: str) -> None:
                if name not in ("batch", "arrow_restart"):
                    bench.count_batches()
                got = read_out(out)
                check(got, expected, name)
                rows_out[name] = len(got)
                shutil.rmtree(os.path.dirname(out), ignore_errors=True)
            return run_check

        runs = {"batch": bench.batch, "streaming": bench.streaming,
                "streaming_one_query": bench.streaming_one_query, "tws_chain": bench.tws_chain,
                "tws_chain_rowbased": lambda: bench.tws_chain(rowbased=True),
                "arrow_chain": bench.arrow_chain}
        progress(f"routes: {args.records} records, {args.users} users, {args.files} files, "
                 f"variants {', '.join(variants)}")
        with RssSampler() if args.alone else nullcontext() as rss:
            results = timed_rounds({v: (runs[v], checker(v)) for v in variants}, args.repeat,
                                   warmup, rss=rss)
        med = {name: r[0] for name, r in results.items()}
        base = med.get("batch")
        if ((args.quick and not args.no_restart_check) or args.restart_check) and not args.alone:
            batches = -(-args.files // args.files_per_batch)
            progress("arrow_restart: a failure is injected now; Spark's ERROR lines about "
                     "'injected failure' are expected")
            out = bench.arrow_restart(fail_in_batch=min(2, batches - 1))
            checker("arrow_restart")(out)
            progress(f"arrow_restart: {bench.restart}, restarted, checked")
        result = {
            "benchmark": "routes",
            "records": args.records, "users": args.users, "files": args.files,
            "files_per_batch": args.files_per_batch, "buckets": BUCKETS, "stage3_keys": KEYS3,
            "key_groups": GROUPS, "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
            "quick": args.quick, "repeat": args.repeat, "warmup": warmup,
            "variants": {name: {
                "seconds": round(med[name], 3),
                "ratio_over_batch": round(med[name] / base, 3) if base else None,
                "micro_batches": (sum(bench.micro_batches[name].values())
                                  if name in bench.micro_batches else None),
                "micro_batches_by_query": bench.micro_batches.get(name),
                "rows_out": rows_out[name],
                "checked": True,
            } for name in variants},
            **bench.state_io,
            # --restart-check: arrow_chain failed in that micro-batch, restarted, checked
            **({"arrow_restart": {**bench.restart, "rows_out": rows_out["arrow_restart"],
                                  "checked": True}} if bench.restart else {}),
            "runs": {name: [round(t, 2) for t in r[1]] for name, r in results.items()},
            # --alone: MiB; a Python worker's RSS counts pages it shares with the daemon
            **({"peak_rss_mib": rss.summary()} if rss is not None else {}),
            "load": load(),
        }
        print(", ".join(f"{n} {med[n]:.2f}s" + (f" ({med[n] / base:.2f}x)" if base else "")
                        for n in variants))
        print(json.dumps(result))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
