"""Event-time sort with BinarySortedState (FLIP-220's temporal sort example).

Per key, events are buffered in a :class:`~pyspark_datastream.BinarySortedState`
keyed by their event time (``LexicographicLongSerializer``, so byte order is
time order) and emitted in timestamp order once the watermark passes them. This
is the pattern of Flink's ``RowTimeSortOperator``: one event-time timer per
timestamp; the timer emits ``read_range_until(timestamp, True)`` and drops what it
emitted with ``clear_range_until(timestamp, True)``. Events at the same timestamp
keep their arrival order (in BATCH the input reaches the operator sorted by key
and time by Spark, so the arrival order of ties is unspecified there). Events that are already late when they arrive
(timestamp <= current watermark) are dropped, as Flink's operator does; their
number is kept in a ValueState so the drop is visible.

Run it: ``python -m examples.temporal_sort [--mode BATCH|STREAMING] [--keys N]
[--events N]``. Tests call :func:`build_job` with their own environment.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark_datastream import (
    BinarySortedStateDescriptor,
    Configuration,
    DataStream,
    Duration,
    KeyedProcessFunction,
    LexicographicLongSerializer,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

__all__ = [
    "EVENT_TYPE",
    "EventTime",
    "TemporalSort",
    "build_job",
    "generate_events",
    "main",
]

#: An event: ``(key, event_time_ms, payload)``.
EVENT_TYPE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])


class EventTime(TimestampAssigner):
    """Event time is field 1 of the event tuple."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


class TemporalSort(KeyedProcessFunction):
    """Emits each key's events in event-time order once the watermark passes them."""

    def open(self, runtime_context: Any) -> None:
        self.buffer = runtime_context.get_binary_sorted_state(
            BinarySortedStateDescriptor("buffer", LexicographicLongSerializer.INSTANCE, EVENT_TYPE)
        )
        self.dropped_late = runtime_context.get_state(
            ValueStateDescriptor("dropped_late", Types.LONG())
        )

    def process_element(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        timers = ctx.timer_service()
        if timestamp <= timers.current_watermark():
            self.dropped_late.update((self.dropped_late.value() or 0) + 1)
            return
        # appends under the timestamp without reading what is already there
        self.buffer.add(timestamp, value)
        timers.register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        buffer = self.buffer
        events: list[Any] = []
        for _, values in buffer.read_range_until(timestamp, True):
            events.extend(values)
        # right after reading the same range: the backend drops the rows it just read
        buffer.clear_range_until(timestamp, True)
        return iter(events)


def build_job(
    env: StreamExecutionEnvironment,
    events: Sequence[tuple[str, int, str]],
    max_out_of_orderness_ms: int = 5_000,
) -> DataStream:
    """The sort job over ``events`` on ``env``: a stream of events, per key in time order."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(max_out_of_orderness_ms)
    ).with_timestamp_assigner(EventTime())
    return (
        env.from_collection(list(events), EVENT_TYPE)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda event: event[0], key_type=Types.STRING())
        .process(TemporalSort(), output_type=EVENT_TYPE)
        .name("TemporalSort")
    )


def generate_events(
    keys: int, events_per_key: int, max_delay_ms: int = 3_000, seed: int = 11
) -> list[tuple[str, int, str]]:
    """Deterministic out-of-order events: event times step forward per key, arrival is
    shuffled within ``max_delay_ms``; some timestamps repeat (ties keep arrival order)."""
    rng = random.Random(seed)
    arrivals: list[tuple[float, tuple[str, int, str]]] = []
    for k in range(keys):
        key = f"sensor-{k:03d}"
        t = 1_000 * k
        for i in range(events_per_key):
            t += rng.choice((0, 100, 250, 1_000))
            arrivals.append((t + rng.uniform(0, max_delay_ms), (key, t, f"{key}#{i}")))
    arrivals.sort(key=lambda pair: pair[0])
    return [event for _, event in arrivals]


def _is_time_ordered(records: list[Any]) -> bool:
    last: dict[str, int] = {}
    for key, timestamp, _ in records:
        if timestamp < last.get(key, timestamp):
            return False
        last[key] = timestamp
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Sort generated out-of-order events on a local Spark session and print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("BATCH", "STREAMING"), default="BATCH")
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--events", type=int, default=25, help="events per key")
    args = parser.parse_args(argv)

    events = generate_events(args.keys, args.events)
    conf = Configuration()
    with tempfile.TemporaryDirectory(prefix="temporal-sort-") as checkpoints:
        conf.set_string("execution.checkpointing.dir", checkpoints)
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.set_runtime_mode(RuntimeExecutionMode[args.mode])
        env.set_parallelism(2)
        out = list(build_job(env, events).execute_and_collect("temporal-sort"))

    arrival_ordered = _is_time_ordered(events)
    print(f"temporal sort ({args.mode}): {len(events)} events over {args.keys} keys in, "
          f"{len(out)} out")
    print(f"  input in time order per key: {arrival_ordered}; "
          f"output in time order per key: {_is_time_ordered(out)}")
    first_key = out[0][0] if out else None
    print(f"  first records of {first_key}:")
    for record in [r for r in out if r[0] == first_key][:6]:
        print(f"    {record}")
    return 0 if _is_time_ordered(out) and len(out) == len(events) else 1


if __name__ == "__main__":  # pragma: no cover - command line entry
    raise SystemExit(main())
