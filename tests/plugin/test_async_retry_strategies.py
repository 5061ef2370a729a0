"""PyFlink's ``pyflink.datastream.async_retry_strategies`` classes are exported from the
package root too, and retry as Flink's do (no Spark)."""

from __future__ import annotations

import pyspark_datastream as pds
from pyspark_datastream import (
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
)


def test_the_async_retry_strategies_are_the_package_root_s():
    from pyspark_datastream import async_retry_strategies as module

    for name in ("NoRetryStrategy", "FixedDelayRetryStrategy",
                 "ExponentialBackoffDelayRetryStrategy", "RetryPredicate"):
        assert getattr(pds, name) is getattr(module, name)
        assert name in pds.__all__


def test_the_retry_strategies_retry_as_flink_s():
    # Flink: retry while currentAttempts <= maxAttempts; the exponential delay of attempt n is
    # min(initialDelay * multiplier^(n-1), maxRetryDelay)
    no = NoRetryStrategy()
    assert not no.can_retry(1) and no.get_backoff_time_millis(1) == -1
    fixed = FixedDelayRetryStrategy(3, 250)
    assert [fixed.can_retry(n) for n in (1, 3, 4)] == [True, True, False]
    assert fixed.get_backoff_time_millis(2) == 250
    exp = ExponentialBackoffDelayRetryStrategy(5, 100, 1000, 2.0)
    assert [exp.get_backoff_time_millis(n) for n in (1, 2, 3, 4, 5)] == [100, 200, 400, 800,
                                                                         1000]
