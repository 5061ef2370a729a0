"""The internal state interfaces: what a backend's states offer the runtime beyond the
user's state API (the current namespace, raw values, merging namespaces), per state kind.
Each backend implements them (:mod:`.backends`); :mod:`.backend` hands them out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

from .descriptors import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
)
from .exceptions import (
    StateDescriptorError,
)
from .serializers import TypeSerializer
from .state import (
    AggregatingState,
    BinarySortedState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)

__all__ = [
    "InternalKvState",
    "InternalState",
    "InternalMergingState",
    "InternalValueState",
    "InternalListState",
    "InternalMapState",
    "InternalReducingState",
    "InternalAggregatingState",
    "InternalBinarySortedState",
]


# --------------------------------------------------------------------------------------------
class InternalKvState(ABC):
    """A state object of a backend: its user interface plus namespace control.

    ``set_current_namespace(ns)`` scopes every later call to ``(current key, ns)``;
    the namespace is a Python object serialized with the state's namespace
    serializer (``VOID_NAMESPACE`` by default).
    """

    descriptor: StateDescriptor
    namespace_serializer: TypeSerializer[Any]

    @property
    def name(self) -> str:
        """The state's name."""
        return self.descriptor.name

    @abstractmethod
    def set_current_namespace(self, namespace: Any) -> None:
        """Scope later calls to ``namespace``."""

    @abstractmethod
    def get_current_namespace(self) -> Any:
        """The namespace set last (``VOID_NAMESPACE`` initially)."""

    def _bind_descriptor(self) -> None:
        """Take what the kind needs from ``descriptor``; the constructor calls it once, after
        setting ``descriptor`` (nothing by default)."""
        return None


def _user_key_serializer(state: str, descriptor: StateDescriptor) -> TypeSerializer[Any]:
    """The user-key serializer of a map or sorted state's descriptor (``StateDescriptorError``
    naming the state when it has none)."""
    serializer = descriptor.user_key_serializer
    if serializer is None:
        raise StateDescriptorError(
            f"{state} state {descriptor.name!r} needs a descriptor with a user-key serializer, "
            f"got {descriptor!r}"
        )
    return serializer


#: The operators layer's name for any internal state.
InternalState = InternalKvState


class InternalMergingState(InternalKvState):
    """Appending states whose namespaces can be merged (session windows).

    ``get_internal`` / ``update_internal`` read and write the raw stored value
    (the list, the reduced value, the accumulator) of the current key and
    namespace; None means empty.
    """

    @abstractmethod
    def get_internal(self) -> Any:
        """Raw stored value of the current key and namespace, None when empty."""

    @abstractmethod
    def update_internal(self, value: Any) -> None:
        """Replace the raw stored value (None clears)."""

    @abstractmethod
    def clear(self) -> None:
        """Remove the value of the current key and namespace."""

    @abstractmethod
    def _merge_values(self, left: Any, right: Any) -> Any:
        """Combine two raw values (list concat, reduce, accumulator merge)."""

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Merge the values of ``sources`` into ``target`` and clear the sources.

        The current namespace is restored afterwards.
        """
        previous = self.get_current_namespace()
        try:
            merged: Any = None
            for source in sources:
                if source == target:
                    continue
                self.set_current_namespace(source)
                value = self.get_internal()
                if value is not None:
                    self.clear()
                    merged = value if merged is None else self._merge_values(merged, value)
            if merged is not None:
                self.set_current_namespace(target)
                current = self.get_internal()
                self.update_internal(
                    merged if current is None else self._merge_values(current, merged)
                )
        finally:
            self.set_current_namespace(previous)


class InternalValueState(InternalKvState, ValueState[Any]):
    """Backend value state."""


class InternalListState(InternalMergingState, ListState[Any]):
    """Backend list state (raw value: the list)."""

    def get_internal(self) -> list[Any] | None:
        values = self.get()
        return values if values else None

    def update_internal(self, value: Any) -> None:
        self.update(value)

    def _merge_values(self, left: Any, right: Any) -> Any:
        return list(left) + list(right)


class InternalMapState(InternalKvState, MapState[Any, Any]):
    """Backend map state."""

    #: the descriptor's map-key serializer (bound at construction)
    _key_serializer: TypeSerializer[Any]

    def _bind_descriptor(self) -> None:
        self._key_serializer = _user_key_serializer("map", self.descriptor)


class InternalReducingState(InternalMergingState, ReducingState[Any]):
    """Backend reducing state (raw value: the reduced value)."""

    #: the descriptor's reduce function (bound at construction)
    _reduce: Callable[[Any, Any], Any]

    def _bind_descriptor(self) -> None:
        descriptor = self.descriptor
        if not isinstance(descriptor, ReducingStateDescriptor):
            raise StateDescriptorError(
                f"reducing state {descriptor.name!r} needs a ReducingStateDescriptor, "
                f"got {descriptor!r}"
            )
        self._reduce = descriptor.reduce

    def _merge_values(self, left: Any, right: Any) -> Any:
        return self._reduce(left, right)


class InternalAggregatingState(InternalMergingState, AggregatingState[Any, Any]):
    """Backend aggregating state (raw value: the accumulator)."""

    #: the descriptor's AggregateFunction (bound at construction; any object with its methods)
    _agg_function: Any

    def _bind_descriptor(self) -> None:
        descriptor = self.descriptor
        if not isinstance(descriptor, AggregatingStateDescriptor):
            raise StateDescriptorError(
                f"aggregating state {descriptor.name!r} needs an AggregatingStateDescriptor, "
                f"got {descriptor!r}"
            )
        self._agg_function = descriptor.agg_function

    def _merge_values(self, left: Any, right: Any) -> Any:
        return self._agg_function.merge(left, right)


class InternalBinarySortedState(InternalKvState, BinarySortedState[Any, Any]):
    """Backend binary sorted state."""

    #: the descriptor's sort-key serializer (bound at construction)
    _key_serializer: TypeSerializer[Any]

    def _bind_descriptor(self) -> None:
        self._key_serializer = _user_key_serializer("sorted", self.descriptor)
