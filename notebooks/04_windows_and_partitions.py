# Databricks notebook source
# MAGIC %md
# MAGIC # Windows and full-window partition processing (FLIP-380)
# MAGIC
# MAGIC Keyed event-time windows with PyFlink's assigners (tumbling, sliding, session) and
# MAGIC functions (reduce, aggregate, process), then FLIP-380's `full_window_partition()` on a
# MAGIC non-keyed stream: `map_partition`, `sort_partition`, `aggregate`, `reduce` — BATCH only.
# MAGIC The readings arrive out of event-time order (up to 4 s late) in several Parquet files.

# COMMAND ----------

import os
import tempfile

try:
    spark  # noqa: B018 - provided by Databricks
except NameError:
    from pyspark_datastream import default_local_session

    spark = default_local_session()

WORKDIR = os.environ.get("NOTEBOOK_WORKDIR") or tempfile.mkdtemp(prefix="windows-")
os.makedirs(WORKDIR, exist_ok=True)

# COMMAND ----------

import random

from pyspark_datastream import (
    AggregateFunction,
    Duration,
    EventTimeSessionWindows,
    Order,
    ProcessWindowFunction,
    RuntimeExecutionMode,
    SlidingEventTimeWindows,
    StreamExecutionEnvironment,
    Time,
    TumblingEventTimeWindows,
    Types,
    WatermarkStrategy,
)

rng = random.Random(11)
sensors = ["s1", "s2", "s3"]
readings = []
for s in sensors:
    t = 0
    for _ in range(400):
        t += rng.choice([1_000, 3_000, 20_000])
        readings.append((s, t, round(rng.uniform(10, 30), 1)))
readings.sort(key=lambda r: r[1] + rng.uniform(0, 4_000))  # arrival order
FILES = 4
for f in range(FILES):  # the log, rolled into files in arrival order
    spark.createDataFrame(readings[f * len(readings) // FILES:(f + 1) * len(readings) // FILES],
                          "sensor string, ts bigint, celsius double").coalesce(1).write.mode(
        "overwrite" if f == 0 else "append").parquet(os.path.join(WORKDIR, "readings"))

env = StreamExecutionEnvironment.get_execution_environment(spark=spark)
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(2)
ds = env.from_dataframe(spark.read.parquet(os.path.join(WORKDIR, "readings")),
                        type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.DOUBLE()]))
ds = ds.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
    .with_timestamp_assigner(lambda r, _: r[1]))
by_sensor = ds.key_by(lambda r: r[0])

# COMMAND ----------

# MAGIC %md
# MAGIC ## Tumbling: max temperature per sensor per minute (reduce)

# COMMAND ----------


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        for e in elements:
            yield (key, context.window().start, e[2])


tumbling = sorted(by_sensor.window(TumblingEventTimeWindows.of(Time.minutes(1)))
                  .reduce(lambda a, b: a if a[2] >= b[2] else b, window_function=WithWindow())
                  .execute_and_collect())
print("tumbling windows:", len(tumbling), tumbling[:3])
expected = {}
for s, t, v in readings:
    k = (s, t // 60_000 * 60_000)
    expected[k] = max(expected.get(k, v), v)
assert {(s, w): v for s, w, v in tumbling} == expected

# COMMAND ----------

# MAGIC %md
# MAGIC ## Sliding average (aggregate) and sessions (process)

# COMMAND ----------


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0.0, 0)

    def add(self, value, acc):
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc):
        return round(acc[0] / acc[1], 2)

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


sliding = list(by_sensor.window(SlidingEventTimeWindows.of(Time.minutes(2), Time.minutes(1)))
               .aggregate(Avg()).execute_and_collect())


class SessionSummary(ProcessWindowFunction):
    def process(self, key, context, elements):
        items = list(elements)
        yield (key, context.window().start, context.window().end, len(items))


sessions = sorted(by_sensor.window(EventTimeSessionWindows.with_gap(Time.seconds(10)))
                  .process(SessionSummary()).execute_and_collect())
print(f"sliding averages: {len(sliding)}, sessions: {len(sessions)}")
assert sum(n for *_, n in sessions) == len(readings)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Sessions per sensor, drawn on the event-time axis

# COMMAND ----------

import matplotlib

if "DATABRICKS_RUNTIME_VERSION" not in os.environ:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(9, 2.5))
for i, s in enumerate(sensors):
    spans = [(start / 1000, (end - start) / 1000) for k, start, end, _ in sessions if k == s]
    ax.broken_barh(spans, (i - 0.35, 0.7))
ax.set_yticks(range(len(sensors)), sensors)
ax.set_xlabel("event time (s)")
ax.set_title("EventTimeSessionWindows.with_gap(10 s)")
png = os.path.join(WORKDIR, "sessions.png")
fig.savefig(png, dpi=80, bbox_inches="tight")
print(f"chart written to {png}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## FLIP-380: full-window partition processing (BATCH)
# MAGIC A partition is every record of one upstream Spark partition; `map_partition` streams them to
# MAGIC the function as an iterator, `sort_partition` uses Spark's spilling sort.

# COMMAND ----------

per_partition = list(ds.full_window_partition()
                     .map_partition(lambda it: [sum(1 for _ in it)]).execute_and_collect())
assert sum(per_partition) == len(readings)
coldest_first = list(ds.full_window_partition().sort_partition(2, Order.ASCENDING)
                     .execute_and_collect())
print("records per partition:", per_partition)
print("first records of a partition sorted by temperature:", coldest_first[:3])


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, acc):
        return acc + 1

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return a + b


counts = sorted(by_sensor.full_window_partition()
                .reduce(lambda a, b: (a[0], max(a[1], b[1]), max(a[2], b[2])))
                .execute_and_collect())
print("per-sensor maxima (keyed full-window reduce):", counts)
assert [c[0] for c in counts] == sensors
