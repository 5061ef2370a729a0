"""PyFlink's environment calls and smaller API items on real Spark: the checkpoint interval
of ``enable_checkpointing`` runs a STREAMING job on a processing-time trigger,
``project``, ``cache`` (BATCH), a RowKind through a job, ``stop_with_savepoint``'s
PyFlink argument order, and files and jars for a running session.

Expected values are computed in plain Python from the input."""

from __future__ import annotations

import collections
import time

import pytest
from helpers import KV_SCHEMA, add_keys_file
from pyspark_datastream import (
    ConfigurationError,
    GraphBuildError,
    JobStatus,
    Row,
    RowKind,
    SavepointError,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint
from savepoint_jobs import OUT, Count

TRIPLES = [(1, "a", 2.5), (2, "b", 3.5), (3, "a", 4.5)]
TRIPLE = Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE()])


def test_checkpoint_interval_runs_the_job_on_a_processing_time_trigger(env_factory, spark,
                                                                        tmp_path):
    """No trigger is set: ``enable_checkpointing(1000)`` makes the STREAMING job run on a
    1 s processing-time trigger, so it keeps running over its file source (an available-now
    job would finish) until it is stopped with a savepoint, in PyFlink's argument order."""
    src, keys = str(tmp_path / "in"), ["a", "b", "a", "c"]
    add_keys_file(src, keys, "f1")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    env.enable_checkpointing(1000)
    df = spark.readStream.schema(KV_SCHEMA).parquet(src)
    (env.from_dataframe(df).key_by(lambda r: r[0], key_type=Types.STRING())
     .process(Count(), output_type=OUT).uid("count").sink_to_delta(str(tmp_path / "out")))
    client = env.execute_async("interval-count")
    try:
        for q in client.get_queries().values():
            q.processAllAvailable()
        time.sleep(1.5)  # more than one trigger interval: a finishing job would be done
        assert client.get_job_status().result() is JobStatus.RUNNING
        assert not client.get_job_status().result().is_terminal_state()
        sp = str(tmp_path / "sp")
        with pytest.raises(SavepointError, match="must be a bool.*second argument"):
            client.stop_with_savepoint(sp)  # type: ignore[arg-type]
        assert client.stop_with_savepoint(False, sp).result() == sp
    finally:
        if client.get_job_status().result() is JobStatus.RUNNING:
            client.cancel()
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert client.get_job_status().result().is_terminal_state()
    state = Savepoint.load(sp, spark).read_keyed_state(
        "count", ValueStateDescriptor("count", Types.LONG())).collect()
    assert sorted((r["key"], r["count"]) for r in state) == \
        sorted(collections.Counter(keys).items())


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_project_and_row_kind_through_a_job(env_factory, mode):
    env = env_factory(mode)
    env.enable_checkpointing(500)  # BATCH: no effect (Flink does not checkpoint BATCH jobs)
    got = env.from_collection(TRIPLES, TRIPLE).project(2, 0).execute_and_collect()
    assert sorted(got) == sorted((c, a) for a, _, c in TRIPLES)

    kinds = [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE]

    def with_kind(i: int) -> Row:
        row = Row(n=i)
        row.set_row_kind(kinds[i])
        return row

    rows = env.from_collection(range(4)).map(with_kind).map(lambda r: r).execute_and_collect()
    assert sorted((r.n, r.get_row_kind()) for r in rows) == list(enumerate(kinds))


def test_cache_in_batch_is_computed_once(env_factory, spark):
    env = env_factory("BATCH")
    calls = spark.sparkContext.accumulator(0)

    def counted(v):
        calls.add(1)
        return (v[0] * 10, v[1], v[2])

    cached = env.from_collection(TRIPLES, TRIPLE).map(counted, output_type=TRIPLE).cache()
    first = cached.filter(lambda v: v[1] == "a").execute_and_collect()
    second = cached.map(lambda v: v[0], output_type=Types.INT()).execute_and_collect()
    assert sorted(first) == [(10, "a", 2.5), (30, "a", 4.5)]
    assert sorted(second) == [10, 20, 30]
    assert calls.value == len(TRIPLES)  # the map ran once for both jobs
    cached.invalidate()

    streaming = env_factory("STREAMING")
    with pytest.raises(GraphBuildError, match="only supported in BATCH mode"):
        streaming.from_collection(TRIPLES, TRIPLE).cache()


def test_session_resources_of_a_running_session(env_factory, tmp_path):
    env = env_factory("BATCH")
    with pytest.raises(ConfigurationError, match="already running.*spark.jars"):
        env.add_jars("file:///opt/connector.jar")
    with pytest.raises(ConfigurationError, match="already running.*spark.pyspark.python"):
        env.set_python_executable("/usr/bin/python3")
    module = tmp_path / "envcalls_shipped_module.py"
    module.write_text("def triple(x):\n    return 3 * x\n")
    env.add_python_file(str(module))

    def use_shipped(x):
        import envcalls_shipped_module

        return envcalls_shipped_module.triple(x)

    got = env.from_collection([1, 2], Types.INT()).map(use_shipped, Types.INT())
    assert sorted(got.execute_and_collect()) == [3, 6]
