"""Deduplicate events within a time-to-live, with state TTL (``StateTtlConfig``).

Events ``(event_id, user, action)`` may be delivered more than once. Keyed by event id, a
``ValueState`` remembers that an id was seen; its time-to-live makes the memory fade: a
repeat within the TTL is dropped, and an id seen again after the TTL (processing time
since its first sighting, which repeats do not prolong) is new again. The state needs no
cleanup timer: expired entries are removed when read and by the backend's background
cleanup, so the job's state stays bounded by the ids of the last TTL.

The job runs in STREAMING mode over a folder of Parquet files, one run per round of
files (each run resumes the same checkpoint, as a scheduled ``available-now`` job does);
between rounds the program waits longer than the TTL, so the second round's repeats of
the first round's ids come out again while its own repeats are dropped.

Run it: ``python -m examples.ttl_example [--ttl-ms 2000] [--backend hashmap|rocksdb]``.
Tests call :func:`run_rounds` with their own session.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark_datastream import (
    Configuration,
    DataStream,
    KeyedProcessFunction,
    RuntimeExecutionMode,
    StateTtlConfig,
    StreamExecutionEnvironment,
    Time,
    Types,
    ValueStateDescriptor,
    default_local_session,
)

__all__ = ["EVENT_TYPE", "ROUNDS", "Deduplicate", "build_job", "run_rounds", "main"]

#: An event: ``(event_id, user, action)``.
EVENT_TYPE = Types.TUPLE([Types.STRING(), Types.STRING(), Types.STRING()])
_SCHEMA = "event_id string, user string, action string"

#: The sample input: two rounds of deliveries, with repeats inside and across rounds.
ROUNDS: list[list[tuple[str, str, str]]] = [
    [("e1", "alice", "click"), ("e2", "bob", "view"), ("e1", "alice", "click"),
     ("e3", "carol", "buy"), ("e2", "bob", "view")],
    [("e1", "alice", "click"), ("e4", "dave", "view"), ("e4", "dave", "view"),
     ("e3", "carol", "buy")],
]


class Deduplicate(KeyedProcessFunction):
    """Emits an event the first time its id is seen within ``ttl_ms`` of processing time."""

    def __init__(self, ttl_ms: int) -> None:
        self.ttl_ms = ttl_ms

    def open(self, runtime_context: Any) -> None:
        ttl = (StateTtlConfig.new_builder(Time.milliseconds(self.ttl_ms))
               .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)
               .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
               .cleanup_full_snapshot()
               .build())
        seen = ValueStateDescriptor("seen", Types.BOOLEAN())
        seen.enable_time_to_live(ttl)
        self.seen = runtime_context.get_state(seen)

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.seen.value() is None:
            self.seen.update(True)
            yield value


def build_job(env: StreamExecutionEnvironment, source: Any, ttl_ms: int) -> DataStream:
    """The dedup job on ``env`` over ``source`` (a DataFrame of events)."""
    return (env.from_dataframe(source)
            .key_by(lambda event: event[0], key_type=Types.STRING())
            .process(Deduplicate(ttl_ms), output_type=EVENT_TYPE)
            .uid("dedup").name("Deduplicate"))


def _write_round(folder: str, index: int, events: list[tuple[str, str, str]]) -> None:
    os.makedirs(folder, exist_ok=True)
    columns = list(zip(*events))
    table = pa.table({"event_id": list(columns[0]), "user": list(columns[1]),
                      "action": list(columns[2])})
    tmp = os.path.join(folder, f".round-{index:03d}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, os.path.join(folder, f"round-{index:03d}.parquet"))


def run_rounds(spark: Any, rounds: Sequence[list[tuple[str, str, str]]], ttl_ms: int,
               work_dir: str, backend: str = "hashmap") -> list[list[tuple[str, str, str]]]:
    """Deliver each round as a new file and run the job over it (resuming its checkpoint),
    waiting ``ttl_ms`` plus half a second between rounds; the events each round emitted."""
    source_dir = os.path.join(work_dir, "events")
    outputs = []
    for index, events in enumerate(rounds):
        if index:
            time.sleep(ttl_ms / 1000 + 0.5)
        _write_round(source_dir, index, events)
        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", os.path.join(work_dir, "checkpoints"))
        conf.set_string("state.backend.type", backend)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.set_parallelism(2)
        source = spark.readStream.schema(_SCHEMA).parquet(source_dir)
        outputs.append(list(build_job(env, source, ttl_ms).execute_and_collect("dedup")))
    return outputs


def main(argv: Sequence[str] | None = None) -> int:
    """Run the two sample rounds on a local Spark session and print what each emitted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttl-ms", type=int, default=2_000)
    parser.add_argument("--backend", choices=("hashmap", "rocksdb"), default="hashmap")
    args = parser.parse_args(argv)

    spark = default_local_session()
    with tempfile.TemporaryDirectory(prefix="ttl-dedup-") as work_dir:
        outputs = run_rounds(spark, ROUNDS, args.ttl_ms, work_dir, args.backend)
    ok = True
    for index, (events, out) in enumerate(zip(ROUNDS, outputs)):
        firsts = list(dict.fromkeys(events))  # every round's ids are new again (TTL passed)
        print(f"round {index + 1}: {len(events)} deliveries in, {len(out)} events out: "
              f"{sorted(e[0] for e in out)}")
        ok = ok and sorted(out) == sorted(firsts)
    print(f"each id once per round, repeats inside a round dropped: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover - command line entry
    raise SystemExit(main())
