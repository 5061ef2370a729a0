"""``SingleKeyStateBackend``: the BATCH backend of FLIP-140.

In BATCH execution the input of a keyed operator is sorted by key, so only the
current key's state is ever needed. This backend keeps exactly that, in one
plain dict ``slot -> container`` (the slot: the state name, or ``(state name, namespace)``
for a namespace other than the void one); switching to another key
first calls the key-change listeners (where the runtime fires the previous
key's timers), then drops the previous key's state and timers by replacing the
dict. No key groups are tracked per access, which makes it the fastest backend.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from ...backend import TimerQueue
from ...entries import StateEntry, StateKind, StateMetaInfo, canonical_sort_key
from ...exceptions import StateBackendError, StateError
from ...keygroups import DEFAULT_MAX_PARALLELISM
from ...namespaces import VOID_NAMESPACE, VOID_NAMESPACE_SERIALIZER
from ...serializers import TypeSerializer
from ...ttl_states import TtlState
from .. import _pystates
from .._pystates import NoKeyTable, PyState, PyValueState
from ..base import TableStateBackend

__all__ = ["SingleKeyStateBackend"]

_crc32 = zlib.crc32
_new_tuple = tuple.__new__


def _slot_of(name: str, namespace: Any) -> Any:
    """The store's key of a container: the state's name in the void namespace (a string hashes
    from its cache, a tuple is hashed again on each access: the per-record path), else
    ``(name, namespace)``."""
    return name if namespace is VOID_NAMESPACE else (name, namespace)


def _name_and_namespace(slot: Any) -> tuple[str, Any]:
    """``(state name, namespace)`` of a store key (:func:`_slot_of` reversed)."""
    return (slot, VOID_NAMESPACE) if type(slot) is str else slot


class _SingleKeyStorage(PyState):
    """Containers in ``backend._store[slot]`` (:func:`_slot_of`)."""

    _backend: SingleKeyStateBackend

    def _init_storage(self) -> None:
        self._slot: Any = self._name

    def set_current_namespace(self, namespace: Any) -> None:
        self._ns = namespace
        self._slot = _slot_of(self._name, namespace)

    def _get(self) -> Any:
        return self._backend._store.get(self._slot)

    def _put(self, container: Any) -> None:
        self._backend._store[self._slot] = container

    def _remove(self) -> None:
        self._backend._store.pop(self._slot, None)

    def _iter_containers(self, key_group: int) -> Iterator[tuple[bytes, Any, Any]]:
        backend = self._backend
        if backend._key_bytes is None or key_group != backend.get_current_key_group():
            return
        name = self._name
        for slot, container in list(backend._store.items()):
            state_name, namespace = _name_and_namespace(slot)
            if state_name == name:
                yield backend._key_bytes, namespace, container

    def container_snapshot(self, key_group: int, key_bytes: bytes, namespace: Any,
                           container: Any) -> Sequence[StateEntry]:
        """The entries of one container of the current key (a BATCH savepoint snapshots
        every key at its end, so the backend builds them in one pass over its store)."""
        name = self._name
        ns_bytes = self.namespace_serializer.serialize(namespace)
        return [_new_tuple(StateEntry, (key_group, name, key_bytes, ns_bytes, user_key, value))
                for user_key, value in self._container_entries(container)]

    def _place(self, key_group: int, key_bytes: bytes, namespace: Any, container: Any) -> None:
        backend = self._backend
        if key_bytes != backend._key_bytes:
            raise StateBackendError(
                f"SingleKeyStateBackend holds one key; cannot restore state {self._name!r} of "
                f"key bytes {key_bytes!r} while the current key bytes are {backend._key_bytes!r}"
            )
        backend._store[_slot_of(self._name, namespace)] = container

    def _keys_in_namespace(self, namespace: Any) -> list[tuple[int, bytes]]:
        backend = self._backend
        if backend._key_bytes is not None and _slot_of(self._name, namespace) in backend._store:
            return [(backend.get_current_key_group(), backend._key_bytes)]
        return []


class SingleKeyValueState(_SingleKeyStorage, PyValueState):
    """Value state with the container lookups inlined (the hot path)."""

    def container_snapshot(self, key_group: int, key_bytes: bytes, namespace: Any,
                           container: Any) -> Sequence[StateEntry]:
        return (_new_tuple(StateEntry, (
            key_group, self._name, key_bytes, self.namespace_serializer.serialize(namespace),
            b"", self._value_serializer.serialize(container))),)

    def value(self) -> Any:
        return self._backend._store.get(self._slot)

    def update(self, value: Any) -> None:
        if value is None:
            self._backend._store.pop(self._slot, None)
        else:
            self._backend._store[self._slot] = value


class SingleKeyListState(_SingleKeyStorage, _pystates.PyListState):
    """Single-key list state."""


class SingleKeyMapState(_SingleKeyStorage, _pystates.PyMapState):
    """Single-key map state."""


class SingleKeyReducingState(_SingleKeyStorage, _pystates.PyReducingState):
    """Single-key reducing state."""


class SingleKeyAggregatingState(_SingleKeyStorage, _pystates.PyAggregatingState):
    """Single-key aggregating state."""


class SingleKeySortedState(_SingleKeyStorage, _pystates.PySortedState):
    """Single-key binary sorted state."""


_SINGLE_KEY_STATES: dict[StateKind, type[PyState]] = {
    StateKind.VALUE: SingleKeyValueState,
    StateKind.LIST: SingleKeyListState,
    StateKind.MAP: SingleKeyMapState,
    StateKind.REDUCING: SingleKeyReducingState,
    StateKind.AGGREGATING: SingleKeyAggregatingState,
    StateKind.SORTED: SingleKeySortedState,
}


class SingleKeyStateBackend(TableStateBackend):
    """Holds only the current key's state; ``set_current_key`` to another key drops it."""

    backend_name = "single_key"
    STATE_CLASSES = _SINGLE_KEY_STATES
    #: BATCH: values keep their last-access timestamps (savepoints carry them) but never
    #: expire; Flink's BATCH state backend does not apply TTL either
    TTL_EXPIRES = False
    holds_one_key = True

    def __init__(self, key_serializer: TypeSerializer[Any],
                 max_parallelism: int = DEFAULT_MAX_PARALLELISM,
                 key_group_range: range | None = None) -> None:
        super().__init__(key_serializer, max_parallelism, key_group_range)
        self._store: dict[Any, Any] = NoKeyTable()
        self._listeners: list[Callable[[Any, bytes], None]] = []
        self._pending_states: dict[str, list[StateEntry]] = {}
        #: True once a key change needs more than swapping the store (listeners, timers,
        #: restored entries, a partial key-group range); keeps the common path minimal
        self._slow_switch = not self._full_range

    # -- current key ---------------------------------------------------------------------------
    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        if key_bytes is None:
            key_bytes = self.key_serializer.serialize(key)
        if key_bytes == self._key_bytes:
            return
        if self._slow_switch:
            self._switch_key(key, key_bytes)
            return
        self._key = key
        self._key_bytes = key_bytes
        self._store = {}

    def _switch_key(self, key: Any, key_bytes: bytes) -> None:
        if not self._full_range:
            self._check_key_group(_crc32(key_bytes) % self.max_parallelism, key)
        if self._key_bytes is not None:
            for listener in self._listeners:
                listener(key, key_bytes)
        for queue in self._timer_queues.values():
            if queue:
                queue.clear()
        if self._pending_states:
            self._pending_states.clear()
        if self._pending_timers:
            self._pending_timers.clear()
        if self._pending_timer_columns:
            self._pending_timer_columns.clear()
        self._key = key
        self._key_bytes = key_bytes
        self._store = {}

    def add_key_change_listener(self, listener: Callable[[Any, bytes], None]) -> None:
        self._slow_switch = True
        super().add_key_change_listener(listener)

    def timer_queue(
        self, name: str, namespace_serializer: TypeSerializer[Any] = VOID_NAMESPACE_SERIALIZER
    ) -> TimerQueue:
        self._slow_switch = True
        return super().timer_queue(name, namespace_serializer)

    def get_current_key_group(self) -> int:
        if self._key_bytes is None:
            raise StateError("no current key: call set_current_key first")
        return _crc32(self._key_bytes) % self.max_parallelism

    def clear_all_for_current_key(self) -> None:
        """Drop every state (not the timers) of the current key."""
        if self._key_bytes is not None:
            self._store = {}

    # -- states ----------------------------------------------------------------------------------
    def _load_pending(self, name: str, state: Any) -> None:
        pending = self._pending_states.pop(name, None)
        if pending:
            state.load_entries(pending)

    # -- snapshot / restore ------------------------------------------------------------------------
    def restore(self, meta_infos: Iterable[StateMetaInfo], entries: Iterable[StateEntry]) -> None:
        """Restore the entries of ONE key (it becomes the current key)."""
        self._check_open()
        rows = list(entries)
        keys = {entry.key for entry in rows}
        if len(keys) > 1:
            raise StateBackendError(
                f"SingleKeyStateBackend.restore accepts the entries of one key, got {len(keys)} "
                f"keys (e.g. {sorted(keys)[:2]!r})"
            )
        if keys:
            (key_bytes,) = keys
            if key_bytes != self._key_bytes:
                self._switch_key(self.key_serializer.deserialize(key_bytes), key_bytes)
        self._slow_switch = True
        super().restore(meta_infos, rows)

    def _keep_pending(self, entry: StateEntry) -> None:
        self._pending_states.setdefault(entry.state_name, []).append(entry)

    def snapshot(self, key_groups: Iterable[int] | None = None) -> Iterator[StateEntry]:
        """The current key's entries (states and timers) in canonical order."""
        self._check_open()
        if self._key_bytes is None:
            return iter(())
        key_bytes = self._key_bytes
        key_group = _crc32(key_bytes) % self.max_parallelism
        if key_groups is not None and key_group not in set(key_groups):
            return iter(())
        batch: list[StateEntry] = []
        store = self._store
        if store:
            # one pass over the store (the current key's alone); a TTL state snapshots
            # itself, once (it leaves out expired values)
            states = self._states
            wrapped: set[str] = set()
            for slot, container in store.items():
                name, namespace = _name_and_namespace(slot)
                state = states[name].state
                if isinstance(state, _SingleKeyStorage):
                    batch.extend(state.container_snapshot(key_group, key_bytes, namespace,
                                                          container))
                elif name not in wrapped:
                    wrapped.add(name)
                    # not the backend's own state: a TTL state (once per state)
                    batch.extend(cast(TtlState, state).snapshot_entries(key_group))
        for entries in self._pending_states.values():
            batch.extend(entries)
        if self._timer_queues or self._pending_timers or self._pending_timer_columns:
            batch.extend(self.timer_entries())
        if len(batch) > 1:
            # one key's few entries: comparing tuples is cheaper than encoding entry keys
            batch.sort(key=canonical_sort_key)
        return iter(batch)

    def _pending_entries(self, state_name: str) -> Iterable[StateEntry] | None:
        return self._pending_states.get(state_name)

    def _key_values(self, found: list[tuple[int, bytes]]) -> Iterator[Any]:
        return iter([self._key] if found else [])  # the one key it holds

    def close(self) -> None:
        self._states.clear()
        self._pending_states.clear()
        self._timer_queues.clear()
        self._store = NoKeyTable()
        super().close()
