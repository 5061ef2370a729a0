"""pyspark/pyarrow pairs whose applyInPandasWithState cannot run are refused, typed, at build."""

from __future__ import annotations

import pytest
from pyspark_datastream import ConfigurationError
from pyspark_datastream.spark_io.versions import check_streaming_versions


@pytest.mark.parametrize("pyspark,pyarrow,fixed", [
    ("4.0.1", "26.0.1", "4.0.5"), ("4.0.4", "26.0.0", "4.0.5"), ("4.0.0", "27.1.0", "4.0.5"),
    ("4.1.0", "26.0.1", "4.1.4"), ("4.1.3", "26.0.1", "4.1.4"), ("4.1.3.dev1", "26.0.0", "4.1.4"),
])
def test_affected_pairs_are_refused_naming_the_fix(pyspark, pyarrow, fixed):
    with pytest.raises(ConfigurationError, match=rf"pyspark {pyspark} with pyarrow {pyarrow}.*"
                                                 rf"pyspark>={fixed}.*pyarrow<26"):
        check_streaming_versions(pyspark, pyarrow)


@pytest.mark.parametrize("pyspark,pyarrow", [
    ("4.0.1", "25.0.1"), ("4.0.5", "26.0.1"), ("4.1.3", "25.0.0"), ("4.1.4", "26.0.1"),
    ("4.2.0", "26.0.1"), ("4.0.1", "14.0.2"),
])
def test_working_pairs_pass(pyspark, pyarrow):
    check_streaming_versions(pyspark, pyarrow)


def test_the_installed_pair_is_checked():
    import pyarrow
    import pyspark

    spark = tuple(int(p) for p in pyspark.__version__.split(".")[:3])
    bad = ((4, 0) <= spark < (4, 0, 5) or (4, 1) <= spark < (4, 1, 4)) and int(
        pyarrow.__version__.split(".")[0]) >= 26
    if bad:
        with pytest.raises(ConfigurationError):
            check_streaming_versions()
    else:
        check_streaming_versions()
