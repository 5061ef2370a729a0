"""A keyed stage read by sinks and, behind a partitioning or a plain ``key_by``, by keyed
stages below it, in the one-query mapping.

A running count per user is written to Delta and read by three keyed stages: through a
``rebalance()`` and a map, through a ``key_by`` read as a plain stream (a filter and a map
after it), and through a ``shuffle()``. The query carries the running counts through the
first reader and relays them to the others; each keying pass runs the maps and filters
between and leaves out the partitioning (the ``key_by`` below sends every record on by its
key). Two available-now runs over several files of out-of-order event times, the second
from the first's checkpoint: one query each, and every sink equal to a plain-Python model.
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
from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor, WatermarkStrategy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS, SPAN = 40, 10_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LONGS = Types.TUPLE([Types.LONG(), Types.LONG()])
SINKS = ("running", "buckets", "parities", "residues")


class CountPerKey(KeyedProcessFunction):
    """The number of records seen per key, emitted with each."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield ctx.get_current_key(), self.count.value()


def bucket(user: str) -> int:
    return int(user[1:]) % 5


def program(env, records, out: str) -> None:
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).map(lambda r: (r[0], 1), PAIR)
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("running"))
    running.sink_to_delta(f"{out}/running")
    readers = {
        "buckets": running.rebalance().map(lambda r: (bucket(r[0]), r[1]), LONGS),
        "parities": (running.key_by(lambda r: r[0]).filter(lambda r: r[1] % 2 == 0)
                     .map(lambda r: (bucket(r[0]) % 2, r[1]), LONGS)),
        "residues": running.map(lambda r: (r[1] % 3, r[1]), LONGS).shuffle(),
    }
    for name, stream in readers.items():
        (stream.key_by(lambda r: r[0], key_type=Types.LONG()).process(CountPerKey(), LONGS)
         .uid(name).sink_to_delta(f"{out}/{name}"))


def model(state: dict[str, Counter], records: list[tuple[str, int]]) -> dict[str, list]:
    """Each sink's rows for ``records`` after ``state`` (updated): one running count per
    record, and per reader one count per key for each running count reaching it."""
    out: dict[str, list] = {name: [] for name in SINKS}
    for user, _ in records:
        state["running"][user] += 1
        n = state["running"][user]
        out["running"].append((user, n))
        keys = {"buckets": bucket(user), "residues": n % 3}
        if n % 2 == 0:
            keys["parities"] = bucket(user) % 2
        for name, key in keys.items():
            state[name][key] += 1
            out[name].append((key, state[name][key]))
    return out


def test_a_stage_read_behind_a_partitioning_or_a_key_by_runs_in_one_query(
        spark, env_factory, tmp_path):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    src, out, ckpt = str(tmp_path / "in"), str(tmp_path / "out"), str(tmp_path / "ckpt")
    files = out_of_order_files(11, 4, 250, USERS, SPAN)
    state: dict[str, Counter] = {name: Counter() for name in SINKS}
    expected: dict[str, list] = {name: [] for name in SINKS}

    for first, last in ((0, 2), (2, 4)):
        for i in range(first, last):
            add_file(src, files[i], f"f{i}")
        for name, rows in model(state, [r for f in files[first:last] for r in f]).items():
            expected[name] += rows
        env = env_factory("STREAMING", {"execution.checkpointing.dir": ckpt,
                                        "execution.streaming.query-mapping": "one-query"})
        env.set_parallelism(2)
        program(env, env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src)), out)
        with QueryCounter(spark) as queries:
            env.execute("carried-paths")
        assert len(queries.started) == 1, queries.started
        assert {name: delta_rows(f"{out}/{name}") for name in SINKS} == {
            name: sorted(rows) for name, rows in expected.items()}
