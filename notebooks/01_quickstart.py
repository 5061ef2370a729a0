# Databricks notebook source
# MAGIC %md
# MAGIC # Quickstart: one program, BATCH and STREAMING
# MAGIC
# MAGIC A Flink-style DataStream program — a running count per user and an event-time timer that
# MAGIC closes a user's activity window — runs unchanged in both runtime modes. BATCH sorts by key
# MAGIC and emits only final results; STREAMING runs on Spark Structured Streaming
# MAGIC (`applyInPandasWithState`, `availableNow`) and emits every intermediate result.
# MAGIC
# MAGIC Runs as is on Databricks (install the wheel) and locally (`python notebooks/01_quickstart.py`).

# COMMAND ----------

import os
import tempfile

try:
    spark  # noqa: B018 - provided by Databricks
except NameError:
    from pyspark_datastream import default_local_session

    spark = default_local_session()

WORKDIR = os.environ.get("NOTEBOOK_WORKDIR") or tempfile.mkdtemp(prefix="quickstart-")
os.makedirs(WORKDIR, exist_ok=True)

# COMMAND ----------

# MAGIC %md
# MAGIC ## The program
# MAGIC Clicks are `(user, page, event_time_ms)`. `Activity` counts clicks per user in `ValueState`
# MAGIC and registers an event-time timer 10 s after each click; when it fires without a newer click,
# MAGIC it emits the user's total. Each user's clicks reach the job in order, but the users' devices
# MAGIC lag by up to 4 s, so the stream as a whole is out of event-time order (the watermark allows 5 s).

# COMMAND ----------

import random

from pyspark_datastream import (
    Duration,
    KeyedProcessFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

rng = random.Random(3)
users = [f"u{i}" for i in range(20)]
clicks = []
for u in users:
    t = 0
    for _ in range(rng.randint(10, 40)):
        t += rng.choice([1_000, 2_000, 15_000])
        clicks.append((u, rng.choice(["home", "cart"]), t))
device_lag = {u: rng.uniform(0, 4_000) for u in users}
clicks.sort(key=lambda c: c[2] + device_lag[c[0]])  # arrival order


class Activity(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(value[2] + 10_000)

    def on_timer(self, timestamp, ctx):
        if self.last.value() == timestamp - 10_000:
            yield (ctx.get_current_key(), "idle-at", timestamp, self.count.value())


def build(env):
    ds = env.from_collection(clicks, type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()]))
    ds = ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
        .with_timestamp_assigner(lambda c, _: c[2]))
    counts = ds.map(lambda c: (c[0], 1)).key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    idle = ds.key_by(lambda c: c[0]).process(Activity())
    return counts, idle


def run(mode):
    env = StreamExecutionEnvironment.get_execution_environment(spark=spark)
    env.set_runtime_mode(mode)
    env.get_config().set_string("execution.checkpointing.dir", os.path.join(WORKDIR, f"chk-{mode.value}"))
    counts, idle = build(env)
    return list(counts.execute_and_collect()), sorted(idle.execute_and_collect())


batch_counts, batch_idle = run(RuntimeExecutionMode.BATCH)
stream_counts, stream_idle = run(RuntimeExecutionMode.STREAMING)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Side by side
# MAGIC BATCH emits one final count per user; STREAMING emits the running count (an upsert stream)
# MAGIC whose last value per user equals BATCH's. Timers differ on purpose: STREAMING fires them as
# MAGIC the watermark advances, BATCH at the end of each key with its final state.

# COMMAND ----------

import pandas as pd

final_stream = {}
for user, n in stream_counts:
    final_stream[user] = n
side_by_side = pd.DataFrame(
    [(u, dict(batch_counts)[u], final_stream[u], sum(1 for x, _ in stream_counts if x == u))
     for u in sorted(dict(batch_counts))],
    columns=["user", "BATCH final count", "STREAMING last upsert", "STREAMING updates emitted"])
print(side_by_side.to_string(index=False))
assert dict(batch_counts) == final_stream, "BATCH and STREAMING final counts differ"

# Timers: STREAMING fires each idle timer when the watermark passes it, mid-stream, with the
# count at that moment; BATCH fires a key's timers at the end of the key, when its state is
# final, so only the last idle timer of each user still matches `last` (FLIP-134 semantics).
last_idle_stream = {u: (t, n) for u, _, t, n in stream_idle}
last_idle_batch = {u: (t, n) for u, _, t, n in batch_idle}
print(f"STREAMING idle events: {len(stream_idle)}, BATCH idle events: {len(batch_idle)}")
assert last_idle_batch == last_idle_stream, "the final idle event per user differs"
print("the final idle event of every user is identical in both modes")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The upsert stream, drawn
# MAGIC Each STREAMING update of a user's count, in emission order, against BATCH's single final value.

# COMMAND ----------

import matplotlib

if "DATABRICKS_RUNTIME_VERSION" not in os.environ:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(8, 4))
for user in sorted(dict(batch_counts))[:5]:
    series = [n for x, n in stream_counts if x == user]
    line, = ax.plot(range(1, len(series) + 1), series, marker=".", label=f"{user} (STREAMING)")
    ax.axhline(dict(batch_counts)[user], color=line.get_color(), linestyle="--", alpha=0.5)
ax.set_xlabel("update number")
ax.set_ylabel("count")
ax.set_title("STREAMING upserts converge to BATCH's final value (dashed)")
ax.legend(fontsize=7)
out_png = os.path.join(WORKDIR, "quickstart_upserts.png")
fig.savefig(out_png, dpi=80)
print(f"chart written to {out_png}")
