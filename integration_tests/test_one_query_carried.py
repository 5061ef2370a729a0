"""Keyed stages read by sinks and by keyed stages below them, in the one-query mapping.

Spark plans a DataFrame read twice as two copies, so the query cannot read such a stage
twice; its records travel through the keyed stages below it instead (carried) and leave
the query beside the last one's own, with its side outputs. A running count per user,
written whole and filtered to two Delta tables, feeds a count per bucket of users, written
too with its side output of every third count, which feeds (through a map) a count per
parity of bucket, written too; the running count also feeds, keyed by user again, a stage
writing each count beside the one it saw before for that user (in Flink's order, the one
before it), which feeds a second such stage. Two stages read the running count and each
goes on to a keyed stage of its own: the query chains the tree of stages below the running
count, each keying its parent's records out of the stage before it (the running counts
relayed by the count per bucket, in their order). A BATCH backfill of the first file
hands its savepoint to the STREAMING job (one query over several files of out-of-order
event times), which runs on from its checkpoint and stops with a savepoint: every sink,
and the savepoint's counts, equal a plain-Python model of each mode.
"""

from __future__ import annotations

from collections import Counter

import pytest
from counting import THIRDS, CountPerKey, SeenBefore
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
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)
from pyspark_datastream.savepoint import Savepoint

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS, BUCKETS, SPAN = 60, 7, 10_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LONGS = Types.TUPLE([Types.LONG(), Types.LONG()])
SINKS = ("running", "fifths", "buckets", "thirds", "parities", "seen", "again")
TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])


def bucket(user: str) -> int:
    return int(user[1:]) % BUCKETS


def model(state: dict[str, Counter], records: list[tuple[str, int]], batch: bool
          ) -> dict[str, list[tuple]]:
    """What each sink gets for ``records`` after ``state`` (updated): STREAMING emits each
    count as it grows, one per record and stage (sorted, the order is Flink's to choose); a
    BATCH reduce emits each user's final count only, so the stages below it count users."""
    out: dict[str, list[tuple]] = {name: [] for name in SINKS}
    users = Counter(u for u, _ in records)
    for user, n in users.items():
        for _ in range(1 if batch else n):
            before = state["running"][user]
            state["running"][user] += n if batch else 1
            out["running"].append((user, state["running"][user]))
            out["seen"].append((user, state["running"][user], before))
            for name, key in (("buckets", bucket(user)), ("parities", bucket(user) % 2)):
                state[name][key] += 1
                out[name].append((key, state[name][key]))
    out["again"] = out["seen"]
    out["fifths"] = [r for r in out["running"] if r[1] % 5 == 0]
    out["thirds"] = [r for r in out["buckets"] if r[1] % 3 == 0]
    return {name: sorted(rows) for name, rows in out.items()}


def program(env, records, out: str) -> None:
    """Seven sinks: the running counts, every fifth of them, the counts per bucket, every
    third of those (a side output), the counts per parity of bucket and, twice, the running
    counts with the one seen before (the second reading the first's)."""
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).map(lambda r: (r[0], 1), PAIR)
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("running"))
    running.sink_to_delta(f"{out}/running")
    running.filter(lambda r: r[1] % 5 == 0).sink_to_delta(f"{out}/fifths")
    buckets = (running.map(lambda r: (bucket(r[0]), r[1]), LONGS)
               .key_by(lambda r: r[0], key_type=Types.LONG())
               .process(CountPerKey(thirds=True), LONGS).uid("buckets"))
    buckets.sink_to_delta(f"{out}/buckets")
    buckets.get_side_output(THIRDS).sink_to_delta(f"{out}/thirds")
    (buckets.map(lambda r: (r[0] % 2, r[1]), LONGS).key_by(lambda r: r[0], key_type=Types.LONG())
     .process(CountPerKey(), LONGS).uid("parities").sink_to_delta(f"{out}/parities"))
    seen = running
    for name in ("seen", "again"):  # the second reads the first: a tree of keyed stages
        seen = (seen.key_by(lambda r: r[0], key_type=Types.STRING())
                .process(SeenBefore(), TRIPLE).uid(name))
        seen.sink_to_delta(f"{out}/{name}")


def _rows(out: str) -> dict[str, list[tuple]]:
    return {name: delta_rows(f"{out}/{name}") for name in SINKS}


def test_keyed_stages_read_by_sinks_and_by_the_stage_below_run_in_one_query(
        spark, env_factory, tmp_path):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    src, out, ckpt = str(tmp_path / "in"), str(tmp_path / "out"), tmp_path / "ckpt"
    batches = out_of_order_files(7, 5, 300, USERS, SPAN)
    state: dict[str, Counter] = {name: Counter() for name in SINKS}
    backfill, savepoint = str(tmp_path / "backfill"), str(tmp_path / "savepoint")

    env = env_factory("BATCH")  # the backfill of the first file hands its state on
    program(env, env.from_collection(batches[0], PAIR), str(tmp_path / "batch0"))
    env.execute("carried-backfill", savepoint_path=backfill)
    assert _rows(str(tmp_path / "batch0")) == model(state, batches[0], batch=True)

    def run(savepoint_path=None, restore=None):
        env = env_factory("STREAMING", {
            "execution.checkpointing.dir": str(ckpt), "state.backend.type": "rocksdb",
            "execution.streaming.query-mapping": "one-query",
            **({"execution.savepoint.path": restore} if restore else {})})
        env.set_parallelism(2)
        df = spark.readStream.schema(KV_SCHEMA).parquet(src)
        program(env, env.from_dataframe(df), out)
        with QueryCounter(spark) as queries:
            env.execute("carried", savepoint_path=savepoint_path)
        assert len(queries.started) == 1, queries.started
        return _rows(out)

    for i, rows in enumerate(batches[1:3], start=1):
        add_file(src, rows, f"f{i}")
    expected = model(state, [r for rows in batches[1:3] for r in rows], batch=False)
    assert run(restore=backfill) == expected
    # one query and one checkpoint: nothing staged between the stages (aside: the RocksDB
    # backend's key-group files, each stage's restored state as read from the savepoint)
    assert {p.name for p in (ckpt / "carried").iterdir() if not p.name.startswith("_")
            and not p.name.endswith("-restore")} - {"state"} == {"query"}

    # the next run goes on from the checkpoint, without the setting that restored the first
    # (as in Flink, a savepoint is restored once), and stops with a savepoint (a micro-batch
    # run again after a driver death: test_one_query_sinks.py, the same sinks' writers)
    for i, rows in enumerate(batches[3:5], start=3):
        add_file(src, rows, f"f{i}")
    more = model(state, [r for rows in batches[3:5] for r in rows], batch=False)
    got = run(savepoint)
    assert got == {name: sorted(expected[name] + more[name]) for name in SINKS}

    # the savepoint holds each stage's counts where the run left them
    count = ValueStateDescriptor("count", Types.LONG())
    loaded = Savepoint.load(savepoint, spark)
    for uid in ("buckets", "parities"):
        held = loaded.read_keyed_state(uid, count).collect()
        assert sorted(tuple(r) for r in held) == sorted(state[uid].items())
    for uid in ("seen", "again"):
        last = loaded.read_keyed_state(uid, ValueStateDescriptor("last", Types.LONG())).collect()
        assert sorted(tuple(r) for r in last) == sorted(state["running"].items())
