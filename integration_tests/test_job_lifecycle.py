"""Job lifecycle of STREAMING jobs (issue #13, items 2-4): checkpoint roots, job identity
(default names from the graph, the ``_job.json`` manifest), temporary checkpoints of
print()/collect jobs. Real Spark, real RocksDB; expected values computed here from the
input, independently of the product."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections import Counter

import pytest
from helpers import KV_SCHEMA, add_keys_file
from pyspark_datastream import (
    CheckpointMismatchError,
    CheckpointRootError,
    KeyedProcessFunction,
    Types,
    UnclaimedStateError,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


def _running_counts(before: list[str], new: list[str]) -> set[tuple[str, int]]:
    """The (key, running count) rows a running count emits for ``new`` on top of ``before``."""
    seen = Counter(before)
    out = set()
    for k in new:
        seen[k] += 1
        out.add((k, seen[k]))
    return out


def _counted(env, spark, src):
    df = spark.readStream.schema(KV_SCHEMA).parquet(src)
    return (env.from_dataframe(df).map(lambda r: (r[0], 1), output_type=PAIR)
            .key_by(lambda r: r[0]).sum(1))


def _counts_written(env, spark, src: str, out: str, ck: str) -> set[tuple[str, int]]:
    """The running counts of ``src`` through the user's own writeStream (Parquet at ``out``,
    checkpoint ``ck``), available-now; every row the sink holds afterwards."""
    query = (_counted(env, spark, src).to_dataframe().writeStream.format("parquet")
             .option("path", out).option("checkpointLocation", ck)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return {(r[0], r[1]) for r in spark.read.parquet(out).collect()}


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """``tempfile``'s folder for this test only: temporary checkpoints land (and must be
    removed) here."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_to_dataframe_with_the_users_write_stream_resumes_its_state_across_runs(
        spark, env_factory, tmp_path, backend):
    """Issue #13 (2): two available-now runs of the user's own writeStream over one
    checkpoint; the second continues the first's state exactly."""
    src, out, ck = str(tmp_path / "in"), str(tmp_path / "out"), str(tmp_path / "user-ck")
    root = str(tmp_path / "root")
    batches = [["a", "b", "a", "c"], ["a", "c", "d", "a", "b"]]

    def run():  # a fresh program each time, as a scheduled notebook would be
        env = env_factory("STREAMING", {"execution.checkpointing.dir": root,
                                        "state.backend.type": backend})
        return _counts_written(env, spark, src, out, ck)

    add_keys_file(src, batches[0], "f1")
    first = run()
    assert first == _running_counts([], batches[0])
    add_keys_file(src, batches[1], "f2")
    second = run() - first
    assert second == _running_counts(batches[0], batches[1])
    if backend == "rocksdb":  # the key-group files live under the configured root
        (job,) = os.listdir(root)
        assert os.path.isdir(os.path.join(root, job, "state"))


def test_to_dataframe_needs_a_root_only_when_state_lives_outside_the_users_query(
        spark, env_factory, tmp_path):
    src = str(tmp_path / "in")
    add_keys_file(src, ["a"], "f1")
    # hashmap, one keyed stage over a streaming source: everything is in the user's checkpoint
    _counted(env_factory("STREAMING"), spark, src).to_dataframe()
    with pytest.raises(CheckpointRootError, match="execution.checkpointing.dir"):
        _counted(env_factory("STREAMING", {"state.backend.type": "rocksdb"}), spark,
                 src).to_dataframe()
    # Spark's session-wide default checkpoint root is the fallback
    spark_root = str(tmp_path / "spark-root")
    spark.conf.set("spark.sql.streaming.checkpointLocation", spark_root)
    try:
        _counted(env_factory("STREAMING", {"state.backend.type": "rocksdb"}), spark,
                 src).to_dataframe()
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    (job,) = os.listdir(spark_root)
    with open(os.path.join(spark_root, job, "_job.json")) as f:
        assert json.load(f)["job_name"] == job


def _three_jobs(env):
    """Issue #13 (3): three different jobs, default names, one program."""
    env.from_collection([("a", 1), ("b", 2), ("a", 3)], PAIR).key_by(
        lambda r: r[0]).sum(1).print("one")
    env.execute()
    env.from_collection([5, 6], Types.LONG()).map(lambda x: x * 10, output_type=Types.LONG()
                                                   ).print("two")
    env.execute()
    left = env.from_collection([7], Types.LONG())
    left.union(env.from_collection([8, 9], Types.LONG())).print("three")
    env.execute()


def test_several_executes_in_one_program_are_separate_jobs(env_factory, tmp_path, capsys):
    root = tmp_path / "root"
    _three_jobs(env_factory("STREAMING", {"execution.checkpointing.dir": str(root)}))
    lines = Counter(capsys.readouterr().out.splitlines())
    expected = Counter(["one> ('a', 1)", "one> ('b', 2)", "one> ('a', 4)",
                        "two> 50", "two> 60", "three> 7", "three> 8", "three> 9"])
    assert {k: v for k, v in lines.items() if "> " in k} == expected
    names = os.listdir(root)  # one job folder each, named after its graph
    assert len(names) == 3 and all(re.search(r"-[0-9a-f]{10}$", n) for n in names)
    for name in names:
        with open(root / name / "_job.json") as f:
            assert json.load(f)["job_name"] == name


def test_a_named_job_resumes_and_refuses_another_graph_under_its_name(
        spark, env_factory, tmp_path, capsys):
    src, root = str(tmp_path / "in"), str(tmp_path / "root")
    conf = {"execution.checkpointing.dir": root}
    add_keys_file(src, ["a", "b", "a"], "f1")
    env = env_factory("STREAMING", conf)
    _counted(env, spark, src).print()
    env.execute("counts")
    first = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("(")]
    assert sorted(first) == sorted(str(r) for r in _running_counts([], ["a", "b", "a"]))
    add_keys_file(src, ["b", "c"], "f2")
    env = env_factory("STREAMING", conf)
    _counted(env, spark, src).print()
    env.execute("counts")  # the same program again: only the new file, on top of its state
    second = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("(")]
    assert sorted(second) == sorted(str(r) for r in _running_counts(["a", "b", "a"], ["b", "c"]))

    before = sorted(os.walk(root))
    env = env_factory("STREAMING", conf)
    other = env.from_collection([("x", 1)], PAIR).union(
        env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src)))
    other.key_by(lambda r: r[0]).sum(1).uid("total").print()
    # state follows operators (evolution.py): the keyed Sum(1) (no uid: 'stage0', the first
    # stateful operator) is gone, and its state is claimed by no operator of this program
    with pytest.raises(UnclaimedStateError) as err:
        env.execute("counts")
    text = str(err.value)
    assert "'counts'" in text and os.path.join(root, "counts") in text
    assert "'stage0' (Sum(1))" in text and "the program's: ['total']" in text
    assert "execution.savepoint.ignore-unclaimed-state=true" in text
    assert sorted(os.walk(root)) == before  # nothing created, nothing ran
    # with it dropped, 'total' is a new stateful operator in the sink's query: the sink's
    # query would read two sources where its checkpoint has one, which Spark cannot follow
    env = env_factory("STREAMING", dict(conf, **{
        "execution.savepoint.ignore-unclaimed-state": "true"}))
    other = env.from_collection([("x", 1)], PAIR).union(
        env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src)))
    other.key_by(lambda r: r[0]).sum(1).uid("total").print()
    with pytest.raises(CheckpointMismatchError, match=r"query of sink 'sink-0' read stage0 and "
                       r"would now read total.*input sources"):
        env.execute("counts")
    assert sorted(os.walk(root)) == before


def test_print_and_collect_jobs_run_on_a_temporary_checkpoint_removed_afterwards(
        env_factory, tmp_path, private_tmp, capsys, caplog):
    # issue #13 (4): no configuration at all
    env = env_factory("STREAMING")
    env.from_collection([("a", 1), ("a", 2)], PAIR).key_by(lambda r: r[0]).sum(1).print()
    result = env.execute()
    assert [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("(")] == [
        "('a', 1)", "('a', 3)"]
    assert re.fullmatch(r"sum_1-print-[0-9a-f]{10}", result.job_name)  # derived from the graph
    assert os.listdir(private_tmp) == []
    env.from_collection([4, 5], Types.LONG()).print()
    client = env.execute_async()
    assert client.wait(120) == "FINISHED"
    assert sorted(ln for ln in capsys.readouterr().out.splitlines() if ln) == ["4", "5"]
    assert os.listdir(private_tmp) == []
    # durable sinks keep requiring a root, before anything is created
    env.from_collection([("a", 1)], PAIR).sink_to_delta(str(tmp_path / "table"))
    with pytest.raises(CheckpointRootError, match="spark.sql.streaming.checkpointLocation"):
        env.execute()
    assert not (tmp_path / "table").exists() and os.listdir(private_tmp) == []
    # an unnamed collect is a one-off job even under a configured root: its temporary
    # checkpoint lies under the root (storage every host reaches), removed afterwards
    root = tmp_path / "root"
    with caplog.at_level(logging.INFO, logger="pyspark_datastream"):
        collected = env_factory("STREAMING", {"execution.checkpointing.dir": str(root)}
                                ).from_collection([3, 1, 2], Types.LONG()).execute_and_collect()
    assert sorted(collected) == [1, 2, 3]
    assert any(f"temporary checkpoint {root}/_temporary-" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert os.listdir(root) == [] and os.listdir(private_tmp) == []


class _Watching(KeyedProcessFunction):
    """Per element ('seen', key, the watermark it sees), registering an event-time timer
    at 0; a firing timer emits ('fired', key, its time)."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(0)
        yield ("seen", value[0], ctx.timer_service().current_watermark())

    def on_timer(self, timestamp, ctx):
        yield ("fired", ctx.get_current_key(), timestamp)


def test_without_watermarks_an_unbounded_streams_event_time_timers_never_fire(
        spark, env_factory, tmp_path, capsys):
    """Flink: a stream without watermarks keeps the initial watermark (Long.MIN_VALUE) and
    never fires event-time timers until a bounded input ends. An unbounded file stream
    resumed over two runs (its operator runs without a GroupState timeout): every element
    sees Long.MIN_VALUE and no timer fires."""
    src, root = str(tmp_path / "in"), str(tmp_path / "root")
    triple = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()])

    def run() -> list[str]:
        env = env_factory("STREAMING", {"execution.checkpointing.dir": root})
        (env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src))
         .key_by(lambda r: r[0]).process(_Watching(), output_type=triple).print())
        env.execute("watching")
        return [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("(")]

    low = -(2**63)
    add_keys_file(src, ["a", "b", "a"], "f1")
    assert sorted(run()) == sorted(str(("seen", k, low)) for k in ["a", "b", "a"])
    add_keys_file(src, ["b", "c"], "f2")
    assert sorted(run()) == sorted(str(("seen", k, low)) for k in ["b", "c"])


ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def test_state_in_sparks_rocksdb_state_store_resumes_across_runs(spark, env_factory, tmp_path):
    """The README advises Spark's RocksDB state store provider for large state (it keeps
    state off the JVM heap). Under it, the user's own writeStream resumes a running count
    across two available-now runs exactly; the checkpoint keeps the provider it was started
    with when the second run's session has Spark's default."""
    src, out, ck = str(tmp_path / "in"), str(tmp_path / "out"), str(tmp_path / "user-ck")
    batches = [["a", "b", "a", "c"] * 3, ["a", "c", "d", "a", "b", "e"]]
    key = "spark.sql.streaming.stateStore.providerClass"
    before = spark.conf.get(key)

    def run() -> set[tuple[str, int]]:
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "root")})
        return _counts_written(env, spark, src, out, ck)

    spark.conf.set(key, ROCKSDB_PROVIDER)
    try:
        add_keys_file(src, batches[0], "f1")
        first = run()
        assert first == _running_counts([], batches[0])
    finally:
        spark.conf.set(key, before)
    # resumed from a session on Spark's default provider: the checkpoint keeps its own
    add_keys_file(src, batches[1], "f2")
    assert run() - first == _running_counts(batches[0], batches[1])
    offsets = sorted((n for n in os.listdir(os.path.join(ck, "offsets")) if n.isdigit()), key=int)
    with open(os.path.join(ck, "offsets", offsets[-1])) as fh:
        assert ROCKSDB_PROVIDER in fh.read()
    # the provider's own files, not the HDFS-backed store's delta files
    state_files = [f for _, _, files in os.walk(os.path.join(ck, "state")) for f in files]
    assert any(f.endswith((".zip", ".changelog")) for f in state_files), state_files
    assert not any(f.endswith(".delta") for f in state_files), state_files
