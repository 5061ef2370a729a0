"""The RocksDB state kinds except sorted state: value, reducing, aggregating, list and map.

Every state addresses its rows by the prefix ``key group | state name | key |
namespace`` of the current context and reads and writes the backend's database
directly; ``StorageAccess`` is all it uses of its backend, so the states do not
depend on the backend's module (the backend creates them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from ...descriptors import StateDescriptor
from ...entries import StateKind, encode_state_name, prefix_successor
from ...exceptions import StateError
from ...internal_state import (
    InternalKvState,
    InternalListState,
    InternalMapState,
    InternalValueState,
)
from ...namespaces import VOID_NAMESPACE
from ...serializers import TypeSerializer
from ..merging import AggregatingStateBase, ReducingStateBase
from .common import BATCH_LIMIT, INDEX_CACHE_LIMIT, U32, U64, UNSET

__all__ = [
    "StorageAccess",
    "RocksState",
    "RocksValueState",
    "RocksReducingState",
    "RocksAggregatingState",
    "RocksListState",
    "RocksMapState",
]


class StorageAccess(Protocol):
    """What a state uses of its backend (``RocksDBKeyedStateBackend`` provides it)."""

    #: the database (a change-tracking proxy of it when the backend tracks changes)
    db: Any
    #: the current key's row-key parts: its key group (2 bytes) and its length-prefixed
    #: bytes; ``UNSET`` before the first ``set_current_key``
    kg_part: bytes
    key_part: bytes

    def scan(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]: ...

    def scan_backwards(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]: ...

    def delete_rows(self, lower: bytes, upper: bytes | None) -> None: ...

    def new_batch(self) -> Any: ...

    def write_batch(self, batch: Any) -> None: ...

    def no_key_error(self, state_name: str) -> StateError: ...


class RocksState(InternalKvState):
    """Common part: the key prefix ``key group | name | key | namespace`` of the current context."""

    kind: StateKind

    def __init__(
        self,
        backend: StorageAccess,
        descriptor: StateDescriptor,
        namespace_serializer: TypeSerializer[Any],
    ) -> None:
        self._backend = backend
        self._db = backend.db
        self.descriptor = descriptor
        self.namespace_serializer = namespace_serializer
        self._name = descriptor.name
        self._name_part = encode_state_name(descriptor.name)
        self._value_serializer = descriptor.value_serializer
        self._bind_descriptor()
        self._ns: Any = VOID_NAMESPACE
        try:
            ns_bytes = namespace_serializer.serialize(VOID_NAMESPACE)
            self._ns_part = U32.pack(len(ns_bytes)) + ns_bytes
        except Exception:  # a window namespace serializer cannot encode the void namespace
            self._ns_part = UNSET

    def set_current_namespace(self, namespace: Any) -> None:
        if namespace is self._ns and self._ns_part:  # a set part is never empty (UNSET is)
            return
        ns_bytes = self.namespace_serializer.serialize(namespace)
        self._ns_part = U32.pack(len(ns_bytes)) + ns_bytes
        self._ns = namespace

    def get_current_namespace(self) -> Any:
        return self._ns

    def _context_error(self) -> StateError:
        if self._backend.key_part is UNSET:
            return self._backend.no_key_error(self._name)
        return StateError(
            f"state {self._name!r}: no namespace set; call set_current_namespace first"
        )

    def _prefix(self) -> bytes:
        backend = self._backend
        try:
            return backend.kg_part + self._name_part + backend.key_part + self._ns_part
        except TypeError:
            raise self._context_error() from None

    # -- range helpers -----------------------------------------------------------------------------
    def _items(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return self._backend.scan(lower, upper)

    def _delete_range(self, lower: bytes, upper: bytes | None) -> None:
        self._backend.delete_rows(lower, upper)


class _SingleValueMixin(RocksState):
    """Value / reducing / aggregating: one entry whose key is the prefix itself."""

    def _read(self) -> Any:
        data = self._db.get(self._prefix())
        return None if data is None else self._value_serializer.deserialize(data)

    def _write(self, value: Any) -> None:
        if value is None:
            self._db.delete(self._prefix())
        else:
            self._db.put(self._prefix(), self._value_serializer.serialize(value))

    def clear(self) -> None:
        self._db.delete(self._prefix())

    # the primitives of merging.py's reducing and aggregating state
    _get = _read
    _put = _write
    _remove = clear


class RocksValueState(_SingleValueMixin, InternalValueState):
    """RocksDB value state."""

    kind = StateKind.VALUE

    def value(self) -> Any:
        backend = self._backend
        try:
            key = backend.kg_part + self._name_part + backend.key_part + self._ns_part
        except TypeError:
            raise self._context_error() from None
        data = self._db.get(key)
        return None if data is None else self._value_serializer.deserialize(data)

    def update(self, value: Any) -> None:
        backend = self._backend
        try:
            key = backend.kg_part + self._name_part + backend.key_part + self._ns_part
        except TypeError:
            raise self._context_error() from None
        if value is None:
            self._db.delete(key)
        else:
            self._db.put(key, self._value_serializer.serialize(value))


class RocksReducingState(_SingleValueMixin, ReducingStateBase):
    """RocksDB reducing state (``merging.py``: read-reduce-write per add)."""

    kind = StateKind.REDUCING


class RocksAggregatingState(_SingleValueMixin, AggregatingStateBase):
    """RocksDB aggregating state (``merging.py``: the accumulator is stored)."""

    kind = StateKind.AGGREGATING


class RocksListState(RocksState, InternalListState):
    """RocksDB list state: one entry per element, appended without reading the list."""

    kind = StateKind.LIST

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        #: prefix -> next free index (a cache; a miss costs one bounded reverse seek)
        self._next: dict[bytes, int] = {}

    def _next_index(self, prefix: bytes) -> int:
        index = self._next.get(prefix)
        if index is None:
            index = 0
            for key, _ in self._backend.scan_backwards(prefix, prefix_successor(prefix)):
                index = U64.unpack_from(key, len(key) - 8)[0] + 1
                break
            if len(self._next) >= INDEX_CACHE_LIMIT:
                self._next.clear()
        return index

    def get(self) -> list[Any]:
        prefix = self._prefix()
        deserialize = self._value_serializer.deserialize
        return [deserialize(value) for _, value in self._items(prefix, prefix_successor(prefix))]

    def add(self, value: Any) -> None:
        if value is None:
            raise StateError(f"cannot add None to list state {self._name!r}")
        prefix = self._prefix()
        index = self._next_index(prefix)
        self._db.put(prefix + U64.pack(index), self._value_serializer.serialize(value))
        self._next[prefix] = index + 1

    def _append_all(self, prefix: bytes, index: int, items: list[Any]) -> None:
        serialize = self._value_serializer.serialize
        batch = self._backend.new_batch()
        for item in items:
            batch.put(prefix + U64.pack(index), serialize(item))
            index += 1
        self._backend.write_batch(batch)
        self._next[prefix] = index

    def add_all(self, values: Iterable[Any] | None) -> None:
        if values is None:
            return
        items = list(values)
        if any(item is None for item in items):
            raise StateError(f"cannot add None to list state {self._name!r}")
        if items:
            prefix = self._prefix()
            self._append_all(prefix, self._next_index(prefix), items)

    def update(self, values: Iterable[Any] | None) -> None:
        items = [] if values is None else list(values)
        if any(item is None for item in items):
            raise StateError(f"cannot add None to list state {self._name!r}")
        prefix = self._prefix()
        self._delete_range(prefix, prefix_successor(prefix))
        self._next[prefix] = 0
        if items:
            self._append_all(prefix, 0, items)

    def clear(self) -> None:
        prefix = self._prefix()
        self._delete_range(prefix, prefix_successor(prefix))
        self._next[prefix] = 0

    def invalidate_cache(self) -> None:
        """Forget cached next indices (after a restore wrote entries directly)."""
        self._next.clear()


class RocksMapState(RocksState, InternalMapState):
    """RocksDB map state: one entry per map entry (user key = serialized map key)."""

    kind = StateKind.MAP

    def get(self, key: Any) -> Any:
        data = self._db.get(self._prefix() + self._key_serializer.serialize(key))
        return None if data is None else self._value_serializer.deserialize(data)

    def put(self, key: Any, value: Any) -> None:
        self._db.put(
            self._prefix() + self._key_serializer.serialize(key),
            self._value_serializer.serialize(value),
        )

    def put_all(self, mapping: Any) -> None:
        pairs = mapping.items() if hasattr(mapping, "items") else mapping
        prefix = self._prefix()
        key_serialize = self._key_serializer.serialize
        value_serialize = self._value_serializer.serialize
        batch = self._backend.new_batch()
        count = 0
        for key, value in pairs:
            batch.put(prefix + key_serialize(key), value_serialize(value))
            count += 1
            if count >= BATCH_LIMIT:
                self._backend.write_batch(batch)
                batch = self._backend.new_batch()
                count = 0
        if count:
            self._backend.write_batch(batch)

    def remove(self, key: Any) -> None:
        self._db.delete(self._prefix() + self._key_serializer.serialize(key))

    def contains(self, key: Any) -> bool:
        return self._db.get(self._prefix() + self._key_serializer.serialize(key)) is not None

    def _scan(self) -> tuple[int, Iterator[tuple[bytes, bytes]]]:
        prefix = self._prefix()
        return len(prefix), self._items(prefix, prefix_successor(prefix))

    def items(self) -> Iterator[tuple[Any, Any]]:
        start, rows = self._scan()
        key_deserialize = self._key_serializer.deserialize
        value_deserialize = self._value_serializer.deserialize
        return ((key_deserialize(key[start:]), value_deserialize(value)) for key, value in rows)

    def keys(self) -> Iterator[Any]:
        start, rows = self._scan()
        key_deserialize = self._key_serializer.deserialize
        return (key_deserialize(key[start:]) for key, _ in rows)

    def values(self) -> Iterator[Any]:
        _, rows = self._scan()
        value_deserialize = self._value_serializer.deserialize
        return (value_deserialize(value) for _, value in rows)

    def is_empty(self) -> bool:
        _, rows = self._scan()
        return next(rows, None) is None

    def clear(self) -> None:
        prefix = self._prefix()
        self._delete_range(prefix, prefix_successor(prefix))

