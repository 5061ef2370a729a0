"""User function API with PyFlink's names and signatures.

Users subclass these (``MapFunction``, ``KeyedProcessFunction``, ...) or pass
plain callables where PyFlink accepts them; the ``as_*`` helpers turn either
form into the class form the runtime calls. Process functions follow PyFlink's
generator style: whatever ``process_element`` / ``on_timer`` yields is the main
output; yielding ``(output_tag, value)`` or calling ``ctx.output(tag, value)``
emits to a side output.

``Function`` (the ``open(runtime_context)`` / ``close()`` base) is the one in
``state_store.functions``, shared with ``ReduceFunction`` / ``AggregateFunction``.

Everything here is plain Python and picklable with cloudpickle, because
functions travel to Spark executors.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, NoReturn

from ..state_store.exceptions import GraphBuildError
from ..state_store.functions import (
    AggregateFunction,
    Forwarding,
    Function,
    ReduceFunction,
    per_record_call,
)

__all__ = [
    "Function",
    "MapFunction",
    "FlatMapFunction",
    "FilterFunction",
    "KeySelector",
    "Partitioner",
    "TimerService",
    "Context",
    "KeyedContext",
    "OnTimerContext",
    "ProcessFunction",
    "KeyedProcessFunction",
    "CoMapFunction",
    "CoFlatMapFunction",
    "CoProcessFunction",
    "KeyedCoProcessFunction",
    "TimestampAssigner",
    "OutputTag",
    "TimeDomain",
    "ReduceFunction",
    "AggregateFunction",
    "as_map_function",
    "as_flat_map_function",
    "as_filter_function",
    "as_key_selector",
    "as_partitioner",
    "as_reduce_function",
    "as_timestamp_assigner",
    "wrapped_callable",
    "Forwarding",
    "per_record_call",
]


class MapFunction(Function, ABC):
    """One output per input: ``map(value) -> value``."""

    @abstractmethod
    def map(self, value: Any) -> Any:
        """Transform one record.

        Args:
            value: The record.

        Returns:
            The output record.
        """


class FlatMapFunction(Function, ABC):
    """Zero or more outputs per input: ``flat_map(value)`` returns an iterable or yields."""

    @abstractmethod
    def flat_map(self, value: Any) -> Iterable[Any] | None:
        """Return (or yield) the outputs for one record.

        Args:
            value: The record.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """


class FilterFunction(Function, ABC):
    """Keeps the records for which ``filter(value)`` is true."""

    @abstractmethod
    def filter(self, value: Any) -> bool:
        """True to keep ``value``.

        Args:
            value: The record.

        Returns:
            Whether to keep the record.
        """


class KeySelector(Function, ABC):
    """Extracts the key of a record: ``get_key(value)``."""

    @abstractmethod
    def get_key(self, value: Any) -> Any:
        """The key of ``value`` (must be deterministic: equal records, equal keys).

        Args:
            value: The record.

        Returns:
            The key.
        """


class Partitioner(Function, ABC):
    """Picks the parallel instance of the next operator a record goes to
    (``DataStream.partition_custom``), from the record's key.

    Example:
        >>> class ByParity(Partitioner):
        ...     def partition(self, key, num_partitions):
        ...         return key % 2 % num_partitions
    """

    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        """The partition of ``key``.

        Args:
            key: the record's key (what the key selector returned).
            num_partitions: the number of parallel instances of the next operator.

        Returns:
            An int in ``[0, num_partitions)``.
        """


class TimeDomain(Enum):
    """Which clock a timer belongs to (``OnTimerContext.time_domain()``)."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class OutputTag:
    """Names a side output. Equal tags (same ``tag_id``) address the same side output.

    Args:
        tag_id: The side output's name, a non-empty str.
        type_info: The type of its records (a TypeInformation), or None.

    Raises:
        GraphBuildError: ``tag_id`` is not a non-empty str.
    """

    __slots__ = ("_tag_id", "_type_info")

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise GraphBuildError(f"OutputTag: tag_id must be a non-empty str, got {tag_id!r}")
        self._tag_id = tag_id
        self._type_info = type_info

    @property
    def tag_id(self) -> str:
        """The side output's name."""
        return self._tag_id

    @property
    def type_info(self) -> Any:
        """Declared TypeInformation of the side output's values, or None (pickled)."""
        return self._type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other._tag_id == self._tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self._tag_id))

    def __repr__(self) -> str:
        if self._type_info is None:
            return f"OutputTag({self._tag_id!r})"
        return f"OutputTag({self._tag_id!r}, {self._type_info!r})"

    def get_java_output_tag(self) -> NoReturn:
        """Refused: no Java Flink object is behind an OutputTag here.

        Raises:
            GraphBuildError: always.
        """
        raise GraphBuildError(f"{self!r}.get_java_output_tag(): there is no Java Flink object here")

    def __getstate__(self) -> tuple[str, Any]:
        return (self._tag_id, self._type_info)

    def __setstate__(self, state: tuple[str, Any]) -> None:
        self._tag_id, self._type_info = state


class TimerService(ABC):
    """Timers and clocks of a process function (``ctx.timer_service()``)."""

    @abstractmethod
    def current_processing_time(self) -> int:
        """The current processing time (raises under ``pipeline.processing-time.allow=FAIL``).

        Returns:
            Milliseconds since the epoch.
        """

    @abstractmethod
    def current_watermark(self) -> int:
        """The current event-time watermark.

        Returns:
            The watermark in milliseconds (``-2**63`` before the first one).
        """

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Fire ``on_timer`` once processing time reaches ``timestamp`` (current key).

        Args:
            timestamp: The processing time in milliseconds.
        """

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Fire ``on_timer`` once the watermark reaches ``timestamp`` (current key).

        Args:
            timestamp: The event time in milliseconds.
        """

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Remove a processing-time timer of the current key (no-op when absent).

        Args:
            timestamp: The timer's processing time in milliseconds.
        """

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        """Remove an event-time timer of the current key (no-op when absent).

        Args:
            timestamp: The timer's event time in milliseconds.
        """


class Context(ABC):
    """Context of ``process_element``: element timestamp, timers, side outputs."""

    @abstractmethod
    def timestamp(self) -> int | None:
        """Timestamp of the element (in ``on_timer``: of the timer), or None."""

    @abstractmethod
    def timer_service(self) -> TimerService:
        """Timers and clocks."""

    @abstractmethod
    def output(self, output_tag: OutputTag, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""


class KeyedContext(Context):
    """Context of a keyed process function: adds the current key."""

    @abstractmethod
    def get_current_key(self) -> Any:
        """Key of the element (or timer) being processed."""


class OnTimerContext(KeyedContext):
    """Context of ``on_timer``: adds the firing timer's time domain."""

    @abstractmethod
    def time_domain(self) -> TimeDomain:
        """EVENT_TIME or PROCESSING_TIME."""


_Context = Context
_KeyedContext = KeyedContext
_OnTimerContext = OnTimerContext


class ProcessFunction(Function, ABC):
    """Low-level per-record function on a non-keyed stream; yields its outputs."""

    Context = Context

    @abstractmethod
    def process_element(self, value: Any, ctx: _Context) -> Iterable[Any] | None:
        """Yield (or return an iterable of) outputs for ``value``; None for no output.

        Args:
            value: The record.
            ctx: The context: timestamp, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """


class KeyedProcessFunction(Function, ABC):
    """Per-record function on a keyed stream, with keyed state and timers."""

    Context = KeyedContext
    OnTimerContext = OnTimerContext

    @abstractmethod
    def process_element(self, value: Any, ctx: _KeyedContext) -> Iterable[Any] | None:
        """Yield outputs for ``value``; state and timers apply to ``ctx.get_current_key()``.

        Args:
            value: The record; its key is ``ctx.get_current_key()``.
            ctx: The context: current key, timestamp, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    def on_timer(self, timestamp: int, ctx: _OnTimerContext) -> Iterable[Any] | None:
        """Called when a timer of the current key fires; yields outputs. Default: nothing.

        Args:
            timestamp: The timer's time in ms.
            ctx: The timer context: current key, time domain, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """
        return None


class CoMapFunction(Function, ABC):
    """Two-input map: ``map1`` for the first input, ``map2`` for the second."""

    @abstractmethod
    def map1(self, value: Any) -> Any:
        """Map a record of the first input.

        Args:
            value: The record.

        Returns:
            The output record.
        """

    @abstractmethod
    def map2(self, value: Any) -> Any:
        """Map a record of the second input.

        Args:
            value: The record.

        Returns:
            The output record.
        """


class CoFlatMapFunction(Function, ABC):
    """Two-input flat map: ``flat_map1`` / ``flat_map2`` return iterables or yield."""

    @abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any] | None:
        """Outputs for a record of the first input.

        Args:
            value: The record.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    @abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any] | None:
        """Outputs for a record of the second input.

        Args:
            value: The record.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """


class CoProcessFunction(Function, ABC):
    """Two-input process function on non-keyed connected streams."""

    Context = Context

    @abstractmethod
    def process_element1(self, value: Any, ctx: _Context) -> Iterable[Any] | None:
        """Outputs for a record of the first input.

        Args:
            value: A record of the first input.
            ctx: The context: timestamp, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    @abstractmethod
    def process_element2(self, value: Any, ctx: _Context) -> Iterable[Any] | None:
        """Outputs for a record of the second input.

        Args:
            value: A record of the second input.
            ctx: The context: timestamp, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """


class KeyedCoProcessFunction(Function, ABC):
    """Two-input process function on keyed connected streams, with state and timers."""

    Context = KeyedContext
    OnTimerContext = OnTimerContext

    @abstractmethod
    def process_element1(self, value: Any, ctx: _KeyedContext) -> Iterable[Any] | None:
        """Outputs for a record of the first input.

        Args:
            value: A record of the first input.
            ctx: The context: current key, timestamp, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    @abstractmethod
    def process_element2(self, value: Any, ctx: _KeyedContext) -> Iterable[Any] | None:
        """Outputs for a record of the second input.

        Args:
            value: A record of the second input.
            ctx: The context: current key, timestamp, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    def on_timer(self, timestamp: int, ctx: _OnTimerContext) -> Iterable[Any] | None:
        """Called when a timer of the current key fires. Default: nothing.

        Args:
            timestamp: The time (ms) the timer was registered for.
            ctx: The timer context: current key, time domain, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """
        return None


class TimestampAssigner(Function, ABC):
    """Gives each record its event timestamp (ms)."""

    @abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int | None) -> int:
        """Event timestamp of ``value``; ``record_timestamp`` is its previous one (or None).

        Args:
            value: The record.
            record_timestamp: The record's previous timestamp in ms, or None.

        Returns:
            The event timestamp in ms.
        """


# --- plain callables -> function classes ------------------------------------------------


def _check_callable(func: Any, api: str, argument: str, expected: str) -> None:
    if isinstance(func, type) and issubclass(func, Function):
        raise GraphBuildError(
            f"{api}: argument {argument!r} must be an instance of {expected} or a callable, "
            f"got the class {func.__name__} itself (instantiate it)"
        )
    if not callable(func):
        raise GraphBuildError(
            f"{api}: argument {argument!r} must be a {expected} or a callable, "
            f"got {type(func).__name__} {func!r:.80}"
        )


def _callable_name(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


class CallableFunction(Forwarding):
    """A plain callable wrapped in a function class: its one per-record method
    (``METHOD``) calls it, and it pickles as the callable alone."""

    METHOD, KIND = "", ""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def forwarded(self, method: str) -> Callable[..., Any] | None:
        return self.func if method == self.METHOD else None

    def __getstate__(self) -> Callable[..., Any]:
        return self.func

    def __setstate__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def __repr__(self) -> str:
        return f"{self.KIND}({_callable_name(self.func)})"


class _CallableMapFunction(CallableFunction, MapFunction):
    METHOD, KIND = "map", "MapFunction"

    def map(self, value: Any) -> Any:
        return self.func(value)


class _CallableFlatMapFunction(CallableFunction, FlatMapFunction):
    METHOD, KIND = "flat_map", "FlatMapFunction"

    def flat_map(self, value: Any) -> Iterable[Any]:
        result: Iterable[Any] = self.func(value)
        return result


class _CallableFilterFunction(CallableFunction, FilterFunction):
    METHOD, KIND = "filter", "FilterFunction"

    def filter(self, value: Any) -> bool:
        keep: bool = self.func(value)
        return keep


class _CallablePartitioner(CallableFunction, Partitioner):
    METHOD, KIND = "partition", "Partitioner"

    def partition(self, key: Any, num_partitions: int) -> int:
        partition: int = self.func(key, num_partitions)
        return partition


class _CallableKeySelector(CallableFunction, KeySelector):
    METHOD, KIND = "get_key", "KeySelector"

    def get_key(self, value: Any) -> Any:
        return self.func(value)


class _CallableReduceFunction(CallableFunction, ReduceFunction):
    METHOD, KIND = "reduce", "ReduceFunction"

    def reduce(self, value1: Any, value2: Any) -> Any:
        return self.func(value1, value2)


class _CallableTimestampAssigner(CallableFunction, TimestampAssigner):
    METHOD, KIND = "extract_timestamp", "TimestampAssigner"

    def extract_timestamp(self, value: Any, record_timestamp: int | None) -> int:
        timestamp: int = self.func(value, record_timestamp)
        return timestamp


def as_map_function(func: Any, argument: str = "func") -> MapFunction:
    """``func`` as a MapFunction: a MapFunction is returned as is, a callable is wrapped."""
    if isinstance(func, MapFunction):
        return func
    _check_callable(func, "map()", argument, "MapFunction")
    return _CallableMapFunction(func)


def as_flat_map_function(func: Any, argument: str = "func") -> FlatMapFunction:
    """``func`` as a FlatMapFunction (a callable must return an iterable or be a generator)."""
    if isinstance(func, FlatMapFunction):
        return func
    _check_callable(func, "flat_map()", argument, "FlatMapFunction")
    return _CallableFlatMapFunction(func)


def as_filter_function(func: Any, argument: str = "func") -> FilterFunction:
    """``func`` as a FilterFunction (a callable returns a truthy value to keep a record)."""
    if isinstance(func, FilterFunction):
        return func
    _check_callable(func, "filter()", argument, "FilterFunction")
    return _CallableFilterFunction(func)


def as_key_selector(func: Any, argument: str = "key_selector") -> KeySelector:
    """``func`` as a KeySelector (a callable maps a record to its key)."""
    if isinstance(func, KeySelector):
        return func
    _check_callable(func, "key_by()", argument, "KeySelector")
    return _CallableKeySelector(func)


def as_partitioner(func: Any, argument: str = "partitioner") -> Partitioner:
    """``func`` as a Partitioner (a callable takes ``(key, num_partitions)``).

    Args:
        func: a Partitioner, or a callable ``(key, num_partitions) -> int``.
        argument: the argument's name, for the error.

    Returns:
        The Partitioner.

    Raises:
        GraphBuildError: ``func`` is neither.
    """
    if isinstance(func, Partitioner):
        return func
    _check_callable(func, "partition_custom()", argument, "Partitioner")
    return _CallablePartitioner(func)


def as_reduce_function(func: Any, argument: str = "func") -> ReduceFunction:
    """``func`` as a ReduceFunction (a callable takes ``(value1, value2)``)."""
    if isinstance(func, ReduceFunction):
        return func
    _check_callable(func, "reduce()", argument, "ReduceFunction")
    return _CallableReduceFunction(func)


def as_timestamp_assigner(func: Any, argument: str = "timestamp_assigner") -> TimestampAssigner:
    """``func`` as a TimestampAssigner (a callable takes ``(value, record_timestamp)``)."""
    if isinstance(func, TimestampAssigner):
        return func
    _check_callable(func, "assign_timestamps()", argument, "TimestampAssigner")
    return _CallableTimestampAssigner(func)


def wrapped_callable(function: Any) -> Callable[..., Any] | None:
    """The plain callable an ``as_*`` helper wrapped, or None for user function classes.

    The plugin uses it to inspect (trace) plain lambdas for push-down.
    """
    if isinstance(function, CallableFunction):
        return function.func
    return None
