"""A keyed stage read by sinks and by another keyed stage, in the one-query mapping.

Spark plans a DataFrame read twice as two copies, so the query cannot read such a stage
twice; its records travel through the keyed stage below it instead (carried) and leave the
query beside that stage's own. A running count per user goes to two Delta tables (every
count, and every fifth) and, bucketed, to a second keyed stage counting per bucket, whose
counts go to a third: one query, each sink equal to a plain-Python model, over several
out-of-order files (one per micro-batch), through a micro-batch run again after a driver
death, and through a savepoint that a BATCH job continues.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers import KV_SCHEMA, ByV, QueryCounter, add_file, delta_rows, drop_last_commit, spark_line
from pyspark_datastream import (
    KeyedProcessFunction,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS, BUCKETS, SPAN = 60, 7, 10_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LONGS = Types.TUPLE([Types.LONG(), Types.LONG()])
SINKS = ("running", "fifths", "buckets")


class CountPerKey(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield ctx.get_current_key(), self.count.value()


def bucket(user: str) -> int:
    return int(user[1:]) % BUCKETS


def files(seed: int, count: int, per_file: int) -> list[list[tuple[str, int]]]:
    """``count`` files of (user, ts) rows, each file later than the one before and its rows
    out of order."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rows = [(f"u{rng.randrange(USERS)}", i * SPAN + rng.randrange(SPAN))
                for _ in range(per_file)]
        rng.shuffle(rows)
        out.append(rows)
    return out


def counts_from(before: list[tuple[str, int]], after: list[tuple[str, int]], key) -> list[tuple]:
    """Flink's running counts per ``key`` emitted for the records ``after``, following the
    records ``before`` (a count emitted per record: 1..n, whatever the order)."""
    done = Counter(key(r) for r in before)
    more = Counter(key(r) for r in after)
    return sorted((k, i) for k, n in more.items() for i in range(done[k] + 1, done[k] + n + 1))


def model(before, after) -> dict[str, list[tuple]]:
    running = counts_from(before, after, lambda r: r[0])
    return {"running": running, "fifths": [r for r in running if r[1] % 5 == 0],
            "buckets": counts_from(before, after, lambda r: bucket(r[0]))}


def program(env, records, out: str) -> None:
    """Three sinks: the running counts, every fifth of them, the counts per bucket."""
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).map(lambda r: (r[0], 1), PAIR)
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("running"))
    running.sink_to_delta(f"{out}/running")
    running.filter(lambda r: r[1] % 5 == 0).sink_to_delta(f"{out}/fifths")
    (running.map(lambda r: (bucket(r[0]), r[1]), LONGS).key_by(lambda r: r[0])
     .process(CountPerKey(), LONGS).uid("buckets").sink_to_delta(f"{out}/buckets"))


def test_a_keyed_stage_read_by_sinks_and_a_keyed_stage_runs_in_one_query(
        spark, env_factory, tmp_path):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    src, out, ckpt = str(tmp_path / "in"), str(tmp_path / "out"), tmp_path / "ckpt"
    batches = files(7, 6, 400)
    savepoint = str(tmp_path / "savepoint")

    def run(savepoint_path=None):
        env = env_factory("STREAMING", {
            "execution.checkpointing.dir": str(ckpt), "state.backend.type": "rocksdb",
            "execution.streaming.query-mapping": "one-query"})
        env.set_parallelism(2)
        df = spark.readStream.schema(KV_SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
        program(env, env.from_dataframe(df), out)
        with QueryCounter(spark) as queries:
            env.execute("carried", savepoint_path=savepoint_path)
        assert len(queries.started) == 1, queries.started
        return {name: delta_rows(f"{out}/{name}") for name in SINKS}

    for i, rows in enumerate(batches[:3]):
        add_file(src, rows, f"f{i}")
    first = [r for rows in batches[:3] for r in rows]
    assert run() == model([], first)
    # one query and one checkpoint: nothing staged between the stages (the RocksDB
    # backend's key-group files aside)
    assert {p.name for p in (ckpt / "carried").iterdir() if not p.name.startswith("_")
            } - {"state"} == {"query"}

    # the driver died after the sinks wrote the last micro-batch, before Spark logged it
    drop_last_commit(ckpt)
    for i, rows in enumerate(batches[3:5], start=3):
        add_file(src, rows, f"f{i}")
    seen = [r for rows in batches[:5] for r in rows]
    got = run(savepoint)
    assert got == model([], seen)  # the batch run again wrote nothing twice; none lost
    assert all(got.values())

    # BATCH continues from the savepoint: each count goes on from where it stopped. A BATCH
    # reduce emits each key's final value only, so the bucket stage gets one record per user
    rest = batches[5]
    env = env_factory("BATCH", {"execution.savepoint.path": savepoint})
    program(env, env.from_collection(rest, PAIR), str(tmp_path / "batch"))
    env.execute("carried-batch")
    done, more = Counter(u for u, _ in seen), Counter(u for u, _ in rest)
    final = sorted((u, done[u] + n) for u, n in more.items())
    in_buckets = counts_from(seen, [(u, 0) for u in more], lambda r: bucket(r[0]))
    assert {name: delta_rows(str(tmp_path / "batch" / name)) for name in SINKS} == {
        "running": final, "fifths": [r for r in final if r[1] % 5 == 0], "buckets": in_buckets}

