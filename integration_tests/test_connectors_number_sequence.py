"""``NumberSequenceSource`` through ``env.from_source`` as a PyFlink program uses it, in both
runtime modes: every long of the closed range exactly once, keyed and reduced; expected values
come from plain Python over the same range."""

from __future__ import annotations

from collections import Counter

import pytest
from helpers import env_for
from pyspark_datastream import (
    GraphBuildError,
    NumberSequenceSource,
    Types,
    WatermarkStrategy,
)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_every_number_of_the_closed_range_arrives_once_and_reduces_by_key(
        env_factory, tmp_path, mode):
    start, end = -250, 1749  # negative bounds, 2,000 numbers, end included
    env = env_for(env_factory, tmp_path, mode, "seq")
    numbers = env.from_source(NumberSequenceSource(start, end),
                              WatermarkStrategy.no_watermarks(), "Sequence")
    every = list(numbers.execute_and_collect())
    # every number once, as Python ints
    assert Counter(every) == Counter(range(start, end + 1))
    assert all(type(n) is int for n in every)

    env = env_for(env_factory, tmp_path, mode, "seq-sum")
    sums = list(env.from_source(NumberSequenceSource(1, 3000), WatermarkStrategy.no_watermarks(),
                                "Sequence", Types.LONG())
                .map(lambda n: (n % 7, n), output_type=Types.TUPLE([Types.INT(), Types.LONG()]))
                .key_by(lambda t: t[0])
                .reduce(lambda a, b: (a[0], a[1] + b[1]))
                .execute_and_collect())
    expected: dict[int, int] = {}
    for n in range(1, 3001):
        expected[n % 7] = expected.get(n % 7, 0) + n
    # BATCH emits each key's final sum; STREAMING every running sum (one per number), of
    # which the largest per key (the sums only grow) is the final one
    final: dict[int, int] = {}
    for key, total in sums:
        final[key] = max(final.get(key, total), total)
    assert final == expected
    assert len(sums) == (7 if mode == "BATCH" else 3000)


def test_a_wrong_type_info_is_refused_naming_the_source(env_factory):
    env = env_factory("BATCH")
    with pytest.raises(GraphBuildError, match=r"'seq'.*NumberSequenceSource gives Types.LONG"):
        env.from_source(NumberSequenceSource(0, 9), WatermarkStrategy.no_watermarks(), "seq",
                        Types.STRING())
