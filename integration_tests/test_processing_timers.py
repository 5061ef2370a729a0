"""STREAMING processing-time timers: they fire between data batches under a processing-time
trigger (ProcessingTimeTimeout), and an operator that would need both timeout kinds is
refused at graph-build time (real Spark file-stream queries, delta-rs sink)."""

from __future__ import annotations

import time

import pytest
from helpers import KV_SCHEMA, add_keys_file, delta_rows
from pyspark_datastream import (
    Duration,
    GraphBuildError,
    KeyedProcessFunction,
    TumblingProcessingTimeWindows,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

OUT = Types.TUPLE([Types.STRING(), Types.LONG()])
DELAY_MS = 1_500


class CountThenReport(KeyedProcessFunction):
    """Counts per key; DELAY_MS after a key's first element (processing time) it emits
    (key, count so far) from a processing-time timer."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = self.count.value()
        if n is None:
            ctx.timer_service().register_processing_time_timer(
                ctx.timer_service().current_processing_time() + DELAY_MS)
        self.count.update((n or 0) + 1)
        return iter(())

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), self.count.value())


def test_processing_time_timers_fire_without_new_data(env_factory, spark, tmp_path):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    add_keys_file(src, ["a", "b", "a"], "f1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    "execution.streaming.trigger": "processing-time=1 second"})
    df = spark.readStream.schema(KV_SCHEMA).parquet(src)
    (env.from_dataframe(df).key_by(lambda r: r[0], key_type=Types.STRING())
     .process(CountThenReport(), output_type=OUT).uid("report").sink_to_delta(out))
    client = env.execute_async("processing-timers")
    try:
        (query,) = client.get_queries().values()
        deadline = time.time() + 120
        # rows are visible once the sink committed; the batch's progress is posted after it
        while (len(delta_rows(out, missing_ok=True)) < 2 or len(query.recentProgress) < 2) and time.time() < deadline:
            time.sleep(0.5)
        # the only file was consumed by the first batch; the timers fired in later batches
        # that read no rows: ProcessingTimeTimeout called the key groups without data
        assert delta_rows(out, missing_ok=True) == [("a", 2), ("b", 1)]
        batches = list(query.recentProgress)
        assert batches[0].numInputRows == 3 and len(batches) > 1
        assert [p.numInputRows for p in batches[1:]] == [0] * (len(batches) - 1)
    finally:
        client.cancel()


class Both(KeyedProcessFunction):
    """Registers an event-time timer and, in a nested helper, a processing-time one."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

        def later():
            ctx.timer_service().register_processing_time_timer(
                ctx.timer_service().current_processing_time() + 10)
        later()
        return iter(())


def _event_time_stream(env, spark, src):
    add_keys_file(src, ["a"], "f1")
    ws = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)) \
        .with_timestamp_assigner(lambda r, _: r[1])
    return (env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src))
            .assign_timestamps_and_watermarks(ws).key_by(lambda r: r[0], key_type=Types.STRING()))


def test_event_time_operator_with_processing_time_timers_is_refused_before_any_query(
        env_factory, spark, tmp_path):
    conf = {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
            "execution.streaming.trigger": "processing-time=1 second"}
    env = env_factory("STREAMING", conf)
    _event_time_stream(env, spark, str(tmp_path / "in")).process(
        Both(), output_type=OUT).name("both").sink_to_delta(str(tmp_path / "out"))
    active = len(spark.streams.active)
    with pytest.raises(GraphBuildError, match=(
            r"'both'.*Both calls register_processing_time_timer\(\).*runs on event time.*"
            r"one timeout kind.*'1 second'")):
        env.execute_async("both-timers")
    assert len(spark.streams.active) == active  # nothing started

    env = env_factory("STREAMING", conf)
    (_event_time_stream(env, spark, str(tmp_path / "in2"))
     .window(TumblingProcessingTimeWindows.of(Duration.of_seconds(5)))
     .reduce(lambda a, b: a).sink_to_delta(str(tmp_path / "out2")))
    with pytest.raises(GraphBuildError,
                       match="window assigner TumblingProcessingTimeWindows runs on processing time"):
        env.execute_async("window-both")
    assert len(spark.streams.active) == active
