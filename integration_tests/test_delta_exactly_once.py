"""Exactly-once STREAMING ``sink_to_delta`` (plugin/delta_sink.py) under kills and races.

Spark replays a micro-batch whose ``foreachBatch`` ran but whose commit-log entry was never
written; the sink must turn that replay into a no-op. Proved three ways, every time against
the running sum's upsert stream computed independently (``streaming_harness.expected_output``):

* **Many kills, no JVM**: forked children (a forkserver that preloaded
  ``delta_commit_child``) commit micro-batches to a real delta-rs table through the sink's
  own ``commit_batch`` and log each batch afterwards, as Spark's commit log does. Each child
  is armed to SIGKILL itself at a named point (``faults``: before the data
  files, between data files and Delta commit, after the commit) at its n-th batch, or is
  SIGKILLed by the test at a random moment. The test then replays the in-flight batch (same
  id, same rows) as Spark would, and the next child goes on. 15 kills per backend.
* **Real Spark jobs killed inside the sink**: a STREAMING job subprocess (own JVM, keyed
  state on ``hashmap`` or ``rocksdb``) dies between its data write and its Delta commit, or
  after the commit before Spark logged the batch; restarted over the same checkpoint.
* **One query, two sinks**: the default mapping's one query writing two Delta tables (the
  first fed by records carried through a second keyed stage) dies between their commits of
  a micro-batch; the restart writes the batch into the second only.
* **Races**: two processes commit the same batch ids at once (the issue's two jobs on one
  checkpoint), and a finished job's last batch is replayed by removing it from the sink
  query's commit log.
"""

from __future__ import annotations

import glob
import json
import multiprocessing
import os
import random
import signal
import time
from collections import Counter

import delta_commit_child as child
import pytest
import streaming_harness as harness
from deltalake import DeltaTable
from faults import DELTA_POINTS as POINTS
from faults import KILL_AT_ENV
from helpers import QueryCounter, spark_line
from pyspark_datastream import KeyedProcessFunctionTestHarness
from pyspark_datastream.plan.graph import consumers, reachable
from pyspark_datastream.translation.delta_sink import APP_ID_PREFIX, commit_batch
from pyspark_datastream.translation.streaming.carried import carry_plan

HARNESS_BACKEND = {"hashmap": "heap", "rocksdb": "rocksdb"}


@pytest.fixture(scope="module")
def mp():
    """Children forked from a server that imported delta_commit_child (and delta-rs) once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["delta_commit_child"])
    return ctx


def _random_files(rng: random.Random, n: int) -> list[list[tuple[str, int]]]:
    return [[(rng.choice("pqrstuvw"), rng.randint(1, 99)) for _ in range(rng.randint(1, 5))]
            for _ in range(n)]


def _operator_batches(files: list[list[tuple[str, int]]], backend: str) -> list[list[tuple]]:
    """Each micro-batch's upserts as the keyed operator emits them on ``backend``."""
    h = KeyedProcessFunctionTestHarness(harness.RunningSum(), key_selector=lambda r: r[0],
                                        backend=HARNESS_BACKEND[backend])
    batches = []
    for rows in files:
        before = len(h.get_output())
        for row in rows:
            h.process_element(row)
        batches.append([tuple(r) for r in h.get_output()[before:]])
    h.close()
    return batches


def _table_rows(path: str) -> list[tuple]:
    return [(r["f0"], r["f1"], r["f2"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist()]


def _orphans(path: str) -> set[str]:
    """Data folders (delta-rs) or files (Spark's Delta) in the table directory that no Delta
    version references."""
    if not os.path.isdir(path):
        return set()
    uris = DeltaTable(path).file_uris() if DeltaTable.is_deltatable(path) else []
    live = {os.path.relpath(u.removeprefix("file://"), path).split(os.sep)[0] for u in uris}
    return {d for d in os.listdir(path) if d.startswith("part-") and d not in live
            and not _empty_file(os.path.join(path, d))}


def _empty_file(path: str) -> bool:
    """A Parquet file of no rows (Spark's Delta writes one for an empty task's output and
    leaves it out of the commit): not a leftover of a killed run."""
    import pyarrow.parquet as pq

    return os.path.isfile(path) and pq.ParquetFile(path).metadata.num_rows == 0


def _txn_app_ids(path: str) -> set[str]:
    ids = set()
    for name in glob.glob(os.path.join(path, "_delta_log", "*.json")):
        with open(name, encoding="utf-8") as f:
            ids |= {json.loads(line)["txn"]["appId"] for line in f if '"txn"' in line}
    return ids


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_killed_anywhere_in_the_commit_protocol_then_replayed_commits_every_upsert_once(
        tmp_path, mp, backend):
    rng = random.Random(f"delta-kills-{backend}")
    files = _random_files(rng, 60)
    expected = harness.expected_output(files)
    batches = _operator_batches(files, backend)
    assert sorted(r for b in batches for r in b) == sorted(expected)
    table, log_path = str(tmp_path / "table"), str(tmp_path / "commits.log")
    app_id = f"{APP_ID_PREFIX}test-{backend}"
    # 3 kills at random moments (first, while many batches are left: a child commits a batch
    # in milliseconds, and one that outran its kill would commit every batch left), then 4
    # at each named point (at the child's 1st or 2nd batch)
    named = [(p, rng.randint(1, 2)) for p in POINTS for _ in range(4)]
    rng.shuffle(named)
    plan = [("random", 0)] * 3 + named
    kills: Counter[str] = Counter()
    for point, n in [*plan, ("none", 0)]:
        first = len(child.committed_batches(log_path))
        assert child.committed_batches(log_path) == list(range(first))
        if first == len(batches):
            break
        ready = mp.Event()
        proc = mp.Process(target=child.commit_batches, args=(
            table, app_id, [(b, batches[b]) for b in range(first, len(batches))], log_path,
            f"{point}:{n}" if point in POINTS else None, ready))
        orphans = _orphans(table)
        proc.start()
        if point == "random":
            assert ready.wait(60)
            time.sleep(rng.uniform(0.0, 0.05))
            proc.kill()
        proc.join(120)
        if point == "none" or (point == "random" and proc.exitcode == 0):
            assert proc.exitcode == 0
            continue
        assert proc.exitcode == -signal.SIGKILL
        kills[point] += 1
        inflight = len(child.committed_batches(log_path))
        if point in POINTS:  # it died in its n-th batch
            assert inflight == first + n - 1
        # Spark's restart: the batch missing from the commit log runs again, same id and rows
        added = commit_batch(table, app_id, inflight, child.files_writer(batches[inflight]),
                             child.SCHEMA)
        child.record_commit(log_path, inflight)
        new_orphans = _orphans(table) - orphans
        if point == "delta.after-commit":
            assert added == 0 and not new_orphans
        elif point == "delta.after-write":
            assert added == len(batches[inflight])
            assert len(new_orphans) == 1 and f"-b{inflight}-" in new_orphans.pop()
        elif point == "delta.before-write":
            assert added == len(batches[inflight]) and not new_orphans
    assert sum(kills.values()) >= 13 and all(kills[p] == 4 for p in POINTS), kills
    rows = _table_rows(table)
    assert harness.exactly_once_violations(rows, files) == []
    assert sorted(rows) == sorted(expected)
    assert DeltaTable(table).transaction_version(app_id) == len(batches) - 1


def test_two_runs_committing_the_same_batches_at_once_write_each_once(tmp_path, mp):
    rng = random.Random("delta-race")
    files = _random_files(rng, 6)
    expected = harness.expected_output(files)
    batches, i = [], 0
    for rows in files:
        batches.append(expected[i:i + len(rows)])
        i += len(rows)
    table = str(tmp_path / "table")
    app_id = f"{APP_ID_PREFIX}race"
    for batch_id, rows in enumerate(batches):  # batch 0: both try to create the table
        barrier, results = mp.Barrier(2), mp.Queue()
        procs = [mp.Process(target=child.race, args=(table, app_id, batch_id, rows, barrier,
                                                     results)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0]
        added = sorted(results.get(timeout=5)[1] for _ in procs)
        assert added == [0, len(rows)]  # both wrote files and committed; one lost and knew it
    rows = _table_rows(table)
    assert sorted(rows) == sorted(expected)
    assert _orphans(table) == set()  # the losers removed their files
    assert DeltaTable(table).transaction_version(app_id) == len(batches) - 1


def _writer_session(request, writer: str):
    """The shared session with ``writer`` (delta-rs, or Spark's Delta) writing the sink."""
    return request.getfixturevalue("spark_delta" if writer == "spark" else "spark")


def _engines(path: str) -> set[str]:
    """The engines that committed the Delta table at ``path`` (its log's commitInfo)."""
    found = set()
    for name in glob.glob(os.path.join(path, "_delta_log", "*.json")):
        with open(name, encoding="utf-8") as f:
            for line in f:
                if '"commitInfo"' in line:
                    info = json.loads(line)["commitInfo"]
                    found.add("spark" if "Delta-Lake/" in str(info.get("engineInfo", ""))
                              else "delta-rs" if str(info.get("clientVersion", "")).startswith(
                                  "delta-rs") else "unknown")
    return found


def _killed_by_its_crash_point(proc, log: str) -> None:
    """Wait for the harness driver ``proc`` (SIGKILLed at the end if still running); it must
    have died by SIGKILL (its armed crash point), else fail with its log's tail."""
    try:
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    with open(log, encoding="utf-8", errors="replace") as f:
        tail = f.read()[-3000:]
    assert code == -signal.SIGKILL, tail


def _run_delta_job(spark, env_factory, src: str, root: str, out: str, backend: str) -> dict:
    env = env_factory("STREAMING", {"execution.checkpointing.dir": root,
                                    "state.backend.type": backend})
    harness.running_sum_stream(env, spark, src).sink_to_delta(out)
    return env.execute("delta-sink").sink_counts


@pytest.mark.compat
@pytest.mark.parametrize("writer", ["delta-rs", "spark"])
def test_streaming_batch_replayed_after_the_sink_committed_adds_nothing(
        request, env_factory, tmp_path, writer):
    spark = _writer_session(request, writer)
    rng = random.Random("delta-replay")
    files = _random_files(rng, 2)  # two micro-batches: the replayed one follows a committed one
    expected = harness.expected_output(files)
    src, root, out = (str(tmp_path / d) for d in ("in", "ckpt", "out"))
    harness.write_input(src, files)
    _run_delta_job(spark, env_factory, src, root, out, "hashmap")
    assert sorted(_table_rows(out)) == sorted(expected)
    # the sink query's application id is its query id, kept in its checkpoint
    (checkpoint,) = glob.glob(os.path.join(root, "**", "sink-*", "checkpoint"), recursive=True)
    with open(os.path.join(checkpoint, "metadata"), encoding="utf-8") as f:
        app_id = APP_ID_PREFIX + json.load(f)["id"]
    assert _txn_app_ids(out) == {app_id}
    last = max(int(n) for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit())
    table = DeltaTable(out)
    assert table.transaction_version(app_id) == last
    version = table.version()
    # the race: Spark runs the last batch again (a second job on the same checkpoint,
    # or a driver that died after the sink's commit and before Spark's)
    for name in (str(last), f".{last}.crc"):
        path = os.path.join(checkpoint, "commits", name)
        if os.path.exists(path):
            os.remove(path)
    counts = _run_delta_job(spark, env_factory, src, root, out, "hashmap")
    assert list(counts.values()) == [0]
    assert DeltaTable(out).version() == version  # the replay committed nothing
    assert sorted(_table_rows(out)) == sorted(expected)
    assert os.path.exists(os.path.join(checkpoint, "commits", str(last)))  # it did run
    # a new checkpoint is a new query (batch ids from 0 again): its batches are not skipped
    _run_delta_job(spark, env_factory, src, str(tmp_path / "ckpt2"), out, "hashmap")
    assert sorted(_table_rows(out)) == sorted(expected * 2)
    assert len(_txn_app_ids(out)) == 2
    assert _engines(out) == {writer}


@pytest.mark.parametrize("writer,backend,point", [
    ("delta-rs", "hashmap", "delta.after-write"), ("delta-rs", "rocksdb", "delta.after-commit"),
    # Spark's Delta writes and commits in one call: killed before it, or after its commit
    ("spark", "hashmap", "delta.before-write"), ("spark", "rocksdb", "delta.after-commit")])
def test_spark_job_killed_inside_the_delta_sink_then_restarted_writes_every_upsert_once(
        request, env_factory, tmp_path, writer, backend, point):
    spark = _writer_session(request, writer)
    rng = random.Random(f"delta-e2e-{backend}")
    # three micro-batches: 0 committed, the kill in 1, and the restart runs 1 again and 2
    files = _random_files(rng, 3)
    src, ckpt, out = (str(tmp_path / d) for d in ("in", "ckpt", "out"))
    harness.write_input(src, files)
    log = str(tmp_path / "driver.log")
    # the driver (and with it its JVM and Python workers) dies in the sink of micro-batch 1
    proc = harness.start(src, ckpt, out, backend, log, sink="delta",
                         extra_env={KILL_AT_ENV: f"{point}:2"}, delta_writer=writer)
    _killed_by_its_crash_point(proc, log)
    (app_id,) = _txn_app_ids(out)
    committed = DeltaTable(out).transaction_version(app_id)
    if point == "delta.after-write":  # batch 1's files written, never committed
        assert committed == 0
        assert len(_orphans(out)) == 1 and "-b1-" in _orphans(out).pop()
    elif point == "delta.before-write":  # batch 1 never reached the table
        assert committed == 0 and _orphans(out) == set()
    else:  # batch 1 committed to Delta, not to Spark's commit log: it runs again
        assert committed == 1 and _orphans(out) == set()
    # restarted over the same checkpoint (same job name and root), in this process
    _run_delta_job(spark, env_factory, src, os.path.join(ckpt, "job"), out, backend)
    rows = _table_rows(out)
    assert harness.exactly_once_violations(rows, files) == []
    assert sorted(rows) == sorted(harness.expected_output(files))
    assert _txn_app_ids(out) == {app_id}  # the restarted query kept its application id
    assert _engines(out) == {writer}


@pytest.mark.parametrize("shape", ["carried", "relayed"])
def test_one_query_killed_between_its_two_delta_sinks_then_restarted_writes_each_once(
        shape, spark, env_factory, tmp_path):
    """Two Delta sinks in one query (the default mapping on Spark 4.0+). ``carried``: the
    first writes a keyed stage's records, which the query carries through the keyed stage
    below it (that stage's own records go to the second). ``relayed``: the keyed stage is
    read by two keyed stages, each written to its table; the query carries it through the
    first, whose output the second's keying pass reads. The driver dies in micro-batch 1
    after one sink committed it and before the other did. The restart runs batch 1 again:
    the committed sink finds it committed under its own application id (the query's, told
    apart by the sink's name) and adds nothing, the other writes it; each table then holds
    every upsert once."""
    if spark_line(spark) < (4, 0):
        pytest.skip("one query of two sinks needs Spark 4.0+ (per-stage there)")
    sink, names, build = {
        "carried": ("delta-fanout", ("a", "b"), harness.fan_out_to_delta),
        "relayed": ("delta-relay", ("b", "c"), harness.relay_to_delta)}[shape]
    files = _random_files(random.Random(sink), 3)
    src, ckpt, out = (str(tmp_path / d) for d in ("in", "ckpt", "out"))
    harness.write_input(src, files)
    log = str(tmp_path / "driver.log")
    # Delta commits: batch 0 into both tables (1, 2), batch 1 into one (3): killed right after
    proc = harness.start(src, ckpt, out, "rocksdb", log, sink=sink,
                         extra_env={KILL_AT_ENV: "delta.after-commit:3"})
    _killed_by_its_crash_point(proc, log)
    tables = [os.path.join(out, name) for name in names]
    (app_1,), (app_2,) = (_txn_app_ids(t) for t in tables)
    assert app_1 != app_2  # one query, each sink under an id of its own
    committed = [DeltaTable(t).transaction_version(a) for t, a in zip(tables, (app_1, app_2))]
    # carried: the carried stage's sink commits first; relayed: either may
    assert (committed if shape == "carried" else sorted(committed, reverse=True)) == [1, 0]
    env = env_factory("STREAMING", {"execution.checkpointing.dir": os.path.join(ckpt, "job"),
                                    "state.backend.type": "rocksdb"})
    sums = harness.running_sum_stream(env, spark, src)
    build(sums, out)
    nodes = reachable(list(env._sinks))
    plan = carry_plan(nodes, consumers(nodes))
    assert sums._node.id in plan.carried  # carried, not planned twice
    assert bool(plan.sources) == (shape == "relayed")  # a keying pass reads a relay
    with QueryCounter(spark) as queries:
        env.execute(f"{sink}-sink")  # the same job, over the same checkpoint
    assert len(queries.started) == 1, queries.started
    for table in tables:
        rows = _table_rows(table)
        assert harness.exactly_once_violations(rows, files) == []
        assert sorted(rows) == sorted(harness.expected_output(files))
    assert (_txn_app_ids(tables[0]), _txn_app_ids(tables[1])) == ({app_1}, {app_2})


def _slow(value: int) -> int:
    time.sleep(2.0)  # both runs are past Delta's "already committed?" check before either commits
    return value


@pytest.mark.compat
def test_spark_delta_two_runs_of_one_batch_at_once_commit_it_once(spark_delta, tmp_path):
    """The race of two jobs on one checkpoint, with Spark's Delta: two runs of micro-batch 1
    at once (threads of one session, each writing a slow DataFrame) both find the batch not
    yet committed, write, and commit; Delta lets one commit and fails the other with a
    concurrent-transaction conflict, which the sink must take as "done by the other run"."""
    import threading

    from pyspark.sql import functions as F
    from pyspark_datastream.translation.delta_sink import write_batch

    spark = spark_delta
    path, app_id = str(tmp_path / "table"), f"{APP_ID_PREFIX}spark-race"
    schema = "f0 string, f1 long, f2 long"
    first, second = [("a", 1, 1), ("b", 2, 1)], [("a", 4, 2), ("c", 7, 1), ("b", 3, 2)]
    assert write_batch(spark, spark.createDataFrame(first, schema), path, app_id, 0) == 2
    slow = F.udf(_slow, "long")
    barrier = threading.Barrier(2, timeout=60)
    results: list = []

    def run() -> None:
        df = spark.createDataFrame(second, schema).coalesce(1).withColumn("f1", slow("f1"))
        barrier.wait()
        try:
            results.append(write_batch(spark, df, path, app_id, 1))
        except Exception as exc:  # noqa: BLE001 - recorded, the assertion below shows it
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(results, key=repr) == [0, 3], results
    assert sorted(_table_rows(path)) == sorted(first + second)
    table = DeltaTable(path)
    assert table.transaction_version(app_id) == 1 and table.version() == 1
    assert _engines(path) == {"spark"}
