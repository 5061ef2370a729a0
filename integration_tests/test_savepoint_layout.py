"""Physical layout of a savepoint write (real Spark, delta-rs): data file ``i`` holds exactly
key-group range ``i`` in key-group order, each (operator, key)'s entries together and in
the canonical entry order."""

from __future__ import annotations

import pyarrow.parquet as pq
from deltalake import DeltaTable
from pyspark.sql import functions as F
from pyspark_datastream import ListStateDescriptor, Types, ValueStateDescriptor
from pyspark_datastream.savepoint import SavepointWriter, _spark_hash_int


def test_spark_hash_of_int_matches_spark(spark):
    rows = spark.range(-3_000, 3_000, 37).select(
        F.col("id").cast("int").alias("v"), F.hash(F.col("id").cast("int")).alias("h")).collect()
    assert [_spark_hash_int(r["v"]) for r in rows] == [r["h"] for r in rows]


def test_each_file_one_key_group_range_in_key_group_order(spark, tmp_path):
    keys = 3_000
    df = spark.range(keys).select(
        F.col("id").alias("k"), (F.col("id") * 3).alias("n"), F.array_repeat("id", 3).alias("xs"))
    sp = str(tmp_path / "sp")
    maxp = 64
    (SavepointWriter(max_parallelism=maxp)
     .with_keyed_state("a", df, "k", {"n": ValueStateDescriptor("n", Types.LONG()),
                                      "xs": ListStateDescriptor("xs", Types.LONG())})
     .with_keyed_state("b", df, "k", {"n": ValueStateDescriptor("n", Types.LONG())})
     .write(sp))
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    ranges, total = [], 0
    for uri in DeltaTable(sp).file_uris():
        rows = pq.read_table(uri).to_pylist()
        if rows[0]["kind"] == "metadata":
            assert len(rows) == 1
            continue
        total += len(rows)
        kgs = [r["key_group"] for r in rows]
        assert kgs == sorted(kgs), uri  # key-group order inside the file
        (r_id,) = {kg * n // maxp for kg in kgs}  # exactly one key-group range per file
        ranges.append(r_id)
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
    assert sorted(ranges) == list(range(n))  # every range in its own file
    assert total == keys * (1 + 3) + keys  # a: value + 3 list elements, b: value
