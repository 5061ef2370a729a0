"""End-to-end latency of STREAMING jobs under a processing-time trigger, against Spark's floor.

``python -m benchmarks.latency [--rate 1000] [--keys 100] [--trigger "1 second"] [--warmup 15]
[--seconds 60] [--drain 15] [--variants floor,native,stages1,stages2,stages3,chain1,chain2,chain3,oq1,oq2,oq3,oqwm2]
[--find-max-rate [--max-rate 256000]] [--tolerate-reordering] [--quick]``

Every variant is its own streaming run, one after another in one ``local[2]`` session, over
Spark's ``rate`` source at ``--rate`` rows/s (columns ``k = value % --keys``, ``created_ms``
= the rate row's ``timestamp`` in epoch ms, ``value``), under the same processing-time
trigger, each committing every micro-batch as a version of its own Delta table:

* ``floor``: ``groupBy("k").applyInPandasWithState`` with a function returning its input
  rows unchanged and never touching its state (``NoTimeout``, append mode): what Spark's
  own machinery for this project's mapping costs. Sink: ``foreachBatch`` appending each
  micro-batch with delta-rs (``write_deltalake(path, batch.toArrow(), mode="append")``).
* ``native``: a Spark streaming aggregation in update mode, ``groupBy("k").agg(count,
  sum(created_ms), max(created_ms), max(value))``, same ``foreachBatch`` sink.
* ``stages1``: this project, STREAMING: ``env.from_dataframe(rate)`` -> ``map`` to
  ``(k, 1, created_ms, value)`` -> ``key_by(k)`` -> ``reduce`` (a running count keeping the
  newest record's ``created_ms`` and ``value``: one result per record, Flink semantics) ->
  ``sink_to_delta``; started with ``env.execute_async`` (``execution.streaming.trigger =
  processing-time=<--trigger>``, a checkpoint root in a temp folder) and canceled at the end.
* ``stages2``/``stages3``: as ``stages1``, then one/two more ``key_by(k)`` +
  ``KeyedProcessFunction`` stages passing each record on unchanged (each keyed stage runs as
  its own query, joined by the job's staging tables).
* ``chain1``/``chain2``/``chain3``: Spark's floor for one, two and three keyed stages chained
  in **one** query, which ``applyInPandasWithState`` cannot do: ``transformWithStateInPandas``
  stages (RocksDB state store provider, set for these queries only) grouped by key group
  (``pmod(hash(k), 128)``), each reading and writing one pickled ``{key: count}`` blob per
  key group per call as the project keeps a key group's state, the first a running count,
  the others passing records on, chained through ``eventTimeColumnName`` (watermark 0 s on
  the records' creation time); same sink, same checks as ``stages*``.

**Latency** of an output row = the commit timestamp of the Delta version that added its
file (``commitInfo.timestamp`` in ``_delta_log/<version>.json``, ms; read here from the log
and the Parquet files, not through delta-rs' reader; if a version had none the log file's
mtime would be used and counted in ``commit_times_from_mtime``) - the row's ``created_ms``.
Spark's rate source stamps row ``v`` with ``t0 + floor(v * 1000 / rate)`` (``t0``: the
stream's start) and releases a second's rows only once that second has passed, so every
variant's figure includes that wait (0.5 s on average): it is part of the floor. For
``native``, a row is a key's running totals after a micro-batch; it stands for the records
it newly counts (its count and sum minus the key's previous row's), and its latency is its
commit time - the **mean** ``created_ms`` of those records (their sum difference / count
difference), counted once per such record (count-weighted): per-record latencies within a
micro-batch are not recoverable from an aggregate.

**Phase.** Spark's processing-time trigger ticks at multiples of the interval since the epoch,
while the rate source's seconds start at ``t0``, an arbitrary millisecond: a record released
at ``t0 + (value // rate + 1) * 1000`` waits for the next tick, and with a 1 s interval that
*tick wait* is the same for every record of a run, ``(1000 - t0 % 1000) % 1000`` ms, but
anywhere from 0 to 1 s from one run to the next. Each run's raw figures carry it
(``<variant>_tick_wait_ms``, the median over the window's records). ``*_phase_neutral``
figures replace each record's tick wait with its mean over a uniformly random phase,
interval / 2 (for ``native``: each row's mean tick wait over the records it stands for); the
rest of the latency (from the tick to the commit) does not depend on the phase. The ratios
are given both ways.

Only records created in the **window** count: ``created_ms`` in ``[t0 + --warmup, t0 +
--warmup + --seconds)`` s, i.e. values ``[warmup * rate, (warmup + seconds) * rate)``; the
job keeps running ``--drain`` s after the window (``t0`` is read from the first committed
rows) and is then stopped. A window record not committed by then is a backlog failure
(``<variant>_missing``). ``<variant>_sustained``: no window record missing and the median
latency of the window's last quarter <= 1.5 x that of its first quarter + 1 s.

**Checks**, all against the rate source's documented values (``value`` 0, 1, 2, ... in
order; ``k = value % keys``, so key ``k``'s n-th record is ``value = k + (n - 1) * keys``)
and its timestamps (above, within 1 ms), never against another variant's output: every row's
key and ``created_ms`` match its ``value``; ``stages*`` (and ``oq*``, the same jobs on the
one-query mapping, ``execution.streaming.query-mapping=one-query``; ``oqwm2``: ``oq2`` with a
monotonous watermark strategy on ``created_ms`` between its stages, which the second takes in
band, runtime/inband.py): each key's committed rows
are exactly
the running counts 1..n, each with the value of the key's n-th record (so every window record
appears exactly once in the stage's output), and in commit order (Flink keeps a key's order
from one keyed operator to the next; with ``--tolerate-reordering`` rows out of their key's
order are counted in ``<variant>_out_of_order`` instead of failing the run); ``floor``: every
record appears at most once and every window record exactly once unless counted missing;
``native``: every row's count is the number of the key's records up to its highest value
(the last row per key: every committed record of the key counted once), counts grow per key,
the summed ``created_ms`` matches those records'. A failed check exits non-zero.

``--find-max-rate`` also searches the highest rate ``floor`` and ``stages1`` each sustain:
from ``--rate``, doubling (up to ``--max-rate``) with shorter runs (warm-up <= 10 s, window
<= 20 s) until a run is not sustained; ``max_rate_<variant>`` is the last sustained rate (0:
not even ``--rate``). ``--quick``: rate 100, warm-up 5 s, window 10 s, drain 10 s, every
variant (a smoke run whose figures mean little). ``--variants`` runs a subset, in the given
order.

The last line is JSON: per variant ``<variant>_p50_ms``, ``_p95_ms``, ``_p99_ms`` (over the
window's records), ``_records`` (window records measured), ``_sustained``, ``_missing``,
``_out_of_order``, ``_first_quarter_p50_ms``/``_last_quarter_p50_ms``, ``_tick_wait_ms``,
``_p50_ms_phase_neutral`` (and p95, p99), ``_versions`` (Delta commits), ``_batch_ms``
(each query's median micro-batch duration, from Spark's recent progress) and
``_batch_phases_ms`` (the median of each phase Spark times in those micro-batches); the ratios
``stages1_p50_vs_floor`` (target <= 1.5), ``stage_step_vs_stages1`` = max(stages2 p50 -
stages1 p50, stages3 p50 - stages2 p50) / stages1 p50 (target <= 0.5), ``stages3_vs_stages1``
(target <= 2.0), ``native_p50_vs_floor``, and the same for the chained floor
(``chain1_p50_vs_floor``, ``chain_step_vs_chain1``, ``chain3_vs_chain1``: no targets, what a
mapping chaining its stages in one query would start from), and for the one-query mapping
(``oq1_p50_vs_floor``, ``oq_step_vs_oq1``, ``oq3_vs_oq1``, and against the chained floor
``oq_step_vs_chain_step`` and ``oq3_over_chain3_ratio``), ``oqwm2_vs_oq2`` (what the
in-band watermark costs), each also ``*_phase_neutral``;
``targets_met`` and ``targets_met_phase_neutral``; the rate, trigger and durations.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import unquote

import numpy as np
from pyspark_datastream import (
    Configuration,
    JobStatus,
    KeyedProcessFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    WatermarkStrategy,
)

from benchmarks.common import load, local_session, progress

__all__ = ["PassOn", "main"]

#: Spark's floor for keyed stages chained in one query
CHAIN_VARIANTS = ("chain1", "chain2", "chain3")
#: the project's job on the one-query mapping (execution.streaming.query-mapping=one-query)
ONE_QUERY_VARIANTS = ("oq1", "oq2", "oq3")
#: ``oq2`` with a watermark strategy between its stages: the second takes it in band
INBAND_VARIANTS = ("oqwm2",)
VARIANTS = ("floor", "native", "stages1", "stages2", "stages3") + CHAIN_VARIANTS + \
    ONE_QUERY_VARIANTS + INBAND_VARIANTS
TARGETS = {"stages1_p50_vs_floor": 1.5, "stage_step_vs_stages1": 0.5, "stages3_vs_stages1": 2.0}
#: seconds a run may take to commit its first rows (JVM, Python workers, first batch)
FIRST_COMMIT_TIMEOUT = 180
_LOG_FILE = re.compile(r"^(\d{20})\.json$")


# -- the jobs ------------------------------------------------------------------------------------
class Running:
    """A started variant: its failure (None while it runs) and how to stop it."""

    def __init__(self, queries: list[Any] | None = None, client: Any = None) -> None:
        self.queries = queries or []
        self.client = client

    def error(self) -> Optional[str]:
        if self.client is not None:
            if self.client.get_job_status().result() is not JobStatus.FAILED:
                return None
            try:
                self.client.get_job_execution_result().result()
            except Exception as exc:  # noqa: BLE001 - reported as the benchmark's failure
                lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
                return "".join(lines)[-3000:]
            return "FAILED"
        for q in self.queries:
            exc = q.exception()
            if exc is not None:
                return str(exc)[-3000:]
            if not q.isActive:
                return f"query {q.name} stopped"
        return None

    def batch_phases_ms(self) -> dict[str, dict[str, float]]:
        """Each query's median of every phase Spark times in a micro-batch (``durationMs``:
        ``latestOffset``, ``getBatch``, ``queryPlanning``, ``addBatch``, ``walCommit``,
        ``commitOffsets``, ``triggerExecution``...) over its recent progress, batches with
        input rows only, by query name."""
        named = (self.client.get_queries().items() if self.client is not None
                 else [(q.name, q) for q in self.queries])
        out: dict[str, dict[str, float]] = {}
        for name, q in named:
            progress = [p["durationMs"] for p in q.recentProgress if p.get("numInputRows")]
            if progress:
                phases = sorted({k for d in progress for k in d})
                out[name] = {k: float(np.median([d.get(k, 0) for d in progress]))
                             for k in phases}
        return out

    def stop(self) -> None:
        """Stop between micro-batches where it can (waiting up to 10 s for a moment when no
        query of the run is in one; commits after the run's end do not count anyway): a stop
        inside a batch interrupts its writes (Spark logs them aborted), and inside a
        ``foreachBatch`` call Spark's stream thread then dies with a StackOverflowError in
        its message matching (on stderr; the versions committed before are not affected)."""
        queries = list(self.client.get_queries().values()) if self.client is not None \
            else self.queries
        deadline = time.time() + 10
        while time.time() < deadline and any(
                q.isActive and q.status.get("isTriggerActive") for q in queries):
            time.sleep(0.02)
        if self.client is not None:
            if self.client.get_job_status().result() is JobStatus.RUNNING:
                self.client.cancel()
        for q in self.queries:
            if q.isActive:
                q.stop()


def rate_input(spark: Any, rate: int, keys: int) -> Any:
    """Spark's rate source as ``(k, created_ms, value)``."""
    from pyspark.sql import functions as F

    return (spark.readStream.format("rate").option("rowsPerSecond", rate).load()
            .select((F.col("value") % keys).alias("k"),
                    F.unix_millis("timestamp").alias("created_ms"), "value"))


def delta_append(path: str) -> Any:
    """A ``foreachBatch`` function appending each non-empty micro-batch with delta-rs."""
    from deltalake import write_deltalake

    def write(batch: Any, batch_id: int) -> None:
        table = batch.toArrow()
        if table.num_rows:
            write_deltalake(path, table, mode="append")

    return write


def _pass_rows(key: Any, frames: Any, state: Any) -> Any:
    yield from frames  # the floor: input rows out unchanged, state never touched


def start_floor(spark: Any, rate: int, keys: int, trigger: str, path: str, work: str) -> Running:
    from pyspark.sql.streaming.state import GroupStateTimeout

    df = rate_input(spark, rate, keys)
    out = df.groupBy("k").applyInPandasWithState(
        _pass_rows, df.schema, "unused long", "append", GroupStateTimeout.NoTimeout)
    query = (out.writeStream.foreachBatch(delta_append(path))
             .option("checkpointLocation", os.path.join(work, "checkpoint"))
             .trigger(processingTime=trigger).queryName("latency-floor").start())
    return Running([query])


def start_native(spark: Any, rate: int, keys: int, trigger: str, path: str, work: str) -> Running:
    from pyspark.sql import functions as F

    out = rate_input(spark, rate, keys).groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("created_ms").alias("created_sum"),
        F.max("created_ms").alias("created_max"), F.max("value").alias("value_max"))
    query = (out.writeStream.outputMode("update").foreachBatch(delta_append(path))
             .option("checkpointLocation", os.path.join(work, "checkpoint"))
             .trigger(processingTime=trigger).queryName("latency-native").start())
    return Running([query])


class PassOn(KeyedProcessFunction):
    """Stages 2 and 3: each record on, unchanged (its count, created_ms and value)."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        yield value


def _count(a: Any, b: Any) -> Any:
    return (a[0], a[1] + b[1], b[2], b[3])  # running count, the newest record's created/value


def _created_ms(r: Any, ts: Any) -> Any:
    return r[2]  # event time: the record's creation (a monotonous strategy's assigner)


def start_stages(stages: int, spark: Any, rate: int, keys: int, trigger: str, path: str,
                 work: str, mapping: str = "per-stage", inband: bool = False) -> Running:
    conf = Configuration()
    conf.set_string("execution.checkpointing.dir", os.path.join(work, "checkpoints"))
    conf.set_string("execution.streaming.query-mapping", mapping)
    conf.set_string("execution.streaming.trigger", f"processing-time={trigger}")
    env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    row = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])
    ds = (env.from_dataframe(rate_input(spark, rate, keys))
          .map(lambda r: (r[0], 1, r[1], r[2]), output_type=row)
          .key_by(lambda r: r[0], key_type=Types.LONG()).reduce(_count).uid("count"))
    for i in range(2, stages + 1):
        if inband:  # below a keyed stage: the next stage's watermark comes in band
            ds = ds.assign_timestamps_and_watermarks(
                WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                    _created_ms))
        ds = (ds.key_by(lambda r: r[0], key_type=Types.LONG())
              .process(PassOn(), output_type=row).uid(f"stage{i}"))
    ds.sink_to_delta(path)
    return Running(client=env.execute_async(f"latency-stages{stages}"))


_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
#: key groups of the chained floor (as the project's default max parallelism groups keys)
_CHAIN_GROUPS = 128


def _chain_processor(count: bool) -> Any:
    """A ``transformWithStateInPandas`` processor for one key group: its records in
    ``value`` order (each key's order), a pickled ``{key: count}`` blob in one ValueState,
    read and written once per call (as the project keeps a key group's state); ``count``:
    the first stage's running count, else the records passed on unchanged."""
    import pickle

    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class ChainStage(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.blob = handle.getValueState(
                "blob", StructType([StructField("b", BinaryType())]))

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            pdf = pd.concat(list(rows), ignore_index=True).sort_values("value", kind="stable")
            counts = pickle.loads(self.blob.get()[0]) if self.blob.exists() else {}
            if count:
                n = []
                for k in pdf["k"].tolist():
                    counts[k] = c = counts.get(k, 0) + 1
                    n.append(c)
                pdf["n"] = n
            else:
                for k in pdf["k"].unique().tolist():
                    counts[k] = counts.get(k, 0) + 1  # state touched as a stage would
            self.blob.update((pickle.dumps(counts),))
            yield pdf[["kg", "k", "n", "ts", "created_ms", "value"]]

        def close(self) -> None:
            pass

    return ChainStage()


def start_chain(stages: int, spark: Any, rate: int, keys: int, trigger: str, path: str,
                work: str) -> Running:
    """Spark's floor for ``stages`` keyed stages chained in one query (see the module doc)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType, TimestampType

    schema = StructType([StructField("kg", LongType()), StructField("k", LongType()),
                         StructField("n", LongType()), StructField("ts", TimestampType()),
                         StructField("created_ms", LongType()), StructField("value", LongType())])
    df = (rate_input(spark, rate, keys)
          .select(F.pmod(F.hash("k"), F.lit(_CHAIN_GROUPS)).cast("long").alias("kg"), "k",
                  F.lit(0).cast("long").alias("n"), F.timestamp_millis("created_ms").alias("ts"),
                  "created_ms", "value")
          .withWatermark("ts", "0 seconds"))
    for i in range(stages):
        df = df.groupBy("kg").transformWithStateInPandas(
            _chain_processor(count=i == 0), schema, "Append", "None", eventTimeColumnName="ts")
    previous = spark.conf.get(_PROVIDER, None)
    spark.conf.set(_PROVIDER, _ROCKSDB)  # transformWithState needs it; recorded per checkpoint
    try:
        query = (df.select("k", "n", "created_ms", "value").writeStream
                 .foreachBatch(delta_append(path))
                 .option("checkpointLocation", os.path.join(work, "checkpoint"))
                 .trigger(processingTime=trigger).queryName(f"latency-chain{stages}").start())
    finally:
        if previous is None:
            spark.conf.unset(_PROVIDER)
        else:
            spark.conf.set(_PROVIDER, previous)
    return Running([query])


def start(variant: str, *args: Any) -> Running:
    if variant == "floor":
        return start_floor(*args)
    if variant == "native":
        return start_native(*args)
    if variant.startswith("chain"):
        return start_chain(int(variant[len("chain"):]), *args)
    if variant.startswith("oqwm"):
        return start_stages(int(variant[len("oqwm"):]), *args, mapping="one-query",
                            inband=True)
    if variant.startswith("oq"):
        return start_stages(int(variant[len("oq"):]), *args, mapping="one-query")
    return start_stages(int(variant[len("stages"):]), *args)


# -- reading the table -------------------------------------------------------------------------
@dataclass
class Committed:
    """Every committed row in commit order, its columns by position, with its version's
    commit time."""

    columns: list[np.ndarray]
    commit_ms: np.ndarray
    version: np.ndarray
    versions: int = 0
    from_mtime: int = 0


def _log_versions(path: str) -> list[tuple[int, str]]:
    folder = os.path.join(path, "_delta_log")
    if not os.path.isdir(folder):
        return []
    found = [(int(m.group(1)), os.path.join(folder, n))
             for n in os.listdir(folder) if (m := _LOG_FILE.match(n))]
    return sorted(found)


def read_committed(path: str, first_only: bool = False) -> Optional[Committed]:
    """The table's rows from its own log: each version's ``add`` files in log order, each
    file's rows in file order; None when no version added rows yet. ``first_only``: stop at
    the first version with rows."""
    import pyarrow.parquet as pq

    parts: list[list[np.ndarray]] = []
    commit, version = [], []
    versions = from_mtime = 0
    for v, log_file in _log_versions(path):
        commit_ms, adds = None, []
        with open(log_file) as f:
            for line in f:
                if not line.strip():
                    continue
                action = json.loads(line)
                if "commitInfo" in action:
                    commit_ms = action["commitInfo"].get("timestamp")
                elif "add" in action:
                    adds.append(unquote(action["add"]["path"]))
        if commit_ms is None:
            commit_ms, from_mtime = int(os.path.getmtime(log_file) * 1000), from_mtime + 1
        versions += 1
        for rel in adds:
            table = pq.read_table(os.path.join(path, rel))
            if table.num_rows == 0:
                continue
            parts.append([np.asarray(c.to_numpy(), dtype=np.int64) for c in table.columns])
            commit.append(np.full(table.num_rows, int(commit_ms), dtype=np.int64))
            version.append(np.full(table.num_rows, v, dtype=np.int64))
        if first_only and parts:
            break
    if not parts:
        return None
    columns = [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]
    return Committed(columns, np.concatenate(commit), np.concatenate(version), versions,
                     from_mtime)


def created_at(t0: int, value: np.ndarray, rate: int) -> np.ndarray:
    """The rate source's timestamp (ms) of row ``value``: ``t0 + floor(value * 1000 / rate)``."""
    return t0 + (value * 1000) // rate


_UNIT_MS = {"microsecond": 0.001, "millisecond": 1, "second": 1000, "minute": 60_000,
            "hour": 3_600_000, "day": 86_400_000}
_UNIT = "|".join(_UNIT_MS)


def interval_ms(text: str) -> int:
    """A Spark interval (``1 second``, ``500 milliseconds``, ``1 minute 30 seconds``) in ms."""
    low = text.strip().lower()
    if not re.fullmatch(rf"(?:interval\s+)?(?:\d+(?:\.\d+)?\s*(?:{_UNIT})s?\s*)+", low):
        raise ValueError(f"not a Spark interval: {text!r}")
    parts = re.findall(rf"(\d+(?:\.\d+)?)\s*({_UNIT})", low)
    return round(sum(float(n) * _UNIT_MS[u] for n, u in parts))


def tick_wait(value: np.ndarray, t0: int, rate: int, interval: int) -> np.ndarray:
    """ms from the rate source releasing row ``value`` (once its second, ``value // rate``,
    has passed since ``t0``) to the next processing-time trigger tick (Spark ticks at
    multiples of the interval since the epoch)."""
    released = t0 + (value // rate + 1) * 1000
    return -((-released) // interval) * interval - released


def stream_start(rows: Committed, variant: str, rate: int) -> int:
    """``t0`` of the rate stream, from committed rows (each row's created_ms and value)."""
    created, value = ((rows.columns[3], rows.columns[4]) if variant == "native"
                      else (rows.columns[-2], rows.columns[-1]))
    return int(np.median(created - (value * 1000) // rate))


# -- measuring one run ---------------------------------------------------------------------------
@dataclass
class Result:
    """One run's measured figures (latencies in ms, weighted per record)."""

    variant: str
    rate: int
    latency: np.ndarray = field(default_factory=lambda: np.zeros(0))
    weight: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    records: int = 0
    missing: int = 0
    first_quarter_p50: float = float("nan")
    last_quarter_p50: float = float("nan")
    versions: int = 0
    from_mtime: int = 0
    #: records committed out of their key's order (stages; fails the run unless tolerated)
    out_of_order: int = 0
    #: each query's median duration of every micro-batch phase Spark times, ms
    batch_phases_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    #: ``latency`` with each record's tick wait replaced by its mean, interval / 2
    neutral: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: the median tick wait of the window's records (this run's phase), ms
    tick_wait: float = float("nan")

    @property
    def batch_ms(self) -> dict[str, float]:
        """Each query's median micro-batch duration, ms (batches with input rows)."""
        return {name: p["triggerExecution"] for name, p in self.batch_phases_ms.items()
                if "triggerExecution" in p}

    def percentile(self, q: float, neutral: bool = False) -> float:
        if self.records == 0:
            return float("nan")
        return float(np.percentile(np.repeat(self.neutral if neutral else self.latency,
                                             self.weight), q))

    @property
    def sustained(self) -> bool:
        return (self.missing == 0 and self.records > 0
                and self.last_quarter_p50 <= 1.5 * self.first_quarter_p50 + 1000)


def _weighted_median(latency: np.ndarray, weight: np.ndarray) -> float:
    if weight.sum() == 0:
        return float("nan")
    return float(np.median(np.repeat(latency, weight)))


class CheckFailed(SystemExit):
    pass


def _fail(variant: str, what: str) -> None:
    raise CheckFailed(f"latency {variant}: {what}")


def _check_created(variant: str, created: np.ndarray, value: np.ndarray, t0: int, rate: int,
                   keys: int, k: np.ndarray) -> None:
    off = np.abs(created - created_at(t0, value, rate))
    if off.max(initial=0) > 1:
        i = int(off.argmax())
        _fail(variant, f"row of value {value[i]} has created_ms {created[i]}, the rate source "
                       f"stamps it {created_at(t0, value[i:i + 1], rate)[0]}")
    if (value % keys != k).any():
        i = int(np.flatnonzero(value % keys != k)[0])
        _fail(variant, f"row of value {value[i]} has key {k[i]}, not {value[i] % keys}")


def _key_values_in(k: np.ndarray, lo: np.ndarray, hi: np.ndarray, keys: int) -> np.ndarray:
    """How many values ``v = k (mod keys)`` lie in ``[lo, hi)`` (elementwise)."""
    first = np.maximum(-((k - lo) // keys), 0)  # ceil((lo - k) / keys), at least 0
    last = -((k - hi) // keys)  # ceil((hi - k) / keys)
    return np.maximum(last - first, 0)


def measure_records(variant: str, rows: Committed, t0: int, rate: int, keys: int,
                    window: tuple[int, int], end_ms: int, interval: int,
                    tolerate_reordering: bool = False) -> Result:
    """``floor`` and ``stages*``: one output row per record. Every committed row is checked;
    only those committed by ``end_ms`` count as committed. ``tolerate_reordering``: a key's
    records committed out of their order are counted (``out_of_order``), not a failure."""
    res = Result(variant, rate, versions=rows.versions, from_mtime=rows.from_mtime)
    cols = rows.columns
    k, created, value = cols[0], cols[-2], cols[-1]
    _check_created(variant, created, value, t0, rate, keys, k)
    lo, hi = window
    by_end = rows.commit_ms <= end_ms
    if variant == "floor":
        uniq, counts = np.unique(value, return_counts=True)
        if (counts > 1).any():
            _fail(variant, f"{int((counts > 1).sum())} records committed more than once, "
                           f"e.g. value {uniq[counts > 1][0]}")
        done = value[by_end]
        res.missing = int((hi - lo) - ((done >= lo) & (done < hi)).sum())
    else:
        count = cols[1]
        want = value // keys + 1
        if (count != want).any():
            i = int(np.flatnonzero(count != want)[0])
            _fail(variant, f"value {value[i]} (key {k[i]}) has count {count[i]}, it is the "
                           f"key's record number {want[i]}")
        # each key's committed counts must be exactly 1..n (each record once, none lost) ...
        idx = np.arange(len(k))
        by_count = np.lexsort((count, k))
        ks = k[by_count]
        starts = np.r_[True, ks[1:] != ks[:-1]]
        pos = idx - np.maximum.accumulate(np.where(starts, idx, 0)) + 1  # 1-based within key
        if (count[by_count] != pos).any():
            i = int(np.flatnonzero(count[by_count] != pos)[0])
            _fail(variant, f"key {ks[i]}: its committed counts are not 1..n (its record "
                           f"number {pos[i]} is missing or committed twice)")
        # ... and in commit order (Flink keeps a key's order from stage to stage)
        order = np.lexsort((idx, k))  # stable: commit order within each key
        cs = count[order]
        wrong = cs != pos
        res.out_of_order = int(wrong.sum())
        if res.out_of_order and not tolerate_reordering:
            i = int(np.flatnonzero(wrong)[0])
            key, at = k[order][i], int(pos[i]) - 1  # the key's first misplaced record
            seen = cs[k[order] == key][max(at - 2, 0):at + 10].tolist()
            _fail(variant, f"key {key}: its committed counts in commit order are not 1..n: "
                           f"from its record {max(at - 2, 0) + 1} on, "
                           f"{', '.join(map(str, seen))}, ... ({res.out_of_order} of "
                           f"{len(k)} records out of their key's order; every record is there "
                           "exactly once): the job reordered records of one key "
                           "(--tolerate-reordering measures the latency anyway)")
        last = np.zeros(keys, dtype=np.int64)  # records per key committed by the end
        np.add.at(last, k[by_end], 1)
        kk = np.arange(keys)
        # window values of key k beyond its n committed ones: values >= k + n * keys
        res.missing = int(_key_values_in(kk, np.maximum(kk + last * keys, lo),
                                         np.full(keys, hi), keys).sum())
    in_window = (value >= lo) & (value < hi) & by_end
    res.latency = (rows.commit_ms - created)[in_window].astype(np.float64)
    res.weight = np.ones(int(in_window.sum()), dtype=np.int64)
    res.records = int(in_window.sum())
    waits = tick_wait(value[in_window], t0, rate, interval)
    res.neutral = res.latency - waits + interval / 2
    res.tick_wait = float(np.median(waits)) if res.records else float("nan")
    quarter = (hi - lo) // 4
    v = value[in_window]
    res.first_quarter_p50 = _weighted_median(res.latency[v < lo + quarter],
                                             res.weight[v < lo + quarter])
    res.last_quarter_p50 = _weighted_median(res.latency[v >= hi - quarter],
                                            res.weight[v >= hi - quarter])
    return res


def measure_native(rows: Committed, t0: int, rate: int, keys: int,
                   window: tuple[int, int], end_ms: int, interval: int) -> Result:
    """``native``: a key's running totals per micro-batch (see the module doc)."""
    variant = "native"
    res = Result(variant, rate, versions=rows.versions, from_mtime=rows.from_mtime)
    k, n, csum, cmax, vmax = rows.columns
    _check_created(variant, cmax, vmax, t0, rate, keys, k)
    want = (vmax - k) // keys + 1
    if (n != want).any():
        i = int(np.flatnonzero(n != want)[0])
        _fail(variant, f"key {k[i]}: count {n[i]} up to value {vmax[i]}, the key has {want[i]} "
                       "records up to there")
    # the summed created_ms of the key's records up to its highest value (1 ms per record)
    top = int(n.max())
    per_key = created_at(t0, np.arange(keys)[:, None] + np.arange(top)[None, :] * keys, rate)
    sums = np.cumsum(per_key, axis=1)
    expect = sums[k, n - 1]
    if (np.abs(csum - expect) > n).any():
        i = int(np.flatnonzero(np.abs(csum - expect) > n)[0])
        _fail(variant, f"key {k[i]}: summed created_ms {csum[i]} over {n[i]} records, the rate "
                       f"source's sum is {expect[i]}")
    order = np.lexsort((np.arange(len(k)), k))
    ks = k[order]
    starts = np.r_[True, ks[1:] != ks[:-1]]
    prev_n = np.where(starts, 0, np.r_[0, n[order][:-1]])
    prev_sum = np.where(starts, 0, np.r_[0, csum[order][:-1]])
    prev_vmax = np.where(starts, ks - keys, np.r_[0, vmax[order][:-1]])
    dn = n[order] - prev_n
    if (dn <= 0).any():
        i = int(np.flatnonzero(dn <= 0)[0])
        _fail(variant, f"key {ks[i]}: its count went from {prev_n[i]} to {n[order][i]}")
    latency = rows.commit_ms[order] - (csum[order] - prev_sum) / dn  # commit - mean created
    lo, hi = window
    seg_lo, seg_hi = prev_vmax + 1, vmax[order] + 1  # the values this row newly counts

    by_end = rows.commit_ms[order] <= end_ms

    def weights(a: int, b: int) -> np.ndarray:
        return _key_values_in(ks, np.maximum(seg_lo, a), np.minimum(seg_hi, b), keys) * by_end

    res.latency, res.weight = latency, weights(lo, hi)
    res.records = int(res.weight.sum())
    # each row's mean tick wait over the records it newly counts (counts prev_n+1 .. n)
    seg = np.repeat(np.arange(len(ks)), dn)
    j = prev_n[seg] + np.arange(int(dn.sum())) - np.repeat(np.cumsum(dn) - dn, dn)
    mean_wait = np.bincount(seg, tick_wait(ks[seg] + j * keys, t0, rate, interval)) / dn
    res.neutral = latency - mean_wait + interval / 2
    res.tick_wait = _weighted_median(mean_wait, res.weight)
    last = np.full(keys, -1, dtype=np.int64)
    np.maximum.at(last, ks[by_end], vmax[order][by_end])
    kk = np.arange(keys)
    res.missing = int(_key_values_in(kk, np.maximum(last + 1, lo), np.full(keys, hi),
                                     keys).sum())
    quarter = (hi - lo) // 4
    res.first_quarter_p50 = _weighted_median(latency, weights(lo, lo + quarter))
    res.last_quarter_p50 = _weighted_median(latency, weights(hi - quarter, hi))
    return res


def run_variant(variant: str, spark: Any, rate: int, keys: int, trigger: str, warmup: int,
                seconds: int, drain: int, work: str, tolerate_reordering: bool = False) -> Result:
    """Start ``variant``, let it run ``warmup + seconds + drain`` s from its stream's start,
    stop it, then measure and check what it committed."""
    folder = os.path.join(work, f"{variant}-{rate}")
    path = os.path.join(folder, "table")
    progress(f"{variant} at {rate} rows/s: starting")
    running = start(variant, spark, rate, keys, trigger, path, folder)
    started, t0, end = time.time(), None, 0.0
    try:
        while True:
            error = running.error()
            if error is not None:
                raise SystemExit(f"latency {variant}: the job failed:\n{error}")
            if t0 is None:
                first = read_committed(path, first_only=True)
                if first is not None:
                    t0 = stream_start(first, variant, rate)
                    end = t0 / 1000 + warmup + seconds + drain
                    progress(f"{variant}: first commit {time.time() - started:.1f} s after the "
                             f"start; measuring until {end - time.time():.0f} s from now")
                elif time.time() - started > FIRST_COMMIT_TIMEOUT:
                    raise SystemExit(f"latency {variant}: nothing committed in "
                                     f"{FIRST_COMMIT_TIMEOUT} s")
            elif time.time() >= end:
                break
            time.sleep(0.5)
        phases = running.batch_phases_ms()
    finally:
        running.stop()
    rows = read_committed(path)
    assert rows is not None and t0 is not None
    window = (warmup * rate, (warmup + seconds) * rate)
    if variant == "native":
        res = measure_native(rows, t0, rate, keys, window, int(end * 1000),
                             interval_ms(trigger))
    else:
        res = measure_records(variant, rows, t0, rate, keys, window, int(end * 1000),
                              interval_ms(trigger), tolerate_reordering)
    res.batch_phases_ms = phases
    progress(f"{variant} at {rate} rows/s: {res.records} window records, p50 "
             f"{res.percentile(50):.0f} ms, p99 {res.percentile(99):.0f} ms (tick wait "
             f"{res.tick_wait:.0f} ms; phase-neutral p50 {res.percentile(50, True):.0f} ms, p99 "
             f"{res.percentile(99, True):.0f} ms), first/last quarter "
             f"p50 {res.first_quarter_p50:.0f}/{res.last_quarter_p50:.0f} ms, missing "
             f"{res.missing}, out of order {res.out_of_order}, {res.versions} versions, "
             f"sustained {res.sustained}; median "
             f"micro-batch ms {res.batch_ms}; checked")
    shutil.rmtree(folder, ignore_errors=True)
    return res


def find_max_rate(variant: str, spark: Any, args: argparse.Namespace,
                  work: str) -> tuple[int, list[dict[str, Any]]]:
    """The highest rate (doubling from ``--rate``) at which ``variant`` is sustained."""
    rate, best, tries = args.rate, 0, []
    while rate <= args.max_rate:
        res = run_variant(variant, spark, rate, args.keys, args.trigger, min(args.warmup, 10),
                          min(args.seconds, 20), args.drain, work, args.tolerate_reordering)
        tries.append({"rate": rate, "p50_ms": _ms(res.percentile(50)),
                      "p99_ms": _ms(res.percentile(99)),
                      "p50_ms_phase_neutral": _ms(res.percentile(50, True)),
                      "missing": res.missing, "sustained": res.sustained,
                      "batch_ms": res.batch_ms})
        if not res.sustained:
            break
        best, rate = rate, rate * 2
    return best, tries


def _ms(x: float) -> Optional[float]:
    return None if x != x else round(x, 1)


def _round(x: float) -> Optional[float]:
    return None if x != x else round(x, 3)


def _ratios(p50: dict[str, float]) -> dict[str, float]:
    """The target ratios of the variants' p50s (a variant that measured nothing has a NaN
    p50: its ratios are NaN, null in the JSON and never met)."""
    ratios: dict[str, float] = {}
    if {"floor", "stages1"} <= p50.keys():
        ratios["stages1_p50_vs_floor"] = p50["stages1"] / p50["floor"]
    if {"stages1", "stages2", "stages3"} <= p50.keys():
        step = max(p50["stages2"] - p50["stages1"], p50["stages3"] - p50["stages2"])
        ratios["stage_step_vs_stages1"] = step / p50["stages1"]
        ratios["stages3_vs_stages1"] = p50["stages3"] / p50["stages1"]
    if {"floor", "native"} <= p50.keys():
        ratios["native_p50_vs_floor"] = p50["native"] / p50["floor"]
    if {"floor", "chain1"} <= p50.keys():
        ratios["chain1_p50_vs_floor"] = p50["chain1"] / p50["floor"]
    if set(CHAIN_VARIANTS) <= p50.keys():
        step = max(p50["chain2"] - p50["chain1"], p50["chain3"] - p50["chain2"])
        ratios["chain_step_vs_chain1"] = step / p50["chain1"]
        ratios["chain3_vs_chain1"] = p50["chain3"] / p50["chain1"]
    if {"oq2", "oqwm2"} <= p50.keys():
        ratios["oqwm2_vs_oq2"] = p50["oqwm2"] / p50["oq2"]
    if {"floor", "oq1"} <= p50.keys():
        ratios["oq1_p50_vs_floor"] = p50["oq1"] / p50["floor"]
    if set(ONE_QUERY_VARIANTS) <= p50.keys():
        step = max(p50["oq2"] - p50["oq1"], p50["oq3"] - p50["oq2"])
        ratios["oq_step_vs_oq1"] = step / p50["oq1"]
        ratios["oq3_vs_oq1"] = p50["oq3"] / p50["oq1"]
        if set(CHAIN_VARIANTS) <= p50.keys():  # #53's targets: against Spark's chained floor
            ratios["oq_step_vs_chain_step"] = ratios["oq_step_vs_oq1"] / ratios[
                "chain_step_vs_chain1"]
            ratios["oq3_over_chain3_ratio"] = ratios["oq3_vs_oq1"] / ratios["chain3_vs_chain1"]
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=None, help="rows/s (default 1000)")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--trigger", default="1 second", help="processing-time interval")
    parser.add_argument("--warmup", type=int, default=None, help="s (default 15)")
    parser.add_argument("--seconds", type=int, default=None, help="window, s (default 60)")
    parser.add_argument("--drain", type=int, default=None, help="s after the window (default 15)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--find-max-rate", action="store_true")
    parser.add_argument("--max-rate", type=int, default=256_000)
    parser.add_argument("--tolerate-reordering", action="store_true",
                        help="count a key's records committed out of order instead of failing")
    parser.add_argument("--quick", action="store_true",
                        help="rate 100, warm-up 5 s, window 10 s, drain 10 s")
    args = parser.parse_args(argv)
    quick = {"rate": 100, "warmup": 5, "seconds": 10, "drain": 10}
    full = {"rate": 1000, "warmup": 15, "seconds": 60, "drain": 15}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown or not variants:
        parser.error(f"--variants: {sorted(unknown)} unknown, pick from {','.join(VARIANTS)}")
    if args.rate < 1 or args.keys < 1 or args.seconds < 4 or args.warmup < 0 or args.drain < 0:
        parser.error("--rate, --keys >= 1, --seconds >= 4, --warmup, --drain >= 0")
    try:
        if interval_ms(args.trigger) < 1:
            raise ValueError(args.trigger)
    except ValueError:
        parser.error(f"--trigger: a Spark interval of at least 1 ms such as '1 second', got "
                     f"{args.trigger!r}")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_session()
    work = tempfile.mkdtemp(prefix="latency-bench-")
    try:
        results = {v: run_variant(v, spark, args.rate, args.keys, args.trigger, args.warmup,
                                  args.seconds, args.drain, work, args.tolerate_reordering)
                   for v in variants}
        out: dict[str, Any] = {
            "benchmark": "latency", "quick": args.quick, "rate": args.rate, "keys": args.keys,
            "trigger": args.trigger, "trigger_ms": interval_ms(args.trigger),
            "warmup_s": args.warmup, "seconds": args.seconds,
            "drain_s": args.drain, "variants": variants,
            "reordering_tolerated": args.tolerate_reordering,
        }
        for v, r in results.items():
            out.update({f"{v}_p50_ms": _ms(r.percentile(50)), f"{v}_p95_ms": _ms(r.percentile(95)),
                        f"{v}_p99_ms": _ms(r.percentile(99)), f"{v}_records": r.records,
                        f"{v}_sustained": r.sustained, f"{v}_missing": r.missing,
                        f"{v}_out_of_order": r.out_of_order,
                        f"{v}_first_quarter_p50_ms": _ms(r.first_quarter_p50),
                        f"{v}_last_quarter_p50_ms": _ms(r.last_quarter_p50),
                        f"{v}_tick_wait_ms": _ms(r.tick_wait),
                        **{f"{v}_p{q}_ms_phase_neutral": _ms(r.percentile(q, True))
                           for q in (50, 95, 99)},
                        f"{v}_versions": r.versions, f"{v}_batch_ms": r.batch_ms,
                        f"{v}_batch_phases_ms": r.batch_phases_ms})
        ratios = _ratios({v: r.percentile(50) for v, r in results.items()})
        neutral = _ratios({v: r.percentile(50, True) for v, r in results.items()})
        out.update({k: _round(x) for k, x in ratios.items()})
        out.update({f"{k}_phase_neutral": _round(x) for k, x in neutral.items()})
        out["targets"] = TARGETS
        out["targets_met"] = {k: ratios[k] <= t for k, t in TARGETS.items() if k in ratios}
        out["targets_met_phase_neutral"] = {k: neutral[k] <= t for k, t in TARGETS.items()
                                            if k in neutral}
        if args.find_max_rate:
            maxima = {}
            for v in ("floor", "stages1"):
                maxima[v], tries = find_max_rate(v, spark, args, work)
                out[f"max_rate_{v}"] = maxima[v]
                out[f"max_rate_{v}_tries"] = tries
            out["max_rate_stages1_vs_floor"] = (round(maxima["stages1"] / maxima["floor"], 3)
                                                if maxima["floor"] else None)
            out["max_rate_cap"] = args.max_rate
        out["commit_times_from_mtime"] = sum(r.from_mtime for r in results.values())
        out["results_checked"] = True
        out["load"] = load()
        print(json.dumps(out, allow_nan=False))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
