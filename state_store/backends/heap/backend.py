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
from typing import Any, Protocol, cast

from ...entries import StateEntry, StateKind, concat_canonical, sort_canonical
from ...exceptions import KeyGroupError, StateError
from ...keygroups import DEFAULT_MAX_PARALLELISM
from ...serializers import TypeSerializer
from .. import _pystates
from .._pystates import NoKeyTable, PyState, PyValueState
from ..base import TableStateBackend
from .ttl import heap_ttl_cleanup

__all__ = ["HeapKeyedStateBackend"]

_crc32 = zlib.crc32
_KEY_GROUP = itemgetter(0)

#: the containers of a key group by ``(key bytes, namespace)``; the key bytes are None only
#: in the lookups made while no key is set, which go to the ``NoKeyTable``
_Table = dict[tuple[bytes | None, Any], Any]
#: an owned key group's table: every key in it was set, so its key bytes are bytes
_OwnedTable = dict[tuple[bytes, Any], Any]


class _NotOwnedTable(NoKeyTable):
    """Container table of a key group the backend does not own: every access raises
    ``KeyGroupError`` (states only reach owned key groups)."""

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise KeyGroupError(
            f"state {self._state_name!r}: a key group outside this backend's key groups")

    get = __getitem__ = __setitem__ = __delitem__ = __contains__ = pop = setdefault = _fail


class _HeapStorage(PyState):
    """Containers in ``self._tables[key_group][(key_bytes, namespace)]``."""

    _backend: HeapKeyedStateBackend
    _tables: list[_Table]

    def _init_storage(self) -> None:
        backend = self._backend
        tables: list[_Table] = [_NotOwnedTable(self._name)] * (backend.max_parallelism + 1)
        for key_group in backend.key_group_range:
            tables[key_group] = {}
        tables[backend.max_parallelism] = NoKeyTable(self._name)
        self._tables = tables

    def _get(self) -> Any:
        backend = self._backend
        return self._tables[backend._kg].get((backend._key_bytes, self._ns))

    def _put(self, container: Any) -> None:
        backend = self._backend
        self._tables[backend._kg][(backend._key_bytes, self._ns)] = container

    def _remove(self) -> None:
        backend = self._backend
        self._tables[backend._kg].pop((backend._key_bytes, self._ns), None)

    def _iter_containers(self, key_group: int) -> Iterator[tuple[bytes, Any, Any]]:
        table = cast(_OwnedTable, self._tables[key_group])
        if table:
            for (key_bytes, namespace), container in list(table.items()):
                yield key_bytes, namespace, container

    def _place(self, key_group: int, key_bytes: bytes, namespace: Any, container: Any) -> None:
        self._tables[key_group][(key_bytes, namespace)] = container

    def _get_at(self, key_group: int, key_bytes: bytes, namespace: Any) -> Any:
        return self._tables[key_group].get((key_bytes, namespace))

    def _remove_at(self, key_group: int, key_bytes: bytes, namespace: Any) -> None:
        self._tables[key_group].pop((key_bytes, namespace), None)

    def _keys_in_namespace(self, namespace: Any) -> list[tuple[int, bytes]]:
        found: list[tuple[int, bytes]] = []
        for key_group, table in enumerate(cast("list[_OwnedTable]", self._tables[:-1])):
            if table:
                found.extend(
                    (key_group, key_bytes) for key_bytes, ns in table if ns == namespace
                )
        return found


class HeapValueState(_HeapStorage, PyValueState):
    """Value state with the container lookups inlined (the hot path)."""

    def value(self) -> Any:
        backend = self._backend
        return self._tables[backend._kg].get((backend._key_bytes, self._ns))

    def update(self, value: Any) -> None:
        backend = self._backend
        if value is None:
            self._tables[backend._kg].pop((backend._key_bytes, self._ns), None)
        else:
            self._tables[backend._kg][(backend._key_bytes, self._ns)] = value


class HeapListState(_HeapStorage, _pystates.PyListState):
    """Heap list state."""


class HeapMapState(_HeapStorage, _pystates.PyMapState):
    """Heap map state."""


class HeapReducingState(_HeapStorage, _pystates.PyReducingState):
    """Heap reducing state."""


class HeapAggregatingState(_HeapStorage, _pystates.PyAggregatingState):
    """Heap aggregating state."""


class HeapSortedState(_HeapStorage, _pystates.PySortedState):
    """Heap binary sorted state (a ``SortedDict`` per key and namespace)."""


_HEAP_STATES: dict[StateKind, type[PyState]] = {
    StateKind.VALUE: HeapValueState,
    StateKind.LIST: HeapListState,
    StateKind.MAP: HeapMapState,
    StateKind.REDUCING: HeapReducingState,
    StateKind.AGGREGATING: HeapAggregatingState,
    StateKind.SORTED: HeapSortedState,
}


class _KeySetter(Protocol):
    """``set_current_key``'s signature."""

    def __call__(self, key: Any, key_bytes: bytes | None = None) -> None: ...


class _HeapCurrentKey(TableStateBackend):
    """The heap backend's ``set_current_key``, in a base class of its own so that the backend
    can declare the name an instance attribute (which
    :meth:`HeapKeyedStateBackend.call_after_set_key` replaces per instance)."""

    _kg: int

    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        if key_bytes is None:
            key_bytes = self.key_serializer.serialize(key)
        key_group = _crc32(key_bytes) % self.max_parallelism
        if not self._full_range and key_group not in self.key_group_range:
            self._check_key_group(key_group, key)
        self._key = key
        self._key_bytes = key_bytes
        self._kg = key_group


class HeapKeyedStateBackend(_HeapCurrentKey):
    """Heap backend: fast, holds everything in memory (Flink's ``HeapKeyedStateBackend``)."""

    backend_name = "hashmap"
    STATE_CLASSES = _HEAP_STATES
    TTL_CLEANUP = heap_ttl_cleanup

    #: the class's ``set_current_key``, or per instance its wrapper calling the callbacks of
    #: :meth:`call_after_set_key`
    set_current_key: _KeySetter

    def __init__(self, key_serializer: TypeSerializer[Any],
                 max_parallelism: int = DEFAULT_MAX_PARALLELISM,
                 key_group_range: range | None = None) -> None:
        super().__init__(key_serializer, max_parallelism, key_group_range)
        #: key group of the current key; ``max_parallelism`` (the NoKeyTable slot) when unset
        self._kg = self.max_parallelism
        self._pending_states: dict[str, dict[int, list[StateEntry]]] = {}
        self._key_callbacks: list[Callable[[], None]] = []

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

        self.set_current_key = set_current_key  # per instance: one call less per record

    def _load_pending(self, name: str, state: Any) -> None:
        pending = self._pending_states.pop(name, None)
        if pending:
            state.load_entries(chain.from_iterable(pending.values()))

    def _keep_pending(self, entry: StateEntry) -> None:
        self._pending_states.setdefault(entry.state_name, {}).setdefault(
            entry.key_group, []).append(entry)

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

    def _pending_entries(self, state_name: str) -> Iterable[StateEntry] | None:
        pending = self._pending_states.get(state_name)
        return None if pending is None else chain.from_iterable(pending.values())

    def close(self) -> None:
        self._states.clear()
        self._pending_states.clear()
        self._timer_queues.clear()
        super().close()
