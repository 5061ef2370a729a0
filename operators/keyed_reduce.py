"""The keyed rolling reduce operator (``KeyedStream.reduce`` and the built-in aggregations)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..state_store.descriptors import ValueStateDescriptor
from ..state_store.exceptions import DataStreamError
from ..state_store.namespaces import VOID_NAMESPACE
from ..state_store.row import take_emitted
from ..state_store.serializers import PickleSerializer
from .base import (
    MAX_WATERMARK,
    Output,
    user_function_error,
)
from .functions import (
    ReduceFunction,
    as_reduce_function,
    per_record_call,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    pass
from .keyed import REDUCE_STATE_NAME, AbstractKeyedOperator

__all__ = ["ReduceOperator"]

_EMPTY: tuple[Output, ...] = ()
#: ``_new_tuple(Output, (tag, value, ts))`` builds an Output in C (see :mod:`.keyed_process`)
_new_tuple = tuple.__new__


class ReduceOperator(AbstractKeyedOperator):
    """Keyed rolling reduce (``KeyedStream.reduce`` and the built-in aggregations).

    STREAMING emits every intermediate result (an upsert stream), with the
    element's timestamp. BATCH emits only the final value of each key, as Flink's
    BatchGroupedReduceOperator does: the first element of a key registers an
    event-time timer at ``MAX_WATERMARK``, whose firing (``end_key`` / ``end_input``)
    emits the value with timestamp ``MAX_WATERMARK``.

    The running value lives in the internal ValueState ``_reduce``, typed by
    ``value_type_info`` (a TypeInformation or TypeSerializer; default: pickled).
    """

    def __init__(
        self, reduce_function: Any, value_type_info: Any = None, name: str | None = None
    ) -> None:
        super().__init__(name)
        self.reduce_function: ReduceFunction = as_reduce_function(
            reduce_function, "reduce_function"
        )
        self.value_type_info = value_type_info
        self.state_descriptor = ValueStateDescriptor(
            REDUCE_STATE_NAME,
            value_type_info if value_type_info is not None else PickleSerializer.INSTANCE,
            _internal=True,
        )

    def _definition(self) -> dict[str, Any]:
        return {
            "reduce_function": self.reduce_function,
            "value_type_info": self.value_type_info,
            "name": self.name,
        }

    def __repr__(self) -> str:
        return f"ReduceOperator({self.reduce_function!r}, name={self.name!r})"

    def open_operator(self) -> None:
        self._state = state = self.backend.get_state(self.state_descriptor)
        self._value = state.value
        self._update = state.update
        self._add_timer = self.event_queue.add
        self._reduce = per_record_call(self.reduce_function.reduce)
        self.open_function(self.reduce_function)

    def close_operator(self) -> None:
        self.close_function(self.reduce_function)

    def process_element(
        self, value: Any, timestamp: int | None, input_index: int = 0
    ) -> list[Output] | tuple[Output, ...]:
        current = self._value()
        if current is None:
            if self.batch:
                if self.savepoint_watermark is None:
                    self._add_timer(MAX_WATERMARK, VOID_NAMESPACE)
                self._update(value)
                return _EMPTY
            result = value
        else:
            try:
                result = self._reduce(current, value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(self.operator_name, "reduce", value, exc) from exc
            if self.batch:
                self._update(result)
                return _EMPTY
        self._update(result)
        return [_new_tuple(Output, (None, take_emitted(result), timestamp))]

    def on_event_time(self, timestamp: int, namespace: Any) -> list[Output] | tuple[Output, ...]:
        value = self._value()
        if value is None:
            return _EMPTY
        return [_new_tuple(Output, (None, value, timestamp))]

    def end_key(self) -> Iterable[Output]:
        """BATCH stop-with-savepoint: emit the key's final value without the internal
        MAX timer (a STREAMING reduce holds no timer, so the savepoint must not either)."""
        if self.batch and self.savepoint_watermark is not None:
            value = self._value()
            out = list(super().end_key())
            if value is not None:
                out.insert(0, _new_tuple(Output, (None, value, MAX_WATERMARK)))
            return out
        return super().end_key()

    def on_restored_key(self) -> Iterable[Output]:
        """BATCH restore: a restored running value is emitted at end of key, as a value
        reduced in this run would be (re-register the internal MAX timer)."""
        if self.batch and self.savepoint_watermark is None and self._value() is not None:
            self._add_timer(MAX_WATERMARK, VOID_NAMESPACE)
        return _EMPTY
