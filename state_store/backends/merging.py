"""Reducing and aggregating state, written once for every backend.

Both kinds keep one stored value per key and namespace (the reduced value, the
accumulator). A backend's state class supplies three primitives for the current key and
namespace: ``_get()`` (None when empty), ``_put(value)`` and ``_remove()``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ..exceptions import StateError
from ..internal_state import InternalAggregatingState, InternalReducingState

__all__ = ["ReducingStateBase", "AggregatingStateBase"]


class _SingleStoredValue:
    """The three storage primitives the two kinds are written over."""

    @abstractmethod
    def _get(self) -> Any:
        """The stored value of the current key and namespace, None when empty."""

    @abstractmethod
    def _put(self, value: Any) -> None:
        """Store ``value`` (never None) for the current key and namespace."""

    @abstractmethod
    def _remove(self) -> None:
        """Remove the stored value of the current key and namespace."""

    # the raw stored value (the reduced value, the accumulator) for namespace merging
    def get_internal(self) -> Any:
        return self._get()

    def update_internal(self, value: Any) -> None:
        if value is None:
            self._remove()
        else:
            self._put(value)


class ReducingStateBase(_SingleStoredValue, InternalReducingState):
    """Flink's ReducingState: ``add`` folds the value in with the descriptor's reduce."""

    def get(self) -> Any:
        return self._get()

    def add(self, value: Any) -> None:
        if value is None:
            self._remove()
            return
        current = self._get()
        if current is not None:
            value = self._reduce(current, value)
            if value is None:
                raise StateError(
                    f"the reduce function of reducing state {self.descriptor.name!r} returned None")
        self._put(value)


class AggregatingStateBase(_SingleStoredValue, InternalAggregatingState):
    """Flink's AggregatingState: the accumulator is stored, ``get`` is its result."""

    def get(self) -> Any:
        accumulator = self._get()
        if accumulator is None:
            return None
        return self._agg_function.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:
            self._remove()
            return
        function = self._agg_function
        accumulator = self._get()
        if accumulator is None:
            accumulator = function.create_accumulator()
        accumulator = function.add(value, accumulator)
        if accumulator is None:
            raise StateError(
                f"AggregateFunction.add of aggregating state {self.descriptor.name!r} returned "
                "None; it must return the accumulator")
        self._put(accumulator)
