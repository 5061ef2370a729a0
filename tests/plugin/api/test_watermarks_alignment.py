"""WatermarkStrategy.with_watermark_alignment: checked and kept on a new strategy (the
original unchanged), carried through the other with_ calls."""

from __future__ import annotations

import pytest
from pyspark_datastream import Duration, GraphBuildError, WatermarkStrategy


def test_alignment_is_kept_on_a_new_strategy():
    base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
    aligned = base.with_watermark_alignment("group-1", Duration.of_seconds(20))
    assert base.alignment is None
    assert aligned.alignment == ("group-1", 20_000, 1000)  # Flink's default update: 1 s
    assert aligned.out_of_orderness_ms == 5000
    assert aligned.with_idleness(Duration.of_seconds(1)).alignment == aligned.alignment
    custom = base.with_watermark_alignment("g", 100, Duration.of_millis(250))
    assert custom.alignment == ("g", 100, 250)


@pytest.mark.parametrize("args", [("", 100), ("g", "20s"), ("g", 100, "1s")])
def test_bad_alignment_is_a_graph_build_error(args):
    with pytest.raises(GraphBuildError):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(*args)
