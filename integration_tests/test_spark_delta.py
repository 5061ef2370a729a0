"""Spark's own Delta Lake (``format("delta")``, the jars ``make setup`` resolved) as the
project's Delta writer and reader: savepoints written and restored by it in both modes, a
Delta table as a STREAMING source, and interop with delta-rs in both directions.

Expected values come from plain-Python models of the programs (:func:`sessions_model`,
``streaming_harness.expected_output``) or from the state backends' own snapshots, never from
this project's output; each test also checks that the table it relies on was really
committed by Spark's Delta (the Delta log's ``engineInfo``), so a silent fallback to delta-rs
fails it.
"""

from __future__ import annotations

import glob
import json
import os

import pytest
import streaming_harness as harness
from deltalake import DeltaTable
from helpers import ENTRY_COLS, entry_rows, env_for, run_to_delta, spark_line
from pyspark_datastream import (
    SavepointError,
    SavepointFormatError,
    Types,
    UnsupportedSparkFeatureError,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint, read_metadata, write_savepoint
from pyspark_datastream.savepoint.format import (
    METADATA_KIND,
    OperatorMetadata,
    SavepointMetadata,
    entries_ddl,
)
from savepoint_contents import ALL, KEY_SER, expected_state, snapshot_of
from savepoint_jobs import DATA_A, DATA_B, GAP, OOO, Sessionize, keyed_stream

pytestmark = pytest.mark.compat



def writers_of(path: str) -> list[str]:
    """Who committed each version of the Delta table at ``path``: ``spark`` (Spark's Delta:
    ``engineInfo`` ``Apache-Spark/... Delta-Lake/...``) or ``delta-rs`` (``clientVersion``
    ``delta-rs...``), in version order, read from the log's JSON itself."""
    out = []
    for name in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json"))):
        with open(name, encoding="utf-8") as f:
            infos = [json.loads(line)["commitInfo"] for line in f if '"commitInfo"' in line]
        assert len(infos) == 1, name
        engine = str(infos[0].get("engineInfo", ""))
        client = str(infos[0].get("clientVersion", ""))
        if "Delta-Lake/" in engine:
            out.append("spark")
        elif client.startswith("delta-rs"):
            out.append("delta-rs")
        else:
            out.append(f"unknown {infos[0]}")
    return out


def sessions_model(events: list[tuple[str, int]], watermark: int | None = None
                   ) -> list[tuple[str, int]]:
    """(key, last event time) of every session ``Sessionize`` emits: a session ends at a gap
    larger than GAP; the last one of a key is emitted when its timer (last + GAP) fires, i.e.
    at the end of input, or (``watermark``: a job stopped with a savepoint, no drain) only
    when ``last + GAP <= watermark``."""
    by_key: dict[str, list[int]] = {}
    for k, t in events:
        by_key.setdefault(k, []).append(t)
    out = []
    for k, stamps in by_key.items():
        stamps.sort()
        for prev, nxt in zip(stamps, stamps[1:]):
            if nxt - prev > GAP:
                out.append((k, prev))
        last = stamps[-1]
        if watermark is None or last + GAP <= watermark:
            out.append((k, last))
    return sorted(out)


def test_savepoints_written_and_restored_by_spark_delta_in_both_modes(
        spark_delta, env_factory, tmp_path):
    """BATCH(A) and STREAMING(A) (RocksDB) stop with savepoints written by Spark's Delta,
    equal entry for entry; STREAMING(B) restores the BATCH one (the handoff), BATCH(B) the
    STREAMING one; A's output plus either continuation is the model's run over A + B. (On
    Spark 3.5, which refuses a STREAMING savepoint, both continuations restore the BATCH one.)"""
    spark = spark_delta
    wm_a = max(t for _, t in DATA_A) - OOO - 1
    want_a = sessions_model(DATA_A, watermark=wm_a)
    want_ab = sessions_model(DATA_A + DATA_B)
    assert want_a and set(want_a) < set(want_ab)  # the model: A leaves sessions open

    sp_batch, sp_stream = str(tmp_path / "sp-batch"), str(tmp_path / "sp-stream")
    env = env_for(env_factory, tmp_path, "BATCH", "a-batch")
    out_a_batch = run_to_delta(env, keyed_stream(env, DATA_A, Sessionize(), uid="sess"),
                       str(tmp_path / "a-batch"), "sess-a", sp_batch)
    assert out_a_batch == want_a
    env = env_for(env_factory, tmp_path, "STREAMING", "a-stream",
               **{"state.backend.type": "rocksdb"})
    if spark_line(spark) < (4, 0):
        # Spark 3.5 cannot read a query's state back (no state data source): the STREAMING
        # savepoint is refused when the job is built; the BATCH one goes on to both restores
        with pytest.raises(UnsupportedSparkFeatureError, match=r"a STREAMING savepoint needs "
                                                               r"Spark 4\.0"):
            run_to_delta(env, keyed_stream(env, DATA_A, Sessionize(), uid="sess"),
                         str(tmp_path / "a-stream"), "sess-a", sp_stream)
        assert not os.path.exists(sp_stream)
        for path in (sp_batch, str(tmp_path / "a-batch")):
            assert set(writers_of(path)) == {"spark"}, path
        sp_stream = sp_batch
    else:
        out_a_stream = run_to_delta(env, keyed_stream(env, DATA_A, Sessionize(), uid="sess"),
                                    str(tmp_path / "a-stream"), "sess-a", sp_stream)
        assert out_a_stream == want_a
        for path in (sp_batch, sp_stream, str(tmp_path / "a-batch"),
                     str(tmp_path / "a-stream")):
            assert set(writers_of(path)) == {"spark"}, path
    rows = entry_rows(spark, sp_stream, "sess")
    assert rows and rows == entry_rows(spark, sp_batch, "sess")
    if sp_stream != sp_batch:
        assert read_metadata(sp_stream).backend == "rocksdb"
    last_a = {k: max(t for kk, t in DATA_A if kk == k) for k, _ in DATA_A}
    pending = sorted((k, t) for k, t in last_a.items() if t + GAP > wm_a)  # sessions left open
    assert pending
    state = Savepoint.load(sp_stream, spark).read_keyed_state(
        "sess", ValueStateDescriptor("last", Types.LONG())).collect()
    assert sorted((r["key"], r["last"]) for r in state) == pending

    # the restored runs' outputs are collected: the savepoints are what Spark's Delta wrote
    # and reads here (the sink's Delta writer is A's, above)
    env = env_for(env_factory, tmp_path, "STREAMING", "b-stream",
               **{"execution.savepoint.path": sp_batch})
    out_b_stream = sorted(keyed_stream(env, DATA_B, Sessionize(), uid="sess")
                          .execute_and_collect("sess-b"))
    # BATCH(B): its end of input fires every timer, as the model's run over A + B does
    env = env_for(env_factory, tmp_path, "BATCH", "b-batch", **{"execution.savepoint.path": sp_stream})
    out_b_batch = sorted(keyed_stream(env, DATA_B, Sessionize(), uid="sess")
                         .execute_and_collect("sess-b"))
    assert sorted(want_a + out_b_batch) == want_ab
    # a bounded STREAMING run (no savepoint written) fires every timer at its end of input too
    assert sorted(want_a + out_b_stream) == want_ab


def _entries_df(spark, uid, entries):
    rows = [(uid, e.key_group, e.key, e.state_name, e.namespace, e.user_key, e.value)
            for e in entries]
    return spark.createDataFrame(rows, entries_ddl())


def _as_rows(uid, entries):
    return sorted((uid, e.key_group, e.key, e.state_name, e.namespace, e.user_key, e.value)
                  for e in entries)


def _spark_rows(spark, path, version=None):
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    df = reader.load(path).filter(f"kind != '{METADATA_KIND}'")
    return sorted(tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v
                        for v in r) for r in df.select(*ENTRY_COLS).collect())


def _rs_rows(path, version=None):
    table = DeltaTable(path, version=version).to_pyarrow_table()
    return sorted(tuple(r[c] for c in ENTRY_COLS) for r in table.to_pylist()
                  if r["kind"] != METADATA_KIND)


CONTENTS_1 = {"alice": {"count": 3, "events": ["x", "y"], "attrs": {"a": 1}, "byts": {5: ["p"]}},
              "bob": {"count": None, "events": [], "attrs": {"b": -2, "c": 0},
                      "byts": {-7: ["q", "r"]}},
              "carol": {"count": 0, "events": ["z"], "attrs": {}, "byts": {}}}
CONTENTS_2 = {"alice": {"count": 9, "events": [], "attrs": {}, "byts": {}},
              "dave": {"count": 1, "events": ["w"], "attrs": {"d": 4}, "byts": {0: ["s"]}}}


def test_savepoint_interop_delta_rs_and_spark_delta_entry_for_entry(spark_delta, tmp_path):
    """One savepoint table, three versions: delta-rs writes version 0, Spark's Delta
    overwrites it (1), delta-rs again (2). Each version is read by the other Delta
    implementation (Spark's ``format("delta")``, delta-rs's own reader) and by the project's
    reader under either writer setting, entry for entry against the backend's snapshot."""
    spark = spark_delta
    path = str(tmp_path / "sp")
    versions = []
    for i, (writer, contents) in enumerate(
            [("delta-rs", CONTENTS_1), ("spark", CONTENTS_2), ("delta-rs", CONTENTS_1)]):
        spark.conf.set("pyspark_datastream.delta.writer", writer)
        entries, metas = snapshot_of("heap", contents, 32, "")
        meta = SavepointMetadata(32, {"op": OperatorMetadata("op", KEY_SER.snapshot(),
                                                             tuple(metas))}, job_name=f"j{i}")
        assert write_savepoint(spark, path, _entries_df(spark, "op", entries), meta) == i
        versions.append((_as_rows("op", entries), contents, f"j{i}"))
    assert writers_of(path) == ["delta-rs", "spark", "delta-rs"]
    for v, (rows, _contents, job) in enumerate(versions):
        assert rows  # the snapshot holds entries
        assert _spark_rows(spark, path, v) == rows, v  # Spark's Delta reads every version
        assert _rs_rows(path, v) == rows, v  # delta-rs reads every version
        assert read_metadata(path, v).job_name == job
    for reader in ("spark", "delta-rs"):
        spark.conf.set("pyspark_datastream.delta.writer", reader)
        loaded = Savepoint.load(path, spark)
        got = {r["key"]: r for r in loaded.read_keyed_state("op", *ALL).collect()}
        assert sorted(got) == sorted(expected_state(CONTENTS_1)), reader
        assert entry_rows(spark, path, "op") == versions[2][0], reader
        assert {k: r["count"] for k, r in got.items()} == {
            k: d["count"] for k, d in CONTENTS_1.items()}, reader


def test_spark_delta_savepoint_writer_refuses_what_delta_rs_refuses(spark_delta, tmp_path):
    """Spark's Delta writer checks the target as delta-rs's does: a Delta table that is not
    a savepoint, or a non-empty folder that is no Delta table, is refused (typed, before
    anything is written); an undeclared state fails the write with no new version."""
    spark = spark_delta
    entries, metas = snapshot_of("heap", CONTENTS_1, 32, "")
    meta = SavepointMetadata(32, {"op": OperatorMetadata("op", KEY_SER.snapshot(), tuple(metas))})
    other = str(tmp_path / "table")
    spark.range(3).write.format("delta").save(other)
    with pytest.raises(SavepointFormatError, match="not a savepoint"):
        write_savepoint(spark, other, _entries_df(spark, "op", entries), meta)
    assert DeltaTable(other).version() == 0
    assert sorted(DeltaTable(other).to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(SavepointError, match=r"not a Delta table \(it holds \['notes.txt'\]\)"):
        write_savepoint(spark, str(folder), _entries_df(spark, "op", entries), meta)
    assert sorted(os.listdir(folder)) == ["notes.txt"]
    path = str(tmp_path / "sp")
    assert write_savepoint(spark, path, _entries_df(spark, "op", entries), meta) == 0
    bad = _entries_df(spark, "op", entries).union(spark.createDataFrame(
        [("op", 1, b"k", "undeclared", b"", b"", b"v")], entries_ddl()))
    from pyspark_datastream import JobExecutionError

    with pytest.raises(JobExecutionError, match="no version was committed.*undeclared"):
        write_savepoint(spark, path, bad, meta)
    assert DeltaTable(path).version() == 0
    assert writers_of(path) == ["spark"]


def _write_source_version(spark, path: str, rows: list[tuple[str, int]]) -> None:
    (spark.createDataFrame(rows, harness.SCHEMA).coalesce(1).write.format("delta")
     .mode("append").save(path))


def test_delta_table_as_streaming_source_feeds_a_keyed_job_resumed_exactly(
        spark_delta, env_factory, tmp_path):
    """``spark.readStream.format("delta")`` (availableNow) feeds the keyed running sum; its
    output goes through ``sink_to_delta`` on Spark's Delta. Versions appended between runs
    are read once each (one version per micro-batch; the second run reads two): after the
    second run the sink holds exactly the model's upserts."""
    spark = spark_delta
    src, root, out = (str(tmp_path / d) for d in ("src", "ckpt", "out"))
    # distinct keys inside a file: the upserts do not depend on the order within a batch
    files = [[("a", 1), ("b", 10)], [("a", 2), ("c", 5)], [("a", 4), ("b", 3), ("d", 8)]]
    runs = [files[:1], files[1:]]
    seen: list[list[tuple[str, int]]] = []
    for run in runs:
        for rows in run:
            _write_source_version(spark, src, rows)
        seen += run
        env = env_factory("STREAMING", {"execution.checkpointing.dir": root})
        df = spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src)
        (env.from_dataframe(df).key_by(lambda r: r[0])
         .process(harness.RunningSum(),
                  output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
         .sink_to_delta(out))
        env.execute("delta-source")
        got = sorted((r["f0"], r["f1"], r["f2"])
                     for r in DeltaTable(out).to_pyarrow_table().to_pylist())
        assert got == sorted(harness.expected_output(seen))
    assert writers_of(src) == ["spark"] * len(files)
    assert set(writers_of(out)) == {"spark"}
