"""PyFlink's ``pyflink.datastream.async_retry_strategies``: the retry strategies of
``AsyncDataStream.*_with_retry`` (defined in ``operators/async_functions.py``)."""

from __future__ import annotations

from .operators.async_functions import (
    NO_RETRY_STRATEGY,
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
    RetryPredicate,
)

__all__ = [
    "RetryPredicate",
    "NoRetryStrategy",
    "FixedDelayRetryStrategy",
    "ExponentialBackoffDelayRetryStrategy",
    "NO_RETRY_STRATEGY",
]
