"""The async wait operator: runs an ``AsyncFunction`` with bounded concurrency.

A chain stage of kind ``"async"`` (operators/chain.py). Each parallel instance owns an
asyncio event loop in its own thread of control: a record starts a call; while
``capacity`` records are queued (in flight, or done and waiting for their turn in ordered
mode) the stage runs the loop until one can be emitted. ``drain`` emits every queued record
at the end of the input (a Spark partition; in STREAMING, each micro-batch), so nothing is
left in flight when Spark commits it: results are exactly once with the batch.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
from collections.abc import Callable
from typing import Any, Optional

from ..state_store.exceptions import DataStreamError, GraphBuildError
from ..state_store.row import Row, take_emitted
from .async_functions import NO_RETRY_STRATEGY, AsyncFunction, AsyncRetryStrategy
from .base import user_function_error
from .exceptions import JobExecutionError

__all__ = ["AsyncWaitOperator"]

Emit = Callable[[Any, Any], None]
_TIMED_OUT = object()


class _Entry:
    """One queued record: its value, timestamp and the task computing its results."""

    __slots__ = ("value", "ts", "task")

    def __init__(self, value: Any, ts: Any, task: asyncio.Future[Any]) -> None:
        self.value = value
        self.ts = ts
        self.task = task


class AsyncWaitOperator:
    """``AsyncDataStream.(un)ordered_wait[_with_retry]`` for one parallel instance.

    Args:
        function: The user's ``AsyncFunction``.
        timeout_ms: Per record, from its first call until its result (retries included).
        capacity: How many records may be queued at once.
        ordered: Emit results in input order (else as calls finish).
        retry_strategy: When to repeat a call (None: never).
        api: The API call building it, for error messages.
        name: The operator's name in runtime errors (default ``api``).

    Raises:
        GraphBuildError: A parameter is invalid (named in the message).
    """

    def __init__(self, function: AsyncFunction[Any, Any], timeout_ms: int, capacity: int,
                 ordered: bool, retry_strategy: Optional[AsyncRetryStrategy[Any]] = None,
                 api: str = "AsyncDataStream", name: Optional[str] = None) -> None:
        if not isinstance(function, AsyncFunction):
            raise GraphBuildError(f"{api}: async_function must be an AsyncFunction, "
                                  f"got {function!r:.80}")
        if not inspect.iscoroutinefunction(type(function).async_invoke):
            raise GraphBuildError(f"{api}: method 'async_invoke' of class "
                                  f"{type(function).__name__!r} should be declared as 'async def'")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise GraphBuildError(f"{api}: timeout must be positive, got {timeout_ms!r} ms")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
            raise GraphBuildError(f"{api}: capacity must be a positive int, got {capacity!r}")
        if retry_strategy is not None and not isinstance(retry_strategy, AsyncRetryStrategy):
            raise GraphBuildError(f"{api}: async_retry_strategy must be an AsyncRetryStrategy, "
                                  f"got {retry_strategy!r:.80}")
        self.function = function
        self.timeout_ms = timeout_ms
        self.capacity = capacity
        self.ordered = ordered
        self.retry_strategy = retry_strategy or NO_RETRY_STRATEGY
        self.operator_name = name or api
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._queue: collections.deque[_Entry] = collections.deque()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_loop"] = None
        state["_queue"] = collections.deque()
        return state

    def __repr__(self) -> str:
        mode = "ordered" if self.ordered else "unordered"
        return (f"AsyncWaitOperator({type(self.function).__name__}, {mode}, "
                f"timeout={self.timeout_ms} ms, capacity={self.capacity})")

    # -- lifecycle (called by the chain as for any stage function) -----------------------
    def open(self, runtime_context: Any) -> None:
        """Open the user's function and start this instance's event loop.

        Args:
            runtime_context: The chain's ``RuntimeContext``.
        """
        self.function.open(runtime_context)
        self._loop = asyncio.new_event_loop()
        self._queue = collections.deque()

    def close(self) -> None:
        """Cancel what is still queued (a failed run), stop the loop, close the function."""
        loop = self._loop
        self._loop = None
        if loop is not None:
            pending = [e.task for e in self._queue if not e.task.done()]
            self._queue.clear()
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()
        self.function.close()

    # -- records ----------------------------------------------------------------------------
    @property
    def queued(self) -> int:
        """How many records are queued (in flight or waiting to be emitted)."""
        return len(self._queue)

    def process(self, value: Any, ts: Any, emit: Emit) -> None:
        """Start the call of one record, first emitting queued results while at capacity.

        Args:
            value: The record.
            ts: Its timestamp (each output keeps it).
            emit: Called with ``(output, timestamp)`` for every output of the stage.
        """
        loop = self._require_loop()
        while len(self._queue) >= self.capacity:
            self._wait_one(loop, emit)
        self._queue.append(_Entry(value, ts, loop.create_task(self._call(value))))
        loop.run_until_complete(_yield_once())  # the call starts now; finished ones are taken
        self._emit_ready(emit)

    def drain(self, emit: Emit) -> None:
        """Wait for every queued record and emit its results (end of the input).

        Args:
            emit: Called with ``(output, timestamp)`` for every output.
        """
        loop = self._require_loop()
        while self._queue:
            self._wait_one(loop, emit)

    def _require_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise JobExecutionError(f"operator {self.operator_name!r}: call open() before "
                                    f"processing")
        return self._loop

    def _wait_one(self, loop: asyncio.AbstractEventLoop, emit: Emit) -> None:
        """Run the loop until at least one queued record can be emitted, then emit."""
        if self.ordered:
            head = self._queue[0].task
            if not head.done():
                loop.run_until_complete(asyncio.wait([head]))
        elif not any(e.task.done() for e in self._queue):
            loop.run_until_complete(asyncio.wait([e.task for e in self._queue],
                                                 return_when=asyncio.FIRST_COMPLETED))
        self._emit_ready(emit)

    def _emit_ready(self, emit: Emit) -> None:
        queue = self._queue
        if self.ordered:
            while queue and queue[0].task.done():
                self._emit(queue.popleft(), emit)
        elif any(e.task.done() for e in queue):
            waiting: collections.deque[_Entry] = collections.deque()
            for entry in queue:
                if entry.task.done():
                    self._emit(entry, emit)
                else:
                    waiting.append(entry)
            self._queue = waiting

    def _emit(self, entry: _Entry, emit: Emit) -> None:
        try:
            result = entry.task.result()
        except DataStreamError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's call failed and is not retried
            raise user_function_error(self.operator_name, "async_invoke", entry.value,
                                      exc) from exc
        if result is _TIMED_OUT:
            try:
                result = self.function.timeout(entry.value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(
                    self.operator_name, f"timeout (after {self.timeout_ms} ms)", entry.value,
                    exc) from exc
            what = "timeout"
        else:
            what = "async_invoke"
        if not isinstance(result, list):
            raise JobExecutionError(
                f"operator {self.operator_name!r}: {what} of {type(self.function).__name__} "
                f"must return a list of results, got {type(result).__name__} "
                f"({result!r:.60}) for record {entry.value!r:.60}")
        ts = entry.ts
        for item in result:
            emit(take_emitted(item) if isinstance(item, Row) else item, ts)

    # -- one record's calls (inside the loop) ----------------------------------------------
    async def _call(self, value: Any) -> Any:
        """The record's result list, or ``_TIMED_OUT``; raises the last call's exception."""
        attempts = asyncio.ensure_future(self._attempts(value))
        done, _ = await asyncio.wait([attempts], timeout=self.timeout_ms / 1000)
        if not done:
            attempts.cancel()
            await asyncio.gather(attempts, return_exceptions=True)
            return _TIMED_OUT
        return attempts.result()

    async def _attempts(self, value: Any) -> Any:
        strategy = self.retry_strategy
        predicate = strategy.get_retry_predicate()
        retry_result = predicate.result_predicate()
        retry_error = predicate.exception_predicate()
        invoke = self.function.async_invoke
        attempt = 0
        while True:
            attempt += 1
            error: Optional[Exception] = None
            result: Any = None
            try:
                result = await invoke(value)
            except Exception as exc:  # noqa: BLE001 - retried or raised below
                error = exc
            if error is not None:
                retry = retry_error is not None and _holds(retry_error, error, self, value)
            else:
                retry = retry_result is not None and _holds(retry_result, result, self, value)
            if not retry or not strategy.can_retry(attempt):
                if error is not None:
                    raise error
                return result
            delay = strategy.get_backoff_time_millis(attempt)
            await asyncio.sleep(max(delay, 0) / 1000)


def _holds(predicate: Callable[[Any], bool], outcome: Any, op: AsyncWaitOperator,
           value: Any) -> bool:
    try:
        return bool(predicate(outcome))
    except Exception as exc:
        raise user_function_error(op.operator_name, "retry predicate", value, exc) from exc


async def _yield_once() -> None:
    """One pass of the event loop: newly created calls start, finished ones are noticed."""
    await asyncio.sleep(0)
