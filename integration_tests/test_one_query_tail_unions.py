"""Unions of keyed stages with a keyed stage above in common, in the one-query mapping.

A union of two keyed stages' records, both below one keyed stage (two leaves of a tree of
stages), or of a keyed stage's records and those of a stage below it, would hold the stage
above twice in the query's plan. Each input's stage leaves the query apart instead (the
stage above carried through the others) and the union runs in the sink's tail, per
micro-batch. A running count per user feeds a count per bucket of users and a stage
writing each count beside the one before it; one sink takes the union of the latter two,
another the union of the running counts and the counts per bucket. The job runs as one
query (the default mapping chooses it) over several files of out-of-order event times,
twice, the second run going on from the checkpoint: each sink equals a plain-Python model.
"""

from __future__ import annotations

from collections import Counter

import pytest
from helpers import (
    KV_SCHEMA,
    ByV,
    QueryCounter,
    add_file,
    delta_rows,
    out_of_order_files,
    spark_line,
)
from pyspark_datastream import (
    KeyedProcessFunction,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

USERS, BUCKETS, SPAN = 40, 5, 10_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LONGS = Types.TUPLE([Types.LONG(), Types.LONG()])
TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])


class CountPerKey(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield ctx.get_current_key(), self.count.value()


class SeenBefore(KeyedProcessFunction):
    """Each (user, count) with the count this stage saw last for that user (0: none)."""

    def open(self, ctx):
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        yield value[0], value[1], self.last.value() or 0
        self.last.update(value[1])


def bucket(user: str) -> int:
    return int(user[1:]) % BUCKETS


def model(state: dict[str, Counter], records: list[tuple[str, int]]) -> dict[str, list]:
    """Each sink's rows for ``records`` after ``state`` (updated): every stage emits one row
    per record (sorted: the order across keys is Flink's to choose)."""
    leaves, mixed = [], []
    for user, _ in records:
        before = state["running"][user]
        state["running"][user] += 1
        state["buckets"][bucket(user)] += 1
        counted = (f"b{bucket(user)}", state["buckets"][bucket(user)], -1)
        leaves += [counted, (user, before + 1, before)]
        mixed += [counted, (user, before + 1, -2)]
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
    files = out_of_order_files(11, 4, 250, USERS, SPAN)
    state: dict[str, Counter] = {"running": Counter(), "buckets": Counter()}

    def run() -> dict[str, list]:
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(ckpt)})
        env.set_parallelism(2)
        program(env, env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src)), out)
        with QueryCounter(spark) as queries:
            env.execute("tail-unions")
        assert len(queries.started) == 1, queries.started
        return {name: delta_rows(f"{out}/{name}") for name in ("leaves", "mixed")}

    for i in (0, 1):
        add_file(src, files[i], f"f{i}")
    expected = model(state, files[0] + files[1])
    assert run() == expected
    for i in (2, 3):
        add_file(src, files[i], f"f{i}")
    more = model(state, files[2] + files[3])
    assert run() == {name: sorted(expected[name] + more[name]) for name in expected}
