"""``AsyncDataStream``: PyFlink's async I/O calls on a DataStream.

Each call appends an ``async`` stage to the stream's non-keyed chain; the stage runs
``operators/async_wait.AsyncWaitOperator`` in the same Python pass as its neighbours, with
up to ``capacity`` calls in flight per parallel instance. See docs/user-guide/async-io.md.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from ..operators.async_functions import AsyncFunction, AsyncRetryStrategy
from ..operators.async_wait import AsyncWaitOperator
from ..state_store.exceptions import GraphBuildError
from ..state_store.typeinfo import TypeInformation
from .arguments import check_output_type
from .time import Duration, Time, to_millis

__all__ = ["AsyncDataStream", "AsyncCalls"]


class AsyncCalls:
    """What ``AsyncDataStream`` needs of a stream (``DataStream`` inherits it): a chain
    stage appended to the stream's graph."""

    def _chain(self, stage: str, function: Any, output_type: Any, name: str,
               **kw: Any) -> Any:
        raise NotImplementedError  # the stream class provides it

    def _async_wait(self, operator: AsyncWaitOperator, output_type: Any, name: str) -> Any:
        return self._chain("async", operator, output_type, name)


def _async_stage(data_stream: Any, async_function: Any, timeout: Any, capacity: Any,
                 output_type: Any, ordered: bool, retry: Optional[Any],
                 api: str) -> Any:
    if not isinstance(data_stream, AsyncCalls):
        raise GraphBuildError(f"AsyncDataStream.{api}: data_stream must be a DataStream, "
                              f"got {data_stream!r:.80}")
    timeout_ms = to_millis(timeout, f"AsyncDataStream.{api}: timeout")
    name = f"{type(async_function).__name__} ({'ordered' if ordered else 'unordered'} wait)"
    operator = AsyncWaitOperator(async_function, timeout_ms, capacity, ordered, retry,
                                 api=f"AsyncDataStream.{api}", name=name)
    return data_stream._async_wait(operator, check_output_type(output_type, api), name)


class AsyncDataStream:
    """Applies an :class:`AsyncFunction` to a data stream (PyFlink's ``AsyncDataStream``)."""

    @staticmethod
    def unordered_wait(data_stream: Any, async_function: AsyncFunction[Any, Any],
                       timeout: Union[Duration, Time, int], capacity: int = 100,
                       output_type: Optional[TypeInformation] = None) -> Any:
        """Call ``async_function`` per record; results leave as their calls finish.

        Args:
            data_stream: The input stream.
            async_function: An ``AsyncFunction`` with an ``async def async_invoke``.
            timeout: How long a record's call may take (a Duration, Time or milliseconds).
            capacity: How many calls may be in flight per parallel instance.
            output_type: The results' ``TypeInformation``; None sends them pickled.

        Returns:
            The stream of results, as their calls finish.

        Raises:
            GraphBuildError: An argument is invalid (named in the message).
        """
        return _async_stage(data_stream, async_function, timeout, capacity, output_type,
                            False, None, "unordered_wait")

    @staticmethod
    def ordered_wait(data_stream: Any, async_function: AsyncFunction[Any, Any],
                     timeout: Union[Duration, Time, int],
                     capacity: int = 100, output_type: Optional[TypeInformation] = None) -> Any:
        """Call ``async_function`` per record; results leave in input order.

        Args:
            data_stream: The input stream.
            async_function: Its ``async def async_invoke`` is called per record.
            timeout: How long a record's call may take (a Duration, Time or milliseconds).
            capacity: How many records may be queued (in flight or waiting for their turn)
                per parallel instance.
            output_type: The results' ``TypeInformation``; None pickles them.

        Returns:
            The stream of results, in input order.

        Raises:
            GraphBuildError: An argument is invalid (named in the message).
        """
        return _async_stage(data_stream, async_function, timeout, capacity, output_type,
                            True, None, "ordered_wait")

    @staticmethod
    def unordered_wait_with_retry(data_stream: Any,
                                  async_function: AsyncFunction[Any, Any],
                                  timeout: Union[Duration, Time, int],
                                  async_retry_strategy: AsyncRetryStrategy[Any],
                                  capacity: int = 100,
                                  output_type: Optional[TypeInformation] = None) -> Any:
        """:meth:`unordered_wait`, repeating calls as ``async_retry_strategy`` says.

        Args:
            data_stream: The input stream.
            async_function: The ``AsyncFunction``, as for ``unordered_wait``.
            timeout: How long a record may take, retries included.
            async_retry_strategy: When and after how long a call is repeated.
            capacity: How many calls may be in flight per parallel instance.
            output_type: The results' type, as for ``unordered_wait``.

        Returns:
            The stream of results (each after its retries), as they finish.

        Raises:
            GraphBuildError: An argument is invalid (named in the message).
        """
        return _async_stage(data_stream, async_function, timeout, capacity, output_type,
                            False, _strategy(async_retry_strategy, "unordered_wait_with_retry"),
                            "unordered_wait_with_retry")

    @staticmethod
    def ordered_wait_with_retry(data_stream: Any, async_function: AsyncFunction[Any, Any],
                                timeout: Union[Duration, Time, int],
                                async_retry_strategy: AsyncRetryStrategy[Any], capacity: int = 100,
                                output_type: Optional[TypeInformation] = None) -> Any:
        """Like :meth:`ordered_wait`, with each call repeated as ``async_retry_strategy`` says.

        Args:
            data_stream: The input stream.
            async_function: The ``AsyncFunction``, as for ``ordered_wait``.
            timeout: How long a record may take, retries included.
            async_retry_strategy: When and after how long a call is repeated.
            capacity: How many records may be queued per parallel instance.
            output_type: The results' type, as for ``ordered_wait``.

        Returns:
            The stream of results (each after its retries), in input order.

        Raises:
            GraphBuildError: An argument is invalid (named in the message).
        """
        return _async_stage(data_stream, async_function, timeout, capacity, output_type,
                            True, _strategy(async_retry_strategy, "ordered_wait_with_retry"),
                            "ordered_wait_with_retry")


def _strategy(strategy: Any, api: str) -> AsyncRetryStrategy[Any]:
    if not isinstance(strategy, AsyncRetryStrategy):
        raise GraphBuildError(f"AsyncDataStream.{api}: async_retry_strategy must be an "
                              f"AsyncRetryStrategy, got {strategy!r:.80}")
    return strategy
