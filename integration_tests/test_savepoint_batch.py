"""Savepoints in BATCH execution: write at end of input, restore at start (real Spark, delta-rs)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable
from helpers import run_to_delta
from pyspark_datastream import (
    Duration,
    IncompatibleStateError,
    KeyedProcessFunction,
    SavepointNotFoundError,
    Types,
    UnclaimedStateError,
    ValueStateDescriptor,
    WatermarkStrategy,
)
from pyspark_datastream.savepoint import Savepoint, SavepointWriter, savepoint_versions
from savepoint_jobs import (
    DATA_A,
    DATA_B,
    EVENT,
    FINAL_WM_A,
    OOO,
    OUT,
    Count,
    Sessionize,
    keyed_stream,
)


class Boom(KeyedProcessFunction):
    def process_element(self, value, ctx):
        if value[0] == "bad":
            raise ValueError("boom on purpose")
        yield value


def test_write_counts_then_read_keyed_state_and_metadata(env_factory, spark, tmp_path):
    env = env_factory("BATCH")
    sp = str(tmp_path / "sp")
    results = run_to_delta(env, keyed_stream(env, DATA_A, Count(), uid="count"),
                           str(tmp_path / "out"), "sp-job", sp)
    assert max(n for k, n in results if k == "alice") == 3
    loaded = Savepoint.load(sp, spark)
    meta = loaded.metadata()
    assert loaded.operators() == ["count"]
    assert (meta.mode, meta.backend, meta.job_name) == ("BATCH", "single_key", "sp-job")
    assert meta.final_watermark == FINAL_WM_A
    assert meta.max_parallelism == 128
    assert "count" in {m.name for m in meta.operator("count").states}
    rows = loaded.read_keyed_state("count", ValueStateDescriptor("count", Types.LONG())).collect()
    assert sorted((r["key"], r["count"]) for r in rows) == [("alice", 3), ("bob", 3), ("carol", 1)]
    assert savepoint_versions(sp)[0]["version"] == 0


def test_savepoint_of_a_field_keyed_operator_equals_the_key_bytes_path(env_factory, spark,
                                                                        tmp_path):
    """A typed DataFrame keyed by one field is shuffled and sorted by that column (no key-bytes
    column); the savepoint it writes equals, entry for entry, the one written with the
    pushdowns off (keys serialized by a key-bytes pass), and the outputs agree."""
    rows, outs = [], []
    for pushdown in ("true", "false"):
        sp = str(tmp_path / f"sp-{pushdown}")
        env = env_factory("BATCH", {"execution.batch.native-pushdown.enabled": pushdown})
        out = str(tmp_path / f"out-{pushdown}")
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(OOO)).with_timestamp_assigner(lambda r, _: r[1])
        clicks = spark.createDataFrame(DATA_A + DATA_B, "user string, ts long")
        (env.from_dataframe(clicks).assign_timestamps_and_watermarks(strategy)
         .key_by(lambda r: r[0], key_type=Types.STRING())
         .process(Sessionize(), output_type=OUT).uid("sess").sink_to_delta(out))
        details = " ".join(str(r["detail"]) for r in env.execute("sp-job", sp).get_progress())
        assert ("by column user" in details) == (pushdown == "true"), details
        outs.append(sorted(tuple(r.values())
                           for r in DeltaTable(out).to_pyarrow_table().to_pylist()))
        df = Savepoint.load(sp, spark).entries("sess").select(
            "key_group", "key", "state_name", "namespace", "user_key", "value")
        rows.append(sorted(tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v
                                 for v in r) for r in df.collect()))
    assert outs[0] == outs[1]
    assert rows[0] and rows[0] == rows[1]
    assert {r[2] for r in rows[0]} == {"last", "_timer/event"}


def test_pending_timers_saved_then_fired_after_restore_sessionization(env_factory, spark,
                                                                       tmp_path):
    env_a = env_factory("BATCH")
    sp = str(tmp_path / "sp")
    out_a = run_to_delta(env_a, keyed_stream(env_a, DATA_A, Sessionize(), uid="sess"),
                         str(tmp_path / "a"), "sp-job", sp)
    # alice: gap 2_000 -> 50_000 closes session 2_000; her last timer 80_000 <= 94_999 fires
    assert out_a == [("alice", 2_000), ("alice", 50_000), ("bob", 10_000)]
    timers = sorted((r["key"], r["timestamp"]) for r in
                    Savepoint.load(sp, spark).read_timers("sess").collect())
    # only the timers beyond the final watermark are saved (pending), alice's fired
    assert timers == [("bob", 125_000), ("bob", 130_000), ("carol", 129_000)]

    env_b = env_factory("BATCH", {"execution.savepoint.path": sp})
    out_b = run_to_delta(env_b, keyed_stream(env_b, DATA_B, Sessionize(), uid="sess"),
                         str(tmp_path / "b"), "sp-job")
    env_ab = env_factory("BATCH")
    out_ab = run_to_delta(env_ab, keyed_stream(env_ab, DATA_A + DATA_B, Sessionize(), uid="sess"),
                          str(tmp_path / "ab"), "sp-job")
    assert sorted(out_a + out_b) == out_ab
    assert ("carol", 99_000) in out_b  # a key only in the savepoint: its restored timer fired


def test_counting_a_then_b_equals_a_plus_b_with_other_parallelism(env_factory, tmp_path):
    env_a = env_factory("BATCH")
    sp = str(tmp_path / "sp")
    run_to_delta(env_a, keyed_stream(env_a, DATA_A, Count(), uid="count"),
                 str(tmp_path / "a"), "sp-job", sp)
    env_b = env_factory("BATCH", {"execution.savepoint.path": sp})
    env_b.set_parallelism(3)
    env_b.set_max_parallelism(32)  # key groups recomputed from the stored key bytes
    out_b = run_to_delta(env_b, keyed_stream(env_b, DATA_B, Count(), uid="count"),
                         str(tmp_path / "b"), "sp-job")
    env_ab = env_factory("BATCH")
    out_ab = run_to_delta(env_ab, keyed_stream(env_ab, DATA_A + DATA_B, Count(), uid="count"),
                          str(tmp_path / "ab"), "sp-job")
    final = {}
    for k, n in out_b:
        final[k] = max(n, final.get(k, 0))
    expected = {}
    for k, n in out_ab:
        expected[k] = max(n, expected.get(k, 0))
    expected.pop("carol")  # no record of carol in B: the process function emits nothing
    assert final == expected == {"alice": 4, "bob": 5, "dave": 1}


def test_reduce_state_round_trip_and_restored_only_keys_emit(env_factory, spark, tmp_path):
    def job(env, data):
        return (env.from_collection(data, EVENT).key_by(lambda r: r[0], key_type=Types.STRING())
                .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("sum"))

    env_a = env_factory("BATCH")
    sp = str(tmp_path / "sp")
    out_a = run_to_delta(env_a, job(env_a, DATA_A), str(tmp_path / "a"), "sp-job", sp)
    assert dict(out_a)["alice"] == 53_000
    loaded = Savepoint.load(sp, spark)
    assert loaded.metadata().final_watermark is None  # no timestamps in this job
    assert loaded.read_timers("sum").count() == 0  # a STREAMING reduce holds no timer
    env_b = env_factory("BATCH", {"execution.savepoint.path": sp})
    out_b = run_to_delta(env_b, job(env_b, DATA_B), str(tmp_path / "b"), "sp-job")
    env_ab = env_factory("BATCH")
    assert out_b == run_to_delta(env_ab, job(env_ab, DATA_A + DATA_B),
                                 str(tmp_path / "ab"), "sp-job")


def test_bootstrap_then_batch_job_sees_the_state(env_factory, spark, tmp_path):
    df = spark.createDataFrame([("alice", 40), ("zoe", 7)], "user string, n bigint")
    sp = str(tmp_path / "boot")
    (SavepointWriter(max_parallelism=128)
     .with_keyed_state("count", df, "user", {"n": ValueStateDescriptor("count", Types.LONG())})
     .write(sp))
    env = env_factory("BATCH", {"execution.savepoint.path": sp})
    out = run_to_delta(env, keyed_stream(env, [("alice", 1), ("bob", 2)], Count(), uid="count"),
                       str(tmp_path / "out"), "sp-job")
    assert out == [("alice", 41), ("bob", 1)]


def test_restore_errors_are_typed_and_named(env_factory, spark, tmp_path):
    sp = str(tmp_path / "sp")
    env = env_factory("BATCH")
    run_to_delta(env, keyed_stream(env, DATA_A, Count(), uid="count"), str(tmp_path / "a"), "sp-job", sp)

    env = env_factory("BATCH", {"execution.savepoint.path": str(tmp_path / "nothing")})
    with pytest.raises(SavepointNotFoundError, match="is not a savepoint"):
        keyed_stream(env, DATA_B, Count(), uid="count").execute_and_collect()

    env = env_factory("BATCH", {"execution.savepoint.path": sp})
    with pytest.raises(UnclaimedStateError, match=r"\['count'\] is not claimed"):
        list(keyed_stream(env, DATA_B, Count(), uid="renamed").execute_and_collect())

    env = env_factory("BATCH", {"execution.savepoint.path": sp,
                                "execution.savepoint.ignore-unclaimed-state": "true"})
    assert sorted(keyed_stream(env, DATA_B, Count(), uid="renamed").execute_and_collect()) == [
        ("alice", 1), ("bob", 1), ("bob", 2), ("dave", 1)]

    class CountAsString(Count):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.STRING()))

    env = env_factory("BATCH", {"execution.savepoint.path": sp})
    with pytest.raises(IncompatibleStateError,
                       match=r"operator 'count', state 'count'.*value_serializer"):
        keyed_stream(env, DATA_B, CountAsString(), uid="count").sink_to_delta(str(tmp_path / "x"))
        env.execute("incompatible")
    assert not (tmp_path / "x").exists()

    env = env_factory("BATCH", {"execution.savepoint.path": sp,
                                "execution.savepoint.version": "7"})
    with pytest.raises(SavepointNotFoundError, match="cannot open savepoint version 7"):
        list(keyed_stream(env, DATA_B, Count(), uid="count").execute_and_collect())


def test_failed_job_leaves_no_new_version_and_generated_uid_warns(env_factory, tmp_path):
    sp = str(tmp_path / "sp")
    env = env_factory("BATCH")
    run_to_delta(env, keyed_stream(env, DATA_A, Count(), uid="count"), str(tmp_path / "a"), "sp-job", sp)
    env = env_factory("BATCH")
    stream = keyed_stream(env, DATA_A + [("bad", 1)], Boom(), uid="boom")
    stream.sink_to_delta(str(tmp_path / "b"))
    with pytest.raises(Exception, match="boom on purpose"):
        env.execute("failing", savepoint_path=sp)
    assert [v["version"] for v in savepoint_versions(sp)] == [0]

    env = env_factory("BATCH")
    stream = (env.from_collection(DATA_A, EVENT).key_by(lambda r: r[0], key_type=Types.STRING())
              .process(Count(), output_type=OUT))
    stream.sink_to_delta(str(tmp_path / "c"))
    with pytest.warns(UserWarning, match="has no uid: its savepoint state is stored under"):
        env.execute("generated", savepoint_path=sp)
    loaded = Savepoint.load(sp)
    (uid,) = loaded.operators()
    assert uid != "count" and loaded.metadata().operator(uid).generated_uid is True
