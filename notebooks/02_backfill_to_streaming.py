# Databricks notebook source
# MAGIC %md
# MAGIC # Backfill in BATCH, continue in STREAMING: savepoints as Delta tables
# MAGIC
# MAGIC 1. A BATCH job sessionizes the click **history** and writes its keyed state — including
# MAGIC    session timers still pending at the end of the history — as a **Delta savepoint**.
# MAGIC 2. The savepoint is an ordinary Delta table: query it with SQL, or decode it with
# MAGIC    `Savepoint.load(...).read_keyed_state(...)`.
# MAGIC 3. A STREAMING job (`availableNow`) **restores** it and continues over the new clicks.
# MAGIC    Sessions that were open at the end of the history close correctly.
# MAGIC
# MAGIC The result equals one BATCH run over history + new data. The clicks arrive out of
# MAGIC event-time order (each user's device lags by up to 4 s; the watermark allows 5 s) and land
# MAGIC in Parquet files, each a stretch of the log in arrival order, growing with the traffic:
# MAGIC each user's clicks span the files, which Spark reads largest (latest) first.

# COMMAND ----------

import os
import tempfile

try:
    spark  # noqa: B018 - provided by Databricks
except NameError:
    from pyspark_datastream import default_local_session

    spark = default_local_session()

WORKDIR = os.environ.get("NOTEBOOK_WORKDIR") or tempfile.mkdtemp(prefix="handoff-")
os.makedirs(WORKDIR, exist_ok=True)

# COMMAND ----------

import random

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
from pyspark_datastream import read_delta

GAP = 30_000
USERS, FILES = 50, 2
rng = random.Random(21)
clicks = []
for u in range(USERS):
    t = rng.randrange(0, 20_000)
    for _ in range(rng.randint(20, 60)):
        t += rng.choice([3_000, 8_000, 45_000, 90_000])
        clicks.append((f"user-{u:02d}", t))
lag = random.Random(22)
device_lag = {f"user-{u:02d}": lag.uniform(0, 4_000) for u in range(USERS)}
clicks.sort(key=lambda c: c[1] + device_lag[c[0]])  # arrival order: not event-time order
cut = sorted(t for _, t in clicks)[len(clicks) * 2 // 3]
history = [c for c in clicks if c[1] <= cut]
new_data = [c for c in clicks if c[1] > cut]


def write_log(rows, path):
    """The clicks in arrival order as FILES successive Parquet files that grow with the traffic
    (file f holds a share f + 1): a user's clicks span the files, and Spark reads the largest,
    latest file first."""
    shares, start = FILES * (FILES + 1) // 2, 0
    for f in range(FILES):
        end = len(rows) if f == FILES - 1 else start + len(rows) * (f + 1) // shares
        spark.createDataFrame(rows[start:end], "user string, ts bigint").coalesce(1).write.mode(
            "overwrite" if f == 0 else "append").parquet(path)
        start = end


write_log(history, os.path.join(WORKDIR, "history"))
write_log(new_data, os.path.join(WORKDIR, "new"))
last_before_cut = {u: t for u, t in sorted(history, key=lambda c: c[1])}
straddling = {u for u, t in new_data if u in last_before_cut and t - last_before_cut[u] <= GAP}
print(f"{len(history)} historical clicks up to t={cut}, {len(new_data)} new clicks after, "
      f"{FILES} files each; {len(straddling)} users have a session straddling the cut")
assert straddling, "some sessions continue across the cut"


class Sessionize(KeyedProcessFunction):
    """Emits (user, session_end) when a user has been idle for GAP ms."""

    def open(self, ctx):
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        prev = self.last.value()
        if prev is not None and value[1] - prev > GAP:
            yield (value[0], prev)
        self.last.update(value[1])
        ctx.timer_service().register_event_time_timer(value[1] + GAP)

    def on_timer(self, timestamp, ctx):
        if self.last.value() == timestamp - GAP:
            yield (ctx.get_current_key(), self.last.value())
            self.last.clear()


def job(env, source_df):
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_seconds(5)).with_timestamp_assigner(lambda c, _: c[1])
    return (env.from_dataframe(source_df).assign_timestamps_and_watermarks(strategy)
            .key_by(lambda c: c[0], key_type=Types.STRING())
            .process(Sessionize(), output_type=Types.ROW_NAMED(
                ["user", "session_end"], [Types.STRING(), Types.LONG()]))
            .uid("sessionize"))


savepoint = os.path.join(WORKDIR, "sessions_savepoint")

# COMMAND ----------

# MAGIC %md
# MAGIC ## 1. BATCH backfill writes the savepoint

# COMMAND ----------

env = StreamExecutionEnvironment.get_execution_environment(spark=spark)
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
job(env, spark.read.parquet(os.path.join(WORKDIR, "history"))).sink_to_delta(
    os.path.join(WORKDIR, "sessions_backfill"))
env.execute("sessionize", savepoint_path=savepoint)
backfill = read_delta(spark, os.path.join(WORKDIR, "sessions_backfill"))
print(f"backfill closed {backfill.count()} sessions")

# COMMAND ----------

# MAGIC %md
# MAGIC ## 2. The savepoint is a Delta table: SQL and the State Processor API

# COMMAND ----------

from pyspark_datastream import Savepoint

read_delta(spark, savepoint).createOrReplaceTempView("sessions_savepoint")
spark.sql("""
    SELECT operator_uid, state_name, count(*) AS entries, sum(length(value)) AS value_bytes
    FROM sessions_savepoint WHERE kind <> 'metadata'
    GROUP BY operator_uid, state_name ORDER BY state_name
""").show()
sp = Savepoint.load(savepoint, spark)
meta = sp.metadata()
print(f"operators={sp.operators()} mode={meta.mode} final watermark={meta.final_watermark}")
open_sessions = sp.read_keyed_state("sessionize", ValueStateDescriptor("last", Types.LONG()))
open_sessions.show(5)
pending = sp.read_timers("sessionize").count()
print(f"{open_sessions.count()} users with an open session, {pending} pending timers")
assert pending > 0, "some sessions are still open at the end of the history"

# COMMAND ----------

# MAGIC %md
# MAGIC ## 3. STREAMING restores the savepoint and continues

# COMMAND ----------

conf = Configuration()
conf.set_string("execution.savepoint.path", savepoint)
conf.set_string("execution.checkpointing.dir", os.path.join(WORKDIR, "checkpoints"))
senv = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
senv.set_runtime_mode(RuntimeExecutionMode.STREAMING)
job(senv, spark.read.parquet(os.path.join(WORKDIR, "new"))).sink_to_delta(
    os.path.join(WORKDIR, "sessions_stream"))
senv.execute("sessionize-stream")
continued = read_delta(spark, os.path.join(WORKDIR, "sessions_stream"))

# The same program over all data (the history's files and the new ones) in one BATCH run,
# for comparison.
benv = StreamExecutionEnvironment.get_execution_environment(spark=spark)
benv.set_runtime_mode(RuntimeExecutionMode.BATCH)
all_files = spark.read.parquet(os.path.join(WORKDIR, "history"), os.path.join(WORKDIR, "new"))
everything = sorted(job(benv, all_files).execute_and_collect())
backfill_rows = [tuple(r) for r in backfill.collect()]
continued_rows = [tuple(r) for r in continued.collect()]
handed_off = sorted(backfill_rows + continued_rows)
assert handed_off == [tuple(r) for r in everything], "backfill + streaming != one BATCH run"
print(f"backfill ({len(backfill_rows)}) + streaming ({len(continued_rows)}) sessions == "
      f"one BATCH run over all data ({len(everything)})")

# COMMAND ----------

import matplotlib

if "DATABRICKS_RUNTIME_VERSION" not in os.environ:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt

users = sorted({u for u, _ in clicks})[:12]
from_backfill = [sum(1 for r in backfill_rows if r[0] == u) for u in users]
from_stream = [sum(1 for r in continued_rows if r[0] == u) for u in users]
fig, ax = plt.subplots(figsize=(9, 3))
ax.bar(users, from_backfill, label="closed by the BATCH backfill")
ax.bar(users, from_stream, bottom=from_backfill, label="closed by STREAMING after restore")
ax.set_ylabel("sessions")
ax.tick_params(axis="x", labelrotation=45)
ax.legend()
png = os.path.join(WORKDIR, "handoff.png")
fig.savefig(png, dpi=80, bbox_inches="tight")
print(f"chart written to {png}")
