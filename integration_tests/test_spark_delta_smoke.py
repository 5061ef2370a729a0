"""Spark's own Delta Lake runs in the suite's session: the jars `make setup` resolved work."""

from __future__ import annotations

import deltalake
import pytest

pytestmark = pytest.mark.compat


def test_spark_delta_writes_a_table_delta_rs_reads(spark_delta, tmp_path):
    path = str(tmp_path / "t")
    spark_delta.range(7).write.format("delta").save(path)
    (spark_delta.range(7, 10).write.format("delta").mode("append")
     .option("txnAppId", "smoke").option("txnVersion", 3).save(path))
    # the same application transaction again: Spark's Delta skips it
    (spark_delta.range(7, 10).write.format("delta").mode("append")
     .option("txnAppId", "smoke").option("txnVersion", 3).save(path))
    table = deltalake.DeltaTable(path)
    assert table.version() == 1
    assert table.transaction_version("smoke") == 3
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == list(range(10))
