"""The file connectors' pure parts: Java date patterns as strftime, buckets of a time."""

from __future__ import annotations

import pytest
from pyspark_datastream import BucketAssigner, UnsupportedConnectorError
from pyspark_datastream.api.file_connectors import strftime_pattern

# 2026-11-27 09:05:07.250 UTC
MOMENT_MS = 1_795_770_307_250


@pytest.mark.parametrize("java,python", [
    ("yyyy-MM-dd--HH", "%Y-%m-%d--%H"),
    ("yy/MM/dd HH:mm:ss", "%y/%m/%d %H:%M:%S"),
    ("yyyy-MM-dd'T'HH", "%Y-%m-%dT%H"),
    ("'day='dd' 100%'", "day=%d 100%%"),
    ("HH''mm", "%H'%M"),
])
def test_java_date_patterns_map_to_strftime(java, python):
    assert strftime_pattern(java) == python


@pytest.mark.parametrize("pattern", ["yyyy-MM-dd EEE", "YYYY", "yyyy-MM-dd'T", "h:mm a"])
def test_other_pattern_letters_are_refused(pattern):
    with pytest.raises(UnsupportedConnectorError, match="BucketAssigner"):
        strftime_pattern(pattern)


def test_buckets_of_a_moment_in_a_zone():
    assert BucketAssigner.date_time_bucket_assigner(timezone_id="UTC").bucket(MOMENT_MS) == \
        "2026-11-27--09"
    tokyo = BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd--HH-mm-ss", "Asia/Tokyo")
    assert tokyo.bucket(MOMENT_MS) == "2026-11-27--18-05-07"
    assert BucketAssigner.base_path_bucket_assigner().bucket(MOMENT_MS) == ""
