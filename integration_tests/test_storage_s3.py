"""STREAMING jobs with their checkpoint root on object storage: a real S3 server (moto, in
server mode on loopback; conftest ``s3_server``) that Spark's s3a connector and the
project's Python side both reach through the session's Hadoop configuration alone."""

from __future__ import annotations

import os
import pickle
import re
import tempfile
from collections import defaultdict
from itertools import permutations

import pytest
from helpers import KV_SCHEMA, add_file, spark_line
from pyspark_datastream import (
    ConfigurationError,
    Types,
    UnsupportedSparkFeatureError,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
FIRST = [("apple", 3), ("avocado", 5), ("banana", 2), ("apple", 4), ("cherry", 7),
         ("blueberry", 1), ("cherry", 1)]
SECOND = [("banana", 9), ("apricot", 1), ("cherry", 2), ("date", 6), ("apple", 1)]


def expected_max_per_letter(rows: list[tuple[str, int]]) -> dict[str, int]:
    """Plain Python: per first letter, the largest total of one word."""
    totals: dict[str, int] = defaultdict(int)
    for word, n in rows:
        totals[word] += n
    out: dict[str, int] = {}
    for word, total in totals.items():
        out[word[0]] = max(out.get(word[0], 0), total)
    return out


def final_per_letter(records: list[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for letter, value in records:
        out[letter] = max(out.get(letter, 0), value)
    return out


def two_stage(env, spark, src: str):
    """Stage 1: running total per word; stage 2: running max of those per first letter."""
    df = spark.readStream.schema(KV_SCHEMA).parquet(src)
    return (env.from_dataframe(df)
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
            .map(lambda r: (r[0][:1], r[1]), output_type=PAIR)
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], max(a[1], b[1]))))


def second_run_outputs(before: list[tuple[str, int]], new: list[tuple[str, int]]
                       ) -> set[tuple[tuple[str, int], ...]]:
    """Plain Python (Flink's per-record reduce): every sorted list of records the second
    stage may emit over ``new`` on top of the state ``before`` left, one per order in which
    each stage may see its input."""
    totals: dict[str, int] = defaultdict(int)
    for word, n in before:
        totals[word] += n
    stage1 = set()
    for order in permutations(new):
        running, emitted = dict(totals), []
        for word, n in order:
            running[word] = running.get(word, 0) + n
            emitted.append((word[0], running[word]))
        stage1.add(tuple(sorted(emitted)))
    out = set()
    for records in stage1:
        for order in set(permutations(records)):
            best, emitted = expected_max_per_letter(before), []
            for letter, total in order:
                best[letter] = max(best.get(letter, 0), total)
                emitted.append((letter, best[letter]))
            out.add(tuple(sorted(emitted)))
    return out


def _host_copies_are_current(spark, s3_server, prefix: str) -> None:
    """Each key group's newest version file on S3 (its committed version's last) has a copy
    of its size on this host (version_cache.py), in the Python workers' Spark scratch, for a
    worker without the key group's working copy; every copy of a file on S3 has its size."""
    listing = s3_server.client().get_paginator("list_objects_v2").paginate(
        Bucket=s3_server.bucket, Prefix=prefix)
    on_s3 = {o["Key"]: o["Size"] for page in listing for o in page.get("Contents", [])
             if re.search(r"/kg-\d+/\d+-\w+\.(base|delta)$", o["Key"])}
    newest: dict[str, str] = {}
    for key in sorted(on_s3):
        newest[key.rsplit("/", 1)[0]] = key
    scratch = spark.sparkContext.parallelize([0], 1).map(
        lambda _: os.environ.get("SPARK_LOCAL_DIRS", "")).collect()[0]
    root = os.path.join(scratch.split(",")[0] if scratch else tempfile.gettempdir(),
                        "pyspark-datastream-cache")
    copies = {name: os.path.getsize(os.path.join(d, name))
              for d, _, names in os.walk(root) for name in names}
    sizes = {key.rsplit("/", 1)[1]: size for key, size in on_s3.items()}
    assert newest and all(copies.get(k.rsplit("/", 1)[1]) == on_s3[k]
                          for k in newest.values()), (newest, copies)
    assert {n: copies[n] for n in copies if n in sizes} == {
        n: sizes[n] for n in copies if n in sizes}


def _run(env_factory, spark, root: str, src: str) -> list[tuple[str, int]]:
    env = env_factory("STREAMING", {"execution.checkpointing.dir": root,
                                    "state.backend.type": "rocksdb"})
    return list(two_stage(env, spark, src).execute_and_collect("two-stage-rocksdb"))


@pytest.mark.compat  # make test-compat: every Spark line, its hadoop-aws
def test_two_stage_rocksdb_job_resumes_from_a_checkpoint_root_on_s3(
        spark, env_factory, s3_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land in the working directory
    root = f"s3a://{s3_server.bucket}/resume/ckpt"
    src = str(tmp_path / "in")
    add_file(src, FIRST, "f1")

    first = _run(env_factory, spark, root, src)
    assert final_per_letter(first) == expected_max_per_letter(FIRST)

    keys = s3_server.keys("resume/ckpt/two-stage-rocksdb/")
    assert "resume/ckpt/two-stage-rocksdb/_job.json" in keys
    version_files = [k for k in keys if "/state/" in k and "/kg-" in k]
    assert version_files and all(k.endswith((".base", ".delta")) for k in version_files)
    assert any("/checkpoint/commits/" in k for k in keys)  # Spark's own checkpoint, via s3a
    _host_copies_are_current(spark, s3_server, "resume/ckpt/two-stage-rocksdb/")

    add_file(src, SECOND, "f2")
    second = _run(env_factory, spark, root, src)
    # only the new input was read, on top of the state kept on S3: every record emitted is
    # one the model's run over SECOND from FIRST's state emits
    assert {w for w, _ in second} <= {w[0] for w, _ in SECOND}
    assert tuple(sorted(second)) in second_run_outputs(FIRST, SECOND)
    both = {**final_per_letter(first), **final_per_letter(second)}
    assert both == expected_max_per_letter(FIRST + SECOND)
    assert sorted(os.listdir(tmp_path)) == ["in"]
    _host_copies_are_current(spark, s3_server, "resume/ckpt/two-stage-rocksdb/")


def test_an_unserved_scheme_is_refused_when_the_job_is_built(spark, env_factory, tmp_path):
    env = env_factory("STREAMING", {
        "execution.checkpointing.dir": "abfss://c@acct.dfs.core.windows.net/ckpt"})
    src = str(tmp_path / "in")
    add_file(src, FIRST, "f1")
    try:
        two_stage(env, spark, src).execute_and_collect("refused")
    except ConfigurationError as exc:
        text = str(exc)
        assert "execution.checkpointing.dir" in text and "'abfss:'" in text and "s3a://" in text
    else:
        raise AssertionError("abfss:// was accepted")
    assert not os.path.exists(tmp_path / "abfss:")


def test_a_file_uri_root_keeps_everything_there_and_nothing_under_the_working_dir(
        spark, env_factory, tmp_path, monkeypatch):
    """FACTS.md: ``file:/abs`` roots used to land under ``./file:/abs`` of every process: the
    driver's Python (its working directory: an empty folder here), the JVM and the Python
    workers (their working directories, shared with other tests: nothing named after the
    root or the job may appear there)."""
    cwd, ckpt = tmp_path / "cwd", tmp_path / "ckpt"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    jvm_cwd = spark.sparkContext._jvm.java.lang.System.getProperty("user.dir")
    worker_cwds = spark.sparkContext.parallelize(range(2), 2).map(lambda _: os.getcwd()).collect()
    shared = {d: set(os.listdir(d)) for d in {jvm_cwd, *worker_cwds}}

    env = env_factory("STREAMING", {"execution.checkpointing.dir": f"file:{ckpt}",
                                    "state.backend.type": "rocksdb"})
    ds = (env.from_collection([("a", 1), ("b", 2), ("a", 3)], PAIR)
          .key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
          .map(lambda r: ("all", r[1]), output_type=PAIR)
          .key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], max(x[1], y[1]))))
    assert max(v for _, v in ds.execute_and_collect("file-uri-job")) == 4  # a: 1, 4; b: 2
    assert os.listdir(cwd) == [], os.listdir(cwd)
    # the root as a relative path (``file:/...``, ``file:``, its folders without the leading
    # slash) or the job's folder, in a folder other tests' processes share
    stray = ("file", str(ckpt).lstrip("/").split("/")[0], "ckpt", "file-uri-job")
    for folder, names in shared.items():
        new = set(os.listdir(folder)) - names
        assert not [n for n in new if n.startswith(stray)], (folder, new)
    job = ckpt / "file-uri-job"
    assert (job / "_job.json").is_file()
    kg_files = [f for _, _, files in os.walk(job / "state") for f in files
                if f.endswith(".base")]
    assert kg_files


def _count_run(env_factory, mode, data, out, config, savepoint_path=None, s3=None):
    """Count per key (uid ``count``), then the running max of the counts per key (uid
    ``max``, a second keyed stage), into the Delta table ``out``; its rows, sorted."""
    from deltalake import DeltaTable
    from savepoint_jobs import Count, keyed_stream

    env = env_factory(mode, config)
    (keyed_stream(env, data, Count(), uid="count")
     .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], max(a[1], b[1]))).uid("max")
     .sink_to_delta(out))
    env.execute("count", savepoint_path=savepoint_path)
    options = None
    if out.startswith("s3a://"):
        options = {"AWS_ENDPOINT_URL": s3.endpoint, "AWS_ACCESS_KEY_ID": "testing-access",
                   "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "us-east-1",
                   "AWS_ALLOW_HTTP": "true"}
    table = DeltaTable(out, storage_options=options)
    return sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist())


def _counts(rows: list[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for key, *_ in rows:
        out[key] += 1
    return dict(out)


def _final(*outputs: list[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rows in outputs:
        for key, n in rows:
            out[key] = max(out.get(key, 0), n)
    return out


def _running(rows: list[tuple[str, int]], before: list[tuple[str, int]] = ()
             ) -> list[tuple[str, int]]:
    """Plain Python: every (key, running count) a STREAMING run over ``rows`` emits, its
    counts going on from ``before``'s (a count emits 1..n per key whatever the order, and
    the running max of an increasing count is the count), sorted."""
    start = _counts(list(before))
    return sorted((k, start.get(k, 0) + i) for k, c in _counts(rows).items()
                  for i in range(1, c + 1))


def _saved(spark, path: str) -> tuple[dict[str, list[str]], list[tuple], list[tuple]]:
    """The savepoint's state, decoded: the state names of each operator's entries; the
    count's (key, count); the max reduce's pickled running value per key."""
    loaded = Savepoint.load(path, spark)
    names = {uid: sorted(r["state_name"] for r in
                         loaded.entries(uid).select("state_name").collect())
             for uid in ("count", "max")}
    counts = sorted((r["key"], r["count"]) for r in loaded.read_keyed_state(
        "count", ValueStateDescriptor("count", Types.LONG())).collect())
    maxes = sorted(tuple(pickle.loads(bytes(r["value"])))
                   for r in loaded.entries("max").filter("state_name = '_reduce'").collect())
    return names, counts, maxes


def _saved_model(rows: list[tuple[str, int]]) -> tuple[dict[str, list[str]], list[tuple],
                                                        list[tuple]]:
    """:func:`_saved` of a savepoint taken after ``rows``: one count and one reduce value
    per key, both the key's count; nothing else (no timers)."""
    counts = sorted(_counts(rows).items())
    return ({"count": ["count"] * len(counts), "max": ["_reduce"] * len(counts)},
            counts, counts)


@pytest.mark.compat  # make test-compat: every Spark line, its hadoop-aws
def test_a_batch_savepoint_on_s3_restores_into_streaming_and_back(
        spark, env_factory, s3_server, tmp_path):
    """BATCH writes its savepoint to s3a:// (the keyed passes' entry files and reports go
    through the storage layer from the executors), its decoded state the plain-Python
    counts; STREAMING restores it with its checkpoint root and Delta sink on s3a:// and stops
    with a savepoint there, its decoded state the counts of both inputs, which BATCH restores
    again (on Spark 3.5, which refuses a STREAMING savepoint, STREAMING restores without one);
    outputs equal plain-Python counts. (A STREAMING savepoint restored into STREAMING: the
    savepoint tests on local disk; the format and the storage layer are the same.)"""
    from savepoint_jobs import DATA_A, DATA_B

    bucket = f"s3a://{s3_server.bucket}/batch-handoff"
    out_s3 = _count_run(env_factory, "BATCH", DATA_A, str(tmp_path / "a-s3"), {},
                        f"{bucket}/sp-a")
    assert out_s3 == sorted(_counts(DATA_A).items())  # BATCH: one final value per key
    keys = s3_server.keys("batch-handoff/sp-a/")
    assert any(k.startswith("batch-handoff/sp-a/_delta_log/") for k in keys)
    assert not [k for k in keys if "_reports" in k or k.endswith(".tmp")], keys
    assert _saved(spark, f"{bucket}/sp-a") == _saved_model(DATA_A)

    # STREAMING(B) on S3 restores the BATCH savepoint and stops with its own on S3
    rocks = {"state.backend.type": "rocksdb"}
    config = {**rocks, "execution.checkpointing.dir": f"{bucket}/ckpt-b",
              "execution.savepoint.path": f"{bucket}/sp-a"}
    if spark_line(spark) < (4, 0):
        # Spark 3.5 cannot read a query's state back: the STREAMING savepoint is refused
        # before anything runs; the restore from S3 still runs, without one
        with pytest.raises(UnsupportedSparkFeatureError, match="a STREAMING savepoint"):
            _count_run(env_factory, "STREAMING", DATA_B, f"{bucket}/out-b", config,
                       f"{bucket}/sp-b", s3_server)
        assert not s3_server.keys("batch-handoff/sp-b/")
        assert not s3_server.keys("batch-handoff/out-b/")
        out_stream = _count_run(env_factory, "STREAMING", DATA_B, f"{bucket}/out-b", config,
                                None, s3_server)
        assert out_stream == _running(DATA_B, DATA_A)
        return
    out_stream = _count_run(env_factory, "STREAMING", DATA_B, f"{bucket}/out-b", config,
                            f"{bucket}/sp-b", s3_server)
    assert out_stream == _running(DATA_B, DATA_A)
    keys = s3_server.keys("batch-handoff/")
    assert any(k.startswith("batch-handoff/sp-b/_delta_log/") for k in keys)
    assert any(k.startswith("batch-handoff/out-b/_delta_log/") for k in keys)
    assert any(k.startswith("batch-handoff/ckpt-b/") and k.endswith((".base", ".delta"))
               for k in keys)
    assert _saved(spark, f"{bucket}/sp-b") == _saved_model(DATA_A + DATA_B)

    # and back into BATCH(B), which writes its savepoint to S3 again
    out_back = _count_run(env_factory, "BATCH", DATA_B, str(tmp_path / "bb"),
                          {"execution.savepoint.path": f"{bucket}/sp-b"}, f"{bucket}/sp-c")
    assert _final(out_back) == _counts(DATA_A + DATA_B + DATA_B)
    assert _saved(spark, f"{bucket}/sp-c") == _saved_model(DATA_A + DATA_B + DATA_B)


def test_a_jobs_s3_keys_reach_its_savepoint_over_the_sessions_settings(
        spark, env_factory, s3_server, tmp_path):
    """One configuration: the job's ``s3.*`` keys override the session's ``fs.s3a.*`` for
    the savepoint too (its entry files, reports and Delta commit), not only for the
    checkpoint root. The session's endpoint is pointed at a closed port for the run."""
    from helpers import entry_rows
    from s3_server import ACCESS_KEY, SECRET_KEY, free_port
    from savepoint_jobs import DATA_A

    hadoop = spark._jsc.hadoopConfiguration()
    sp = f"s3a://{s3_server.bucket}/job-keys/sp"
    job_keys = {"s3.endpoint": s3_server.endpoint, "s3.access-key": ACCESS_KEY,
                "s3.secret-key": SECRET_KEY, "s3.path.style.access": "true",
                "s3.connection.ssl.enabled": "false", "s3.endpoint.region": "us-east-1"}
    hadoop.set("fs.s3a.endpoint", f"http://127.0.0.1:{free_port()}")
    try:
        out = _count_run(env_factory, "BATCH", DATA_A, str(tmp_path / "out"), job_keys, sp)
    finally:
        hadoop.set("fs.s3a.endpoint", s3_server.endpoint)
    assert _final(out) == _counts(DATA_A)
    assert any(k.startswith("job-keys/sp/_delta_log/") for k in s3_server.keys("job-keys/"))
    _count_run(env_factory, "BATCH", DATA_A, str(tmp_path / "out-local"), {},
               str(tmp_path / "sp"))
    for uid in ("count", "max"):
        assert entry_rows(spark, sp, uid) == entry_rows(spark, str(tmp_path / "sp"), uid)


def test_a_batch_read_of_a_streaming_dataframe_is_staged_under_an_s3_root(
        spark, env_factory, s3_server, tmp_path, monkeypatch):
    """BATCH runs a streaming DataFrame source available-now into staged Parquet: under the
    checkpoint root when there is one (storage every host reaches), removed when the job
    ends, and while a to_dataframe() DataFrame may still read it (until the process exits);
    nothing goes to the driver's temporary folder."""
    import tempfile as temp_module

    from pyspark_datastream.translation.batch import trigger_once

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(temp_module, "tempdir", str(temp))
    src = str(tmp_path / "in")
    add_file(src, FIRST, "f0")
    env = env_factory("BATCH", {"execution.checkpointing.dir":
                                f"s3a://{s3_server.bucket}/batch-reads/ckpt"})
    stream = env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src))
    sums = stream.map(tuple, PAIR).key_by(lambda r: r[0]).sum(1)
    expected: dict[str, int] = defaultdict(int)
    for key, value in FIRST:
        expected[key] += value
    assert sorted(sums.execute_and_collect()) == sorted(expected.items())
    assert s3_server.keys("batch-reads/") in ([], ["batch-reads/ckpt/"])  # the root's marker
    assert os.listdir(temp) == []

    frame = sums.to_dataframe()
    staged = s3_server.keys("batch-reads/ckpt/_batch-read-")
    assert any(k.endswith(".parquet") for k in staged), staged
    assert sorted(frame.toPandas().itertuples(index=False, name=None)) == sorted(
        expected.items())
    trigger_once._remove_all()  # what the interpreter runs at exit
    assert s3_server.keys("batch-reads/") in ([], ["batch-reads/ckpt/"])  # the root's marker
    assert os.listdir(temp) == []
