"""The keyed programs and data the savepoint tests share (BATCH, STREAMING, Spark's Delta,
S3): a running count and an event-time sessionizer over two inputs, A then B."""

from __future__ import annotations

from pyspark_datastream import (
    Duration,
    KeyedProcessFunction,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

EVENT = Types.TUPLE([Types.STRING(), Types.LONG()])
OUT = Types.TUPLE([Types.STRING(), Types.LONG()])
GAP = 30_000
OOO = 5_000


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Count(KeyedProcessFunction):
    """Counts per key; emits (key, running count) per record."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield (value[0], n)


class Sessionize(KeyedProcessFunction):
    """Emits (key, last event time) of a session when its timer fires, or (BATCH: timers
    fire at the end of the key) when a gap > GAP is seen before."""

    def open(self, runtime_context):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        prev = self.last.value()
        if prev is not None and value[1] - prev > GAP:
            yield (ctx.get_current_key(), prev)
        self.last.update(value[1])
        ctx.timer_service().register_event_time_timer(value[1] + GAP)

    def on_timer(self, timestamp, ctx):
        if self.last.value() == timestamp - GAP:  # the session closed: emit it, forget it
            yield (ctx.get_current_key(), self.last.value())
            self.last.clear()


def keyed_stream(env, data, function, uid="op"):
    """``data`` with event times and watermarks, keyed by name, through ``function``."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OOO)).with_timestamp_assigner(Ts())
    return (env.from_collection(data, EVENT).assign_timestamps_and_watermarks(strategy)
            .key_by(lambda r: r[0], key_type=Types.STRING())
            .process(function, output_type=OUT).uid(uid))


# A: alice's session ends early (its timer is <= the final watermark and fires in A),
# bob's and carol's last events are near the end (their timers stay pending).
DATA_A = [("alice", 1_000), ("alice", 2_000), ("bob", 10_000), ("bob", 95_000),
          ("carol", 99_000), ("alice", 50_000), ("bob", 100_000)]
# B: later events; carol has none (her state and timer exist only in the savepoint).
DATA_B = [("alice", 200_000), ("bob", 110_000), ("dave", 150_000), ("bob", 300_000)]
FINAL_WM_A = 100_000 - OOO - 1  # Flink: max event time - out-of-orderness - 1
