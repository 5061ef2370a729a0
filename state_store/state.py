"""User-facing keyed state interfaces (PyFlink names and semantics).

All state is scoped to the current key (and, inside the runtime, the current
namespace). Semantics shared by every backend:

* ``ValueState.value()`` is None when unset; ``update(None)`` clears (as Flink).
* ``ListState.get()`` returns a list (``[]`` when empty); ``add(None)`` and a None
  element in ``add_all``/``update`` raise :class:`~.exceptions.StateError` (Flink
  refuses null list elements); ``update([])`` / ``update(None)`` clear.
* ``MapState.get(k)`` is None for a missing key; ``remove`` of a missing key is a
  no-op; ``keys()/values()/items()`` are iterables (order unspecified).
* ``ReducingState.get()`` / ``AggregatingState.get()`` are None when empty;
  ``add(None)`` clears the state (Flink's behaviour).
* Heap-based backends store object references: mutating a value after
  ``update``/``get`` may change the stored state (as in Flink's heap backend);
  treat state values as immutable for backend-independent behaviour.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

__all__ = [
    "State",
    "ValueState",
    "AppendingState",
    "MergingState",
    "ListState",
    "MapState",
    "ReducingState",
    "AggregatingState",
    "BinarySortedState",
]

T = TypeVar("T")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
K = TypeVar("K")
V = TypeVar("V")


class State(ABC):
    """Base of all keyed states."""

    @abstractmethod
    def clear(self) -> None:
        """Remove the state of the current key (and namespace)."""


class ValueState(State, Generic[T]):
    """A single value per key."""

    @abstractmethod
    def value(self) -> T | None:
        """The current value, or None when unset.

        Returns:
            The value, or None.
        """

    @abstractmethod
    def update(self, value: T | None) -> None:
        """Set the value; ``None`` clears it.

        Args:
            value: The new value, or None to clear.
        """


class AppendingState(State, Generic[IN, OUT]):
    """State that values are added to and read as a whole."""

    @abstractmethod
    def get(self) -> OUT:
        """The current contents.

        Returns:
            The contents.
        """

    @abstractmethod
    def add(self, value: IN) -> None:
        """Add one value.

        Args:
            value: The value.
        """


class MergingState(AppendingState[IN, OUT]):
    """Appending state whose namespaces can be merged (merging windows)."""


class ListState(MergingState[T, list[T]]):
    """A list of values per key."""

    @abstractmethod
    def get(self) -> list[T]:
        """The elements in insertion order (``[]`` when empty).

        Returns:
            A list of the elements.
        """

    @abstractmethod
    def add(self, value: T) -> None:
        """Append one element (None is refused).

        Args:
            value: The element.

        Raises:
            StateError: ``value`` is None.
        """

    @abstractmethod
    def add_all(self, values: Iterable[T] | None) -> None:
        """Append every element of ``values`` (None/empty: no-op).

        Args:
            values: The elements, or None.

        Raises:
            StateError: An element is None.
        """

    @abstractmethod
    def update(self, values: Iterable[T] | None) -> None:
        """Replace the list with ``values`` (None/empty: clear).

        Args:
            values: The new elements, or None.

        Raises:
            StateError: An element is None.
        """


class MapState(State, Generic[K, V]):
    """A map per key; map keys are stored by their serialized bytes."""

    @abstractmethod
    def get(self, key: K) -> V | None:
        """Value under ``key`` or None.

        Args:
            key: The map key.

        Returns:
            The value, or None when absent.
        """

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        """Set ``key`` to ``value``.

        Args:
            key: The map key.
            value: The value.
        """

    @abstractmethod
    def put_all(self, mapping: dict[K, V] | Iterable[tuple[K, V]]) -> None:
        """Put every entry of ``mapping``.

        Args:
            mapping: A dict or an iterable of ``(key, value)`` pairs.
        """

    @abstractmethod
    def remove(self, key: K) -> None:
        """Remove ``key`` (no-op when absent).

        Args:
            key: The map key.
        """

    @abstractmethod
    def contains(self, key: K) -> bool:
        """True when ``key`` is present.

        Args:
            key: The map key.

        Returns:
            Whether ``key`` is present.
        """

    @abstractmethod
    def items(self) -> Iterable[tuple[K, V]]:
        """All ``(key, value)`` pairs.

        Returns:
            The entries.
        """

    @abstractmethod
    def keys(self) -> Iterable[K]:
        """All keys.

        Returns:
            The keys.
        """

    @abstractmethod
    def values(self) -> Iterable[V]:
        """All values.

        Returns:
            The values.
        """

    @abstractmethod
    def is_empty(self) -> bool:
        """True when the map has no entry.

        Returns:
            Whether the map is empty.
        """

    # PyFlink's MapState reads as a mapping too: ``state[k]`` is ``get(k)`` (None when
    # absent), ``state[k] = v`` is ``put``, ``del state[k]`` is ``remove``.
    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def __contains__(self, key: K) -> bool:
        return self.contains(key)


class ReducingState(MergingState[T, T | None]):
    """Values folded into one with a reduce function."""

    @abstractmethod
    def get(self) -> T | None:
        """The reduced value, or None when nothing was added.

        Returns:
            The reduced value, or None.
        """

    @abstractmethod
    def add(self, value: T) -> None:
        """Reduce ``value`` into the state (None clears).

        Args:
            value: The value, or None to clear the state.
        """


class AggregatingState(MergingState[IN, OUT | None]):
    """Values aggregated through an accumulator (an AggregateFunction)."""

    @abstractmethod
    def get(self) -> OUT | None:
        """``get_result(accumulator)``, or None when nothing was added.

        Returns:
            The aggregate result, or None.
        """

    @abstractmethod
    def add(self, value: IN) -> None:
        """Add ``value`` to the accumulator (None clears).

        Args:
            value: The input value, or None to clear the state.
        """


class BinarySortedState(State, Generic[K, V]):
    """Lists of values under sort keys, ordered by the key serializer's bytes (FLIP-220).

    ``from_key`` is always inclusive; ``to_key`` is inclusive only where
    ``inclusive_to_key`` says so. Values under one key keep insertion order.
    Lookups return ``(key, values)`` tuples or None; ranges are iterables of
    them in key order.
    """

    @abstractmethod
    def values_at(self, key: K) -> list[V] | None:
        """Values under ``key`` or None.

        Args:
            key: The sort key.

        Returns:
            The list of values under ``key``, or None when absent.
        """

    @abstractmethod
    def add(self, key: K, value: V) -> None:
        """Append ``value`` under ``key``.

        Args:
            key: The sort key.
            value: The value.
        """

    @abstractmethod
    def put(self, key: K, values: Iterable[V]) -> None:
        """Replace the values under ``key`` (empty: remove the key).

        Args:
            key: The sort key.
            values: The new values.
        """

    @abstractmethod
    def clear_entry_at(self, key: K) -> None:
        """Remove ``key`` and its values.

        Args:
            key: The sort key.
        """

    @abstractmethod
    def first_entry(self, from_key: K | None = None) -> tuple[K, list[V]] | None:
        """Smallest key (``>= from_key`` when given) with its values.

        Args:
            from_key: Lower bound (inclusive), or None for none.

        Returns:
            ``(key, values)``, or None when no key qualifies.
        """

    @abstractmethod
    def last_entry(self, to_key: K | None = None) -> tuple[K, list[V]] | None:
        """Greatest key (``<= to_key`` when given) with its values.

        Args:
            to_key: Upper bound (inclusive), or None for none.

        Returns:
            ``(key, values)``, or None when no key qualifies.
        """

    @abstractmethod
    def read_range(
        self, from_key: K, to_key: K, inclusive_to_key: bool
    ) -> Iterable[tuple[K, list[V]]]:
        """Entries with ``from_key <= key < to_key`` (``<=`` when inclusive).

        Args:
            from_key: Lower bound (inclusive).
            to_key: Upper bound.
            inclusive_to_key: Whether ``to_key`` itself is included.

        Returns:
            The ``(key, values)`` entries in ascending key order.
        """

    @abstractmethod
    def read_range_until(self, to_key: K, inclusive_to_key: bool) -> Iterable[tuple[K, list[V]]]:
        """Entries with ``key < to_key`` (``<=`` when inclusive).

        Args:
            to_key: Upper bound.
            inclusive_to_key: Whether ``to_key`` itself is included.

        Returns:
            The ``(key, values)`` entries in ascending key order.
        """

    @abstractmethod
    def read_range_from(self, from_key: K) -> Iterable[tuple[K, list[V]]]:
        """Entries with ``key >= from_key``.

        Args:
            from_key: Lower bound (inclusive).

        Returns:
            The ``(key, values)`` entries in ascending key order.
        """

    @abstractmethod
    def clear_range(self, from_key: K, to_key: K, inclusive_to_key: bool) -> None:
        """Remove entries with ``from_key <= key < to_key`` (``<=`` when inclusive).

        Args:
            from_key: Lower bound (inclusive).
            to_key: Upper bound.
            inclusive_to_key: Whether ``to_key`` itself is removed.
        """

    @abstractmethod
    def clear_range_until(self, to_key: K, inclusive_to_key: bool) -> None:
        """Remove entries with ``key < to_key`` (``<=`` when inclusive).

        Args:
            to_key: Upper bound.
            inclusive_to_key: Whether ``to_key`` itself is removed.
        """

    @abstractmethod
    def clear_range_from(self, from_key: K) -> None:
        """Remove entries with ``key >= from_key``.

        Args:
            from_key: Lower bound (inclusive).
        """

    @abstractmethod
    def clear(self) -> None:
        """Remove every entry of the current key (and namespace)."""
