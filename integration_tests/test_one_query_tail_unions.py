"""Unions of keyed stages with a keyed stage above in common, in the one-query mapping.

A union of two keyed stages' records, both below one keyed stage (two leaves of a tree of
stages), or of a keyed stage's records and those of a stage below it, would hold the stage
above twice in the query's plan. Each input's stage leaves the query apart instead (the
stage above carried through the others) and the union runs in the sink's tail, per
micro-batch. A running count per user feeds a count per bucket of users and a stage
writing each count beside the one before it; one sink takes the union of the latter two,
another the union of the running counts and the counts per bucket. The job runs as one
query (the default mapping chooses it) over several files of out-of-order event times,
from a BATCH backfill's savepoint, then again from its checkpoint, stopping with a
savepoint: each sink, and the savepoint's state, equal a plain-Python model of each mode.
"""

from __future__ import annotations

from collections import Counter

import pytest
from counting import CountPerKey, SeenBefore
from helpers import (
    KV_SCHEMA,
    ByV,
    QueryCounter,
    add_file,
    delta_rows,
    out_of_order_files,
    spark_line,
)
from pyspark_datastream import Types, ValueStateDescriptor, WatermarkStrategy
from pyspark_datastream.savepoint import Savepoint

USERS, BUCKETS, SPAN = 40, 5, 10_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LONGS = Types.TUPLE([Types.LONG(), Types.LONG()])
TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])


def bucket(user: str) -> int:
    return int(user[1:]) % BUCKETS


def model(state: dict[str, Counter], records: list[tuple[str, int]], batch: bool = False
          ) -> dict[str, list]:
    """Each sink's rows for ``records`` after ``state`` (updated): STREAMING emits one row
    per record and stage (sorted: the order across keys is Flink's to choose); a BATCH
    reduce emits each user's final count only, so the stages below it count users."""
    leaves, mixed = [], []
    for user, n in Counter(u for u, _ in records).items():
        for _ in range(1 if batch else n):
            before = state["running"][user]
            state["running"][user] += n if batch else 1
            state["buckets"][bucket(user)] += 1
            counted = (f"b{bucket(user)}", state["buckets"][bucket(user)], -1)
            leaves += [counted, (user, state["running"][user], before)]
            mixed += [counted, (user, state["running"][user], -2)]
    return {"leaves": sorted(leaves), "mixed": sorted(mixed)}


def program(env, records, out: str) -> None:
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).map(lambda r: (r[0], 1), PAIR)
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("running"))
    buckets = (running.map(lambda r: (bucket(r[0]), r[1]), LONGS)
               .key_by(lambda r: r[0], key_type=Types.LONG())
               .process(CountPerKey(), LONGS).uid("buckets")
               .map(lambda r: (f"b{r[0]}", r[1], -1), TRIPLE))
    seen = (running.key_by(lambda r: r[0], key_type=Types.STRING())
            .process(SeenBefore(), TRIPLE).uid("seen"))
    buckets.union(seen).filter(lambda r: True).sink_to_delta(f"{out}/leaves")
    running.map(lambda r: (r[0], r[1], -2), TRIPLE).union(buckets).sink_to_delta(f"{out}/mixed")


def test_unions_of_stages_below_one_stage_run_in_one_query(spark, env_factory, tmp_path):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    src, out, ckpt = str(tmp_path / "in"), str(tmp_path / "out"), tmp_path / "ckpt"
    files = out_of_order_files(11, 5, 250, USERS, SPAN)
    state: dict[str, Counter] = {"running": Counter(), "buckets": Counter()}
    backfill, savepoint = str(tmp_path / "backfill"), str(tmp_path / "savepoint")

    env = env_factory("BATCH")  # the backfill of the first file hands its state on
    program(env, env.from_collection(files[0], PAIR), str(tmp_path / "batch0"))
    env.execute("tail-unions-backfill", savepoint_path=backfill)
    assert {name: delta_rows(f"{tmp_path}/batch0/{name}") for name in ("leaves", "mixed")} \
        == model(state, files[0], batch=True)

    def run(savepoint_path=None, restore=None) -> dict[str, list]:
        env = env_factory("STREAMING", {
            "execution.checkpointing.dir": str(ckpt), "state.backend.type": "rocksdb",
            **({"execution.savepoint.path": restore} if restore else {})})
        env.set_parallelism(2)
        program(env, env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src)), out)
        with QueryCounter(spark) as queries:  # the default mapping chooses one query
            env.execute("tail-unions", savepoint_path=savepoint_path)
        assert len(queries.started) == 1, queries.started
        return {name: delta_rows(f"{out}/{name}") for name in ("leaves", "mixed")}

    for i in (1, 2):
        add_file(src, files[i], f"f{i}")
    expected = model(state, files[1] + files[2])
    assert run(restore=backfill) == expected
    # the next run goes on from the checkpoint and stops with a savepoint
    for i in (3, 4):
        add_file(src, files[i], f"f{i}")
    more = model(state, files[3] + files[4])
    assert run(savepoint) == {name: sorted(expected[name] + more[name]) for name in expected}
    loaded = Savepoint.load(savepoint, spark)
    held = loaded.read_keyed_state("buckets", ValueStateDescriptor("count", Types.LONG()))
    assert sorted(tuple(r) for r in held.collect()) == sorted(state["buckets"].items())
    last = loaded.read_keyed_state("seen", ValueStateDescriptor("last", Types.LONG()))
    assert sorted(tuple(r) for r in last.collect()) == sorted(state["running"].items())
