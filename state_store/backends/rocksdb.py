"""``EmbeddedRocksDBStateBackend``: keyed state in an embedded RocksDB (via ``rocksdict``).

The storage keys ARE the unified entry keys of :mod:`..entries`, so state is
ordered by (key group, state name, key, namespace, user key) on disk and
``snapshot()`` is one ordered scan (merged with the in-memory timers). Each
value is stored serialized; every access (de)serializes, which is what lets
the state outgrow memory.

* List state: one entry per element (user key = uint64 index); ``add`` appends
  one entry without reading the list (next index from a small cache, else one
  bounded reverse seek).
* Map state: one entry per map entry.
* Sorted state: one entry per value (user key = lexicographic key + index);
  lookups and ranges are bounded native iterators, never a scan of the state.
  Its adds (and the deletes of rows a range clear left below a *floor*) are
  staged in a ``WriteBatch`` written before any read that could see them, and
  before every whole-database read (snapshot, change capture, ``keys``,
  :meth:`EmbeddedRocksDBStateBackend.flush`); see :class:`RocksSortedState`.
* Deletes of several entries (clear, range clears) iterate the bounded range and
  delete through a ``WriteBatch``.

The write-ahead log is disabled (durability comes from snapshots, as in Flink).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import weakref
import zlib
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

import rocksdict

from ..backend import (
    InternalAggregatingState,
    InternalBinarySortedState,
    InternalKvState,
    InternalListState,
    InternalMapState,
    InternalReducingState,
    InternalValueState,
)
from ..backend import KeyedStateBackend as _KeyedStateBackend
from ..descriptors import StateDescriptor
from ..entries import (
    StateEntry,
    StateKind,
    decode_entry_key,
    encode_key_group,
    encode_state_name,
    prefix_successor,
)
from ..errors import KeyGroupError, StateBackendError, StateError
from ..keygroups import DEFAULT_MAX_PARALLELISM
from ..namespaces import VOID_NAMESPACE
from ..serializers import TypeSerializer

__all__ = ["EmbeddedRocksDBStateBackend"]

_crc32 = zlib.crc32
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_KG_BYTES = [struct.pack(">H", i) for i in range(1 << 15)]
#: keys remembered by ``set_current_key`` before the memo starts over
_KEY_MEMO_LIMIT = 1 << 14
_INDEX_CACHE_LIMIT = 65536
_BATCH_LIMIT = 10000
#: a sorted-state range read of fewer rows is read at once (and its row keys remembered
#: for a following clear of that range); a larger one is streamed
_EAGER_ROWS = 4096
#: most memoized lexicographic sort keys per sorted state
_LEX_MEMO_LIMIT = 4096
#: a prefix's next-index cache is purged of stale keys (below its floor) beyond this size
_STALE_LIMIT = 16
_ZERO_INDEX = bytes(8)


def _index_bytes(index: int) -> bytes:
    return _U64.pack(index)


class _RocksState(InternalKvState):
    """Common part: the key prefix ``key group | name | key | namespace`` of the current context."""

    kind: StateKind

    def __init__(
        self,
        backend: EmbeddedRocksDBStateBackend,
        descriptor: StateDescriptor,
        namespace_serializer: TypeSerializer[Any],
    ) -> None:
        self._backend = backend
        self._db = backend._db
        self.descriptor = descriptor
        self.namespace_serializer = namespace_serializer
        self._name = descriptor.name
        self._name_part = encode_state_name(descriptor.name)
        self._value_serializer = descriptor.value_serializer
        self._ns: Any = VOID_NAMESPACE
        try:
            ns_bytes = namespace_serializer.serialize(VOID_NAMESPACE)
            self._ns_part: bytes | None = _U32.pack(len(ns_bytes)) + ns_bytes
        except Exception:  # a window namespace serializer cannot encode the void namespace
            self._ns_part = None

    def set_current_namespace(self, namespace: Any) -> None:
        if namespace is self._ns and self._ns_part is not None:
            return
        ns_bytes = self.namespace_serializer.serialize(namespace)
        self._ns_part = _U32.pack(len(ns_bytes)) + ns_bytes
        self._ns = namespace

    def get_current_namespace(self) -> Any:
        return self._ns

    def _context_error(self) -> StateError:
        if self._backend._key_part is None:
            return self._backend._no_key_error(self._name)
        return StateError(
            f"state {self._name!r}: no namespace set; call set_current_namespace first"
        )

    def _prefix(self) -> bytes:
        backend = self._backend
        try:
            return backend._kg_part + self._name_part + backend._key_part + self._ns_part  # type: ignore[operator]
        except TypeError:
            raise self._context_error() from None

    # -- range helpers -----------------------------------------------------------------------------
    def _items(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return self._backend._items(lower, upper)

    def _delete_range(self, lower: bytes, upper: bytes | None) -> None:
        self._backend._delete_range(lower, upper)


class _SingleValueMixin(_RocksState):
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


class RocksValueState(_SingleValueMixin, InternalValueState):
    """RocksDB value state."""

    kind = StateKind.VALUE

    def value(self) -> Any:
        backend = self._backend
        try:
            key = backend._kg_part + self._name_part + backend._key_part + self._ns_part  # type: ignore[operator]
        except TypeError:
            raise self._context_error() from None
        data = self._db.get(key)
        return None if data is None else self._value_serializer.deserialize(data)

    def update(self, value: Any) -> None:
        backend = self._backend
        try:
            key = backend._kg_part + self._name_part + backend._key_part + self._ns_part  # type: ignore[operator]
        except TypeError:
            raise self._context_error() from None
        if value is None:
            self._db.delete(key)
        else:
            self._db.put(key, self._value_serializer.serialize(value))


class RocksReducingState(_SingleValueMixin, InternalReducingState):
    """RocksDB reducing state (read-reduce-write per add)."""

    kind = StateKind.REDUCING

    def get(self) -> Any:
        return self._read()

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        current = self._read()
        if current is not None:
            value = self.descriptor.reduce(current, value)  # type: ignore[attr-defined]
            if value is None:
                raise StateError(
                    f"the reduce function of reducing state {self._name!r} returned None"
                )
        self._write(value)

    def get_internal(self) -> Any:
        return self._read()

    def update_internal(self, value: Any) -> None:
        self._write(value)


class RocksAggregatingState(_SingleValueMixin, InternalAggregatingState):
    """RocksDB aggregating state (the accumulator is stored)."""

    kind = StateKind.AGGREGATING

    def get(self) -> Any:
        accumulator = self._read()
        if accumulator is None:
            return None
        return self.descriptor.agg_function.get_result(accumulator)  # type: ignore[attr-defined]

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        function = self.descriptor.agg_function  # type: ignore[attr-defined]
        accumulator = self._read()
        if accumulator is None:
            accumulator = function.create_accumulator()
        accumulator = function.add(value, accumulator)
        if accumulator is None:
            raise StateError(
                f"AggregateFunction.add of aggregating state {self._name!r} returned None; "
                "it must return the accumulator"
            )
        self._write(accumulator)

    def get_internal(self) -> Any:
        return self._read()

    def update_internal(self, value: Any) -> None:
        self._write(value)


class RocksListState(_RocksState, InternalListState):
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
            for key, _ in self._backend._items_backwards(prefix, prefix_successor(prefix)):
                index = _U64.unpack_from(key, len(key) - 8)[0] + 1
                break
            if len(self._next) >= _INDEX_CACHE_LIMIT:
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
        self._db.put(prefix + _U64.pack(index), self._value_serializer.serialize(value))
        self._next[prefix] = index + 1

    def _append_all(self, prefix: bytes, index: int, items: list[Any]) -> None:
        serialize = self._value_serializer.serialize
        batch = self._backend._new_batch()
        for item in items:
            batch.put(prefix + _U64.pack(index), serialize(item))
            index += 1
        self._backend._write(batch)
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


class RocksMapState(_RocksState, InternalMapState):
    """RocksDB map state: one entry per map entry (user key = serialized map key)."""

    kind = StateKind.MAP

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._key_serializer = self.descriptor.user_key_serializer

    def get(self, key: Any) -> Any:
        data = self._db.get(self._prefix() + self._key_serializer.serialize(key))  # type: ignore[union-attr]
        return None if data is None else self._value_serializer.deserialize(data)

    def put(self, key: Any, value: Any) -> None:
        self._db.put(
            self._prefix() + self._key_serializer.serialize(key),  # type: ignore[union-attr]
            self._value_serializer.serialize(value),
        )

    def put_all(self, mapping: Any) -> None:
        pairs = mapping.items() if hasattr(mapping, "items") else mapping
        prefix = self._prefix()
        key_serialize = self._key_serializer.serialize  # type: ignore[union-attr]
        value_serialize = self._value_serializer.serialize
        batch = self._backend._new_batch()
        count = 0
        for key, value in pairs:
            batch.put(prefix + key_serialize(key), value_serialize(value))
            count += 1
            if count >= _BATCH_LIMIT:
                self._backend._write(batch)
                batch = self._backend._new_batch()
                count = 0
        if count:
            self._backend._write(batch)

    def remove(self, key: Any) -> None:
        self._db.delete(self._prefix() + self._key_serializer.serialize(key))  # type: ignore[union-attr]

    def contains(self, key: Any) -> bool:
        return self._db.get(self._prefix() + self._key_serializer.serialize(key)) is not None  # type: ignore[union-attr]

    def _scan(self) -> tuple[int, Iterator[tuple[bytes, bytes]]]:
        prefix = self._prefix()
        return len(prefix), self._items(prefix, prefix_successor(prefix))

    def items(self) -> Iterator[tuple[Any, Any]]:
        start, rows = self._scan()
        key_deserialize = self._key_serializer.deserialize  # type: ignore[union-attr]
        value_deserialize = self._value_serializer.deserialize
        return ((key_deserialize(key[start:]), value_deserialize(value)) for key, value in rows)

    def keys(self) -> Iterator[Any]:
        start, rows = self._scan()
        key_deserialize = self._key_serializer.deserialize  # type: ignore[union-attr]
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


class RocksSortedState(_RocksState, InternalBinarySortedState):
    """RocksDB binary sorted state: one row per value, lookups and ranges are bounded seeks.

    Rows are ``prefix | lexicographic key | uint64 index``. Every native call
    through rocksdict costs microseconds, so the hot paths count them:

    * ``add`` reads nothing: the key's next index comes from a cache; a key missing
      there is new when the prefix was found empty (one seek when the prefix is first
      written), else one point ``get`` of index 0 tells, else one reverse seek. The
      row is *pending* (kept in memory) until a read needs the database to hold it
      or ``_BATCH_LIMIT`` rows wait; then the pending rows go to RocksDB in one
      write batch, so a run of adds costs one native write instead of one per add.
      ``put`` of a key whose rows the cache knows is staged in that batch (no scan).
    * a range read up to a key (``read_range_until``, the temporal sort / join timer)
      of a prefix whose cache knows every key is served from that cache: the row keys
      are known, pending rows are read from memory and the others with one native
      multi-get (no iterator, no write). A row that was added and then cleared while
      still pending never reaches RocksDB at all: neither its put nor its delete is
      written (the sort pattern: events live for one out-of-orderness bound).
    * range reads are one bounded iterator starting at the prefix's *floor* (below
      which a ``clear_range_until`` left nothing alive), so they never walk the
      tombstones of a deleted front.
    * a range of fewer than ``_EAGER_ROWS`` rows is read at once (larger ones are
      streamed), and a range clear right after such a read of the same range (the
      temporal sort / join pattern: read what is due, then drop it) deletes the
      rows that read saw without a second scan; any write to the state in between
      discards that knowledge. When the clear raises the floor (``clear_range_until``)
      those deletes are only staged: no read can see rows below a floor, so they are
      written with the next batch that has to be written anyway. Other clears scan
      the bounded range. (``Rdict.delete_range`` is not used: each range tombstone
      in the memtable makes every later iterator creation slower.)

    Invariants the caches rely on: pending rows come from ``add`` only, at an index
    no live database row has (so dropping one needs no delete; ``put`` and deletes
    take the rows they touch out of it); values of a key are only removed all together
    and a key's indices start at 0, so a key with rows has the row of index 0; the
    next-index cache is exact for keys at or above the prefix's floor and stale
    below it (purged when the floor is dropped or the cache grows); every key with
    a staged row has a cache entry and staged deletes lie below floors, so a cache
    miss may read the database directly; a floor only rises while deletes below
    it are staged (dropping or forgetting one writes the staged batch first).
    """

    kind = StateKind.SORTED

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        key_serializer = self.descriptor.user_key_serializer
        self._key_serializer = key_serializer
        self._lex_of = key_serializer.serialize  # type: ignore[union-attr]
        #: int sort key -> its lexicographic bytes (sort keys repeat: many values share a
        #: timestamp); ints only, where equal keys always have equal bytes
        self._lex_memo: dict[int, bytes] = {}
        #: key part -> prefix under namespace part ``_memo_ns``
        self._prefix_memo: dict[bytes, bytes] = {}
        self._memo_ns: bytes | None = None
        self._serialize = self._value_serializer.serialize
        self._deserialize = self._value_serializer.deserialize
        #: prefix -> {lexicographic key -> next free value index}
        self._next: dict[bytes, dict[bytes, int]] = {}
        #: prefixes whose ``_next`` entry knows every key with rows (at or above the floor):
        #: a key missing there is new, index 0, no probe (found empty on the first ``add``)
        self._complete: set[bytes] = set()
        #: prefix -> a row key below which this prefix has no live row (set by
        #: ``clear_range_until``), so seeks start past the deleted rows' tombstones instead of
        #: walking them (the temporal sort / join pattern deletes from the front)
        self._floor: dict[bytes, bytes] = {}
        #: staged writes (a write batch: puts of ``add``, deletes below a floor), their number,
        #: and whether a read could see them (puts): then reads write the batch first
        self._staged: Any = None
        self._staged_count = 0
        #: a read could see an unwritten write (a pending row or a staged ``put``)
        self._staged_visible = False
        #: the staged batch holds a visible write (a ``put``'s rows or deletes)
        self._batch_visible = False
        #: rows added and not yet written: row key -> value bytes
        self._pending: dict[bytes, bytes] = {}
        #: ``(lower, upper, rows)`` of the last range read, if it was read at once and no
        #: write followed it (a clear of exactly that range deletes these rows without a scan)
        self._seen: tuple[bytes, bytes | None, list[tuple[bytes, bytes]]] | None = None

    # -- helpers -----------------------------------------------------------------------------------
    def _lex(self, key: Any) -> bytes:
        """The lexicographic bytes of a sort key (memoized for ints)."""
        if type(key) is int:
            lex = self._lex_memo.get(key)
            if lex is None:
                lex = self._memo_lex(key)
            return lex
        return self._lex_of(key)

    def _memo_lex(self, key: int) -> bytes:
        lex = self._lex_of(key)
        memo = self._lex_memo
        if len(memo) >= _LEX_MEMO_LIMIT:
            memo.clear()
        memo[key] = lex
        return lex

    def _current_prefix(self) -> bytes:
        prefix = self._prefix_memo.get(self._backend._key_part)  # type: ignore[arg-type]
        if prefix is None or self._ns_part is not self._memo_ns:
            prefix = self._memo_prefix()
        return prefix

    def _memo_prefix(self) -> bytes:
        """The current key's and namespace's prefix, memoized per key (the same prefix
        object each time: dict lookups by it reuse its hash)."""
        ns_part = self._ns_part
        prefix = self._prefix()
        memo = self._prefix_memo
        if ns_part is not self._memo_ns or len(memo) >= _KEY_MEMO_LIMIT:
            memo.clear()
            self._memo_ns = ns_part
        memo[self._backend._key_part] = prefix  # type: ignore[index]
        return prefix

    def flush_staged(self) -> None:
        """Write the staged batch and the pending rows (before reads that could see them,
        and before whole-DB reads)."""
        staged = self._staged
        pending = self._pending
        if pending:
            if staged is None:
                staged = self._backend._new_batch()
            put = staged.put
            for row, data in pending.items():  # after the staged deletes: the puts win
                put(row, data)
            self._pending = {}
        self._staged = None
        self._staged_count = 0
        self._staged_visible = False
        self._batch_visible = False
        if staged is not None:
            self._backend._write(staged)

    def _stage_deletes(self, rows: list[tuple[bytes, Any]]) -> None:
        """Delete ``(key, value)`` rows below a floor (no read sees them): pending ones are
        dropped unwritten, the others' deletes are staged."""
        pending = self._pending
        pop = pending.pop
        staged = self._staged
        count = 0
        for row, _ in rows:
            if pop(row, None) is None:
                if staged is None:
                    staged = self._staged = self._backend._new_batch()
                staged.delete(row)
                count += 1
        if not pending and not self._batch_visible:
            self._staged_visible = False  # nothing a read could see is left unwritten
        if count:
            self._staged_count += count
            if self._staged_count >= _BATCH_LIMIT:
                self.flush_staged()

    def _changing(self) -> None:
        """Before a write other than ``add``: staged rows out, the last read forgotten."""
        if self._staged is not None or self._pending:
            self.flush_staged()
        self._seen = None

    def _index_cache(self, prefix: bytes) -> dict[bytes, int]:
        by_key = self._next.get(prefix)
        if by_key is None:
            if len(self._next) >= _INDEX_CACHE_LIMIT:
                self.flush_staged()  # staged rows need their cache entries until written
                self._next.clear()
                self._complete.clear()
            by_key = self._next[prefix] = {}
        return by_key

    def _first_index_cache(self, prefix: bytes) -> dict[bytes, int]:
        """A new cache entry for a write: complete when the prefix has no row (one seek).

        Staged puts all have cache entries (none is for this prefix) and staged deletes
        lie below the floor, so the database is read directly.
        """
        by_key = self._index_cache(prefix)
        read_options = rocksdict.ReadOptions()
        upper = _successor(prefix)
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        rows = self._db.keys(from_key=self._floor.get(prefix, prefix), read_opt=read_options)
        if next(iter(rows), None) is None:
            self._complete.add(prefix)
        return by_key

    def _drop_floor(self, prefix: bytes) -> None:
        """Forget the prefix's floor and the stale cache entries below it."""
        self.flush_staged()  # staged deletes below the floor must land before writes there
        floor = self._floor.pop(prefix)
        by_key = self._next.get(prefix)
        if by_key:
            start = len(prefix)
            cut = floor[start:] if floor.startswith(prefix) else None
            for lex in [lex for lex in by_key if cut is None or lex < cut]:
                del by_key[lex]

    def _set_floor(self, prefix: bytes, floor: bytes) -> None:
        if len(self._floor) >= _INDEX_CACHE_LIMIT:
            # the stale cache entries below the floors must go with them
            self.flush_staged()
            self._floor.clear()
            self._next.clear()
            self._complete.clear()
        self._floor[prefix] = floor
        by_key = self._next.get(prefix)
        if by_key is not None and len(by_key) > _STALE_LIMIT and floor.startswith(prefix):
            cut = floor[len(prefix):]
            for lex in [lex for lex in by_key if lex < cut]:
                del by_key[lex]

    def _writing_at(self, prefix: bytes, group: bytes) -> None:
        """Drop the prefix's floor when a row is written below it."""
        floor = self._floor.get(prefix)
        if floor is not None and group < floor:
            self._drop_floor(prefix)

    def _rows(self, lower: bytes, upper: bytes | None) -> Any:
        """Native iterator over ``lower <= row key < upper`` plus the options it needs alive."""
        if self._staged_visible:
            self.flush_staged()
        read_options = rocksdict.ReadOptions()
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        return self._db.items(from_key=lower, read_opt=read_options), read_options

    def _group_at(self, start: int, group: bytes) -> tuple[Any, list[Any]]:
        """The entry of one sort key, read within the group's own bounds."""
        return next(self._groups(start, group, _successor(group), False))

    def _groups(
        self, start: int, lower: bytes, upper: bytes | None, remember: bool
    ) -> Iterator[tuple[Any, list[Any]]]:
        """``(key, [values])`` of the rows in ``[lower, upper)``, in key order.

        A range of fewer than ``_EAGER_ROWS`` rows (the usual case) is read at once
        and, with ``remember``, its row keys are kept in ``_seen`` for a following
        clear; a larger one is grouped as its rows come.
        """
        rows, options = self._rows(lower, upper)
        head = list(islice(rows, _EAGER_ROWS))
        if len(head) < _EAGER_ROWS:
            if remember:
                self._seen = (lower, upper, head)
            return iter(self._grouped(start, head))
        return self._streamed(start, chain(head, rows), options)

    def _grouped(self, start: int, rows: list[tuple[bytes, bytes]]) -> list[tuple[Any, list[Any]]]:
        """Rows (in key order) grouped by sort key, values deserialized."""
        if not rows:
            return []
        key_deserialize = self._key_serializer.deserialize  # type: ignore[union-attr]
        deserialize = self._deserialize
        first = rows[0][0][start:-8]
        if rows[-1][0][start:-8] == first:  # rows are in key order: all of one key
            return [(key_deserialize(first), [deserialize(value) for _, value in rows])]
        groups: list[tuple[bytes, list[Any]]] = []
        current: bytes | None = None
        values: list[Any] = []
        for key, value in rows:
            lex = key[start:-8]
            if lex != current:
                current, values = lex, []
                groups.append((lex, values))
            values.append(deserialize(value))
        return [(key_deserialize(lex), values) for lex, values in groups]

    def _streamed(
        self, start: int, rows: Iterator[tuple[bytes, bytes]], options: Any
    ) -> Iterator[tuple[Any, list[Any]]]:
        """Groups of a large range as its rows come (``options`` kept alive meanwhile)."""
        key_deserialize = self._key_serializer.deserialize  # type: ignore[union-attr]
        deserialize = self._deserialize
        current: bytes | None = None
        values: list[Any] = []
        for key, value in rows:
            lex = key[start:-8]
            if lex != current:
                if current is not None:
                    yield key_deserialize(current), values
                current, values = lex, []
            values.append(deserialize(value))
        if current is not None:
            yield key_deserialize(current), values
        del options

    def _probe_next(self, group: bytes) -> int:
        """Next free index of a key missing from the cache: 0 when it has no index-0 row.

        No staged row can belong to it (staged rows keep their cache entries), so the
        database is read directly.
        """
        if self._db.get(group + _ZERO_INDEX) is None:
            return 0
        for key, _ in self._backend._items_backwards(group, _successor(group)):
            return _U64.unpack_from(key, len(key) - 8)[0] + 1
        return 0  # pragma: no cover - the index-0 row exists, so the reverse seek finds a row

    # -- BinarySortedState -------------------------------------------------------------------------
    def values_at(self, key: Any) -> list[Any] | None:
        prefix = self._current_prefix()
        group = prefix + self._lex(key)
        floor = self._floor.get(prefix)
        if floor is not None and group < floor:
            return None  # nothing lives below the floor
        deserialize = self._deserialize
        rows, _options = self._rows(group, _successor(group))
        values = [deserialize(value) for _, value in rows]
        return values or None

    def add(self, key: Any, value: Any) -> None:
        prefix = self._prefix_memo.get(self._backend._key_part)  # type: ignore[arg-type]
        if prefix is None or self._ns_part is not self._memo_ns:  # _current_prefix inlined
            prefix = self._memo_prefix()
        if type(key) is int:  # _lex inlined
            lex = self._lex_memo.get(key)
            if lex is None:
                lex = self._memo_lex(key)
        else:
            lex = self._lex_of(key)
        group = prefix + lex
        floor = self._floor.get(prefix)
        if floor is not None and group < floor:
            self._drop_floor(prefix)
        by_key = self._next.get(prefix)
        if by_key is None:
            by_key = self._first_index_cache(prefix)
        index = by_key.get(lex)
        if index is None:
            index = 0 if prefix in self._complete else self._probe_next(group)
        pending = self._pending
        pending[group + _U64.pack(index)] = self._serialize(value)
        by_key[lex] = index + 1
        self._seen = None
        self._staged_visible = True
        if len(pending) >= _BATCH_LIMIT:
            self.flush_staged()

    def put(self, key: Any, values: Iterable[Any]) -> None:
        items = list(values)
        prefix = self._current_prefix()
        lex = self._lex(key)
        group = prefix + lex
        serialize = self._serialize
        rows = [serialize(item) for item in items]  # all or nothing: serialize first
        self._seen = None
        self._writing_at(prefix, group)
        by_key = self._next.get(prefix)
        if by_key is None:
            by_key = self._first_index_cache(prefix)
        count = by_key.get(lex)
        if count is None and prefix in self._complete:
            count = 0
        if count is None:
            # an unknown number of rows (none staged: staged rows have cache entries)
            self._delete_range(group, _successor(group))
            count = 0
        if rows or count:
            # rows 0..count-1 exist: overwrite the first ones, delete the others, staged
            # (and none of them pending any more: a pending row would be written after)
            staged = self._staged
            if staged is None:
                staged = self._staged = self._backend._new_batch()
            pop = self._pending.pop
            for index in range(len(rows), count):
                row = group + _U64.pack(index)
                pop(row, None)
                staged.delete(row)
            for index, data in enumerate(rows):
                row = group + _U64.pack(index)
                pop(row, None)
                staged.put(row, data)
            self._staged_visible = True
            self._batch_visible = True
            self._staged_count += max(len(rows), count)
            if self._staged_count >= _BATCH_LIMIT:
                self.flush_staged()
        by_key[lex] = len(rows)

    def clear_entry_at(self, key: Any) -> None:
        prefix = self._current_prefix()
        lex = self._lex(key)
        group = prefix + lex
        self._changing()
        self._delete_range(group, _successor(group))
        by_key = self._next.get(prefix)
        if by_key is not None:
            by_key.pop(lex, None)

    def first_entry(self, from_key: Any = None) -> tuple[Any, list[Any]] | None:
        prefix = self._current_prefix()
        lower = prefix if from_key is None else prefix + self._lex(from_key)
        floor = self._floor.get(prefix)
        if floor is not None and floor > lower:
            lower = floor
        # find the first row, then read its group within the group's bounds (reading on
        # to the group's end could walk over the tombstones of deleted rows)
        rows, _options = self._rows(lower, _successor(prefix))
        for key, _ in rows:
            return self._group_at(len(prefix), key[:-8])
        return None

    def last_entry(self, to_key: Any = None) -> tuple[Any, list[Any]] | None:
        prefix = self._current_prefix()
        upper = _successor(prefix if to_key is None else prefix + self._lex(to_key))
        lower = self._floor.get(prefix, prefix)
        if upper is not None and lower >= upper:
            return None
        if self._staged_visible:
            self.flush_staged()
        for key, _ in self._backend._items_backwards(lower, upper):
            return self._group_at(len(prefix), key[:-8])
        return None

    def _range_bounds(
        self, from_key: Any, to_key: Any, inclusive_to_key: bool, has_from: bool, has_to: bool
    ) -> tuple[bytes, bytes, bytes | None]:
        prefix = self._current_prefix()
        lower = prefix + self._lex(from_key) if has_from else prefix
        floor = self._floor.get(prefix)
        if floor is not None and floor > lower:
            lower = floor
        if has_to:
            to = prefix + self._lex(to_key)
            upper = _successor(to) if inclusive_to_key else to
        else:
            upper = _successor(prefix)
        return prefix, lower, upper

    def _read_range(
        self, from_key: Any, to_key: Any, inclusive_to_key: bool, has_from: bool, has_to: bool
    ) -> Iterator[tuple[Any, list[Any]]]:
        prefix, lower, upper = self._range_bounds(
            from_key, to_key, inclusive_to_key, has_from, has_to
        )
        if upper is not None and lower >= upper:
            return iter(())
        return self._groups(len(prefix), lower, upper, True)

    def _clear_range(
        self, from_key: Any, to_key: Any, inclusive_to_key: bool, has_from: bool, has_to: bool
    ) -> None:
        prefix, lower, upper = self._range_bounds(
            from_key, to_key, inclusive_to_key, has_from, has_to
        )
        if upper is not None and lower >= upper:
            return
        self._clear_rows(prefix, lower, upper, not has_from and upper is not None)

    def _clear_rows(
        self, prefix: bytes, lower: bytes, upper: bytes | None, raises_floor: bool
    ) -> None:
        """Delete the rows in ``[lower, upper)``; ``raises_floor``: nothing is left below."""
        seen = self._seen
        if seen is not None and seen[1] == upper and seen[0] == lower:
            # exactly the rows the last read of this very range saw (no write since); below
            # the new floor no read sees them, so their deletes can wait in the batch
            self._seen = None
            if seen[2]:
                self._stage_deletes(seen[2])
                if not raises_floor:  # still visible to reads: write them now
                    self.flush_staged()
        else:
            self._changing()
            self._delete_range(lower, upper)
        if raises_floor and upper is not None:
            # nothing is left below ``upper``: it is the new floor, and the cache entries
            # below it are stale from now on
            self._set_floor(prefix, upper)
        else:
            by_key = self._next.get(prefix)
            if by_key:  # forget the cached next indices of the deleted keys only
                for lex in [lex for lex in by_key if _intersects(prefix + lex, lower, upper)]:
                    del by_key[lex]

    def read_range(
        self, from_key: Any, to_key: Any, inclusive_to_key: bool
    ) -> Iterator[tuple[Any, list[Any]]]:
        return self._read_range(from_key, to_key, inclusive_to_key, True, True)

    def read_range_until(self, to_key: Any, inclusive_to_key: bool) -> Iterator[tuple[Any, list[Any]]]:
        # the hot path of the temporal sort / join: _groups inlined, the read remembered
        # for the clear_range_until that usually follows
        prefix, lower, upper = self._range_bounds(None, to_key, inclusive_to_key, False, True)
        if upper is None:
            return self._groups(len(prefix), lower, upper, True)
        if lower >= upper:
            return iter(())
        if prefix in self._complete:
            served = self._read_known(prefix, lower, upper)
            if served is not None:
                return served
        if self._staged_visible:
            self.flush_staged()
        options = rocksdict.ReadOptions()
        options.set_iterate_upper_bound(upper)
        rows: Iterator[tuple[bytes, bytes]] = self._db.items(from_key=lower, read_opt=options)  # type: ignore[assignment]
        head = list(islice(rows, _EAGER_ROWS))
        if len(head) == _EAGER_ROWS:
            return self._streamed(len(prefix), chain(head, rows), options)
        self._seen = (lower, upper, head)
        return iter(self._grouped(len(prefix), head))

    def _read_known(
        self, prefix: bytes, lower: bytes, upper: bytes
    ) -> Iterator[tuple[Any, list[Any]]] | None:
        """``[lower, upper)`` of a prefix whose cache knows every key, from the cache: pending
        rows from memory, the others with one multi-get; remembered for a following clear.

        None when the bounds leave the prefix or the range is too large to read at once
        (the caller then reads with an iterator).
        """
        by_key = self._next.get(prefix)
        start = len(prefix)
        if by_key is None or not lower.startswith(prefix) or not upper.startswith(prefix):
            return None
        if self._batch_visible:
            self.flush_staged()  # a staged put's rows must be readable from the database
        low, high = lower[start:], upper[start:]
        hits = [lex for lex, count in by_key.items() if count and low <= lex < high]
        if not hits:
            self._seen = (lower, upper, [])
            return iter(())
        if len(hits) > 1:
            hits.sort()
        pending = self._pending
        pack = _U64.pack
        rows: list[tuple[bytes, Any]] = []
        missing: list[int] = []
        for lex in hits:
            group = prefix + lex
            for index in range(by_key[lex]):
                row = group + pack(index)
                data = pending.get(row)
                if data is None:
                    missing.append(len(rows))
                rows.append((row, data))
        if len(rows) >= _EAGER_ROWS:
            return None
        if missing:
            found: list[bytes | None] = self._db.get([rows[i][0] for i in missing])  # type: ignore[assignment]
            for i, data in zip(missing, found):
                if data is None:  # pragma: no cover - the cache is exact above the floor
                    return None
                rows[i] = (rows[i][0], data)
        self._seen = (lower, upper, rows)
        return iter(self._grouped(start, rows))

    def read_range_from(self, from_key: Any) -> Iterator[tuple[Any, list[Any]]]:
        return self._read_range(from_key, None, False, True, False)

    def clear_range(self, from_key: Any, to_key: Any, inclusive_to_key: bool) -> None:
        self._clear_range(from_key, to_key, inclusive_to_key, True, True)

    def clear_range_until(self, to_key: Any, inclusive_to_key: bool) -> None:
        prefix, lower, upper = self._range_bounds(None, to_key, inclusive_to_key, False, True)
        if upper is None:
            self._clear_rows(prefix, lower, upper, False)
            return
        if lower >= upper:
            return
        seen = self._seen
        if seen is not None and seen[1] == upper and seen[0] == lower and len(self._floor) < _INDEX_CACHE_LIMIT:
            # the hot path of the temporal sort / join (read what is due, then drop it):
            # _clear_rows + _set_floor for a remembered read, inlined
            self._seen = None
            if seen[2]:
                self._stage_deletes(seen[2])
            self._floor[prefix] = upper
            by_key = self._next.get(prefix)
            if by_key is not None and len(by_key) > _STALE_LIMIT:
                self._set_floor(prefix, upper)  # purges the stale cache entries
            return
        self._clear_rows(prefix, lower, upper, True)

    def clear_range_from(self, from_key: Any) -> None:
        self._clear_range(from_key, None, False, True, False)

    def clear(self) -> None:
        prefix = self._current_prefix()
        self._changing()
        self._delete_range(prefix, _successor(prefix))
        self._next.pop(prefix, None)
        self._complete.discard(prefix)
        self._floor.pop(prefix, None)

    def invalidate_cache(self) -> None:
        """Forget cached next indices, floors and seen rows (after a restore wrote entries)."""
        self._changing()
        self._next.clear()
        self._complete.clear()
        self._floor.clear()


#: ``_NEXT_BYTE[b]`` is the single byte ``b + 1``
_NEXT_BYTE = [bytes((i + 1,)) for i in range(255)]


def _successor(key: bytes) -> bytes | None:
    """``prefix_successor`` with a fast path for the usual last byte below 0xFF."""
    if key:
        last = key[-1]
        if last != 255:
            return key[:-1] + _NEXT_BYTE[last]
    return prefix_successor(key)


def _intersects(group: bytes, lower: bytes, upper: bytes | None) -> bool:
    """True when rows starting with ``group`` may lie in ``[lower, upper)``."""
    if upper is not None and group >= upper:
        return False
    end = prefix_successor(group)
    return end is None or end > lower


_ROCKS_STATES: dict[StateKind, type[_RocksState]] = {
    StateKind.VALUE: RocksValueState,
    StateKind.LIST: RocksListState,
    StateKind.MAP: RocksMapState,
    StateKind.REDUCING: RocksReducingState,
    StateKind.AGGREGATING: RocksAggregatingState,
    StateKind.SORTED: RocksSortedState,
}


class EmbeddedRocksDBStateBackend(_KeyedStateBackend):
    """RocksDB backend: state on local disk, bounded memory (Flink's ``EmbeddedRocksDBStateBackend``).

    ``directory``: parent folder for the database (default: a fresh temp dir); the
    backend creates its own sub-folder there and deletes it on :meth:`close`.
    ``block_cache_size`` / ``write_buffer_size`` / ``max_write_buffer_number``
    bound RocksDB's memory.
    """

    backend_name = "rocksdb"

    def __init__(
        self,
        key_serializer: TypeSerializer[Any],
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        key_group_range: range | None = None,
        *,
        directory: str | os.PathLike[str] | None = None,
        block_cache_size: int = 64 << 20,
        write_buffer_size: int = 32 << 20,
        max_write_buffer_number: int = 2,
        max_background_jobs: int = 2,
        track_changes: bool = False,
        max_tracked_bytes: int = 16 << 20,
    ) -> None:
        super().__init__(key_serializer, max_parallelism, key_group_range)
        for option, value in (
            ("block_cache_size", block_cache_size),
            ("write_buffer_size", write_buffer_size),
            ("max_write_buffer_number", max_write_buffer_number),
            ("max_background_jobs", max_background_jobs),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise StateBackendError(
                    f"EmbeddedRocksDBStateBackend: option {option} must be a positive int, "
                    f"got {value!r}"
                )
        self._key_part: bytes | None = None
        self._kg_part: bytes | None = None
        self._kg = -1
        #: key bytes -> (key group, its prefix bytes, length-prefixed key bytes) of keys
        #: already checked (operators switch among the same keys again and again)
        self._key_memo: dict[bytes, tuple[int, bytes, bytes]] = {}
        try:
            if directory is None:
                self._path = tempfile.mkdtemp(prefix="pyspark-datastream-rocksdb-")
            else:
                os.makedirs(directory, exist_ok=True)
                self._path = tempfile.mkdtemp(
                    prefix=f"kg{self.key_group_range.start}-{self.key_group_range.stop - 1}-",
                    dir=os.fspath(directory),
                )
            options = rocksdict.Options(raw_mode=True)
            options.create_if_missing(True)
            table = rocksdict.BlockBasedOptions()
            table.set_block_cache(rocksdict.Cache(block_cache_size))
            options.set_block_based_table_factory(table)
            options.set_write_buffer_size(write_buffer_size)
            options.set_max_write_buffer_number(max_write_buffer_number)
            options.set_max_background_jobs(max_background_jobs)
            self._db = rocksdict.Rdict(os.path.join(self._path, "db"), options)
            write_options = rocksdict.WriteOptions()
            write_options.disable_wal = True  # type: ignore[method-assign, assignment]
            self._db.set_write_options(write_options)
            self._write_options = write_options
        except Exception as exc:
            if hasattr(self, "_path"):
                shutil.rmtree(self._path, ignore_errors=True)
            raise StateBackendError(
                f"EmbeddedRocksDBStateBackend: cannot open RocksDB under {directory!r}: {exc}"
            ) from exc
        # closes the database and deletes its folder even if close() is never called
        self._finalizer = weakref.finalize(self, _close_and_delete, self._db, self._path)
        #: with ``track_changes``: the proxy remembering every changed raw key
        self._tracker: _TrackingDB | None = None
        if track_changes:
            self._tracker = _TrackingDB(self._db, max_tracked_bytes)
            self._db = self._tracker  # type: ignore[assignment]

    # -- storage helpers -------------------------------------------------------------------------
    # The ReadOptions must outlive the native iterator (it holds the bound slices), so
    # these helpers are generators keeping it referenced while iterating.
    def _items(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Rows with ``lower <= key < upper`` in key order."""
        read_options = rocksdict.ReadOptions()
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        yield from self._db.items(from_key=lower, read_opt=read_options)

    def _items_backwards(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Rows with ``lower <= key < upper`` in reverse key order."""
        read_options = rocksdict.ReadOptions()
        read_options.set_iterate_lower_bound(lower)
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        rows: Iterator[tuple[bytes, bytes]] = iter(
            self._db.items(backwards=True, read_opt=read_options)  # type: ignore[arg-type]
        )
        for key, value in rows:
            if key < lower:
                return
            yield key, value

    def _keys(self, lower: bytes, upper: bytes | None) -> Iterator[bytes]:
        read_options = rocksdict.ReadOptions()
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        yield from self._db.keys(from_key=lower, read_opt=read_options)

    def _write(self, batch: rocksdict.WriteBatch) -> None:
        self._db.write(batch, self._write_options)

    def _new_batch(self) -> Any:
        """A write batch (a recording one when changes are tracked)."""
        if self._tracker is not None:
            return _RecordingBatch()
        return rocksdict.WriteBatch(raw_mode=True)

    def _flush_staged(self) -> None:
        """Write the rows states staged (sorted-state adds) before reading the database whole."""
        for registration in self._states.values():
            flush = getattr(registration.state, "flush_staged", None)
            if flush is not None:
                flush()

    def flush(self) -> None:
        """Write the writes states hold back in batches now.

        Sorted states stage their adds (and the deletes of rows below a floor) in a
        write batch written before any read that could see them; snapshots, change
        capture and ``keys`` flush by themselves. Call this to have the work done
        now, e.g. at the end of a timed run.
        """
        self._check_open()
        self._flush_staged()

    # -- change tracking (incremental checkpoints) --------------------------------------------------
    @property
    def tracks_changes(self) -> bool:
        """True when built with ``track_changes=True``."""
        return self._tracker is not None

    def take_changes(self) -> dict[bytes, bytes | None] | None:
        """Raw rows changed since the last call (value None = deleted); resets the record.

        None when the changed rows outgrew ``max_tracked_bytes`` (the record was
        dropped to bound memory: the caller must write a full copy instead).
        Timers are not included (they live in memory; see :meth:`snapshot`).
        """
        if self._tracker is None:
            raise StateBackendError(
                "EmbeddedRocksDBStateBackend.take_changes(): the backend was built without "
                "track_changes=True"
            )
        self._flush_staged()
        tracker = self._tracker
        changes, tracker.changes = tracker.changes, {}
        tracker.size = 0
        if tracker.overflow:
            tracker.overflow = False
            return None
        return changes

    def apply_changes(self, changes: Iterable[tuple[bytes, bytes | None]]) -> int:
        """Write raw rows (value None = delete) straight to the database, untracked.

        Used to rebuild a database from change files; returns the number of rows.
        """
        self._check_open()
        self._flush_staged()
        real = self._tracker._real if self._tracker is not None else self._db
        batch = rocksdict.WriteBatch(raw_mode=True)
        count = total = 0
        for key, value in changes:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
            count += 1
            if count >= _BATCH_LIMIT:
                real.write(batch, self._write_options)
                batch = rocksdict.WriteBatch(raw_mode=True)
                total += count
                count = 0
        if count:
            real.write(batch, self._write_options)
            total += count
        for registration in self._states.values():
            invalidate = getattr(registration.state, "invalidate_cache", None)
            if invalidate is not None:
                invalidate()
        return total

    def raw_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every stored (non-timer) row as raw ``(entry key, value)`` in key order."""
        self._check_open()
        self._flush_staged()
        return self._items(b"", None)

    def _delete_range(self, lower: bytes, upper: bytes | None) -> None:
        """Delete ``lower <= key < upper`` through bounded iteration + WriteBatch."""
        batch = self._new_batch()
        count = 0
        for key in self._keys(lower, upper):
            batch.delete(key)
            count += 1
            if count >= _BATCH_LIMIT:
                self._write(batch)
                batch = self._new_batch()
                count = 0
        if count:
            self._write(batch)

    # -- current key -------------------------------------------------------------------------------
    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        if key_bytes is None:
            key_bytes = self.key_serializer.serialize(key)
        memo = self._key_memo.get(key_bytes)
        if memo is None:
            key_group = _crc32(key_bytes) % self.max_parallelism
            if not self._full_range and key_group not in self.key_group_range:
                self._check_key_group(key_group, key)
            if len(self._key_memo) >= _KEY_MEMO_LIMIT:
                self._key_memo.clear()
            memo = self._key_memo[key_bytes] = (
                key_group, _KG_BYTES[key_group], _U32.pack(len(key_bytes)) + key_bytes)
        self._key = key
        self._key_bytes = key_bytes
        self._kg, self._kg_part, self._key_part = memo

    def get_current_key_group(self) -> int:
        if self._key_bytes is None:
            raise StateError("no current key: call set_current_key first")
        return self._kg

    # -- states ------------------------------------------------------------------------------------
    def _create_state(
        self, descriptor: StateDescriptor, namespace_serializer: TypeSerializer[Any]
    ) -> InternalKvState:
        return _ROCKS_STATES[descriptor.kind](self, descriptor, namespace_serializer)

    def _kind_of(self, state_name: str) -> StateKind:
        registration = self._states.get(state_name)
        if registration is not None:
            return registration.descriptor.kind
        return self._restored_meta[state_name].kind

    # -- snapshot / restore ------------------------------------------------------------------------
    def _restore_entries(self, entries: Iterable[StateEntry]) -> None:
        self._flush_staged()
        batch = self._new_batch()
        count = 0
        for entry in entries:
            batch.put(entry.encoded_key(), entry.value)
            count += 1
            if count >= _BATCH_LIMIT:
                self._write(batch)
                batch = self._new_batch()
                count = 0
        if count:
            self._write(batch)
        for registration in self._states.values():
            invalidate = getattr(registration.state, "invalidate_cache", None)
            if invalidate is not None:
                invalidate()

    def snapshot(self, key_groups: Iterable[int] | None = None) -> Iterator[StateEntry]:
        """Ordered scan of the owned key groups merged with the timers; streaming."""
        self._check_open()
        self._flush_staged()
        if key_groups is None:
            selected = list(self.key_group_range)
        else:
            selected = sorted(set(key_groups))
            for key_group in selected:
                if key_group not in self.key_group_range:
                    raise KeyGroupError(
                        f"cannot snapshot key group {key_group}: this backend owns "
                        f"{self.key_group_range.start}..{self.key_group_range.stop - 1}"
                    )
        timers: dict[int, list[StateEntry]] = {}
        for entry in self._timer_entries():
            timers.setdefault(entry.key_group, []).append(entry)
        for group in timers.values():
            group.sort(key=StateEntry.encoded_key)
        kinds = {name: self._kind_of(name) for name in self._restored_meta}
        kinds.update({name: reg.descriptor.kind for name, reg in self._states.items()})
        return self._snapshot(selected, timers, kinds)

    def _snapshot(
        self,
        selected: list[int],
        timers: dict[int, list[StateEntry]],
        kinds: dict[str, StateKind],
    ) -> Iterator[StateEntry]:
        # contiguous key groups are scanned with a single iterator
        runs: list[tuple[int, int]] = []
        for key_group in selected:
            if runs and runs[-1][1] == key_group:
                runs[-1] = (runs[-1][0], key_group + 1)
            else:
                runs.append((key_group, key_group + 1))
        for start, stop in runs:
            lower = encode_key_group(start)
            upper = encode_key_group(stop) if stop < (1 << 15) else None
            scanned = self._renumbered(self._items(lower, upper), kinds)
            pending_timers = [t for kg in range(start, stop) for t in timers.get(kg, ())]
            yield from _merge_sorted(scanned, pending_timers)

    def _renumbered(
        self, rows: Iterator[tuple[bytes, bytes]], kinds: dict[str, StateKind]
    ) -> Iterator[tuple[bytes, StateEntry]]:
        """Decode scanned rows; renumber list / sorted indices 0..n-1 per group."""
        group: bytes | None = None
        counter = 0
        for raw_key, value in rows:
            decoded = decode_entry_key(raw_key)
            kind = kinds.get(decoded.state_name)
            user_key = decoded.user_key
            if kind is StateKind.LIST or kind is StateKind.SORTED:
                group_key = raw_key[:-8]
                if group_key != group:
                    group, counter = group_key, 0
                index = _U64.unpack_from(raw_key, len(raw_key) - 8)[0]
                if index != counter:
                    user_key = user_key[:-8] + _U64.pack(counter)
                    raw_key = group_key + _U64.pack(counter)
                counter += 1
            yield raw_key, StateEntry(
                decoded.key_group,
                decoded.state_name,
                decoded.key,
                decoded.namespace,
                user_key,
                value,
            )

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        """Keys having state ``state_name`` under ``namespace`` (seeks past each key's entries)."""
        self._check_open()
        if state_name not in self._states and state_name not in self._restored_meta:
            raise StateError(f"keys(): unknown state {state_name!r}")
        self._flush_staged()
        ns_bytes = self._namespace_bytes_for(state_name, namespace)
        return self._keys_of(encode_state_name(state_name), ns_bytes)

    def _keys_of(self, name_part: bytes, ns_bytes: bytes) -> Iterator[Any]:
        deserialize = self.key_serializer.deserialize
        ns_part = _U32.pack(len(ns_bytes)) + ns_bytes
        for key_group in self.key_group_range:
            state_prefix = _KG_BYTES[key_group] + name_part
            end = prefix_successor(state_prefix)
            lower = state_prefix
            while True:
                raw = next(self._keys(lower, end), None)
                if raw is None:
                    break
                start = len(state_prefix)
                (key_len,) = _U32.unpack_from(raw, start)
                key_end = start + 4 + key_len
                key_bytes = raw[start + 4 : key_end]
                key_prefix = raw[:key_end]
                # does this key have an entry in the wanted namespace?
                wanted = key_prefix + ns_part
                hit = next(self._keys(wanted, prefix_successor(wanted)), None)
                if hit is not None:
                    yield deserialize(key_bytes)
                following = prefix_successor(key_prefix)
                if following is None:
                    break
                lower = following

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        super().close()
        self._states.clear()
        self._timer_queues.clear()
        self._finalizer()

    @property
    def path(self) -> str:
        """Folder holding this backend's database."""
        return self._path


class _RecordingBatch:
    """A write batch as a Python list, so the tracking proxy can see what it writes."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes) -> None:
        self.ops.append((key, value))

    def delete(self, key: bytes) -> None:
        self.ops.append((key, None))


class _TrackingDB:
    """Forwards to the real ``Rdict`` and remembers each changed key (None = deleted)."""

    def __init__(self, db: rocksdict.Rdict, limit: int) -> None:
        self._real = db
        self.limit = limit
        self.size = 0
        self.overflow = False
        self.changes: dict[bytes, bytes | None] = {}
        self.get = db.get
        self.items = db.items
        self.keys = db.keys

    def _record(self, key: bytes, value: bytes | None) -> None:
        self.changes[key] = value
        self.size += len(key) + (len(value) if value is not None else 0) + 64
        if self.size > self.limit:  # stop recording; the caller copies everything instead
            self.overflow = True
            self.changes = {}
            self.size = 0

    def put(self, key: bytes, value: bytes) -> None:
        self._real.put(key, value)
        if not self.overflow:
            self._record(key, value)

    def delete(self, key: bytes) -> None:
        self._real.delete(key)
        if not self.overflow:
            self._record(key, None)

    def write(self, batch: Any, options: Any = None) -> None:
        if isinstance(batch, _RecordingBatch):
            real = rocksdict.WriteBatch(raw_mode=True)
            for key, value in batch.ops:
                if value is None:
                    real.delete(key)
                else:
                    real.put(key, value)
            self._real.write(real, options)
            for key, value in batch.ops:
                if self.overflow:
                    break
                self._record(key, value)
        else:
            raise StateBackendError("a tracked RocksDB backend only writes recording batches")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _close_and_delete(db: rocksdict.Rdict, path: str) -> None:
    """Close a database and delete its folder (also run by the finalizer)."""
    try:
        db.close()
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _merge_sorted(
    scanned: Iterator[tuple[bytes, StateEntry]], timers: list[StateEntry]
) -> Iterator[StateEntry]:
    """Merge scanned ``(raw key, entry)`` rows with sorted timer entries by encoded key."""
    if not timers:
        for _, entry in scanned:
            yield entry
        return
    timer_keys = [(timer.encoded_key(), timer) for timer in timers]
    position = 0
    for raw_key, entry in scanned:
        while position < len(timer_keys) and timer_keys[position][0] < raw_key:
            yield timer_keys[position][1]
            position += 1
        yield entry
    for _, timer in timer_keys[position:]:
        yield timer
