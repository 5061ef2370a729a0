"""Physical layout of a savepoint write (real Spark, delta-rs): each data file holds exactly
one key-group range in key-group order, each (operator, key)'s entries together and in
the canonical entry order; a bootstrap that orders its source rows writes the same rows."""

from __future__ import annotations

import pyarrow.parquet as pq
from deltalake import DeltaTable
from pyspark.sql import functions as F
from pyspark_datastream import ListStateDescriptor, Types, ValueStateDescriptor
from pyspark_datastream.savepoint import SavepointWriter
from pyspark_datastream.savepoint.writer import spark_hash_int


def test_spark_hash_of_int_matches_spark(spark):
    rows = spark.range(-3_000, 3_000, 37).select(
        F.col("id").cast("int").alias("v"), F.hash(F.col("id").cast("int")).alias("h")).collect()
    assert [spark_hash_int(r["v"]) for r in rows] == [r["h"] for r in rows]


def _layout(sp: str, n: int, maxp: int) -> tuple[dict[tuple[str, ...], list[int]], list[dict]]:
    """Per data file: its operators and its one key-group range; checks the order inside
    each file. Returns ``{operators: [range, ...]}`` and every entry row, file by file."""
    ranges: dict[tuple[str, ...], list[int]] = {}
    all_rows: list[dict] = []
    for uri in DeltaTable(sp).file_uris():
        rows = pq.read_table(uri).to_pylist()
        if rows[0]["kind"] == "metadata":
            assert len(rows) == 1
            continue
        kgs = [r["key_group"] for r in rows]
        assert kgs == sorted(kgs), uri  # key-group order inside the file
        (r_id,) = {kg * n // maxp for kg in kgs}  # exactly one key-group range per file
        ranges.setdefault(tuple(sorted({r["operator_uid"] for r in rows})), []).append(r_id)
        groups: dict[tuple[str, bytes], list[tuple[str, bytes, bytes]]] = {}
        order: list[tuple[str, bytes]] = []
        for r in rows:
            ident = (r["operator_uid"], r["key"])
            if not order or order[-1] != ident:
                assert ident not in groups, f"entries of {ident} are split in {uri}"
                order.append(ident)
            groups.setdefault(ident, []).append((r["state_name"], r["namespace"], r["user_key"]))
        for ident, entries in groups.items():
            assert entries == sorted(entries), ident  # canonical order inside a key
        all_rows.extend(rows)
    return ranges, all_rows


def _bootstrap(df, sp: str, maxp: int) -> None:
    (SavepointWriter(max_parallelism=maxp)
     .with_keyed_state("a", df, "k", {"n": ValueStateDescriptor("n", Types.LONG()),
                                      "xs": ListStateDescriptor("xs", Types.LONG())})
     .with_keyed_state("b", df, "k", {"n": ValueStateDescriptor("n", Types.LONG())})
     .write(sp))


def test_each_file_one_key_group_range_in_key_group_order(spark, tmp_path):
    keys = 3_000
    df = spark.range(keys).select(
        F.col("id").alias("k"), (F.col("id") * 3).alias("n"), F.array_repeat("id", 3).alias("xs"))
    sp = str(tmp_path / "sp")
    maxp = 64
    _bootstrap(df, sp, maxp)
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    ranges, rows = _layout(sp, n, maxp)
    # long keys: each operator's source rows were ordered before encoding, so every file
    # holds one range of one operator, and each operator has every range in its own file
    assert {ops: sorted(r) for ops, r in ranges.items()} == {
        ("a",): list(range(n)), ("b",): list(range(n))}
    assert len(rows) == keys * (1 + 3) + keys  # a: value + 3 list elements, b: value


def test_presorted_bootstrap_writes_what_the_entry_sort_writes(spark, tmp_path, monkeypatch):
    """Ordering the source rows before encoding gives, range by range, the very rows in the
    very order that shuffling and sorting the encoded entries gives (keys Spark cannot
    serialize take that second path)."""
    import pyspark_datastream.spark_io.key_columns as key_columns

    df = spark.range(2_000).select(
        (F.col("id") * 7919 % 100_003).alias("k"), F.col("id").alias("n"),
        F.array_repeat("id", 2).alias("xs"))
    maxp, n = 32, int(spark.conf.get("spark.sql.shuffle.partitions"))
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    _bootstrap(df, fast, maxp)
    monkeypatch.setattr(key_columns, "native_key_bytes", lambda *args: None)
    _bootstrap(df, slow, maxp)
    fast_ranges, fast_rows = _layout(fast, n, maxp)
    slow_ranges, slow_rows = _layout(slow, n, maxp)
    assert sorted(slow_ranges) == [("a", "b")]  # one shuffle of both operators' entries
    assert sorted(slow_ranges[("a", "b")]) == list(range(n))

    def by_range(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
        out: dict[tuple[str, int], list[dict]] = {}
        for r in rows:
            out.setdefault((r["operator_uid"], r["key_group"] * n // maxp), []).append(r)
        return out

    assert by_range(fast_rows) == by_range(slow_rows)
