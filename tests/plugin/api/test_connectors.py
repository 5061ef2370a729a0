"""PyFlink's connector classes built without Spark: ``NumberSequenceSource``'s bounds are
checked when it is constructed (Flink: both longs, ``start <= end``)."""

from __future__ import annotations

import pytest
from pyspark_datastream import GraphBuildError, NumberSequenceSource


def test_a_number_sequence_keeps_both_bounds():
    source = NumberSequenceSource(-3, 3)
    assert (source.start, source.end) == (-3, 3)
    assert repr(source) == "NumberSequenceSource(-3, 3)"
    assert NumberSequenceSource(5, 5).end == 5  # one number


@pytest.mark.parametrize("start,end,match", [
    (3, 2, r"end \(2\) is below start \(3\)"),
    (1.0, 2, r"start must be an int, got 1.0"),
    (0, "9", r"end must be an int, got '9'"),
    (True, 2, r"start must be an int, got True"),
    (0, 2**63 - 1, r"end below 2\*\*63 - 1"),
    (-2**63 - 1, 0, r"must be longs"),
])
def test_bad_bounds_are_refused_naming_them(start, end, match):
    with pytest.raises(GraphBuildError, match=match):
        NumberSequenceSource(start, end)
