"""Temporal state (FLIP-220): values and lists per timestamp of the current key.

Both facades sit on a :class:`~.state.BinarySortedState` whose keys are longs
serialized with ``LexicographicLongSerializer``; backends build them from a
``ValueStateDescriptor`` / ``ListStateDescriptor``
(``backend.get_temporal_value_state`` / ``get_temporal_list_state``), so the
"at or before" / "at or after" lookups are one ordered seek in every backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .exceptions import StateError
from .state import BinarySortedState

__all__ = ["TemporalValue", "TemporalValueState", "TemporalListState"]


class TemporalValue(NamedTuple):
    """A value together with the timestamp it is stored under."""

    timestamp: int
    value: Any


class _TemporalBase:
    def __init__(self, sorted_state: BinarySortedState[int, Any],
                 set_namespace: Callable[[Any], None]) -> None:
        self._state = sorted_state
        #: the sorted state's ``set_current_namespace`` (a backend's state has it, the user
        #: interface does not)
        self._set_namespace = set_namespace

    @property
    def sorted_state(self) -> BinarySortedState[int, Any]:
        """The underlying sorted state."""
        return self._state

    def set_current_namespace(self, namespace: Any) -> None:
        """Scope later calls to ``namespace`` (runtime use).

        Args:
            namespace: The namespace (a window, or the void namespace).
        """
        self._set_namespace(namespace)

    def clear(self, timestamp: int) -> None:
        """Remove what is stored at ``timestamp``.

        Args:
            timestamp: The event time in ms.
        """
        self._state.clear_entry_at(timestamp)

    def clear_all(self) -> None:
        """Remove everything of the current key."""
        self._state.clear()


class TemporalValueState(_TemporalBase):
    """One value per timestamp. Obtained from
    ``runtime_context.get_temporal_value_state(descriptor)``; not constructed directly.
    """

    def value_at(self, timestamp: int) -> TemporalValue | None:
        """The value stored exactly at ``timestamp``.

        Args:
            timestamp: The event time in ms.

        Returns:
            ``TemporalValue(timestamp, value)``, or None when there is none.
        """
        values = self._state.values_at(timestamp)
        return TemporalValue(timestamp, values[-1]) if values else None

    def value_at_or_before(self, timestamp: int) -> TemporalValue | None:
        """The value at the greatest timestamp ``<= timestamp``.

        Args:
            timestamp: The event time in ms.

        Returns:
            ``TemporalValue(timestamp, value)``, or None when there is none.
        """
        entry = self._state.last_entry(timestamp)
        return TemporalValue(entry[0], entry[1][-1]) if entry else None

    def value_at_or_after(self, timestamp: int) -> TemporalValue | None:
        """The value at the smallest timestamp ``>= timestamp``.

        Args:
            timestamp: The event time in ms.

        Returns:
            ``TemporalValue(timestamp, value)``, or None when there is none.
        """
        entry = self._state.first_entry(timestamp)
        return TemporalValue(entry[0], entry[1][-1]) if entry else None

    def update(self, timestamp: int, value: Any) -> None:
        """Store ``value`` at ``timestamp`` (None clears that timestamp).

        Args:
            timestamp: The event time in ms.
            value: The value, or None to clear that timestamp.
        """
        if value is None:
            self._state.clear_entry_at(timestamp)
        else:
            self._state.put(timestamp, [value])


class TemporalListState(_TemporalBase):
    """A list of values per timestamp. Obtained from
    ``runtime_context.get_temporal_list_state(descriptor)``; not constructed directly.
    """

    def get_at(self, timestamp: int) -> TemporalValue | None:
        """The list stored exactly at ``timestamp``.

        Args:
            timestamp: The event time in ms.

        Returns:
            ``TemporalValue(timestamp, value)`` with the list as ``value``, or None.
        """
        values = self._state.values_at(timestamp)
        return TemporalValue(timestamp, values) if values else None

    def get_at_or_before(self, timestamp: int) -> TemporalValue | None:
        """The list at the greatest timestamp ``<= timestamp``.

        Args:
            timestamp: The event time in ms.

        Returns:
            ``TemporalValue(timestamp, value)`` with the list as ``value``, or None.
        """
        entry = self._state.last_entry(timestamp)
        return TemporalValue(entry[0], entry[1]) if entry else None

    def get_at_or_after(self, timestamp: int) -> TemporalValue | None:
        """The list at the smallest timestamp ``>= timestamp``.

        Args:
            timestamp: The event time in ms.

        Returns:
            ``TemporalValue(timestamp, value)`` with the list as ``value``, or None.
        """
        entry = self._state.first_entry(timestamp)
        return TemporalValue(entry[0], entry[1]) if entry else None

    def update(self, timestamp: int, values: Iterable[Any] | None) -> None:
        """Replace the list at ``timestamp`` (None/empty clears it).

        Args:
            timestamp: The event time in ms.
            values: The new list, or None.

        Raises:
            StateError: An element is None.
        """
        items = [] if values is None else list(values)
        self._check_no_none(items)
        self._state.put(timestamp, items)

    def add_all(self, timestamp: int, values: Iterable[Any] | None) -> None:
        """Append every element of ``values`` at ``timestamp``.

        Args:
            timestamp: The event time in ms.
            values: The elements, or None.

        Raises:
            StateError: An element is None.
        """
        items = [] if values is None else list(values)
        self._check_no_none(items)
        for value in items:
            self._state.add(timestamp, value)

    def add(self, timestamp: int, value: Any) -> None:
        """Append ``value`` at ``timestamp`` (None is refused, as in ListState).

        Args:
            timestamp: The event time in ms.
            value: The element.

        Raises:
            StateError: ``value`` is None.
        """
        self._check_no_none((value,))
        self._state.add(timestamp, value)

    def _check_no_none(self, values: Iterable[Any]) -> None:
        for value in values:
            if value is None:
                name = getattr(getattr(self._state, "descriptor", None), "name", "?")
                raise StateError(f"cannot add None to temporal list state {name!r}")
