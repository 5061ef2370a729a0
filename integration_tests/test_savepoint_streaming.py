"""Savepoints in STREAMING: write after an available-now run (no drain), restore at start,
and the BATCH -> STREAMING handoff (real Spark, delta-rs, heap and rocksdb)."""

from __future__ import annotations

import os

import pytest
from helpers import entry_rows, env_for, run_to_delta, spark_line
from pyspark_datastream import (
    ConfigurationError,
    IncompatibleStateError,
    Types,
    UnclaimedStateError,
    UnsupportedSparkFeatureError,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint, SavepointWriter, savepoint_versions
from savepoint_jobs import DATA_A, DATA_B, Count, Sessionize, keyed_stream


def test_handoff_sessionization_heap(env_factory, spark, tmp_path):
    """BATCH(A) and STREAMING(A) savepoints are equal row for row (pending timers included);
    restoring either into STREAMING(B) gives the same results."""
    sp_batch, sp_stream = str(tmp_path / "sp-batch"), str(tmp_path / "sp-stream")
    env = env_for(env_factory, tmp_path, "BATCH", "a-batch")
    out_a_batch = run_to_delta(env, keyed_stream(env, DATA_A, Sessionize(), uid="sess"),
                       str(tmp_path / "a-batch"), "sess-a", sp_batch)
    env = env_for(env_factory, tmp_path, "STREAMING", "a-stream")
    out_a_stream = run_to_delta(env, keyed_stream(env, DATA_A, Sessionize(), uid="sess"),
                        str(tmp_path / "a-stream"), "sess-a", sp_stream)
    # no drain: bob's and carol's sessions are still open (timers after the final watermark)
    assert out_a_stream == out_a_batch == [("alice", 2_000), ("alice", 50_000), ("bob", 10_000)]
    rows = entry_rows(spark, sp_stream, "sess")
    assert rows and rows == entry_rows(spark, sp_batch, "sess")
    loaded = Savepoint.load(sp_stream, spark)
    meta = loaded.metadata()
    assert (meta.mode, meta.backend, meta.job_name) == ("STREAMING", "hashmap", "sess-a")
    assert meta.final_watermark == 100_000 - 5_000 - 1  # Flink's watermark: Spark's - 1
    timers = sorted((r["key"], r["timestamp"]) for r in loaded.read_timers("sess").collect())
    assert timers == [("bob", 125_000), ("bob", 130_000), ("carol", 129_000)]
    state = loaded.read_keyed_state("sess", ValueStateDescriptor("last", Types.LONG())).collect()
    assert sorted((r["key"], r["last"]) for r in state) == [("bob", 100_000), ("carol", 99_000)]

    results = []
    for name, sp in (("b-from-batch", sp_batch), ("b-from-stream", sp_stream)):
        env = env_for(env_factory, tmp_path, "STREAMING", name, **{"execution.savepoint.path": sp})
        results.append(run_to_delta(env, keyed_stream(env, DATA_B, Sessionize(), uid="sess"),
                            str(tmp_path / name), "sess-b"))
    assert results[0] == results[1]
    assert ("carol", 99_000) in results[1]  # key only in the savepoint: its timer fired
    env = env_for(env_factory, tmp_path, "BATCH", "ab")
    out_ab = run_to_delta(env, keyed_stream(env, DATA_A + DATA_B, Sessionize(), uid="sess"),
                  str(tmp_path / "ab"), "sess-ab")
    assert sorted(out_a_stream + results[1]) == out_ab


def test_streaming_restore_ignores_batch_only_sorted_inputs_option(env_factory, tmp_path):
    """``execution.sorted-inputs.enabled`` is a BATCH option: a STREAMING job restoring a
    savepoint with it off runs (and continues the sessions) like one with it on."""
    sp = str(tmp_path / "sp")
    env = env_for(env_factory, tmp_path, "BATCH", "a")
    out_a = run_to_delta(env, keyed_stream(env, DATA_A, Sessionize(), uid="sess"), str(tmp_path / "a"),
                 "sess-a", sp)
    results = []
    for flag in ("true", "false"):
        env = env_for(env_factory, tmp_path, "STREAMING", f"b-{flag}",
                   **{"execution.savepoint.path": sp, "execution.sorted-inputs.enabled": flag})
        results.append(run_to_delta(env, keyed_stream(env, DATA_B, Sessionize(), uid="sess"),
                            str(tmp_path / f"b-{flag}"), "sess-b"))
    assert results[0] == results[1]
    env = env_for(env_factory, tmp_path, "BATCH", "ab")
    out_ab = run_to_delta(env, keyed_stream(env, DATA_A + DATA_B, Sessionize(), uid="sess"),
                  str(tmp_path / "ab"), "sess-ab")
    assert sorted(out_a + results[1]) == out_ab


@pytest.mark.compat
def test_handoff_counting_rocksdb(env_factory, spark, tmp_path):
    """Counting with the rocksdb backend: STREAMING(A) savepoint equals BATCH(A)'s; BATCH(A)
    -> savepoint -> STREAMING(B) continues the counts."""
    sp_batch, sp_stream = str(tmp_path / "sp-batch"), str(tmp_path / "sp-stream")
    env = env_for(env_factory, tmp_path, "BATCH", "a-batch")
    out_a = run_to_delta(env, keyed_stream(env, DATA_A, Count(), uid="count"),
                         str(tmp_path / "a-batch"), "c", sp_batch)
    assert max(n for k, n in out_a if k == "alice") == 3
    rocks = {"state.backend.type": "rocksdb"}
    env = env_for(env_factory, tmp_path, "STREAMING", "a-stream", **rocks)
    stream_a = keyed_stream(env, DATA_A, Count(), uid="count")
    if spark_line(spark) < (4, 0):
        # Spark 3.5 has no state data source to read the state back: refused when the job
        # is built, before any query ran or wrote anything
        with pytest.raises(UnsupportedSparkFeatureError,
                           match=r"a STREAMING savepoint needs Spark 4\.0 or newer; this "
                                 r"session runs Spark 3\.5"):
            run_to_delta(env, stream_a, str(tmp_path / "a-stream"), "c", sp_stream)
        assert not os.path.exists(sp_stream)
        assert not os.path.exists(tmp_path / "a-stream")
    else:
        out_a = run_to_delta(env, stream_a, str(tmp_path / "a-stream"), "c", sp_stream)
        assert max(n for k, n in out_a if k == "alice") == 3
        assert entry_rows(spark, sp_stream, "count") == entry_rows(spark, sp_batch, "count")
        loaded = Savepoint.load(sp_stream, spark)
        assert loaded.metadata().backend == "rocksdb"
        state = loaded.read_keyed_state("count", ValueStateDescriptor("count", Types.LONG()))
        assert sorted((r["key"], r["count"]) for r in state.collect()) == [
            ("alice", 3), ("bob", 3), ("carol", 1)]

    env = env_for(env_factory, tmp_path, "STREAMING", "b", **rocks,
               **{"execution.savepoint.path": sp_batch})
    out_b = run_to_delta(env, keyed_stream(env, DATA_B, Count(), uid="count"), str(tmp_path / "b"), "c")
    final = {}
    for k, n in out_a + out_b:
        final[k] = max(n, final.get(k, 0))
    assert final == {"alice": 4, "bob": 5, "carol": 1, "dave": 1}


def test_bootstrap_savepoint_restores_into_streaming(env_factory, spark, tmp_path):
    df = spark.createDataFrame([("alice", 40), ("zoe", 7)], "user string, n bigint")
    sp = str(tmp_path / "boot")
    (SavepointWriter(max_parallelism=128)
     .with_keyed_state("count", df, "user", {"n": ValueStateDescriptor("count", Types.LONG())})
     .write(sp))
    env = env_for(env_factory, tmp_path, "STREAMING", "boot", **{"execution.savepoint.path": sp})
    out = run_to_delta(env, keyed_stream(env, [("alice", 1), ("bob", 2), ("zoe", 3)], Count(), uid="count"),
               str(tmp_path / "out"), "boot")
    assert out == [("alice", 41), ("bob", 1), ("zoe", 8)]


def test_restore_and_write_errors_before_any_query(env_factory, spark, tmp_path):
    df = spark.createDataFrame([("alice", 40)], "user string, n bigint")
    sp = str(tmp_path / "boot")
    (SavepointWriter(max_parallelism=128)
     .with_keyed_state("count", df, "user", {"n": ValueStateDescriptor("count", Types.LONG())})
     .write(sp))
    out = str(tmp_path / "out")
    env = env_for(env_factory, tmp_path, "STREAMING", "renamed", **{"execution.savepoint.path": sp})
    keyed_stream(env, [("alice", 1)], Count(), uid="renamed").sink_to_delta(out)
    with pytest.raises(UnclaimedStateError, match=r"\['count'\] is not claimed"):
        env.execute("renamed")

    class CountAsString(Count):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.STRING()))

    env = env_for(env_factory, tmp_path, "STREAMING", "incompatible",
               **{"execution.savepoint.path": sp})
    keyed_stream(env, [("alice", 1)], CountAsString(), uid="count").sink_to_delta(out)
    with pytest.raises(IncompatibleStateError,
                       match=r"operator 'count', state 'count'.*value_serializer"):
        env.execute("incompatible")

    env = env_for(env_factory, tmp_path, "STREAMING", "pt",
               **{"execution.streaming.trigger": "processing-time=1 second"})
    keyed_stream(env, [("alice", 1)], Count(), uid="count").sink_to_delta(out)
    with pytest.raises(ConfigurationError, match="end of an available-now"):
        env.execute("pt", savepoint_path=sp)
    assert not os.path.exists(out)  # nothing ran
    assert [v["version"] for v in savepoint_versions(sp)] == [0]  # no version added
