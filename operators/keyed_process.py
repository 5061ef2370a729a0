"""Keyed process operators: a KeyedProcessFunction (or a Map/FlatMap/Filter/Process function
on a keyed stream, through an adapter) and a KeyedCoProcessFunction over two keyed inputs, with
keyed state and timers (time semantics: :mod:`.keyed`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ..state_store.exceptions import DataStreamError, GraphBuildError, SerializationError
from ..state_store.namespaces import VOID_NAMESPACE
from ..state_store.row import Row, take_emitted
from .base import (
    MAX_WATERMARK,
    Output,
    raise_named_serialization_error,
    user_function_error,
)
from .context import KeyedContextImpl, OnTimerContextImpl
from .exceptions import JobExecutionError
from .functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Forwarding,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    TimeDomain,
    per_record_call,
)
from .timers import KeyedTimerService

if TYPE_CHECKING:  # pragma: no cover - typing only
    pass
from .keyed import AbstractKeyedOperator, collect_outputs

__all__ = ["KeyedProcessOperator", "KeyedCoProcessOperator"]

#: ``_new_tuple(Output, (tag, value, ts))`` builds an Output in C (``Output(...)`` and
#: ``Output._make`` are Python calls; an output is built per record)
_new_tuple = tuple.__new__
_EVENT_TIME = TimeDomain.EVENT_TIME
_PROCESSING_TIME = TimeDomain.PROCESSING_TIME


# -- adapters: plain stage functions used on a keyed stream (they may use keyed state) ------


class _Delegating:
    """Adapter lifecycle: open/close go to the wrapped function, which is also what pickles."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def open(self, runtime_context: Any) -> None:
        self.function.open(runtime_context)

    def close(self) -> None:
        self.function.close()

    def __getstate__(self) -> Any:
        return self.function

    def __setstate__(self, function: Any) -> None:
        type(self).__init__(self, function)  # unpickled: __init__ runs again


Element = Callable[[Any, Any], Any]


class _KeyedStageAdapter(_Delegating, Forwarding, KeyedProcessFunction):
    """Runs a Map/FlatMap/Filter/Process function as a KeyedProcessFunction."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self._element: Element
        if isinstance(function, MapFunction):
            f = per_record_call(function.map)
            self._element = lambda value, ctx: (f(value),)
        elif isinstance(function, FlatMapFunction):
            f = per_record_call(function.flat_map)

            def flat(value: Any, ctx: Any) -> Any:
                return f(value)

            self._element = flat
        elif isinstance(function, FilterFunction):
            f = per_record_call(function.filter)
            self._element = lambda value, ctx: (value,) if f(value) else None
        else:
            self._element = per_record_call(function.process_element)

    def forwarded(self, method: str) -> Callable[..., Any] | None:
        return self._element if method == "process_element" else None

    def process_element(self, value: Any, ctx: Any) -> Any:
        return self._element(value, ctx)


class _KeyedCoAdapter(_Delegating, Forwarding, KeyedCoProcessFunction):
    """Runs a CoMap/CoFlatMap/CoProcess function as a KeyedCoProcessFunction."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self._element1: Element
        self._element2: Element
        if isinstance(function, CoMapFunction):
            m1, m2 = function.map1, function.map2
            self._element1 = lambda value, ctx: (m1(value),)
            self._element2 = lambda value, ctx: (m2(value),)
        elif isinstance(function, CoFlatMapFunction):
            f1, f2 = function.flat_map1, function.flat_map2
            self._element1 = lambda value, ctx: f1(value)
            self._element2 = lambda value, ctx: f2(value)
        else:
            self._element1 = function.process_element1
            self._element2 = function.process_element2

    def forwarded(self, method: str) -> Callable[..., Any] | None:
        return {"process_element1": self._element1,
                "process_element2": self._element2}.get(method)

    def process_element1(self, value: Any, ctx: Any) -> Any:
        return self._element1(value, ctx)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        return self._element2(value, ctx)


class _ProcessOperatorBase(AbstractKeyedOperator):
    """Shared parts of the one- and two-input process operators."""

    function: Any
    _runtime_function: Any

    def _definition(self) -> dict[str, Any]:
        return {"function": self.function, "name": self.name}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.function!r}, name={self.name!r})"

    def open_operator(self) -> None:
        backend = self.backend
        timer_service = KeyedTimerService(
            self.clock, self.event_queue, self.processing_queue, VOID_NAMESPACE
        )
        self._ctx = KeyedContextImpl(timer_service, self.operator_name, backend)
        self._timer_ctx = OnTimerContextImpl(timer_service, self.operator_name, backend)
        self.open_function(self._runtime_function)
        self._on_timer = self._runtime_function.on_timer

    def close_operator(self) -> None:
        self.close_function(self._runtime_function)

    def _timer(self, timestamp: int, domain: TimeDomain,
               out: list[Output] | None = None) -> list[Output]:
        """Call the user's on_timer; its outputs (side outputs too) go to ``out`` (a new list
        when None), which is returned."""
        ctx = self._timer_ctx
        ctx.element_timestamp = timestamp
        ctx.timer_domain = domain
        if out is None:
            out = []
        ctx.side_outputs = out
        try:
            result = self._on_timer(timestamp, ctx)
            if result is not None:
                collect_outputs(result, out, timestamp)
        except Exception as exc:
            self._on_timer_failed(exc, timestamp, domain)
        return out

    def _on_timer_failed(self, exc: Exception, timestamp: int, domain: TimeDomain) -> NoReturn:
        """Raise what an exception out of the user's on_timer becomes: ours unchanged, a
        serialization error and any other named after the operator and the timer."""
        if isinstance(exc, SerializationError):
            raise_named_serialization_error(
                exc, self.operator_name, f"on_timer ({domain.name})", timestamp)
        if isinstance(exc, DataStreamError):
            raise exc
        raise user_function_error(
            self.operator_name, f"on_timer ({domain.name})", timestamp, exc
        ) from exc

    def on_event_time(self, timestamp: int, namespace: Any) -> list[Output]:
        return self._timer(timestamp, _EVENT_TIME)

    def _fire_all_event_timers(self, out: list[Output], up_to: int = MAX_WATERMARK) -> None:
        """As the base class does, in one loop: BATCH fires one timer per record of a keyed
        process function like a sessionizer, so per timer only what changes is set (the
        key when it differs, the timestamp) and the outputs go straight into ``out``."""
        backend = self.backend
        current = backend.current_key_and_bytes()[1]
        ctx = self._timer_ctx
        ctx.timer_domain = _EVENT_TIME
        ctx.side_outputs = out
        on_timer = self._on_timer
        append = out.append
        timestamp = up_to
        try:
            for timestamp, key, _, key_bytes in self.event_queue.poll_tuples_until(up_to):
                if key_bytes != current:
                    backend.set_current_key(key, key_bytes)
                    current = key_bytes
                ctx.element_timestamp = timestamp
                result = on_timer(timestamp, ctx)
                if result is not None:
                    for item in result:  # collect_outputs, inlined
                        if (type(item) is tuple and len(item) == 2
                                and isinstance(item[0], OutputTag)):
                            append(Output(item[0].tag_id, take_emitted(item[1]), timestamp))
                        else:
                            if isinstance(item, Row):  # taken when emitted
                                item = take_emitted(item)
                            append(_new_tuple(Output, (None, item, timestamp)))
        except Exception as exc:
            self._on_timer_failed(exc, timestamp, _EVENT_TIME)

    def on_processing_time(self, timestamp: int, namespace: Any) -> list[Output]:
        return self._timer(timestamp, _PROCESSING_TIME)


class KeyedProcessOperator(_ProcessOperatorBase):
    """Runs a KeyedProcessFunction (or a Map/FlatMap/Filter/ProcessFunction on a keyed stream)."""

    def __init__(self, function: Any, name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(function, KeyedProcessFunction):
            runtime_function = function
        elif isinstance(function, (ProcessFunction, MapFunction, FlatMapFunction, FilterFunction)):
            runtime_function = _KeyedStageAdapter(function)
        else:
            raise GraphBuildError(
                f"KeyedProcessOperator: function must be a KeyedProcessFunction (or a Map/FlatMap/"
                f"Filter/ProcessFunction), got {type(function).__name__} {function!r:.80}"
            )
        self.function = function
        self._runtime_function = runtime_function
        #: the user's method an error names
        self._what = ("map" if isinstance(function, MapFunction) else
                      "flat_map" if isinstance(function, FlatMapFunction) else
                      "filter" if isinstance(function, FilterFunction) else "process_element")

    def open_operator(self) -> None:
        super().open_operator()
        self._process = per_record_call(self._runtime_function.process_element)

    def process_element(
        self, value: Any, timestamp: int | None, input_index: int = 0
    ) -> list[Output]:
        ctx = self._ctx
        ctx.element_timestamp = timestamp
        out: list[Output] = []
        ctx.side_outputs = out
        try:
            result = self._process(value, ctx)
            if result is not None:
                append = out.append
                for item in result:
                    if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
                        append(Output(item[0].tag_id, take_emitted(item[1]), timestamp))
                    else:
                        if isinstance(item, Row):  # taken when emitted (see take_emitted)
                            item = take_emitted(item)
                        append(_new_tuple(Output, (None, item, timestamp)))
        except SerializationError as exc:
            raise_named_serialization_error(exc, self.operator_name, self._what, value)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(self.operator_name, self._what, value, exc) from exc
        return out


class KeyedCoProcessOperator(_ProcessOperatorBase):
    """Runs a KeyedCoProcessFunction (or a CoMap/CoFlatMap/CoProcessFunction on keyed streams).

    ``input_index`` 0 calls ``process_element1``, 1 calls ``process_element2``.
    """

    def __init__(self, function: Any, name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(function, KeyedCoProcessFunction):
            runtime_function = function
        elif isinstance(function, (CoProcessFunction, CoMapFunction, CoFlatMapFunction)):
            runtime_function = _KeyedCoAdapter(function)
        else:
            raise GraphBuildError(
                f"KeyedCoProcessOperator: function must be a KeyedCoProcessFunction (or a CoMap/"
                f"CoFlatMap/CoProcessFunction), got {type(function).__name__} {function!r:.80}"
            )
        self.function = function
        self._runtime_function = runtime_function

    def open_operator(self) -> None:
        super().open_operator()
        self._process1 = per_record_call(self._runtime_function.process_element1)
        self._process2 = per_record_call(self._runtime_function.process_element2)

    def process_element(
        self, value: Any, timestamp: int | None, input_index: int = 0
    ) -> list[Output]:
        if input_index == 0:
            process = self._process1
        elif input_index == 1:
            process = self._process2
        else:
            raise JobExecutionError(
                f"operator {self.operator_name!r}: input_index must be 0 or 1, got {input_index!r}"
            )
        ctx = self._ctx
        ctx.element_timestamp = timestamp
        out: list[Output] = []
        ctx.side_outputs = out
        try:
            result = process(value, ctx)
            if result is not None:
                collect_outputs(result, out, timestamp)
        except SerializationError as exc:
            raise_named_serialization_error(
                exc, self.operator_name, f"process_element{input_index + 1}", value)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, f"process_element{input_index + 1}", value, exc
            ) from exc
        return out
