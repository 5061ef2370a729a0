# Databricks notebook source
# MAGIC %md
# MAGIC # Porting a PyFlink DataStream job
# MAGIC
# MAGIC The job below is PyFlink code. Porting it meant changing **only the imports**:
# MAGIC
# MAGIC ```python
# MAGIC # before
# MAGIC from pyflink.common import Types, WatermarkStrategy, Duration
# MAGIC from pyflink.common.watermark_strategy import TimestampAssigner
# MAGIC from pyflink.datastream import StreamExecutionEnvironment, RuntimeExecutionMode, OutputTag
# MAGIC from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
# MAGIC from pyflink.datastream.state import ValueStateDescriptor, MapStateDescriptor
# MAGIC # after
# MAGIC from pyspark_datastream import (Types, WatermarkStrategy, Duration, TimestampAssigner,
# MAGIC     StreamExecutionEnvironment, RuntimeExecutionMode, OutputTag, KeyedProcessFunction,
# MAGIC     RuntimeContext, ValueStateDescriptor, MapStateDescriptor)
# MAGIC ```
# MAGIC Sources and sinks are Spark's: `from_collection`/`from_dataframe` in, and
# MAGIC `execute_and_collect`, `to_dataframe`, `sink_to_delta` or `print` out.

# COMMAND ----------

import os
import tempfile

try:
    spark  # noqa: B018 - provided by Databricks
except NameError:
    from pyspark_datastream import default_local_session

    spark = default_local_session()

WORKDIR = os.environ.get("NOTEBOOK_WORKDIR") or tempfile.mkdtemp(prefix="porting-")
os.makedirs(WORKDIR, exist_ok=True)

# COMMAND ----------

from pyspark_datastream import (
    Duration,
    KeyedProcessFunction,
    MapStateDescriptor,
    OutputTag,
    RuntimeContext,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

# ---- unchanged PyFlink code from here -------------------------------------------------
FRAUD = OutputTag("suspicious", Types.TUPLE([Types.STRING(), Types.DOUBLE()]))


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class SpendTracker(KeyedProcessFunction):
    """Per account: total spend, spend per merchant, and a side output for large jumps."""

    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.DOUBLE()))
        self.per_merchant = runtime_context.get_map_state(
            MapStateDescriptor("per_merchant", Types.STRING(), Types.DOUBLE()))
        self.last_seen = runtime_context.get_state(ValueStateDescriptor("last_seen", Types.LONG()))

    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        account, merchant, _ts, amount = value
        total = (self.total.value() or 0.0) + amount
        self.total.update(total)
        self.per_merchant.put(merchant, (self.per_merchant.get(merchant) or 0.0) + amount)
        if amount > 500:
            ctx.output(FRAUD, (account, amount))
        self.last_seen.update(max(ctx.timestamp(), self.last_seen.value() or 0))
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60_000)

    def on_timer(self, timestamp, ctx: KeyedProcessFunction.OnTimerContext):
        if timestamp != self.last_seen.value() + 60_000:
            return  # a newer payment moved the account's quiet-period timer
        yield (ctx.get_current_key(), round(self.total.value(), 2),
               max(self.per_merchant.items(), key=lambda kv: kv[1])[0])


env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
payments = env.from_collection(
    [("acct-1", "shop", 1_000, 20.0), ("acct-1", "travel", 5_000, 900.0), ("acct-2", "shop", 2_000, 5.5),
     ("acct-1", "shop", 9_000, 12.5), ("acct-2", "food", 3_000, 30.0)],
    type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG(), Types.DOUBLE()]))
summary = (payments
           .assign_timestamps_and_watermarks(
               WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
               .with_timestamp_assigner(EventTime()))
           .key_by(lambda p: p[0])
           .process(SpendTracker(), output_type=Types.TUPLE([Types.STRING(), Types.DOUBLE(), Types.STRING()])))
suspicious = summary.get_side_output(FRAUD)
# ---- end of unchanged code -------------------------------------------------------------

with summary.execute_and_collect() as results:
    rows = sorted(results)
alerts = sorted(suspicious.execute_and_collect())
print("summary:", rows)
print("suspicious:", alerts)
assert rows == [("acct-1", 932.5, "travel"), ("acct-2", 35.5, "food")]
assert alerts == [("acct-1", 900.0)]

# COMMAND ----------

# MAGIC %md
# MAGIC ## What differs from PyFlink
# MAGIC * `env` uses the active SparkSession (or starts a local one); `parallelism` means Spark partitions.
# MAGIC * Results: `to_dataframe()` gives a Spark DataFrame (typed by `output_type`).
# MAGIC * Not supported: iterations, async I/O, queryable state, custom partitioners, the Table API,
# MAGIC   Flink connectors (read Kafka/files with Spark and use `from_dataframe`); docs/porting.md lists
# MAGIC   the rest.

# COMMAND ----------

df = summary.to_dataframe()
df.show()
assert df.columns == ["f0", "f1", "f2"]
