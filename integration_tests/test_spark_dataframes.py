"""The DataFrame calls every supported Spark line runs the same way (spark_io/dataframes.py):
a per-group Arrow function without ``applyInArrow`` and an Arrow collect without ``toArrow``.
Expected values are computed in plain Python from the input rows."""

from __future__ import annotations

import random
from collections import defaultdict

import pyarrow as pa
import pytest
from pyspark_datastream.spark_io.dataframes import map_groups_in_arrow, to_arrow

pytestmark = pytest.mark.compat


def _summary(table: pa.Table) -> pa.Table:
    """One row per call: the group's key, its row count, the sum of ``v`` and whether every
    row of the call carries that key (a call mixing groups would fail the test)."""
    keys = table.column("k").to_pylist()
    return pa.table({
        "k": pa.array([keys[0]], pa.int64()),
        "n": pa.array([table.num_rows], pa.int64()),
        "total": pa.array([sum(table.column("v").to_pylist())], pa.int64()),
        "pure": pa.array([all(k == keys[0] for k in keys)], pa.bool_()),
    })


def test_map_groups_in_arrow_calls_once_per_group_across_arrow_batches(spark):
    rng = random.Random(7)
    rows = [(rng.choice([None, *range(12)]), rng.randrange(1000)) for _ in range(500)]
    want: dict = defaultdict(lambda: [0, 0])
    for k, v in rows:
        want[k][0] += 1
        want[k][1] += v
    before = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")  # groups span batches
    try:
        df = spark.createDataFrame(rows, "k bigint, v bigint").repartition(3)
        out = map_groups_in_arrow(df, "k", _summary,
                                  "k bigint, n bigint, total bigint, pure boolean").collect()
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", before)
    assert all(r["pure"] for r in out)
    got = {r["k"]: [r["n"], r["total"]] for r in out}
    assert len(got) == len(out)  # one call per group, nulls included as one group
    assert got == dict(want)


def test_to_arrow_collects_every_row_and_an_empty_frame_keeps_its_schema(spark):
    rows = [("a", 1, 2.5), ("b", None, None), ("c", 3, -1.0)]
    df = spark.createDataFrame(rows, "s string, n bigint, x double")
    table = to_arrow(df)
    assert sorted(tuple(r.values()) for r in table.to_pylist()) == sorted(rows)
    empty = to_arrow(df.filter("n > 100"))
    assert empty.num_rows == 0
    assert empty.schema.names == ["s", "n", "x"]
    assert [str(t) for t in empty.schema.types] == ["string", "int64", "double"]
