"""The retry strategies and predicates (PyFlink's names and Flink's semantics)."""

from __future__ import annotations

import functools

import pytest
from pyspark_datastream import AsyncRetryStrategy
from pyspark_datastream.async_retry_predicates import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)
from pyspark_datastream.async_retry_strategies import (
    NO_RETRY_STRATEGY,
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
)
from pyspark_datastream.state_store.exceptions import GraphBuildError


def test_fixed_delay_retries_while_attempts_are_at_most_max():
    s = AsyncRetryStrategy.fixed_delay(3, 25, empty_result_predicate)
    assert isinstance(s, FixedDelayRetryStrategy)
    assert [s.can_retry(n) for n in (1, 2, 3, 4)] == [True, True, True, False]
    assert [s.get_backoff_time_millis(n) for n in (1, 2, 3)] == [25, 25, 25]
    assert s.get_retry_predicate().result_predicate() is empty_result_predicate
    assert s.get_retry_predicate().exception_predicate() is None


def test_exponential_backoff_grows_by_the_multiplier_up_to_the_cap():
    s = AsyncRetryStrategy.exponential_backoff(5, 10, 70, 2.0,
                                               exception_predicate=has_exception_predicate)
    assert isinstance(s, ExponentialBackoffDelayRetryStrategy)
    assert [s.get_backoff_time_millis(n) for n in range(1, 6)] == [10, 20, 40, 70, 70]
    assert s.can_retry(5) and not s.can_retry(6)


def test_no_retry_and_the_predicates():
    assert AsyncRetryStrategy.no_restart() is NO_RETRY_STRATEGY
    assert not NO_RETRY_STRATEGY.can_retry(1)
    assert empty_result_predicate([]) and empty_result_predicate(None)
    assert not empty_result_predicate([0])
    assert has_exception_predicate(ValueError()) and not has_exception_predicate(None)
    only_io = functools.partial(exception_type_predicate, expected_error_type=OSError)
    assert only_io(ConnectionError()) and not only_io(ValueError())


@pytest.mark.parametrize("args, field", [
    ((0, 10), "max_attempts"), ((2, 0), "backoff_time_millis"), ((2, True), "backoff_time_millis"),
])
def test_fixed_delay_refuses_non_positive_values(args, field):
    with pytest.raises(GraphBuildError, match=f"FixedDelayRetryStrategy: {field} must be "
                                              f"greater than zero"):
        AsyncRetryStrategy.fixed_delay(*args)


def test_exponential_backoff_refuses_a_zero_multiplier_and_bad_predicates():
    with pytest.raises(GraphBuildError, match="multiplier must be greater than zero, got 0"):
        AsyncRetryStrategy.exponential_backoff(2, 10, 20, 0)
    with pytest.raises(GraphBuildError, match="result_predicate must be callable or None"):
        AsyncRetryStrategy.fixed_delay(2, 10, result_predicate="empty")
