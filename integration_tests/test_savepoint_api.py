"""Savepoints as Delta tables: write, restore, State Processor API, CLI, errors (real Spark)."""

from __future__ import annotations

import os
import threading

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark_datastream import (
    JobExecutionError,
    SavepointConflictError,
    SavepointError,
    SavepointFormatError,
    SavepointNotFoundError,
)
from pyspark_datastream.savepoint import (
    Savepoint,
    SavepointWriter,
    inspect_savepoint,
    load_operator_state,
    read_metadata,
    write_savepoint,
)
from pyspark_datastream.savepoint.format import (
    ENTRY_COLUMNS,
    OperatorMetadata,
    SavepointMetadata,
    entries_ddl,
)
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.descriptors import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
)
from pyspark_datastream.state_store.entries import StateEntry
from pyspark_datastream.state_store.functions import AggregateFunction
from pyspark_datastream.state_store.types import Types
from savepoint_contents import (
    ALL,
    KEY_SER,
    LIST,
    MAP,
    SORTED,
    VALUE,
    contents_strategy,
    expected_state,
    make_backend,
    snapshot_of,
)


def _write(spark, path, uid, entries, metas, maxp, **meta_kw) -> int:
    rows = [(uid, e.key_group, e.key, e.state_name, e.namespace, e.user_key, e.value)
            for e in entries]
    df = spark.createDataFrame(rows, entries_ddl()) if rows else spark.createDataFrame([], entries_ddl())
    meta = SavepointMetadata(max_parallelism=maxp,
                             operators={uid: OperatorMetadata(uid, KEY_SER.snapshot(), tuple(metas))},
                             **meta_kw)
    return write_savepoint(spark, path, df, meta)


def _read_back(spark, path, uid) -> dict:
    sp = Savepoint.load(path, spark)
    rows = sp.read_keyed_state(uid, *ALL).collect()
    out = {}
    for r in rows:
        byts = None if r["byts"] is None else [(s["key"], list(s["values"])) for s in r["byts"]]
        out[r["key"]] = (r["count"], None if r["events"] is None else list(r["events"]),
                         None if r["attrs"] is None else dict(r["attrs"]), byts)
    return out


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(contents=contents_strategy, writer=st.sampled_from(["heap", "rocksdb", "single_key"]),
       reader=st.sampled_from(["heap", "rocksdb", "single_key"]))
def test_round_trip_every_state_type_and_backend(spark, tmp_path_factory, contents, writer, reader):
    """write -> Delta -> load_operator_state -> restore into another backend: same entries;
    read_keyed_state decodes what the program held."""
    tmp = tmp_path_factory.mktemp("sp")
    entries, metas = snapshot_of(writer, contents, 32, str(tmp / "rdb-w"))
    path = str(tmp / "sp")
    assert _write(spark, path, "op", entries, metas, 32) == 0
    # restore with another max parallelism into the reader backend
    meta = read_metadata(path)
    loaded = load_operator_state(spark, path, "op", max_parallelism=16).collect()
    restored_entries = [StateEntry(r["key_group"], r["state_name"], bytes(r["key"]),
                                   bytes(r["namespace"]), bytes(r["user_key"]), bytes(r["value"]))
                        for r in loaded]
    backend = make_backend(reader if reader != "single_key" else "heap", 16, str(tmp / "rdb-r"))
    try:
        backend.restore(meta.operator("op").states, restored_entries)
        again = sorted((e.state_name, e.key, e.namespace, e.user_key, e.value)
                       for e in backend.snapshot())
    finally:
        backend.close()
    assert again == sorted((e.state_name, e.key, e.namespace, e.user_key, e.value) for e in entries)
    assert _read_back(spark, path, "op") == expected_state(contents)


def test_same_state_same_rows_whatever_backend(spark, tmp_path):
    contents = {"a": {"count": 1, "events": ["x"], "attrs": {"k": 1}, "byts": {3: ["q"]}},
                "bb": {"count": None, "events": ["y", "z"], "attrs": {}, "byts": {}}}
    tables = []
    for kind in ("heap", "rocksdb", "single_key"):
        entries, metas = snapshot_of(kind, contents, 128, str(tmp_path / f"r-{kind}"))
        path = str(tmp_path / kind)
        _write(spark, path, "op", entries, metas, 128)
        rows = Savepoint.load(path, spark).entries().drop("kind").collect()
        tables.append([tuple(r) for r in rows])
    assert tables[0] == tables[1] == tables[2]
    # a: value, list element, map entry, sorted entry, timer; bb: 2 list elements, timer
    assert len(tables[0]) == 8


# ---------------------------------------------------------------------------------------------
# bootstrap, versions, CLI
# ---------------------------------------------------------------------------------------------
def test_bootstrap_from_dataframe_reads_back_and_restores(spark, tmp_path):
    df = spark.createDataFrame(
        [("u1", 3, ["a", "b"], {"x": 1}, [(5, ["p"])]), ("u2", 7, [], {}, [])],
        "user string, n bigint, evs array<string>, m map<string,int>, "
        "s array<struct<key: bigint, values: array<string>>>")
    path = str(tmp_path / "boot")
    version = (SavepointWriter(max_parallelism=64)
               .with_keyed_state("counter", df, "user",
                                 {"n": VALUE, "evs": LIST, "m": MAP, "s": SORTED})
               .write(path))
    assert version == 0
    sp = Savepoint.load(path, spark)
    assert sp.operators() == ["counter"]
    assert sp.metadata().max_parallelism == 64 and sp.metadata().mode == "BOOTSTRAP"
    rows = {r["key"]: r for r in sp.read_keyed_state("counter", VALUE, LIST).collect()}
    assert rows["u1"]["count"] == 3 and list(rows["u1"]["events"]) == ["a", "b"]
    assert rows["u2"]["count"] == 7 and rows["u2"]["events"] is None
    # restore into a backend (what a restored program sees), under another max parallelism
    loaded = load_operator_state(spark, path, "counter", max_parallelism=128).collect()
    backend = HeapKeyedStateBackend(KEY_SER, 128)
    backend.restore(sp.metadata().operator("counter").states,
                    [StateEntry(r["key_group"], r["state_name"], bytes(r["key"]),
                                bytes(r["namespace"]), bytes(r["user_key"]), bytes(r["value"]))
                     for r in loaded])
    backend.set_current_key("u1")
    assert backend.get_state(VALUE).value() == 3
    assert dict(backend.get_state(MAP).items()) == {"x": 1}
    assert backend.get_binary_sorted_state(SORTED).values_at(5) == ["p"]
    backend.close()


def test_new_versions_keep_history_and_inspect(spark, tmp_path, capsys):
    contents = {"k": {"count": 1, "events": [], "attrs": {}, "byts": {}}}
    entries, metas = snapshot_of("heap", contents, 128, "")
    path = str(tmp_path / "sp")
    assert _write(spark, path, "op", entries, metas, 128, job_name="first") == 0
    contents["k"]["count"] = 2
    entries2, _ = snapshot_of("heap", contents, 128, "")
    assert _write(spark, path, "op", entries2, metas, 128, job_name="second") == 1
    assert read_metadata(path).job_name == "second"
    assert read_metadata(path, version=0).job_name == "first"
    old = Savepoint.load(path, spark, version=0).read_keyed_state("op", VALUE).collect()
    new = Savepoint.load(path, spark).read_keyed_state("op", VALUE).collect()
    assert [r["count"] for r in old] == [1] and [r["count"] for r in new] == [2]
    info = inspect_savepoint(path)
    assert info["format_version"] == 1 and info["version"] == 1
    states = {s["name"]: s for s in info["operators"][0]["states"]}
    assert states["count"]["entries"] == 1 and states["count"]["bytes"] > 0
    assert states["_timer/event"]["entries"] == 1
    assert [h["version"] for h in info["delta_versions"]] == [1, 0]
    from pyspark_datastream.__main__ import main

    assert main(["savepoint", "inspect", path]) == 0
    out = capsys.readouterr().out
    assert "format version 1" in out and "count" in out and "Delta versions" in out
    assert main(["savepoint", "inspect", str(tmp_path / "nothing")]) == 1
    assert "is not a savepoint" in capsys.readouterr().err


def test_read_timers(spark, tmp_path):
    contents = {"ab": {"count": 1, "events": [], "attrs": {}, "byts": {}},
                "xyz": {"count": None, "events": [], "attrs": {}, "byts": {}}}
    entries, metas = snapshot_of("heap", contents, 128, "")
    path = str(tmp_path / "sp")
    _write(spark, path, "op", entries, metas, 128)
    timers = sorted((r["key"], r["queue"], r["timestamp"], r["namespace"])
                    for r in Savepoint.load(path, spark).read_timers("op").collect())
    assert timers == [("ab", "event", 2000, None), ("xyz", "event", 3000, None)]


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def test_not_a_savepoint_and_unreadable_metadata(spark, tmp_path):
    with pytest.raises(SavepointNotFoundError, match="is not a savepoint: no Delta table there"):
        Savepoint.load(str(tmp_path / "missing"), spark)
    from pyspark_datastream.spark_io.delta_io import write_delta

    other = str(tmp_path / "other")
    write_delta(spark, spark.createDataFrame([(1,)], "a int"), other)
    with pytest.raises(SavepointNotFoundError, match="is a Delta table but not a savepoint"):
        read_metadata(other)
    # a savepoint-shaped table whose metadata row is garbage
    import pyarrow as pa
    from deltalake import write_deltalake
    from pyspark_datastream.savepoint.format import savepoint_arrow_schema

    bad = str(tmp_path / "bad")
    row = {"kind": "metadata", "operator_uid": None, "key_group": -1, "key": b"",
           "state_name": "", "namespace": b"", "user_key": b"", "value": b"{not json"}
    write_deltalake(bad, pa.Table.from_pylist([row], schema=savepoint_arrow_schema()))
    with pytest.raises(SavepointFormatError, match="metadata is not valid JSON"):
        Savepoint.load(bad, spark)
    with pytest.raises(SavepointFormatError, match="no operator with uid 'nope'"):
        sp_path = str(tmp_path / "sp")
        entries, metas = snapshot_of("heap", {"k": {"count": 1, "events": [], "attrs": {},
                                                  "byts": {}}}, 128, "")
        _write(spark, sp_path, "op", entries, metas, 128)
        Savepoint.load(sp_path, spark).read_keyed_state("nope", VALUE)


def test_failed_write_leaves_no_version(spark, tmp_path):
    from deltalake import DeltaTable

    entries, metas = snapshot_of("heap", {"k": {"count": 1, "events": [], "attrs": {}, "byts": {}}},
                               128, "")
    path = str(tmp_path / "sp")
    _write(spark, path, "op", entries, metas, 128)
    # an entry of a state the metadata does not declare fails on the executors, midway
    rows = [("op", e.key_group, e.key, e.state_name, e.namespace, e.user_key, e.value)
            for e in entries] + [("op", 1, b"k", "undeclared", b"", b"", b"v")]
    df = spark.createDataFrame(rows, entries_ddl())
    meta = SavepointMetadata(128, {"op": OperatorMetadata("op", KEY_SER.snapshot(), tuple(metas))})
    with pytest.raises(JobExecutionError, match="no version was committed.*undeclared"):
        write_savepoint(spark, path, df, meta)
    assert DeltaTable(path).version() == 0
    committed = {os.path.basename(os.path.dirname(u)) for u in DeltaTable(path).file_uris()}
    assert {d for d in os.listdir(path) if d.startswith("savepoint-")} == committed
    with pytest.raises(SavepointFormatError, match="lacks columns"):
        write_savepoint(spark, path, df.drop("value"), meta)


def test_concurrent_writers_one_wins(spark, tmp_path):
    """Two writers that both started from version 0: the second commit gets a conflict."""
    from pyspark_datastream.savepoint import writer as sp_mod

    entries, metas = snapshot_of("heap", {"k": {"count": 1, "events": [], "attrs": {}, "byts": {}}},
                               128, "")
    path = str(tmp_path / "sp")
    _write(spark, path, "op", entries, metas, 128)
    real_check = sp_mod._check_target
    barrier = threading.Barrier(2, timeout=120)

    def synchronized_check(root):
        table = real_check(root)  # both snapshots are taken at version 0 ...
        barrier.wait()            # ... before either writer commits
        return table

    results: list = []

    def run():
        try:
            results.append(_write(spark, path, "op", entries, metas, 128))
        except SavepointConflictError as exc:
            results.append(exc)

    sp_mod._check_target = synchronized_check
    try:
        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
    finally:
        sp_mod._check_target = real_check
    wins = [r for r in results if isinstance(r, int)]
    losses = [r for r in results if isinstance(r, SavepointConflictError)]
    assert wins == [1] and len(losses) == 1
    assert "another writer committed a savepoint concurrently" in str(losses[0])


def test_a_new_path_holding_only_another_writers_uncommitted_data_is_written(spark, tmp_path):
    """A writer that lost a race (or died) before committing leaves its data folder (and
    perhaps an empty Delta log): the next writer writes beside it instead of refusing the
    path as 'not a Delta table' (a real race then ends in the commit's conflict)."""
    from deltalake import DeltaTable

    entries, metas = snapshot_of("heap", {"k": {"count": 1, "events": [], "attrs": {}, "byts": {}}},
                               128, "")
    path = tmp_path / "sp"
    leftover = path / "savepoint-1-abcdef012345"
    leftover.mkdir(parents=True)
    (leftover / "part-00000.parquet").write_bytes(b"not committed")
    (path / "_delta_log").mkdir()
    assert _write(spark, str(path), "op", entries, metas, 128) == 0
    assert DeltaTable(str(path)).version() == 0
    assert all("abcdef012345" not in u for u in DeltaTable(str(path)).file_uris())
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(SavepointError, match=r"not a Delta table \(it holds \['notes.txt'\]\)"):
        _write(spark, str(other), "op", entries, metas, 128)


def test_entry_columns_are_the_unified_layout():
    assert ENTRY_COLUMNS == ("operator_uid", "key_group", "key", "state_name", "namespace",
                             "user_key", "value")


class _SumCount(AggregateFunction):
    """Accumulator (sum, count) -> mean: an AggregatingState whose stored value is a tuple."""

    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


TOTAL = ReducingStateDescriptor("total", lambda a, b: a + b, Types.LONG())
MEAN = AggregatingStateDescriptor("mean", _SumCount(), Types.TUPLE([Types.LONG(), Types.LONG()]))


@pytest.mark.parametrize("writer,reader", [("heap", "rocksdb"), ("rocksdb", "heap"),
                                           ("single_key", "rocksdb")])
def test_round_trip_reducing_and_aggregating_state(spark, tmp_path, writer, reader):
    """Reducing and Aggregating state: write -> Delta -> restore into another backend gives the
    same entries and the same state values; read_keyed_state shows the stored value/accumulator."""
    data = {"k1": [3, 4, 5], "k2": [10], "k3": [-2, 2]}
    backend = make_backend(writer, 32, str(tmp_path / "w"))
    entries: list[StateEntry] = []
    try:
        for key, values in data.items():
            backend.set_current_key(key)
            for v in values:
                backend.get_state(TOTAL).add(v)
                backend.get_state(MEAN).add(v)
            if writer == "single_key":
                entries.extend(backend.snapshot())
        if writer != "single_key":
            entries = list(backend.snapshot())
        metas = backend.state_meta_infos()
    finally:
        backend.close()
    path = str(tmp_path / "sp")
    _write(spark, path, "agg", entries, metas, 32)
    loaded = load_operator_state(spark, path, "agg", max_parallelism=8).collect()
    restored = make_backend(reader, 8, str(tmp_path / "r"))
    try:
        restored.restore(read_metadata(path).operator("agg").states, [
            StateEntry(r["key_group"], r["state_name"], bytes(r["key"]), bytes(r["namespace"]),
                       bytes(r["user_key"]), bytes(r["value"])) for r in loaded])
        for key, values in data.items():
            restored.set_current_key(key)
            assert restored.get_state(TOTAL).get() == sum(values)
            assert restored.get_state(MEAN).get() == sum(values) / len(values)
    finally:
        restored.close()
    rows = Savepoint.load(path, spark).read_keyed_state("agg", TOTAL, MEAN).collect()
    assert sorted((r["key"], r["total"], tuple(r["mean"])) for r in rows) == sorted(
        (k, sum(v), (sum(v), len(v))) for k, v in data.items())
