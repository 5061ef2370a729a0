"""STREAMING keyed input computed by Spark (key group, typed records, file-row order) gives
what the Python keying pass gives: same values, same per-file order, nulls and big ints.

Each test runs two small streaming queries (native and Python keying) on the same files.
"""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark_datastream import KeyedProcessFunction, Types, WatermarkStrategy

SCHEMA = "k string, v long"
BIG = 2**60 + 7  # not a float64: a pandas float round trip would change it
_mtime = [1_800_000_000]


def _file(folder: str, rows: list, name: str) -> None:
    os.makedirs(folder, exist_ok=True)
    table = pa.table({"k": pa.array([r[0] for r in rows], pa.string()),
                      "v": pa.array([r[1] for r in rows], pa.int64())})
    path = os.path.join(folder, f"{name}.parquet")
    pq.write_table(table, path)
    _mtime[0] += 10
    os.utime(path, (_mtime[0], _mtime[0]))


class Numbered(KeyedProcessFunction):
    """(key, n-th element of the key, value): exposes the order each key's elements came in."""

    def open(self, runtime_context):
        from pyspark_datastream import ValueStateDescriptor

        self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.n.value() or 0) + 1
        self.n.update(n)
        yield (ctx.get_current_key(), n, value[1])


def _run(spark, env_factory, tmp_path, src, name, native, build):
    config = {"execution.checkpointing.dir": str(tmp_path / f"ckpt-{name}"),
              "execution.streaming.native-pushdown.enabled": str(native).lower()}
    env = env_factory("STREAMING", config)
    ds = build(env.from_dataframe(spark.readStream.schema(SCHEMA).parquet(src)))
    return list(ds.execute_and_collect(name))


def test_native_and_python_keying_agree_on_running_reduce_with_nulls_and_big_ints(
        spark, env_factory, tmp_path, caplog):
    src = str(tmp_path / "in")
    _file(src, [("a", 1), ("b", None), (None, 5), ("a", BIG)], "f1")
    _file(src, [("b", 2), ("a", 3), (None, 1)], "f2")

    def build(ds):
        return ds.key_by(lambda r: r[0]).reduce(
            lambda x, y: (x[0], (x[1] or 0) + (y[1] or 0)))

    with caplog.at_level(logging.INFO, logger="pyspark_datastream"):
        native = _run(spark, env_factory, tmp_path, src, "native-reduce", True, build)
    assert "computes key groups natively" in caplog.text
    python = _run(spark, env_factory, tmp_path, src, "python-reduce", False, build)

    def finals(records):
        out: dict = {}
        for k, v in records:  # an upsert stream: running values only grow here
            out[k] = max(out.get(k, v) or 0, v or 0)
        return out

    assert finals(native) == finals(python) == {"a": BIG + 4, "b": 2, None: 6}
    assert len(native) == len(python) == 7
    a_values = [v for k, v in native if k == "a"]
    # whichever file comes first, BIG is carried exactly (no float64 on the way)
    assert a_values in ([1, BIG + 1, BIG + 4], [3, 4, BIG + 4])
    assert all(type(v) is int for v in a_values)


def test_each_files_records_reach_their_key_in_file_order(spark, env_factory, tmp_path):
    src = str(tmp_path / "in")
    _file(src, [("x", 10), ("y", 1), ("x", 11), ("x", 12), ("y", 2)], "f1")
    _file(src, [("x", 20), ("y", 3), ("x", 21)], "f2")

    def build(ds):
        return ds.key_by(lambda r: r[0]).process(
            Numbered(), output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))

    for native in (True, False):
        out = _run(spark, env_factory, tmp_path, src, f"order-{native}", native, build)
        by_key: dict = {}
        for k, n, v in out:
            by_key.setdefault(k, []).append((n, v))
        for key, items in by_key.items():
            assert [n for n, _ in sorted(items)] == list(range(1, len(items) + 1)), key
            values = [v for _, v in sorted(items)]
            for file_values in ([10, 11, 12], [20, 21], [1, 2], [3]):
                mine = [v for v in values if v in file_values]
                assert mine == sorted(mine), (native, key, values)
        assert sorted(v for _, _, v in out) == [1, 2, 3, 10, 11, 12, 20, 21]


def test_summing_reduces_run_on_columns_as_a_plain_model_sums_them(spark, env_factory, tmp_path,
                                                                     caplog):
    """A traced summing lambda and a built-in ``sum`` over several files and micro-batches:
    every intermediate result per key, in file order, as an independent model computes it,
    and as the per-record Python path gives it."""
    import random

    rng = random.Random(17)
    keys = [f"user-{i}-{'é€𝄞'[i % 3]}" for i in range(150)]
    src = str(tmp_path / "in3")
    files = []
    for f in range(5):
        rows = [(rng.choice(keys), rng.randint(-10**12, 10**12), rng.randint(-1000, 1000))
                for _ in range(rng.randint(800, 1500))]
        files.append(rows)
        os.makedirs(src, exist_ok=True)
        path = os.path.join(src, f"part-{f}.parquet")
        pq.write_table(pa.table({"k": pa.array([r[0] for r in rows], pa.string()),
                                 "v": pa.array([r[1] for r in rows], pa.int64()),
                                 "c": pa.array([r[2] for r in rows], pa.int32())}), path)
        _mtime[0] += 10
        os.utime(path, (_mtime[0], _mtime[0]))
    triple = Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])

    def run(name, native, reduce):
        config = {"execution.checkpointing.dir": str(tmp_path / f"ckpt-{name}"),
                  "execution.streaming.native-pushdown.enabled": str(native).lower()}
        env = env_factory("STREAMING", config)
        stream = (spark.readStream.schema("k string, v long, c int")
                  .option("maxFilesPerTrigger", 2).parquet(src))
        ds = (env.from_dataframe(stream).map(lambda r: (r[0], r[1], r[2]), output_type=triple)
              .key_by(lambda t: t[0]))
        by_key: dict = {}
        for record in reduce(ds).execute_and_collect(name):
            by_key.setdefault(record[0], []).append(record)
        return by_key

    def model(step):
        by_key: dict = {}
        for rows in files:  # files in modification-time order, rows in file order
            for row in rows:
                seen = by_key.setdefault(row[0], [])
                seen.append(step(seen[-1], row) if seen else row)
        return by_key

    summing = model(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]))
    with caplog.at_level(logging.INFO, logger="pyspark_datastream"):
        columns = run("columns-lambda", True,
                      lambda ds: ds.reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])))
    assert "the reduce's fields ['first', 'sum', 'sum'] run on columns" in caplog.text
    assert columns == summing
    # per record in Python (keyed by a Python pass: its splits are read partitions, which
    # Spark numbers larger files first, so only each key's count and final sums must agree)
    python = run("python-lambda", False,
                 lambda ds: ds.reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])))
    assert {k: (len(v), summing[k][-1] in v) for k, v in python.items()} == {
        k: (len(v), True) for k, v in summing.items()}
    assert all(type(r[1]) is int and type(r[2]) is int for rs in columns.values() for r in rs)
    # sum(1): the other fields keep the key's first record's values
    assert run("columns-sum", True, lambda ds: ds.sum(1)) == model(
        lambda a, b: (a[0], a[1] + b[1], a[2]))


@pytest.mark.parametrize("mapping, fmt, native", [
    ("per-stage", "parquet", False), ("one-query", "parquet", False),
    ("one-query", "json", False), ("per-stage", "json", True)])
def test_keying_reads_each_partitions_files_in_modification_time_order(
        spark, env_factory, tmp_path, mapping, fmt, native, caplog, capfd):
    """Three small files per micro-batch, which Spark packs into fewer read partitions,
    larger files first (each file here is larger than the one before, so a partition holding
    two reads the later one first). Keyed by a Python key selector with event time, every
    key's records must reach its function in time order, as BATCH sorts them: the keying
    pass takes a partition's files in modification-time order (any file format) and the
    keyed call merges the partitions by event time. The expected order comes from the files
    themselves. The native keyed input of a format without row indexes (JSON) numbers its
    records in a pass of its own, which takes the files in the same order. Probing the
    stream for file metadata logs no error of its own."""
    import random

    rng = random.Random(29)
    keys = [f"k{i}" for i in range(40)]
    src = str(tmp_path / "in")
    os.makedirs(src)
    expected: dict = {}  # each key's timestamps: files are stretches of one time-ordered log
    ts = 0
    for f in range(6):
        rows = []
        for _ in range(200 + 150 * f + rng.randint(0, 40)):
            ts += rng.randint(1, 5)
            rows.append((rng.choice(keys), ts))
            expected.setdefault(rows[-1][0], []).append(ts)
        path = os.path.join(src, f"part-{f}.{fmt}")
        if fmt == "json":
            with open(path, "w") as out:
                out.writelines(json.dumps({"k": k, "v": v}) + "\n" for k, v in rows)
        else:
            pq.write_table(pa.table({"k": pa.array([r[0] for r in rows], pa.string()),
                                     "v": pa.array([r[1] for r in rows], pa.int64())}), path)
        _mtime[0] += 10
        os.utime(path, (_mtime[0], _mtime[0]))

    name = f"files-{mapping}-{fmt}-{native}"
    config = {"execution.checkpointing.dir": str(tmp_path / f"ckpt-{name}"),
              "execution.streaming.native-pushdown.enabled": str(native).lower(),
              "execution.streaming.query-mapping": mapping}
    env = env_factory("STREAMING", config)
    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 3)
              .format(fmt).load(src))
    out = (env.from_dataframe(stream)
           .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps()
                                             .with_timestamp_assigner(lambda r, _: r[1]))
           .key_by(lambda r: r[0])
           .process(Numbered(),
                    output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])))
    got: dict = {}
    with caplog.at_level(logging.INFO, logger="pyspark_datastream"):
        records = list(out.execute_and_collect(name))
    assert ("computes key groups natively" in caplog.text) is native
    assert "QueryContextLogger" not in capfd.readouterr().err
    for k, _, v in sorted(records, key=lambda r: (r[0], r[1])):
        got.setdefault(k, []).append(v)
    assert got == expected
