"""``HeapKeyedStateBackend``: keyed state as Python objects in dicts, one dict per key group.

Values are kept deserialized (serialized only by ``snapshot()``); with
pre-serialized key bytes, ``set_current_key`` does no serialization. Each
state keeps a list indexed by key group of dicts ``(key bytes, namespace) ->
container``, so one key group (or a range) can be snapshotted on its own.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, groupby
from operator import itemgetter
from typing import Any

from ...entries import StateEntry, StateKind, concat_canonical, sort_canonical
from ...exceptions import KeyGroupError, StateError
from ...keygroups import DEFAULT_MAX_PARALLELISM
from ...namespaces import VOID_NAMESPACE
from ...serializers import TypeSerializer
from ...ttl_states import TtlState
from .._pystates import (
    NoKeyTable,
    PyAggregatingState,
    PyListState,
    PyMapState,
    PyReducingState,
    PySortedState,
    PyState,
    PyValueState,
)
from ..base import TableStateBackend
from .ttl import heap_ttl_cleanup

__all__ = ["HeapKeyedStateBackend"]

_crc32 = zlib.crc32
_KEY_GROUP = itemgetter(0)


class _HeapStorage:
    """Containers in ``self._tables[key_group][(key_bytes, namespace)]``."""

    _backend: HeapKeyedStateBackend
    _name: str
    _ns: Any
    _tables: list[dict[tuple[bytes, Any], Any] | None]

    def _init_storage(self) -> None:
        backend = self._backend
        tables: list[dict[tuple[bytes, Any], Any] | None] = [None] * (
            backend.max_parallelism + 1
        )
        for key_group in backend.key_group_range:
            tables[key_group] = {}
        tables[backend.max_parallelism] = NoKeyTable(self._name)
        self._tables = tables

    def _get(self) -> Any:
        backend = self._backend
        return self._tables[backend._kg].get((backend._key_bytes, self._ns))  # type: ignore[union-attr, arg-type]  # the current key group: set with the key (hot path)

    def _put(self, container: Any) -> None:
        backend = self._backend
        self._tables[backend._kg][(backend._key_bytes, self._ns)] = container  # type: ignore[index]  # the current key group: set with the key (hot path)

    def _remove(self) -> None:
        backend = self._backend
        self._tables[backend._kg].pop((backend._key_bytes, self._ns), None)  # type: ignore[union-attr, arg-type]  # the current key group: set with the key (hot path)

    def _iter_containers(self, key_group: int) -> Iterator[tuple[bytes, Any, Any]]:
        table = self._tables[key_group]
        if table:
            for (key_bytes, namespace), container in list(table.items()):
                yield key_bytes, namespace, container

    def _place(self, key_group: int, key_bytes: bytes, namespace: Any, container: Any) -> None:
        self._tables[key_group][(key_bytes, namespace)] = container  # type: ignore[index]  # the current key group: set with the key (hot path)

    def _get_at(self, key_group: int, key_bytes: bytes, namespace: Any) -> Any:
        return self._tables[key_group].get((key_bytes, namespace))  # type: ignore[union-attr]  # the current key group: set with the key (hot path)

    def _remove_at(self, key_group: int, key_bytes: bytes, namespace: Any) -> None:
        self._tables[key_group].pop((key_bytes, namespace), None)  # type: ignore[union-attr]  # the current key group: set with the key (hot path)

    def _keys_in_namespace(self, namespace: Any) -> list[tuple[int, bytes]]:
        found: list[tuple[int, bytes]] = []
        for key_group, table in enumerate(self._tables[:-1]):
            if table:
                found.extend(
                    (key_group, key_bytes) for key_bytes, ns in table if ns == namespace
                )
        return found


class HeapValueState(_HeapStorage, PyValueState):
    """Value state with the container lookups inlined (the hot path)."""

    def value(self) -> Any:
        backend = self._backend
        return self._tables[backend._kg].get((backend._key_bytes, self._ns))  # type: ignore[union-attr, arg-type]  # the current key group: set with the key (hot path)

    def update(self, value: Any) -> None:
        backend = self._backend
        if value is None:
            self._tables[backend._kg].pop((backend._key_bytes, self._ns), None)  # type: ignore[union-attr, arg-type]  # the current key group: set with the key (hot path)
        else:
            self._tables[backend._kg][(backend._key_bytes, self._ns)] = value  # type: ignore[index]  # the current key group: set with the key (hot path)


class HeapListState(_HeapStorage, PyListState):
    """Heap list state."""


class HeapMapState(_HeapStorage, PyMapState):
    """Heap map state."""


class HeapReducingState(_HeapStorage, PyReducingState):
    """Heap reducing state."""


class HeapAggregatingState(_HeapStorage, PyAggregatingState):
    """Heap aggregating state."""


class HeapSortedState(_HeapStorage, PySortedState):
    """Heap binary sorted state (a ``SortedDict`` per key and namespace)."""


_HEAP_STATES: dict[StateKind, type[PyState]] = {
    StateKind.VALUE: HeapValueState,
    StateKind.LIST: HeapListState,
    StateKind.MAP: HeapMapState,
    StateKind.REDUCING: HeapReducingState,
    StateKind.AGGREGATING: HeapAggregatingState,
    StateKind.SORTED: HeapSortedState,
}


class HeapKeyedStateBackend(TableStateBackend):
    """Heap backend: fast, holds everything in memory (Flink's ``HeapKeyedStateBackend``)."""

    backend_name = "hashmap"
    STATE_CLASSES = _HEAP_STATES
    TTL_CLEANUP = heap_ttl_cleanup

    def __init__(
        self,
        key_serializer: TypeSerializer[Any],
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        key_group_range: range | None = None,
    ) -> None:
        super().__init__(key_serializer, max_parallelism, key_group_range)
        #: key group of the current key; ``max_parallelism`` (the NoKeyTable slot) when unset
        self._kg = self.max_parallelism
        self._pending_states: dict[str, dict[int, list[StateEntry]]] = {}
        self._key_callbacks: list[Callable[[], None]] = []

    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        if key_bytes is None:
            key_bytes = self.key_serializer.serialize(key)
        key_group = _crc32(key_bytes) % self.max_parallelism
        if not self._full_range and key_group not in self.key_group_range:
            self._check_key_group(key_group, key)
        self._key = key
        self._key_bytes = key_bytes
        self._kg = key_group

    def get_current_key_group(self) -> int:
        if self._key_bytes is None:
            raise StateError("no current key: call set_current_key first")
        return self._kg

    def call_after_set_key(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every ``set_current_key`` (state TTL's incremental cleanup
        run for every record); costs nothing until the first callback is added."""
        callbacks = self._key_callbacks
        callbacks.append(callback)
        if len(callbacks) > 1:
            return
        plain = self.set_current_key

        def set_current_key(key: Any, key_bytes: bytes | None = None) -> None:
            plain(key, key_bytes)
            for after in callbacks:
                after()

        self.set_current_key = set_current_key  # type: ignore[method-assign]  # per instance: one call less per record

    def _load_pending(self, name: str, state: Any) -> None:
        pending = self._pending_states.pop(name, None)
        if pending:
            state.load_entries(chain.from_iterable(pending.values()))

    def _restore_entries(self, entries: Iterable[StateEntry]) -> None:
        for_registered: dict[str, list[StateEntry]] = {}
        for entry in entries:
            name = entry.state_name
            if name in self._states:
                for_registered.setdefault(name, []).append(entry)
            else:
                self._pending_states.setdefault(name, {}).setdefault(entry.key_group, []).append(
                    entry
                )
        for name, state_entries in for_registered.items():
            state = self._states[name].state
            assert isinstance(state, (PyState, TtlState))
            state.load_entries(state_entries)

    def _snapshot_key_groups(self, key_groups: Iterable[int] | None) -> list[int]:
        if key_groups is None:
            return list(self.key_group_range)
        selected = sorted(set(key_groups))
        for key_group in selected:
            if key_group not in self.key_group_range:
                raise KeyGroupError(
                    f"cannot snapshot key group {key_group}: this backend owns "
                    f"{self.key_group_range.start}..{self.key_group_range.stop - 1}"
                )
        return selected

    def snapshot(self, key_groups: Iterable[int] | None = None) -> Iterator[StateEntry]:
        self._check_open()
        selected = self._snapshot_key_groups(key_groups)
        timers: dict[int, list[list[StateEntry]]] = {}
        for run in self.timer_runs():
            for key_group, entries in groupby(run, _KEY_GROUP):
                timers.setdefault(key_group, []).append(list(entries))
        states = [registration.state for registration in self._states.values()]
        pending = list(self._pending_states.values())
        return self._snapshot(selected, states, pending, timers)

    @staticmethod
    def _snapshot(
        selected: list[int],
        states: list[Any],
        pending: list[dict[int, list[StateEntry]]],
        timers: dict[int, list[list[StateEntry]]],
    ) -> Iterator[StateEntry]:
        """Per key group: the states' entries sorted, merged with the (sorted) timer runs."""
        for key_group in selected:
            batch: list[StateEntry] = []
            for state in states:
                batch.extend(state.snapshot_entries(key_group))
            for by_group in pending:
                batch.extend(by_group.get(key_group, ()))
            runs = timers.get(key_group)
            if runs:
                yield from concat_canonical([sort_canonical(batch), *runs])
            elif batch:
                yield from sort_canonical(batch)

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        self._check_open()
        registration = self._states.get(state_name)
        if registration is not None:
            found: Any = registration.state._keys_in_namespace(namespace)  # type: ignore[attr-defined]  # the backend's own state classes define it
        elif state_name in self._pending_states:
            ns_bytes = self._namespace_bytes_for(state_name, namespace)
            found = {
                (entry.key_group, entry.key)
                for entries in self._pending_states[state_name].values()
                for entry in entries
                if entry.namespace == ns_bytes
            }
        elif state_name in self._restored_meta:
            found = []
        else:
            raise StateError(f"keys(): unknown state {state_name!r}")
        deserialize = self.key_serializer.deserialize
        return iter([deserialize(key_bytes) for _, key_bytes in sorted(set(found))])

    def close(self) -> None:
        self._states.clear()
        self._pending_states.clear()
        self._timer_queues.clear()
        super().close()
