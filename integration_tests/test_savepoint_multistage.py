"""Savepoints of multi-stage STREAMING jobs (one checkpointed query per keyed stage, joined by
staging tables): every stage's state at one point of the input, equal to BATCH's savepoint
(the handoff property); restore into STREAMING and BATCH continues as one uninterrupted run;
``stop_with_savepoint`` of a running multi-stage job; the rocksdb backend; a keyed stage
feeding two keyed stages (run once, its output staged for both) (real Spark, delta-rs)."""

from __future__ import annotations

import os
import pickle
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from helpers import delta_rows, env_for, spark_line
from pyspark_datastream import (
    Duration,
    JobStatus,
    KeyedProcessFunction,
    MapStateDescriptor,
    SavepointError,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)
from pyspark_datastream.savepoint import Savepoint

OOO = 5_000
GAP = 30_000
EVENT = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()])  # user, region, ts
PER_USER = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG(), Types.LONG()])
OUT = Types.TUPLE([Types.STRING(), Types.LONG()])  # region, total
ENTRY_COLS = ["operator_uid", "key_group", "key", "state_name", "namespace", "user_key", "value"]

# A: north's activity ends early (its deadline 62_000 <= the final watermark 94_999 fires in
# A); south's and east's deadlines (130_000, 129_000) stay pending; east gets no data in B.
DATA_A = [("ann", "north", 1_000), ("bo", "north", 2_000), ("ann", "north", 32_000),
          ("cy", "south", 40_000), ("cy", "south", 100_000), ("dee", "east", 99_000),
          ("bo", "north", 20_000), ("eve", "south", 95_000)]
DATA_B = [("ann", "north", 150_000), ("cy", "south", 110_000), ("fay", "west", 200_000)]
FINAL_WM_A = 100_000 - OOO - 1
#: each region's total over A + B once every deadline has fired: the sum of its users'
#: record counts, i.e. its own record count ({"north": 5, "south": 4, "east": 1, "west": 1})
AB_TOTALS = dict(Counter(region for _, region, _ in DATA_A + DATA_B))


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


def _per_user(a, b):
    """Stage 1 (keyed by user): running (user, region, latest event time, count)."""
    return (a[0], a[1], max(a[2], b[2]), a[3] + b[3])


class RegionTotals(KeyedProcessFunction):
    """Stage 2 (keyed by region): the latest count per user (MapState) and ONE event-time
    timer at the region's latest activity + GAP (moved on each record); when it fires the
    region's total is emitted. Order-insensitive, so BATCH (one final value per user from
    the reduce) and STREAMING (every running value) hold the same state."""

    def open(self, runtime_context):
        self.counts = runtime_context.get_map_state(
            MapStateDescriptor("counts", Types.STRING(), Types.LONG()))
        self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline", Types.LONG()))

    def process_element(self, value, ctx):
        user, _, ts, n = value
        old = self.counts.get(user)
        if old is None or n > old:
            self.counts.put(user, n)
        due = self.deadline.value()
        new = ts + GAP if due is None else max(due, ts + GAP)
        if new != due:
            if due is not None:
                ctx.timer_service().delete_event_time_timer(due)
            ctx.timer_service().register_event_time_timer(new)
            self.deadline.update(new)
        return iter(())

    def on_timer(self, timestamp, ctx):
        if self.deadline.value() == timestamp:
            self.deadline.clear()
            yield (ctx.get_current_key(), sum(self.counts.values()))


def _job(env, data, out):
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OOO)).with_timestamp_assigner(Ts())
    (env.from_collection(data, EVENT).assign_timestamps_and_watermarks(strategy)
     .map(lambda e: (e[0], e[1], e[2], 1), output_type=PER_USER)
     .key_by(lambda r: r[0], key_type=Types.STRING()).reduce(_per_user).uid("per-user")
     .key_by(lambda r: r[1], key_type=Types.STRING())
     .process(RegionTotals(), output_type=OUT).uid("per-region")
     .sink_to_delta(out))


def _run(env, data, out, job, savepoint_path=None):
    _job(env, data, out)
    env.execute(job, savepoint_path=savepoint_path)
    return delta_rows(out)


def _final(rows):
    """Last total per region (totals only grow)."""
    final: dict[str, int] = {}
    for region, total in rows:
        final[region] = max(total, final.get(region, 0))
    return final


def _entry_rows(loaded, uid):
    df = loaded.entries(uid).select(*ENTRY_COLS)
    return sorted(tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r)
                  for r in df.collect())


def _decoded(loaded):
    """Both stages' state and timers, decoded to plain Python values."""
    # the reduce's running value is the internal, pickled ValueState "_reduce"
    users = [pickle.loads(bytes(r["value"])) for r in
             loaded.entries("per-user").filter("state_name = '_reduce'").collect()]
    regions = loaded.read_keyed_state(
        "per-region", MapStateDescriptor("counts", Types.STRING(), Types.LONG()),
        ValueStateDescriptor("deadline", Types.LONG())).collect()
    return (sorted((u[0], u) for u in users),
            sorted((r["key"], sorted(dict(r["counts"] or {}).items()), r["deadline"])
                   for r in regions),
            sorted((r["key"], r["timestamp"]) for r in loaded.read_timers("per-user").collect()),
            sorted((r["key"], r["timestamp"]) for r in loaded.read_timers("per-region").collect()))


def test_multistage_handoff_and_restore_into_both_modes(env_factory, spark, tmp_path):
    """The multi-stage job's STREAMING savepoints (available-now, then savepoint), on the heap
    and on the rocksdb backend, decode to BATCH's heap savepoint row for row, every stage;
    restored over B (heap: into STREAMING and BATCH; rocksdb: into STREAMING on rocksdb),
    each continues as one uninterrupted run over A + B."""
    rocks = {"state.backend.type": "rocksdb"}
    sp_stream, sp_rocks, sp_batch = (str(tmp_path / n) for n in ("sp-stream", "sp-rocks",
                                                                  "sp-batch"))
    env = env_for(env_factory, tmp_path, "STREAMING", "a")
    out_a = _run(env, DATA_A, str(tmp_path / "a"), "multi-a", sp_stream)
    assert out_a == [("north", 4)]  # only north's deadline passed the final watermark
    env = env_for(env_factory, tmp_path, "STREAMING", "a-rocks", **rocks)
    assert _run(env, DATA_A, str(tmp_path / "a-rocks"), "multi-a", sp_rocks) == out_a
    env = env_for(env_factory, tmp_path, "BATCH", "a-batch")
    assert _run(env, DATA_A, str(tmp_path / "a-batch"), "multi-a", sp_batch) == out_a

    stream, rocksdb, batch = (Savepoint.load(sp, spark) for sp in (sp_stream, sp_rocks, sp_batch))
    assert rocksdb.metadata().backend == "rocksdb" and rocksdb.metadata().mode == "STREAMING"
    assert (stream.operators() == rocksdb.operators() == batch.operators()
            == ["per-region", "per-user"])
    assert {sp.metadata().final_watermark for sp in (stream, rocksdb, batch)} == {FINAL_WM_A}
    users, regions, user_timers, region_timers = _decoded(stream)
    assert users == [("ann", ("ann", "north", 32_000, 2)), ("bo", ("bo", "north", 20_000, 2)),
                     ("cy", ("cy", "south", 100_000, 2)), ("dee", ("dee", "east", 99_000, 1)),
                     ("eve", ("eve", "south", 95_000, 1))]
    # every record of A reached stage 2; north's timer fired, the later two are pending
    assert regions == [("east", [("dee", 1)], 129_000),
                       ("north", [("ann", 2), ("bo", 2)], None),
                       ("south", [("cy", 2), ("eve", 1)], 130_000)]
    assert user_timers == [] and region_timers == [("east", 129_000), ("south", 130_000)]
    assert _decoded(batch) == _decoded(rocksdb) == (users, regions, user_timers, region_timers)
    for uid in ("per-user", "per-region"):  # the handoff property, row for row
        assert _entry_rows(stream, uid) == _entry_rows(batch, uid) == _entry_rows(rocksdb, uid)

    # one uninterrupted run over A + B: every timer fires at the end of the input, each
    # region's total its users' counts over A + B (a BATCH run of it:
    # test_fan_out_savepoint_and_restore)
    for mode, sp, backend in (("STREAMING", sp_stream, {}), ("BATCH", sp_stream, {}),
                              ("STREAMING", sp_rocks, rocks)):
        name = f"b-{mode}-{'rocksdb' if backend else 'heap'}"
        env = env_for(env_factory, tmp_path, mode, name, **backend,
                      **{"execution.savepoint.path": sp})
        out_b = _run(env, DATA_B, str(tmp_path / name), "multi-b")
        assert ("east", 1) in out_b, name  # restored timer of a region without new data
        assert _final(out_a + out_b) == AB_TOTALS, name


class UserIdle(KeyedProcessFunction):
    """Stage 1 (keyed by user): emits (user, region, idle time, count) only when the user
    has been idle for IDLE ms (an event-time timer), with the timer's timestamp. Its output
    event times lag its input's, so stage 2 only reaches stage 1's watermark when the
    watermark is forwarded (Flink forwards it through every operator)."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", PER_USER))

    def process_element(self, value, ctx):
        old = self.seen.value()
        due = value[2] + IDLE if old is None else max(old[2], value[2] + IDLE)
        if old is not None and old[2] != due:
            ctx.timer_service().delete_event_time_timer(old[2])
        if old is None or old[2] != due:
            ctx.timer_service().register_event_time_timer(due)
        self.seen.update((value[0], value[1], due, (old[3] if old else 0) + 1))
        return iter(())

    def on_timer(self, timestamp, ctx):
        seen = self.seen.value()
        if seen is not None and seen[2] == timestamp:
            self.seen.clear()
            yield (seen[0], seen[1], timestamp, seen[3])


IDLE = 10_000


def _idle_job(env, data, out):
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OOO)).with_timestamp_assigner(Ts())
    (env.from_collection(data, EVENT).assign_timestamps_and_watermarks(strategy)
     .key_by(lambda r: r[0], key_type=Types.STRING())
     .process(UserIdle(), output_type=PER_USER).uid("idle")
     .key_by(lambda r: r[1], key_type=Types.STRING())
     .process(RegionTotals(), output_type=OUT).uid("per-region")
     .sink_to_delta(out))


def test_multistage_watermark_reaches_the_later_stage(env_factory, spark, tmp_path):
    """Stage 1 emits only on timers (event times far behind its input's): stage 2 still
    ends the savepoint run at the job's final watermark 94_999, so the region timer at
    72_000 fires, as in BATCH's savepoint of the same input (which saves exactly these
    states; without the forwarded watermark stage 2 stopped at 36_999, timer pending)."""
    env = env_for(env_factory, tmp_path, "STREAMING", "idle")
    sp, out = str(tmp_path / "sp"), str(tmp_path / "out")
    _idle_job(env, DATA_A, out)
    env.execute("idle-a", savepoint_path=sp)
    assert sorted(tuple(r.values()) for r in DeltaTable(out).to_pyarrow_table().to_pylist()) \
        == [("north", 4)]
    loaded = Savepoint.load(sp, spark)
    assert loaded.metadata().final_watermark == FINAL_WM_A
    assert sorted((r["key"], r["timestamp"]) for r in loaded.read_timers("idle").collect()) == [
        ("cy", 110_000), ("dee", 109_000), ("eve", 105_000)]
    assert loaded.read_timers("per-region").count() == 0
    regions = loaded.read_keyed_state(
        "per-region", MapStateDescriptor("counts", Types.STRING(), Types.LONG()),
        ValueStateDescriptor("deadline", Types.LONG())).collect()
    assert sorted((r["key"], sorted(dict(r["counts"]).items()), r["deadline"])
                  for r in regions) == [("north", [("ann", 2), ("bo", 2)], None)]


_mtime = [1_700_000_000]


def _add_file(folder, rows, name):
    """One Parquet file of (user, region, ts) rows, written atomically; mtimes increase."""
    os.makedirs(folder, exist_ok=True)
    users, regions, stamps = zip(*rows)
    table = pa.table({"user": list(users), "region": list(regions),
                      "ts": pa.array(stamps, pa.int64())})
    tmp = os.path.join(folder, f".{name}.tmp")
    pq.write_table(table, tmp)
    _mtime[0] += 10
    os.utime(tmp, (_mtime[0], _mtime[0]))
    os.replace(tmp, os.path.join(folder, f"{name}.parquet"))


#: ``_decoded`` of a savepoint taken by stop_with_savepoint after the six records of the
#: running-job tests: (user state, region state, user timers, region timers)
_SIX_RECORDS_STOPPED = (
    [("ann", ("ann", "north", 4_000, 2)), ("bo", ("bo", "north", 2_000, 1)),
     ("cy", ("cy", "south", 5_000, 2)), ("dee", ("dee", "east", 6_000, 1))],
    [("east", [("dee", 1)], 36_000), ("north", [("ann", 2), ("bo", 1)], 34_000),
     ("south", [("cy", 2)], 35_000)],
    [],
    [("east", 36_000), ("north", 34_000), ("south", 35_000)],
)

@pytest.mark.parametrize("mapping", ["per-stage", "one-query"])
def test_running_multistage_stop_with_savepoint_then_restore(env_factory, spark, tmp_path,
                                                             mapping):
    """execute_async over a file source. Per-stage: trigger_savepoint is refused (records in
    flight between the stage queries); stop_with_savepoint stops stage 1's query, lets stage
    2 process what stage 1 staged and saves both stages at that one cut (restoring a
    multi-stage savepoint: test_multistage_handoff_and_restore_into_both_modes). One query:
    the job is that query; a savepoint of a micro-batch holds both stages at its end, and
    stop_with_savepoint saves the same cut as per-stage."""
    if mapping == "one-query" and spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+")
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    _add_file(src, [("ann", "north", 1_000), ("bo", "north", 2_000), ("cy", "south", 3_000)],
              "f1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    "execution.streaming.trigger": "processing-time=1 second",
                                    "execution.streaming.query-mapping": mapping})
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OOO)).with_timestamp_assigner(Ts())
    df = spark.readStream.schema("user string, region string, ts long").parquet(src)
    (env.from_dataframe(df).assign_timestamps_and_watermarks(strategy)
     .map(lambda e: (e[0], e[1], e[2], 1), output_type=PER_USER)
     .key_by(lambda r: r[0], key_type=Types.STRING()).reduce(_per_user).uid("per-user")
     .key_by(lambda r: r[1], key_type=Types.STRING())
     .process(RegionTotals(), output_type=OUT).uid("per-region")
     .sink_to_delta(out))
    client = env.execute_async("running-multi")
    sp, refused = str(tmp_path / "sp"), str(tmp_path / "refused")
    if mapping == "one-query":
        try:
            (query,) = client.get_queries().values()
            query.processAllAvailable()
            three = client.trigger_savepoint(refused).result()  # no record between queries
            _add_file(src, [("ann", "north", 4_000), ("cy", "south", 5_000),
                            ("dee", "east", 6_000)], "f2")
            query.processAllAvailable()
            assert client.stop_with_savepoint(False, sp).result() == sp
        finally:
            if client.get_job_status().result() is JobStatus.RUNNING:
                client.cancel()
        assert client.get_job_status().result() is JobStatus.FINISHED
        users = _decoded(Savepoint.load(three, spark))[0]
        assert sorted(u for u, _ in users) == ["ann", "bo", "cy"]  # the first file's cut
        assert _decoded(Savepoint.load(sp, spark)) == _SIX_RECORDS_STOPPED
        assert not os.path.exists(out) or DeltaTable(out).to_pyarrow_table().num_rows == 0
        return
    try:
        queries = client.get_queries()
        assert list(queries) == ["per-region-0-input", "sink-0"]
        for q in queries.values():
            q.processAllAvailable()
        with pytest.raises(SavepointError, match=r"several queries \['per-region-0-input', "
                                                 r"'sink-0'\].*in flight.*stop_with_savepoint"):
            client.trigger_savepoint(refused)
        assert not os.path.exists(refused)
        _add_file(src, [("ann", "north", 4_000), ("cy", "south", 5_000),
                        ("dee", "east", 6_000)], "f2")
        queries["per-region-0-input"].processAllAvailable()  # stage 2 has not read it yet
        assert client.stop_with_savepoint(False, sp).result() == sp
    finally:
        if client.get_job_status().result() is JobStatus.RUNNING:
            client.cancel()
    assert client.get_job_status().result() is JobStatus.FINISHED
    # the torn-cut check (a stop inside a batch: staged output ahead of the commit log) sees
    # the real logs agree; with the last commit removed it reports the gap
    stage1 = "per-region-0-input"
    assert client._staged_ahead(stage1) is None
    commits = os.path.join(str(tmp_path / "ckpt"), "running-multi", stage1, "checkpoint",
                           "commits")
    last = max(int(n) for n in os.listdir(commits) if n.isdigit())
    os.remove(os.path.join(commits, str(last)))
    assert client._staged_ahead(stage1) == (last, last - 1 if last else None)
    loaded = Savepoint.load(sp, spark)
    # both stages hold all six records (stage 2 consumed what was in flight); no deadline
    # passed the watermark (6_000 - OOO - 1), so every region's timer is pending
    assert _decoded(loaded) == _SIX_RECORDS_STOPPED
    # nothing fired before the stop
    assert not os.path.exists(out) or DeltaTable(out).to_pyarrow_table().num_rows == 0


def _fan_out_job(env, data, out_region, out_letter):
    """Stage A (per-user reduce) feeds two keyed consumers: B by region, C by the user's
    first letter (the same order-insensitive totals function). ``data``: a list of events,
    or a (streaming) DataFrame of them."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OOO)).with_timestamp_assigner(Ts())
    source = env.from_collection(data, EVENT) if isinstance(data, list) \
        else env.from_dataframe(data)
    per_user = (source.assign_timestamps_and_watermarks(strategy)
                .map(lambda e: (e[0], e[1], e[2], 1), output_type=PER_USER)
                .key_by(lambda r: r[0], key_type=Types.STRING()).reduce(_per_user)
                .uid("per-user"))
    (per_user.key_by(lambda r: r[1], key_type=Types.STRING())
     .process(RegionTotals(), output_type=OUT).uid("per-region").sink_to_delta(out_region))
    (per_user.key_by(lambda r: r[0][0], key_type=Types.STRING())
     .process(RegionTotals(), output_type=OUT).uid("per-letter").sink_to_delta(out_letter))


def _fan_out_run(env, tmp_path, name, sp):
    outs = [str(tmp_path / f"{name}-region"), str(tmp_path / f"{name}-letter")]
    _fan_out_job(env, DATA_A, *outs)
    env.execute(f"fan-{name}", savepoint_path=sp)
    return [sorted(tuple(r.values()) for r in DeltaTable(o).to_pyarrow_table().to_pylist())
            for o in outs]


def _fan_out_outputs(outs):
    return [sorted(tuple(r.values()) for r in DeltaTable(o).to_pyarrow_table().to_pylist())
            if os.path.exists(o) else [] for o in outs]


def test_fan_out_savepoint_and_restore(env_factory, spark, tmp_path):
    """A keyed stage read by two keyed stages, each with event-time timers. STREAMING
    (available-now + savepoint) gives both sinks the outputs BATCH gives, and a savepoint
    whose three operators decode to BATCH's row for row (stage A's state exported once, from
    the one query that runs it). The default mapping: on Spark 4.0+ one query, A's records
    relayed through B to C (one_query.carry_plan); on 3.5 per stage, A's query staging its
    output for B's and C's (test_fan_out_stop_with_savepoint runs that on every line).
    Restored into a STREAMING run over B, both consumers' final totals equal one
    uninterrupted BATCH run over A + B (every stage's state restored)."""
    sp_stream, sp_batch = str(tmp_path / "sp-stream"), str(tmp_path / "sp-batch")
    env = env_for(env_factory, tmp_path, "STREAMING", "s")
    out_a = _fan_out_run(env, tmp_path, "s", sp_stream)
    # region: only north's deadline passed 94_999; letter: a (62_000) and b (50_000) did
    assert out_a == [[("north", 4)], [("a", 2), ("b", 2)]]
    # stage A runs (and holds state) in one query only
    root = str(tmp_path / "ckpt-s" / "fan-s")
    assert sorted(q for q in os.listdir(root)
                  if os.path.isdir(os.path.join(root, q, "checkpoint", "state"))) == (
        ["query"] if spark_line(spark) >= (4, 0) else ["per-user-output", "sink-0", "sink-1"])
    env = env_for(env_factory, tmp_path, "BATCH", "b")
    assert _fan_out_run(env, tmp_path, "b", sp_batch) == out_a

    stream, batch = Savepoint.load(sp_stream, spark), Savepoint.load(sp_batch, spark)
    assert stream.operators() == batch.operators() == ["per-letter", "per-region", "per-user"]
    assert stream.metadata().final_watermark == batch.metadata().final_watermark == FINAL_WM_A
    assert _decoded(stream) == _decoded(batch)
    letters = sorted((r["key"], sorted(dict(r["counts"] or {}).items()), r["deadline"])
                     for r in stream.read_keyed_state(
                         "per-letter", MapStateDescriptor("counts", Types.STRING(), Types.LONG()),
                         ValueStateDescriptor("deadline", Types.LONG())).collect())
    assert letters == [("a", [("ann", 2)], None), ("b", [("bo", 2)], None),
                       ("c", [("cy", 2)], 130_000), ("d", [("dee", 1)], 129_000),
                       ("e", [("eve", 1)], 125_000)]
    assert sorted((r["key"], r["timestamp"]) for r in stream.read_timers("per-letter").collect()) \
        == [("c", 130_000), ("d", 129_000), ("e", 125_000)]
    for uid in ("per-user", "per-region", "per-letter"):
        assert _entry_rows(stream, uid) == _entry_rows(batch, uid), uid

    env = env_for(env_factory, tmp_path, "BATCH", "ab")
    outs_ab = [str(tmp_path / "ab-region"), str(tmp_path / "ab-letter")]
    _fan_out_job(env, DATA_A + DATA_B, *outs_ab)
    env.execute("fan-ab")
    expected = [_final(rows) for rows in _fan_out_outputs(outs_ab)]
    assert expected == [AB_TOTALS,
                        {"a": 3, "b": 2, "c": 3, "d": 1, "e": 1, "f": 1}]

    env = env_for(env_factory, tmp_path, "STREAMING", "r",
                  **{"execution.savepoint.path": sp_stream})
    outs_b = [str(tmp_path / "r-region"), str(tmp_path / "r-letter")]
    _fan_out_job(env, DATA_B, *outs_b)
    env.execute("fan-r")
    out_b = _fan_out_outputs(outs_b)
    # restored timers of keys without new data fire: east (region), d and e (letter)
    assert ("east", 1) in out_b[0] and ("d", 1) in out_b[1] and ("e", 1) in out_b[1]
    # stage A's restored state: ann's count continues from 2 (letter a: 3, not 1)
    assert [_final(a + b) for a, b in zip(out_a, out_b)] == expected


def test_fan_out_stop_with_savepoint(env_factory, spark, tmp_path):
    """execute_async of the fan-out job over a file source (processing-time trigger):
    trigger_savepoint is refused (three keyed queries); stop_with_savepoint stops stage
    A's staging query first, lets both consumers' queries process what it staged, and
    saves all three operators at that one cut, row for row BATCH's savepoint of the same
    six records."""
    src = str(tmp_path / "in")
    first = [("ann", "north", 1_000), ("bo", "north", 2_000), ("cy", "south", 3_000)]
    second = [("ann", "north", 4_000), ("cy", "south", 5_000), ("dee", "east", 6_000)]
    _add_file(src, first, "f1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    "execution.streaming.trigger": "processing-time=1 second",
                                    "execution.streaming.query-mapping": "per-stage"})
    df = spark.readStream.schema("user string, region string, ts long").parquet(src)
    outs = [str(tmp_path / "s-region"), str(tmp_path / "s-letter")]
    _fan_out_job(env, df, *outs)
    client = env.execute_async("running-fan")
    sp = str(tmp_path / "sp")
    try:
        queries = client.get_queries()
        assert list(queries) == ["per-user-output", "sink-0", "sink-1"]
        for q in queries.values():
            q.processAllAvailable()
        refused = str(tmp_path / "refused")
        with pytest.raises(SavepointError, match=r"several queries \['per-user-output', "
                                                 r"'sink-0', 'sink-1'\].*stop_with_savepoint"):
            client.trigger_savepoint(refused)
        assert not os.path.exists(refused)
        _add_file(src, second, "f2")
        queries["per-user-output"].processAllAvailable()  # the consumers may not have read it
        assert client.stop_with_savepoint(False, sp).result() == sp
    finally:
        if client.get_job_status().result() is JobStatus.RUNNING:
            client.cancel()
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert client._staged_ahead("per-user-output") is None
    # nothing fired before the stop (watermark 6_000 - OOO - 1)
    assert _fan_out_outputs(outs) == [[], []]

    sp_batch = str(tmp_path / "sp-batch")
    env = env_for(env_factory, tmp_path, "BATCH", "b")
    _fan_out_job(env, first + second, str(tmp_path / "b-region"), str(tmp_path / "b-letter"))
    env.execute("fan-batch", savepoint_path=sp_batch)
    stream, batch = Savepoint.load(sp, spark), Savepoint.load(sp_batch, spark)
    assert stream.operators() == batch.operators() == ["per-letter", "per-region", "per-user"]
    # every stage holds all six records (the consumers read what stage A had staged)
    assert _decoded(stream) == _SIX_RECORDS_STOPPED
    assert sorted((r["key"], r["timestamp"]) for r in stream.read_timers("per-letter").collect()) \
        == [("a", 34_000), ("b", 32_000), ("c", 35_000), ("d", 36_000)]
    assert _decoded(batch) == _SIX_RECORDS_STOPPED
    for uid in ("per-user", "per-region", "per-letter"):
        assert _entry_rows(stream, uid) == _entry_rows(batch, uid), uid
