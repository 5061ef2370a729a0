"""``ParquetColumnarRowInputFormat`` takes PyFlink's ``hadoop_config`` in second place (no
Spark): ``None`` or an empty Configuration; a setting in it is refused, naming the session's
``spark.hadoop.*`` instead."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    Configuration,
    GraphBuildError,
    ParquetColumnarRowInputFormat,
    Types,
)

ROW = Types.ROW_NAMED(["user", "amount"], [Types.STRING(), Types.LONG()])


def test_parquet_format_takes_pyflink_s_hadoop_config_in_second_place():
    assert ParquetColumnarRowInputFormat(ROW, None, 1024).batch_size == 1024
    assert ParquetColumnarRowInputFormat(ROW, Configuration(), batch_size=16).batch_size == 16
    hadoop = Configuration()
    hadoop.set_string("fs.s3a.endpoint", "http://localhost:9000")
    with pytest.raises(GraphBuildError, match="hadoop_config.*spark.hadoop"):
        ParquetColumnarRowInputFormat(ROW, hadoop)
    with pytest.raises(GraphBuildError, match="batch_size must be a positive int"):
        ParquetColumnarRowInputFormat(ROW, batch_size=0)
