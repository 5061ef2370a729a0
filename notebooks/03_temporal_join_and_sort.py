# Databricks notebook source
# MAGIC %md
# MAGIC # Temporal join and temporal sort with BinarySortedState (FLIP-220)
# MAGIC
# MAGIC `BinarySortedState` keeps per-key entries ordered by a lexicographic serializer's bytes and
# MAGIC offers range reads and range deletes: `first_entry`, `last_entry(t)`, `read_range_until(t)`,
# MAGIC `clear_range_until(t)`. Two classic event-time operators are built on it and ship in
# MAGIC `pyspark_datastream.temporal_functions`:
# MAGIC
# MAGIC * **`TemporalSort`** — buffer out-of-order events by event time, emit them in order once the
# MAGIC   watermark passes (Flink's `RowTimeSortOperator`);
# MAGIC * **`TemporalJoin`** — join each order to the currency rate valid at the order's time,
# MAGIC   `last_entry(order_time)`, pruning rates no order can still need.
# MAGIC
# MAGIC The input is a set of Parquet files of out-of-order events; both jobs run in BATCH and
# MAGIC STREAMING with the same results.

# COMMAND ----------

import os
import tempfile

try:
    spark  # noqa: B018 - provided by Databricks
except NameError:
    from pyspark_datastream import default_local_session

    spark = default_local_session()

WORKDIR = os.environ.get("NOTEBOOK_WORKDIR") or tempfile.mkdtemp(prefix="temporal-")
os.makedirs(WORKDIR, exist_ok=True)

# COMMAND ----------

# MAGIC %md
# MAGIC ## The data: sensor readings that arrive out of order, in several files
# MAGIC Each reading reaches the pipeline up to 4 s after its event time, so arrival order is not
# MAGIC time order; the watermark allows 5 s of out-of-orderness. The log is rolled into files in
# MAGIC arrival order.

# COMMAND ----------

import random

from pyspark_datastream import (
    Duration,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    WatermarkStrategy,
)
from pyspark_datastream.temporal_functions import TemporalJoin, TemporalSort

BOUND = Duration.of_seconds(5)
rng = random.Random(7)


def roll_into_files(rows, schema, path, files):
    """Writes ``rows`` (in arrival order) as ``files`` successive Parquet appends."""
    per_file = -(-len(rows) // files)
    for start in range(0, len(rows), per_file):
        spark.createDataFrame(rows[start:start + per_file], schema).coalesce(1).write.mode(
            "overwrite" if start == 0 else "append").parquet(path)


def arriving_late(rows, time_of, max_delay_ms=4_000):
    """The rows in arrival order: each one arrives up to ``max_delay_ms`` after its time."""
    return [r for _, r in sorted(((time_of(r) + rng.uniform(0, max_delay_ms), r) for r in rows),
                                 key=lambda pair: pair[0])]


readings = []
for s in range(8):
    t = rng.randrange(0, 5_000)
    for i in range(100):
        t += rng.choice((0, 200, 500, 1_500))  # some readings share a timestamp
        readings.append((f"sensor-{s}", t, f"s{s}-{i}"))
readings = arriving_late(readings, lambda r: r[1])
READING = Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
roll_into_files(readings, "sensor string, ts bigint, payload string",
                os.path.join(WORKDIR, "readings"), files=4)
print(f"{len(readings)} readings of 8 sensors in "
      f"{len(spark.read.parquet(os.path.join(WORKDIR, 'readings')).inputFiles())} files")


def env_for(mode):
    env = StreamExecutionEnvironment.get_execution_environment(spark=spark)
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    env.get_config().set_string("execution.checkpointing.dir", os.path.join(WORKDIR, mode.value))
    return env


def event_time(field):
    return WatermarkStrategy.for_bounded_out_of_orderness(BOUND).with_timestamp_assigner(
        lambda row, _: row[field])

# COMMAND ----------

# MAGIC %md
# MAGIC ## Temporal sort: each sensor's readings in event-time order

# COMMAND ----------

sorted_out = {}
for mode in (RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING):
    env = env_for(mode)
    stream = env.from_dataframe(spark.read.parquet(os.path.join(WORKDIR, "readings")), type_info=READING)
    sorted_out[mode.value] = list(
        stream.assign_timestamps_and_watermarks(event_time(1))
        .key_by(lambda r: r[0], key_type=Types.STRING())
        .process(TemporalSort(READING), output_type=READING)
        .execute_and_collect())

for mode, rows in sorted_out.items():
    assert sorted(rows) == sorted(readings), f"{mode}: readings lost or duplicated"
    for sensor in {r[0] for r in rows}:
        times = [r[1] for r in rows if r[0] == sensor]
        assert times == sorted(times), f"{mode}: {sensor} not in event-time order"
key = readings[0][0]
print("arrival order of", key, [r[1] for r in readings if r[0] == key][:10])
print("sorted output of", key, [r[1] for r in sorted_out["STREAMING"] if r[0] == key][:10])

# COMMAND ----------

# MAGIC %md
# MAGIC ## Arrival order vs. emitted order

# COMMAND ----------

import matplotlib

if "DATABRICKS_RUNTIME_VERSION" not in os.environ:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt

arrived = [r[1] / 1000 for r in readings if r[0] == key]
emitted = [r[1] / 1000 for r in sorted_out["STREAMING"] if r[0] == key]
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(arrived, marker="o", linestyle="", label="arrival order")
ax.plot(emitted, marker=".", label="emitted by the temporal sort")
ax.set_xlabel("position in stream")
ax.set_ylabel("event time (s)")
ax.legend()
png = os.path.join(WORKDIR, "temporal_sort.png")
fig.savefig(png, dpi=80, bbox_inches="tight")
print(f"chart written to {png}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Temporal join: every order gets the rate valid at its event time
# MAGIC `TemporalJoin(left_type, right_type, join)` keeps the rates of each currency in a sorted
# MAGIC state and calls `join(order, rate)` with the rate valid at the order's time (an inner join:
# MAGIC an order before its currency's first rate produces nothing).

# COMMAND ----------

ORDER = Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE(), Types.LONG()])  # id, currency, amount, time
RATE = Types.TUPLE([Types.STRING(), Types.DOUBLE(), Types.LONG()])  # currency, rate, valid from
CONVERTED = Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE(), Types.LONG(), Types.DOUBLE(),
                         Types.LONG(), Types.DOUBLE()])


def convert(order, rate):
    order_id, currency, amount, order_time = order
    return (order_id, currency, amount, order_time, rate[1], rate[2], round(amount * rate[1], 4))


orders, rates = [], []
for c in ("EUR", "GBP", "JPY", "CHF"):
    for t in sorted(rng.sample(range(1_000, 120_000, 10), 20)):
        rates.append((c, round(rng.uniform(0.5, 2.0), 4), t))
    for i in range(100):
        orders.append((f"{c}-{i}", c, float(rng.randint(1, 500)), rng.randrange(0, 120_000)))
orders = arriving_late(orders, lambda o: o[3])
rates = arriving_late(rates, lambda r: r[2])
roll_into_files(orders, "id string, currency string, amount double, ts bigint",
                os.path.join(WORKDIR, "orders"), files=4)
roll_into_files(rates, "currency string, rate double, ts bigint", os.path.join(WORKDIR, "rates"), files=2)

joined = {}
for mode in (RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING):
    env = env_for(mode)
    order_stream = env.from_dataframe(
        spark.read.parquet(os.path.join(WORKDIR, "orders")), type_info=ORDER
    ).assign_timestamps_and_watermarks(event_time(3))
    rate_stream = env.from_dataframe(
        spark.read.parquet(os.path.join(WORKDIR, "rates")), type_info=RATE
    ).assign_timestamps_and_watermarks(event_time(2))
    joined[mode.value] = sorted(
        order_stream.connect(rate_stream)
        .key_by(lambda o: o[1], lambda r: r[0], key_type=Types.STRING())
        .process(TemporalJoin(ORDER, RATE, convert), output_type=CONVERTED)
        .execute_and_collect())
assert joined["BATCH"] == joined["STREAMING"], "BATCH and STREAMING joins differ"


def valid_rate(currency, t):
    candidates = [(rt, r) for c, r, rt in rates if c == currency and rt <= t]
    return max(candidates)[1] if candidates else None


expected_ids = sorted(o[0] for o in orders if valid_rate(o[1], o[3]) is not None)
assert sorted(row[0] for row in joined["BATCH"]) == expected_ids, "joined != orders with a rate"
for order_id, currency, _amount, order_time, rate, _rate_time, _converted in joined["BATCH"]:
    assert rate == valid_rate(currency, order_time), order_id
print(f"{len(joined['BATCH'])} of {len(orders)} orders joined, identical in BATCH and STREAMING; "
      f"first rows:")
for row in joined["BATCH"][:3]:
    print("  ", row)
