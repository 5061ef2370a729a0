"""STREAMING jobs with their checkpoint root on object storage: a real S3 server (moto, in
server mode on loopback; conftest ``s3_server``) that Spark's s3a connector and the
project's Python side both reach through the session's Hadoop configuration alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import defaultdict

from helpers import KV_SCHEMA, add_file
from pyspark_datastream import ConfigurationError, Types

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


def _run(env_factory, spark, root: str, src: str) -> list[tuple[str, int]]:
    env = env_factory("STREAMING", {"execution.checkpointing.dir": root,
                                    "state.backend.type": "rocksdb"})
    return list(two_stage(env, spark, src).execute_and_collect("two-stage-rocksdb"))


def test_two_stage_rocksdb_job_resumes_from_a_checkpoint_root_on_s3(
        spark, env_factory, s3_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land in the working directory
    root = f"s3a://{s3_server.bucket}/resume/ckpt"
    src_s3, src_local = str(tmp_path / "in-s3"), str(tmp_path / "in-local")
    for src in (src_s3, src_local):
        add_file(src, FIRST, "f1")

    first_s3 = _run(env_factory, spark, root, src_s3)
    first_local = _run(env_factory, spark, str(tmp_path / "ckpt"), src_local)
    assert final_per_letter(first_s3) == expected_max_per_letter(FIRST)
    assert final_per_letter(first_local) == final_per_letter(first_s3)

    keys = s3_server.keys("resume/ckpt/two-stage-rocksdb/")
    assert "resume/ckpt/two-stage-rocksdb/_job.json" in keys
    version_files = [k for k in keys if "/state/" in k and "/kg-" in k]
    assert version_files and all(k.endswith((".base", ".delta")) for k in version_files)
    assert any("/checkpoint/commits/" in k for k in keys)  # Spark's own checkpoint, via s3a

    for src in (src_s3, src_local):
        add_file(src, SECOND, "f2")
    second_s3 = _run(env_factory, spark, root, src_s3)
    second_local = _run(env_factory, spark, str(tmp_path / "ckpt"), src_local)
    # only the new input was read, on top of the state kept on S3
    assert {w for w, _ in second_s3} <= {w[0] for w, _ in SECOND}
    both = {**final_per_letter(first_s3), **final_per_letter(second_s3)}
    assert both == expected_max_per_letter(FIRST + SECOND)
    assert sorted(second_s3) == sorted(second_local)
    assert sorted(os.listdir(tmp_path)) == ["ckpt", "in-local", "in-s3"]


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


_FILE_URI_JOB = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    from pyspark_datastream import Configuration, StreamExecutionEnvironment, Types

    root = sys.argv[1]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    conf = Configuration()
    conf.set_string("execution.runtime-mode", "STREAMING")
    conf.set_string("execution.checkpointing.dir", root)
    conf.set_string("state.backend.type", "rocksdb")
    env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    env.set_parallelism(2)
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    ds = (env.from_collection([("a", 1), ("b", 2), ("a", 3)], pair)
          .key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
          .map(lambda r: ("all", r[1]), output_type=pair)
          .key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], max(x[1], y[1]))))
    print("RESULT", max(v for _, v in ds.execute_and_collect("file-uri-job")))
    spark.stop()
""")


def test_a_file_uri_root_keeps_everything_there_and_nothing_under_the_working_dir(tmp_path):
    """FACTS.md: ``file:/abs`` roots used to land under ``./file:/abs`` of every process."""
    cwd, ckpt = tmp_path / "cwd", tmp_path / "ckpt"
    cwd.mkdir()
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", _FILE_URI_JOB, f"file:{ckpt}"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT 4" in done.stdout  # a: 1, 4; b: 2 -> the largest total is 4
    assert os.listdir(cwd) == [], os.listdir(cwd)
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


def test_a_two_stage_streaming_savepoint_on_s3_restores_into_batch_and_back(
        spark, env_factory, s3_server, tmp_path):
    """Checkpoint root, savepoint and Delta sink on s3a://, against the same job on local
    disk and plain-Python counts."""
    from helpers import entry_rows
    from savepoint_jobs import DATA_A, DATA_B

    bucket = f"s3a://{s3_server.bucket}/handoff"
    rocks = {"state.backend.type": "rocksdb"}
    out_s3 = _count_run(env_factory, "STREAMING", DATA_A, f"{bucket}/out-a",
                        {**rocks, "execution.checkpointing.dir": f"{bucket}/ckpt"},
                        f"{bucket}/sp-a", s3_server)
    out_local = _count_run(env_factory, "STREAMING", DATA_A, str(tmp_path / "out-a"),
                           {**rocks, "execution.checkpointing.dir": str(tmp_path / "ckpt")},
                           str(tmp_path / "sp-a"))
    assert out_s3 == out_local
    assert _final(out_s3) == _counts(DATA_A)
    keys = s3_server.keys("handoff/")
    assert any(k.startswith("handoff/sp-a/_delta_log/") for k in keys)
    assert any(k.startswith("handoff/out-a/_delta_log/") for k in keys)
    for uid in ("count", "max"):
        assert entry_rows(spark, f"{bucket}/sp-a", uid) == \
            entry_rows(spark, str(tmp_path / "sp-a"), uid)

    # restore into BATCH(B) from the savepoint on S3
    out_batch = _count_run(env_factory, "BATCH", DATA_B, str(tmp_path / "b-batch"),
                           {"execution.savepoint.path": f"{bucket}/sp-a"})
    assert _final(out_s3, out_batch) == _counts(DATA_A + DATA_B)

    # and back into STREAMING(B) on S3 from the same savepoint: the same final values for
    # the keys of B (a BATCH reduce emits only its final value, and does so for restored
    # keys without input too; a STREAMING one emits every update of the keys it sees)
    out_stream = _count_run(env_factory, "STREAMING", DATA_B, f"{bucket}/out-b",
                            {**rocks, "execution.checkpointing.dir": f"{bucket}/ckpt-b",
                             "execution.savepoint.path": f"{bucket}/sp-a"}, s3=s3_server)
    of_b = _counts(DATA_B)
    expected_b = {k: n for k, n in _counts(DATA_A + DATA_B).items() if k in of_b}
    assert _final(out_stream) == expected_b
    assert {k: n for k, n in _final(out_batch).items() if k in of_b} == expected_b


def test_a_batch_savepoint_on_s3_restores_into_streaming_and_back(
        spark, env_factory, s3_server, tmp_path):
    """BATCH writes its savepoint to s3a:// (the keyed passes' entry files and reports go
    through the storage layer from the executors); it equals the same program's savepoint on
    local disk entry for entry; STREAMING restores it and stops with a savepoint on s3a://,
    which BATCH restores again; outputs equal plain-Python counts and the local-disk run."""
    from helpers import entry_rows as _entry_rows
    from savepoint_jobs import DATA_A, DATA_B

    bucket = f"s3a://{s3_server.bucket}/batch-handoff"
    out_s3 = _count_run(env_factory, "BATCH", DATA_A, str(tmp_path / "a-s3"), {},
                        f"{bucket}/sp-a")
    out_local = _count_run(env_factory, "BATCH", DATA_A, str(tmp_path / "a-local"), {},
                           str(tmp_path / "sp-a"))
    assert out_s3 == out_local
    assert _final(out_s3) == _counts(DATA_A)
    keys = s3_server.keys("batch-handoff/sp-a/")
    assert any(k.startswith("batch-handoff/sp-a/_delta_log/") for k in keys)
    assert not [k for k in keys if "_reports" in k or k.endswith(".tmp")], keys
    for uid in ("count", "max"):
        assert _entry_rows(spark, f"{bucket}/sp-a", uid) == \
            _entry_rows(spark, str(tmp_path / "sp-a"), uid)

    # STREAMING(B) on S3 restores the BATCH savepoint and stops with its own on S3
    rocks = {"state.backend.type": "rocksdb"}
    out_stream = _count_run(env_factory, "STREAMING", DATA_B, f"{bucket}/out-b",
                            {**rocks, "execution.checkpointing.dir": f"{bucket}/ckpt-b",
                             "execution.savepoint.path": f"{bucket}/sp-a"},
                            f"{bucket}/sp-b", s3_server)
    of_b = _counts(DATA_B)
    expected_b = {k: n for k, n in _counts(DATA_A + DATA_B).items() if k in of_b}
    assert _final(out_stream) == expected_b

    # and back into BATCH(B), which writes its savepoint to S3 again
    out_back = _count_run(env_factory, "BATCH", DATA_B, str(tmp_path / "bb"),
                          {"execution.savepoint.path": f"{bucket}/sp-b"}, f"{bucket}/sp-c")
    assert _final(out_back) == _counts(DATA_A + DATA_B + DATA_B)
    for uid in ("count", "max"):
        assert _entry_rows(spark, f"{bucket}/sp-c", uid)


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
