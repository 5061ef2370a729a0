"""Async I/O user API with PyFlink's names: ``AsyncFunction`` and the retry strategies.

``AsyncFunction.async_invoke`` is an ``async def`` returning the list of results of one
record; ``AsyncRetryStrategy`` decides whether a call is repeated, after how long, and for
which results or exceptions (its ``AsyncRetryPredicate``). The operator that runs them is
``operators/async_wait.py``; semantics are in docs/user-guide/async-io.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from typing import Any, Generic, Optional, TypeVar

from ..state_store.exceptions import GraphBuildError
from ..state_store.functions import Function

__all__ = [
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "RetryPredicate",
    "NoRetryStrategy",
    "FixedDelayRetryStrategy",
    "ExponentialBackoffDelayRetryStrategy",
    "NO_RETRY_STRATEGY",
    "empty_result_predicate",
    "has_exception_predicate",
    "exception_type_predicate",
]

IN = TypeVar("IN")
OUT = TypeVar("OUT")

ResultPredicate = Callable[[list[Any]], bool]
ExceptionPredicate = Callable[[Exception], bool]


class AsyncFunction(Function, ABC, Generic[IN, OUT]):
    """Calls an external service for each record without blocking on it (PyFlink 2.2+).

    Subclass it, implement ``async def async_invoke(self, value)`` returning a list of
    results (each one is an output record with the input's timestamp), and optionally
    ``timeout``. Up to ``capacity`` calls run at once per parallel instance.
    """

    @abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """Call the service for one record.

        Args:
            value: The input record.

        Returns:
            The outputs of the record, as a list (empty: none).
        """

    def timeout(self, value: IN) -> list[OUT]:
        """The outputs of a record whose call (retries included) did not finish in time.

        The default raises ``TimeoutError``, which fails the job, as in Flink.

        Args:
            value: The input record.

        Returns:
            The outputs of the record, as a list.

        Raises:
            TimeoutError: Always, unless overridden.
        """
        raise TimeoutError("Async function call has timed out.")


class AsyncFunctionDescriptor:
    """An async stage's function and settings, as PyFlink's ``AsyncDataStream`` keeps them.

    Args:
        async_function: The AsyncFunction.
        timeout: How long a record's call may take (a Duration, Time or milliseconds).
        capacity: How many calls may be in flight per parallel instance (>= 1).
        async_retry_strategy: An AsyncRetryStrategy.
        output_mode: ``AsyncFunctionDescriptor.OutputMode.ORDERED`` or ``UNORDERED``.

    Raises:
        GraphBuildError: not an AsyncFunction, a bad capacity or output mode.
    """

    class OutputMode(Enum):
        """Whether results leave in input order or as their calls finish."""

        ORDERED = 0
        UNORDERED = 1

    def __init__(self, async_function: AsyncFunction[Any, Any], timeout: Any, capacity: int,
                 async_retry_strategy: AsyncRetryStrategy[Any],
                 output_mode: AsyncFunctionDescriptor.OutputMode) -> None:
        if not isinstance(async_function, AsyncFunction):
            raise GraphBuildError(f"AsyncFunctionDescriptor needs an AsyncFunction, got "
                                  f"{async_function!r:.80}")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise GraphBuildError(f"AsyncFunctionDescriptor: capacity must be an int >= 1, "
                                  f"got {capacity!r}")
        if not isinstance(output_mode, AsyncFunctionDescriptor.OutputMode):
            raise GraphBuildError(f"AsyncFunctionDescriptor: output_mode must be an "
                                  f"AsyncFunctionDescriptor.OutputMode, got {output_mode!r}")
        self.async_function = async_function
        self.timeout = timeout
        self.capacity = capacity
        self.async_retry_strategy = async_retry_strategy
        self.output_mode = output_mode


class AsyncRetryPredicate(ABC, Generic[OUT]):
    """Which outcomes of a call a retry strategy retries."""

    @abstractmethod
    def result_predicate(self) -> Optional[ResultPredicate]:
        """Returns:
        A function of a call's result list, true when the call should be retried; None
        retries no result."""

    @abstractmethod
    def exception_predicate(self) -> Optional[ExceptionPredicate]:
        """Returns:
        A function of a call's exception, true when the call should be retried; None
        retries no exception (it fails the job)."""


class AsyncRetryStrategy(ABC, Generic[OUT]):
    """Whether, and after how long, a call is repeated (Flink's ``AsyncRetryStrategy``).

    After the n-th call of a record (n from 1) ends with an outcome the retry predicate
    accepts, the call is repeated ``get_backoff_time_millis(n)`` milliseconds later when
    ``can_retry(n)`` is true.
    """

    @abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Args:
            current_attempts: How many calls of the record have been made (1 after the first).

        Returns:
            Whether another call may be made.
        """

    @abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """Args:
            current_attempts: How many calls of the record have been made.

        Returns:
            Milliseconds to wait before the next call.
        """

    @abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """Returns:
        The predicate choosing the outcomes to retry."""

    @staticmethod
    def no_restart() -> AsyncRetryStrategy[Any]:
        """Returns:
        The strategy that never retries (``NO_RETRY_STRATEGY``)."""
        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(max_attempts: int, backoff_time_millis: int,
                    result_predicate: Optional[ResultPredicate] = None,
                    exception_predicate: Optional[ExceptionPredicate] = None,
                    ) -> AsyncRetryStrategy[Any]:
        """A strategy retrying after a fixed delay.

        Args:
            max_attempts: Retries are made while ``current_attempts <= max_attempts``.
            backoff_time_millis: The delay before each retry, in milliseconds.
            result_predicate: Which result lists to retry (None: none).
            exception_predicate: Which exceptions to retry (None: none).

        Returns:
            A :class:`FixedDelayRetryStrategy`.
        """
        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate,
                                       exception_predicate)

    @staticmethod
    def exponential_backoff(max_attempts: int, initial_delay: int, max_retry_delay: int,
                            multiplier: float,
                            result_predicate: Optional[ResultPredicate] = None,
                            exception_predicate: Optional[ExceptionPredicate] = None,
                            ) -> AsyncRetryStrategy[Any]:
        """A strategy whose delay grows by ``multiplier`` per retry, up to ``max_retry_delay``.

        Args:
            max_attempts: Retries are made while ``current_attempts <= max_attempts``.
            initial_delay: The first delay, in milliseconds.
            max_retry_delay: The largest delay, in milliseconds.
            multiplier: The factor applied to the delay after each retry.
            result_predicate: Which result lists to retry (None: none).
            exception_predicate: Which exceptions to retry (None: none).

        Returns:
            An :class:`ExponentialBackoffDelayRetryStrategy`.
        """
        return ExponentialBackoffDelayRetryStrategy(max_attempts, initial_delay, max_retry_delay,
                                                    multiplier, result_predicate,
                                                    exception_predicate)


class RetryPredicate(AsyncRetryPredicate[OUT]):
    """A retry predicate from two optional functions.

    Args:
        result_predicate: Which result lists to retry (None: none).
        exception_predicate: Which exceptions to retry (None: none).
    """

    def __init__(self, result_predicate: Optional[ResultPredicate],
                 exception_predicate: Optional[ExceptionPredicate]) -> None:
        for name, f in (("result_predicate", result_predicate),
                        ("exception_predicate", exception_predicate)):
            if f is not None and not callable(f):
                raise GraphBuildError(f"RetryPredicate: {name} must be callable or None, "
                                      f"got {f!r:.80}")
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> Optional[ResultPredicate]:
        """Returns:
        The result predicate, or None."""
        return self._result_predicate

    def exception_predicate(self) -> Optional[ExceptionPredicate]:
        """Returns:
        The exception predicate, or None."""
        return self._exception_predicate


def _positive(owner: str, name: str, value: Any, real: bool = False) -> None:
    ok = isinstance(value, (int, float) if real else int) and not isinstance(value, bool)
    if not ok or value <= 0:
        raise GraphBuildError(f"{owner}: {name} must be greater than zero, got {value!r}")


class NoRetryStrategy(AsyncRetryStrategy[OUT]):
    """Never retries."""

    def can_retry(self, current_attempts: int) -> bool:
        """Args:
            current_attempts: How many calls of the record have been made.

        Returns:
            False.
        """
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """Args:
            current_attempts: How many calls of the record have been made.

        Returns:
            -1 (no retry is made).
        """
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """Returns:
        A predicate retrying nothing."""
        return RetryPredicate(None, None)


class _BoundedRetryStrategy(AsyncRetryStrategy[OUT]):
    """Retries while ``current_attempts <= max_attempts``, for the outcomes its predicate
    accepts; subclasses give the delays."""

    def __init__(self, owner: str, max_attempts: int,
                 result_predicate: Optional[ResultPredicate],
                 exception_predicate: Optional[ExceptionPredicate]) -> None:
        _positive(owner, "max_attempts", max_attempts)
        self._max_attempts = max_attempts
        self._predicate: RetryPredicate[OUT] = RetryPredicate(result_predicate,
                                                              exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        """Args:
            current_attempts: How many calls of the record have been made.

        Returns:
            ``current_attempts <= max_attempts``.
        """
        return current_attempts <= self._max_attempts

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """Returns:
        The strategy's predicate."""
        return self._predicate


class FixedDelayRetryStrategy(_BoundedRetryStrategy[OUT]):
    """Retries after a fixed delay while ``current_attempts <= max_attempts``.

    Args:
        max_attempts: Greater than zero.
        backoff_time_millis: The delay in milliseconds, greater than zero.
        result_predicate: Which result lists to retry (None: none).
        exception_predicate: Which exceptions to retry (None: none).
    """

    def __init__(self, max_attempts: int, backoff_time_millis: int,
                 result_predicate: Optional[ResultPredicate] = None,
                 exception_predicate: Optional[ExceptionPredicate] = None) -> None:
        super().__init__("FixedDelayRetryStrategy", max_attempts, result_predicate,
                         exception_predicate)
        _positive("FixedDelayRetryStrategy", "backoff_time_millis", backoff_time_millis)
        self._backoff_time_millis = backoff_time_millis

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """Args:
            current_attempts: How many calls of the record have been made.

        Returns:
            The fixed delay.
        """
        return self._backoff_time_millis


class ExponentialBackoffDelayRetryStrategy(_BoundedRetryStrategy[OUT]):
    """Retries while ``current_attempts <= max_attempts``, the n-th retry after
    ``min(initial_delay * multiplier ** (n - 1), max_retry_delay)`` milliseconds.

    Args:
        max_attempts: Greater than zero.
        initial_delay: The first delay in milliseconds, greater than zero.
        max_retry_delay: The largest delay in milliseconds, greater than zero.
        multiplier: Greater than zero.
        result_predicate: Which result lists to retry (None: none).
        exception_predicate: Which exceptions to retry (None: none).
    """

    def __init__(self, max_attempts: int, initial_delay: int, max_retry_delay: int,
                 multiplier: float, result_predicate: Optional[ResultPredicate] = None,
                 exception_predicate: Optional[ExceptionPredicate] = None) -> None:
        owner = "ExponentialBackoffDelayRetryStrategy"
        super().__init__(owner, max_attempts, result_predicate, exception_predicate)
        _positive(owner, "initial_delay", initial_delay)
        _positive(owner, "max_retry_delay", max_retry_delay)
        _positive(owner, "multiplier", multiplier, real=True)
        self._initial_delay = initial_delay
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """Args:
            current_attempts: How many calls of the record have been made (n).

        Returns:
            ``min(initial_delay * multiplier ** (n - 1), max_retry_delay)``, in milliseconds.
        """
        delay = self._initial_delay * self._multiplier ** max(current_attempts - 1, 0)
        return int(min(delay, self._max_retry_delay))


#: The strategy that never retries.
NO_RETRY_STRATEGY: NoRetryStrategy[Any] = NoRetryStrategy()


def empty_result_predicate(result: Optional[list[Any]]) -> bool:
    """A result predicate retrying empty results.

    Args:
        result: A call's result list.

    Returns:
        Whether it is None or empty.
    """
    return result is None or len(result) == 0


def has_exception_predicate(error: Optional[BaseException]) -> bool:
    """An exception predicate retrying every exception.

    Args:
        error: A call's exception.

    Returns:
        Whether there is one.
    """
    return error is not None


def exception_type_predicate(error: Optional[BaseException], expected_error_type: type) -> bool:
    """Whether ``error`` is of ``expected_error_type`` (bind the type with a lambda or
    ``functools.partial`` to make an exception predicate).

    Args:
        error: A call's exception.
        expected_error_type: The exception class to retry.

    Returns:
        ``isinstance(error, expected_error_type)``.
    """
    return isinstance(error, expected_error_type)
