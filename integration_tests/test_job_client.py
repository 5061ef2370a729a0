"""``env.execute_async`` and its ``JobClient``: savepoints of a running STREAMING job
(processing-time trigger over a file source), stop-with-savepoint, restore; BATCH refusal
(real Spark, delta-rs)."""

from __future__ import annotations

import os

import pytest
from deltalake import DeltaTable
from helpers import KV_SCHEMA, add_keys_file
from pyspark_datastream import (
    ConfigurationError,
    JobClient,
    JobExecutionError,
    JobStatus,
    SavepointError,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint
from savepoint_jobs import OUT, Count


def _counting_job(env, spark, src, out):
    df = spark.readStream.schema(KV_SCHEMA).parquet(src)
    (env.from_dataframe(df).key_by(lambda r: r[0], key_type=Types.STRING())
     .process(Count(), output_type=OUT).uid("count").sink_to_delta(out))


def _counts(spark, path):
    state = Savepoint.load(path, spark).read_keyed_state(
        "count", ValueStateDescriptor("count", Types.LONG())).collect()
    return sorted((r["key"], r["count"]) for r in state)


def _settle(client: JobClient) -> None:
    for q in client.get_queries().values():
        q.processAllAvailable()


def test_running_job_savepoints_then_stop_then_restore(env_factory, spark, tmp_path):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    add_keys_file(src, ["a", "b", "a"], "f1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    "execution.streaming.trigger": "processing-time=1 second"})
    _counting_job(env, spark, src, out)
    client = env.execute_async("running-count")
    try:
        assert client.get_job_status().result() == JobStatus.RUNNING == "RUNNING"
        assert list(client.get_queries()) == ["sink-0"]
        _settle(client)
        sp1, sp2 = str(tmp_path / "sp1"), str(tmp_path / "sp2")
        assert client.trigger_savepoint(sp1).result() == sp1
        assert _counts(spark, sp1) == [("a", 2), ("b", 1)]
        assert client.get_job_status().result() is JobStatus.RUNNING  # still running after it

        add_keys_file(src, ["b", "c"], "f2")
        _settle(client)
        with pytest.raises(SavepointError, match=r"stop_with_savepoint\(True, .*\) is not supported"):
            client.stop_with_savepoint(True, sp2)
        # PyFlink's order is (advance_to_end_of_event_time, savepoint_directory): a path
        # first is refused before anything stops
        with pytest.raises(SavepointError, match=r"must be a bool, got '.*sp2'.*second argument"):
            client.stop_with_savepoint(sp2)  # type: ignore[arg-type]
        with pytest.raises(SavepointError, match=r"savepoint_directory must be a non-empty path"):
            client.stop_with_savepoint(False)
        assert client.get_job_status().result() is JobStatus.RUNNING  # the refusal stopped nothing
        assert client.stop_with_savepoint(False, sp2).result() == sp2
    finally:
        if client.get_job_status().result() is JobStatus.RUNNING:
            client.cancel()
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert not any(q.isActive for q in client.get_queries().values())
    assert client.get_job_execution_result().result().job_name == "running-count"
    assert _counts(spark, sp2) == [("a", 2), ("b", 2), ("c", 1)]
    assert _counts(spark, sp1) == [("a", 2), ("b", 1)]  # the earlier savepoint is unchanged
    meta = Savepoint.load(sp2, spark).metadata()
    assert (meta.mode, meta.job_name) == ("STREAMING", "running-count")
    rows = sorted(tuple(r.values()) for r in DeltaTable(out).to_pyarrow_table().to_pylist())
    assert rows == [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("c", 1)]
    with pytest.raises(SavepointError, match="'running-count' is FINISHED, not RUNNING"):
        client.trigger_savepoint(str(tmp_path / "sp3"))

    # restore into a new job (available-now: runs on its own, on a background thread)
    src2, out2 = str(tmp_path / "in2"), str(tmp_path / "out2")
    add_keys_file(src2, ["a", "c", "d"], "g1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt2"),
                                    "execution.savepoint.path": sp2})
    _counting_job(env, spark, src2, out2)
    client2 = env.execute_async("restored-count")
    with pytest.raises(SavepointError, match="finishes on its own.*savepoint_path"):
        client2.trigger_savepoint(str(tmp_path / "sp4"))
    assert client2.wait(120) is JobStatus.FINISHED
    assert client2.get_job_execution_result().result().mode == "STREAMING"
    rows = sorted(tuple(r.values()) for r in DeltaTable(out2).to_pyarrow_table().to_pylist())
    assert rows == [("a", 3), ("c", 2), ("d", 1)]


def test_cancel_and_batch_refusals(env_factory, spark, tmp_path):
    src = str(tmp_path / "in")
    add_keys_file(src, ["a"], "f1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    "execution.streaming.trigger": "processing-time=1 second"})
    _counting_job(env, spark, src, str(tmp_path / "out"))
    client = env.execute_async("canceled")
    client.cancel()
    assert client.get_job_status().result() is JobStatus.CANCELED
    with pytest.raises(JobExecutionError, match="'canceled' was canceled"):
        client.get_job_execution_result().result()
    with pytest.raises(SavepointError, match="is CANCELED, not RUNNING"):
        client.stop_with_savepoint(False, str(tmp_path / "sp"))

    env = env_factory("STREAMING", {"execution.streaming.trigger": "processing-time=1 second"})
    _counting_job(env, spark, src, str(tmp_path / "out-nockpt"))
    with pytest.raises(ConfigurationError, match="no checkpoint root is configured: set "
                       "execution.checkpointing.dir"):
        env.execute_async("no-checkpoint-dir")
    assert not any(q.name.startswith("no-checkpoint-dir") for q in spark.streams.active)

    env = env_factory("BATCH")
    (env.from_collection([("a", 1), ("a", 2)], Types.TUPLE([Types.STRING(), Types.LONG()]))
     .key_by(lambda r: r[0], key_type=Types.STRING()).process(Count(), output_type=OUT)
     .uid("count").sink_to_delta(str(tmp_path / "batch-out")))
    batch = env.execute_async("batch-count")
    assert batch.get_job_status().result() is JobStatus.FINISHED
    assert batch.get_job_execution_result().result().mode == "BATCH"
    with pytest.raises(SavepointError, match=r"BATCH mode.*execute\(name, savepoint_path"):
        batch.trigger_savepoint(str(tmp_path / "sp"))
    with pytest.raises(SavepointError, match="BATCH mode"):
        batch.stop_with_savepoint(False, str(tmp_path / "sp"))
    assert not os.path.exists(str(tmp_path / "sp"))
