"""State kinds over Python objects, shared by the heap and single-key backends.

A state keeps one *container* per (key, namespace): the value, the list, the
map dict, the reduced value, the accumulator, or a ``SortedDict`` for sorted
state. Where the containers live is the backend's business: subclasses supply
``_get()`` / ``_put(container)`` / ``_remove()`` for the current key and
namespace, ``_iter_containers(key_group)`` for snapshots and ``_place(...)``
for restore. Empty containers are never stored, so "has a container" means
"has state".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sortedcontainers import SortedDict

from ..descriptors import StateDescriptor
from ..entries import (
    StateEntry,
    StateKind,
    decode_index,
    encode_index,
    encode_sorted_user_key,
    split_sorted_user_key,
)
from ..exceptions import StateError
from ..internal_state import (
    InternalBinarySortedState,
    InternalKvState,
    InternalListState,
    InternalMapState,
    InternalValueState,
)
from ..namespaces import VOID_NAMESPACE
from ..serializers import TypeSerializer
from .merging import AggregatingStateBase, ReducingStateBase

__all__ = [
    "PyState",
    "PyValueState",
    "PyListState",
    "PyMapState",
    "PyReducingState",
    "PyAggregatingState",
    "PySortedState",
    "NoKeyTable",
    "PY_STATE_KINDS",
]


class NoKeyTable(dict):
    """Container table used while no key is set: every access raises ``StateError``."""

    def __init__(self, state_name: str | None = None) -> None:
        super().__init__()
        self._state_name = state_name

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        name = self._state_name
        if name is None and args and isinstance(args[0], str):
            name = args[0]  # a single-key slot in the void namespace: the state name
        elif name is None and args and isinstance(args[0], tuple) and args[0]:
            name = args[0][0]  # other single-key slots are (state name, namespace)
        what = "keyed state" if name is None else f"state {name!r}"
        raise StateError(f"no current key: call set_current_key before accessing {what}")

    get = __getitem__ = __setitem__ = __delitem__ = __contains__ = pop = setdefault = _fail


class PyState(InternalKvState):
    """Base: container access is left to the backend-specific subclass."""

    kind: StateKind

    def __init__(
        self,
        backend: Any,
        descriptor: StateDescriptor,
        namespace_serializer: TypeSerializer[Any],
    ) -> None:
        self._backend = backend
        self.descriptor = descriptor
        self.namespace_serializer = namespace_serializer
        self._name = descriptor.name
        self._ns: Any = VOID_NAMESPACE
        self._value_serializer = descriptor.value_serializer
        self._bind_descriptor()
        self._init_storage()

    # -- provided by the backend-specific mixin ---------------------------------------------------
    def _init_storage(self) -> None:
        raise NotImplementedError

    def _get(self) -> Any:
        raise NotImplementedError

    def _put(self, container: Any) -> None:
        raise NotImplementedError

    def _remove(self) -> None:
        raise NotImplementedError

    def _iter_containers(self, key_group: int) -> Iterator[tuple[bytes, Any, Any]]:
        """``(key bytes, namespace, container)`` of one key group."""
        raise NotImplementedError

    def _place(self, key_group: int, key_bytes: bytes, namespace: Any, container: Any) -> None:
        raise NotImplementedError

    def _get_at(self, key_group: int, key_bytes: bytes, namespace: Any) -> Any:
        """The container of one (key, namespace), None when absent (any current key)."""
        raise NotImplementedError

    def _remove_at(self, key_group: int, key_bytes: bytes, namespace: Any) -> None:
        raise NotImplementedError

    # -- whole-state maintenance (state TTL cleanup) --------------------------------------------
    def container_keys(self) -> list[tuple[int, bytes, Any]]:
        """``(key group, key bytes, namespace)`` of every stored container."""
        return [
            (key_group, key_bytes, namespace)
            for key_group in self._backend.key_group_range
            for key_bytes, namespace, _ in self._iter_containers(key_group)
        ]

    def prune_container(
        self, key_group: int, key_bytes: bytes, namespace: Any, prune: Callable[[Any], Any]
    ) -> None:
        """Replace one container by ``prune(container)`` (None removes it; the same object
        keeps it); absent containers are skipped."""
        container = self._get_at(key_group, key_bytes, namespace)
        if container is None:
            return
        pruned = prune(container)
        if pruned is None:
            self._remove_at(key_group, key_bytes, namespace)
        elif pruned is not container:
            self._place(key_group, key_bytes, namespace, pruned)

    # -- namespace ----------------------------------------------------------------------------------
    def set_current_namespace(self, namespace: Any) -> None:
        self._ns = namespace

    def get_current_namespace(self) -> Any:
        return self._ns

    def clear(self) -> None:
        self._remove()

    # -- per-kind layout ----------------------------------------------------------------------------
    def _container_entries(self, container: Any) -> Iterable[tuple[bytes, bytes]]:
        """``(user key, value bytes)`` of one container."""
        raise NotImplementedError

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        """Inverse of :meth:`_container_entries` (rows in any order)."""
        raise NotImplementedError

    # -- snapshot / restore -------------------------------------------------------------------------
    def snapshot_entries(self, key_group: int) -> Iterator[StateEntry]:
        """Entries of one key group (unsorted)."""
        name = self._name
        ns_serialize = self.namespace_serializer.serialize
        for key_bytes, namespace, container in self._iter_containers(key_group):
            ns_bytes = ns_serialize(namespace)
            for user_key, value in self._container_entries(container):
                yield StateEntry(key_group, name, key_bytes, ns_bytes, user_key, value)

    def load_entries(self, entries: Iterable[StateEntry]) -> None:
        """Load restored entries of this state (any order)."""
        groups: dict[tuple[int, bytes, bytes], list[tuple[bytes, bytes]]] = {}
        for entry in entries:
            groups.setdefault((entry.key_group, entry.key, entry.namespace), []).append(
                (entry.user_key, entry.value)
            )
        ns_deserialize = self.namespace_serializer.deserialize
        for (key_group, key_bytes, ns_bytes), rows in groups.items():
            container = self._build_container(rows)
            if container is not None:
                self._place(key_group, key_bytes, ns_deserialize(ns_bytes), container)


class PyValueState(PyState, InternalValueState):
    """Value state; the container is the value itself."""

    kind = StateKind.VALUE

    def value(self) -> Any:
        return self._get()

    def update(self, value: Any) -> None:
        if value is None:
            self._remove()
        else:
            self._put(value)

    def _container_entries(self, container: Any) -> Iterable[tuple[bytes, bytes]]:
        return ((b"", self._value_serializer.serialize(container)),)

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        return self._value_serializer.deserialize(rows[-1][1])


def _no_none(state_name: str, values: Iterable[Any]) -> list[Any]:
    items = list(values)
    for item in items:
        if item is None:
            raise StateError(f"cannot add None to list state {state_name!r}")
    return items


class PyListState(PyState, InternalListState):
    """List state; the container is a non-empty Python list."""

    kind = StateKind.LIST

    def get(self) -> list[Any]:
        container = self._get()
        return [] if container is None else list(container)

    def add(self, value: Any) -> None:
        if value is None:
            raise StateError(f"cannot add None to list state {self._name!r}")
        container = self._get()
        if container is None:
            self._put([value])
        else:
            container.append(value)

    def add_all(self, values: Iterable[Any] | None) -> None:
        if values is None:
            return
        items = _no_none(self._name, values)
        if not items:
            return
        container = self._get()
        if container is None:
            self._put(items)
        else:
            container.extend(items)

    def update(self, values: Iterable[Any] | None) -> None:
        items = [] if values is None else _no_none(self._name, values)
        if items:
            self._put(items)
        else:
            self._remove()

    def get_internal(self) -> list[Any] | None:
        container = self._get()
        return None if container is None else list(container)

    def _container_entries(self, container: Any) -> Iterator[tuple[bytes, bytes]]:
        serialize = self._value_serializer.serialize
        for index, value in enumerate(container):
            yield encode_index(index), serialize(value)

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        rows.sort(key=lambda row: decode_index(row[0]))
        deserialize = self._value_serializer.deserialize
        return [deserialize(value) for _, value in rows] or None


class PyMapState(PyState, InternalMapState):
    """Map state; the container is a non-empty dict of deserialized keys.

    Keys compare by Python equality here (``1 == 1.0 == True``), by bytes in RocksDB:
    mixing such keys in one map is backend-dependent.
    """

    kind = StateKind.MAP

    def _hashable(self, key: Any) -> Any:
        try:
            hash(key)
        except TypeError as exc:
            raise StateError(
                f"map key {key!r} of map state {self._name!r} is not hashable"
            ) from exc
        return key

    def get(self, key: Any) -> Any:
        container = self._get()
        if container is None:
            return None
        try:
            return container.get(key)
        except TypeError:
            self._hashable(key)
            raise

    def put(self, key: Any, value: Any) -> None:
        container = self._get()
        if container is None:
            self._put({self._hashable(key): value})
        else:
            try:
                container[key] = value
            except TypeError:
                self._hashable(key)
                raise

    def put_all(self, mapping: Any) -> None:
        pairs = list(mapping.items() if hasattr(mapping, "items") else mapping)
        if not pairs:
            return
        container = self._get()
        if container is None:
            container = {}
            for key, value in pairs:
                container[self._hashable(key)] = value
            self._put(container)
        else:
            for key, value in pairs:
                container[self._hashable(key)] = value

    def remove(self, key: Any) -> None:
        container = self._get()
        if container is None:
            return
        container.pop(self._hashable(key), None)
        if not container:
            self._remove()

    def contains(self, key: Any) -> bool:
        container = self._get()
        return container is not None and self._hashable(key) in container

    def items(self) -> list[tuple[Any, Any]]:
        container = self._get()
        return [] if container is None else list(container.items())

    def keys(self) -> list[Any]:
        container = self._get()
        return [] if container is None else list(container)

    def values(self) -> list[Any]:
        container = self._get()
        return [] if container is None else list(container.values())

    def is_empty(self) -> bool:
        return self._get() is None

    def _container_entries(self, container: Any) -> Iterator[tuple[bytes, bytes]]:
        key_serialize = self._key_serializer.serialize
        value_serialize = self._value_serializer.serialize
        for key, value in container.items():
            yield key_serialize(key), value_serialize(value)

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        key_deserialize = self._key_serializer.deserialize
        value_deserialize = self._value_serializer.deserialize
        return {key_deserialize(uk): value_deserialize(v) for uk, v in sorted(rows)} or None


class PyReducingState(PyState, ReducingStateBase):
    """Reducing state (``merging.py``); the container is the reduced value."""

    kind = StateKind.REDUCING

    def _container_entries(self, container: Any) -> Iterable[tuple[bytes, bytes]]:
        return ((b"", self._value_serializer.serialize(container)),)

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        return self._value_serializer.deserialize(rows[-1][1])


class PyAggregatingState(PyState, AggregatingStateBase):
    """Aggregating state (``merging.py``); the container is the accumulator."""

    kind = StateKind.AGGREGATING

    def _container_entries(self, container: Any) -> Iterable[tuple[bytes, bytes]]:
        return ((b"", self._value_serializer.serialize(container)),)

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        return self._value_serializer.deserialize(rows[-1][1])


class PySortedState(PyState, InternalBinarySortedState):
    """Binary sorted state; the container is a ``SortedDict``: key bytes -> [key, values]."""

    kind = StateKind.SORTED

    def _lex(self, key: Any) -> bytes:
        return self._key_serializer.serialize(key)

    @staticmethod
    def _entry(item: tuple[bytes, list[Any]]) -> tuple[Any, list[Any]]:
        slot = item[1]
        return slot[0], list(slot[1])

    def values_at(self, key: Any) -> list[Any] | None:
        container = self._get()
        if container is None:
            return None
        slot = container.get(self._lex(key))
        return None if slot is None else list(slot[1])

    def add(self, key: Any, value: Any) -> None:
        lex = self._lex(key)
        container = self._get()
        if container is None:
            container = SortedDict()
            self._put(container)
        slot = container.get(lex)
        if slot is None:
            container[lex] = [self._key_serializer.deserialize(lex), [value]]
        else:
            slot[1].append(value)

    def put(self, key: Any, values: Iterable[Any]) -> None:
        items = list(values)
        if not items:
            self.clear_entry_at(key)
            return
        lex = self._lex(key)
        container = self._get()
        if container is None:
            container = SortedDict()
            self._put(container)
        container[lex] = [self._key_serializer.deserialize(lex), items]

    def clear_entry_at(self, key: Any) -> None:
        lex = self._lex(key)
        container = self._get()
        if container is None:
            return
        container.pop(lex, None)
        if not container:
            self._remove()

    def first_entry(self, from_key: Any = None) -> tuple[Any, list[Any]] | None:
        container = self._get()
        if container is None:
            return None
        index = 0 if from_key is None else container.bisect_left(self._lex(from_key))
        if index >= len(container):
            return None
        return self._entry(container.peekitem(index))

    def last_entry(self, to_key: Any = None) -> tuple[Any, list[Any]] | None:
        container = self._get()
        if container is None:
            return None
        index = (
            len(container) - 1 if to_key is None else container.bisect_right(self._lex(to_key)) - 1
        )
        if index < 0:
            return None
        return self._entry(container.peekitem(index))

    def _bounds(
        self, container: Any, from_key: Any, to_key: Any, inclusive_to_key: bool, has_to: bool
    ) -> tuple[int, int]:
        start = 0 if from_key is None else container.bisect_left(self._lex(from_key))
        if not has_to:
            stop = len(container)
        elif inclusive_to_key:
            stop = container.bisect_right(self._lex(to_key))
        else:
            stop = container.bisect_left(self._lex(to_key))
        return start, stop

    def _read(
        self, from_key: Any, to_key: Any, inclusive_to_key: bool, has_to: bool
    ) -> list[tuple[Any, list[Any]]]:
        container = self._get()
        if container is None:
            return []
        start, stop = self._bounds(container, from_key, to_key, inclusive_to_key, has_to)
        if start >= stop:
            return []
        values = container.values()
        return [(slot[0], list(slot[1])) for slot in values[start:stop]]

    def _clear(self, from_key: Any, to_key: Any, inclusive_to_key: bool, has_to: bool) -> None:
        container = self._get()
        if container is None:
            return
        start, stop = self._bounds(container, from_key, to_key, inclusive_to_key, has_to)
        if start < stop:
            del container.keys()[start:stop]
            if not container:
                self._remove()

    def read_range(
        self, from_key: Any, to_key: Any, inclusive_to_key: bool
    ) -> list[tuple[Any, list[Any]]]:
        self._lex(from_key)
        return self._read(from_key, to_key, inclusive_to_key, True)

    def read_range_until(self, to_key: Any, inclusive_to_key: bool) -> list[tuple[Any, list[Any]]]:
        return self._read(None, to_key, inclusive_to_key, True)

    def read_range_from(self, from_key: Any) -> list[tuple[Any, list[Any]]]:
        self._lex(from_key)
        return self._read(from_key, None, False, False)

    def clear_range(self, from_key: Any, to_key: Any, inclusive_to_key: bool) -> None:
        self._lex(from_key)
        self._clear(from_key, to_key, inclusive_to_key, True)

    def clear_range_until(self, to_key: Any, inclusive_to_key: bool) -> None:
        self._clear(None, to_key, inclusive_to_key, True)

    def clear_range_from(self, from_key: Any) -> None:
        self._lex(from_key)
        self._clear(from_key, None, False, False)

    def _container_entries(self, container: Any) -> Iterator[tuple[bytes, bytes]]:
        serialize = self._value_serializer.serialize
        for lex, slot in container.items():
            for index, value in enumerate(slot[1]):
                yield encode_sorted_user_key(lex, index), serialize(value)

    def _build_container(self, rows: list[tuple[bytes, bytes]]) -> Any:
        by_key: dict[bytes, list[tuple[int, bytes]]] = {}
        for user_key, value in rows:
            lex, index = split_sorted_user_key(user_key)
            by_key.setdefault(lex, []).append((index, value))
        if not by_key:
            return None
        deserialize = self._value_serializer.deserialize
        key_deserialize = self._key_serializer.deserialize
        container = SortedDict()
        for lex, values in by_key.items():
            values.sort(key=lambda item: item[0])
            container[lex] = [key_deserialize(lex), [deserialize(v) for _, v in values]]
        return container


#: state kind -> the Python-object state class implementing it
PY_STATE_KINDS: dict[StateKind, type[PyState]] = {
    StateKind.VALUE: PyValueState,
    StateKind.LIST: PyListState,
    StateKind.MAP: PyMapState,
    StateKind.REDUCING: PyReducingState,
    StateKind.AGGREGATING: PyAggregatingState,
    StateKind.SORTED: PySortedState,
}
