"""``RocksSortedState``: binary sorted state in RocksDB, one row per value.

Its own module because it is the one state with machinery of its own: adds are
kept pending and written in batches, a next-index cache and per-prefix floors
spare seeks, and a range read is remembered for the clear that usually follows
it (the temporal sort / join pattern). The class docstring states the
invariants these rely on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

import rocksdict

from ...entries import StateKind, prefix_successor
from ...internal_state import InternalBinarySortedState
from .common import BATCH_LIMIT, INDEX_CACHE_LIMIT, KEY_MEMO_LIMIT, U64
from .states import RocksState

__all__ = ["RocksSortedState"]

#: a sorted-state range read of fewer rows is read at once (and its row keys remembered
#: for a following clear of that range); a larger one is streamed
_EAGER_ROWS = 4096
#: most memoized lexicographic sort keys per sorted state
_LEX_MEMO_LIMIT = 4096
#: a prefix's next-index cache is purged of stale keys (below its floor) beyond this size
_STALE_LIMIT = 16
_ZERO_INDEX = bytes(8)


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


class RocksSortedState(RocksState, InternalBinarySortedState):
    """RocksDB binary sorted state: one row per value, lookups and ranges are bounded seeks.

    Rows are ``prefix | lexicographic key | uint64 index``. Every native call
    through rocksdict costs microseconds, so the hot paths count them:

    * ``add`` reads nothing: the key's next index comes from a cache; a key missing
      there is new when the prefix was found empty (one seek when the prefix is first
      written), else one point ``get`` of index 0 tells, else one reverse seek. The
      row is *pending* (kept in memory) until a read needs the database to hold it
      or ``BATCH_LIMIT`` rows wait; then the pending rows go to RocksDB in one
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
        self._lex_of = self._key_serializer.serialize
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
        prefix = self._prefix_memo.get(self._backend.key_part)
        if prefix is None or self._ns_part is not self._memo_ns:
            prefix = self._memo_prefix()
        return prefix

    def _memo_prefix(self) -> bytes:
        """The current key's and namespace's prefix, memoized per key (the same prefix
        object each time: dict lookups by it reuse its hash)."""
        ns_part = self._ns_part
        prefix = self._prefix()
        memo = self._prefix_memo
        if ns_part is not self._memo_ns or len(memo) >= KEY_MEMO_LIMIT:
            memo.clear()
            self._memo_ns = ns_part
        memo[self._backend.key_part] = prefix
        return prefix

    def flush_staged(self) -> None:
        """Write the staged batch and the pending rows (before reads that could see them,
        and before whole-DB reads)."""
        staged = self._staged
        pending = self._pending
        if pending:
            if staged is None:
                staged = self._backend.new_batch()
            put = staged.put
            for row, data in pending.items():  # after the staged deletes: the puts win
                put(row, data)
            self._pending = {}
        self._staged = None
        self._staged_count = 0
        self._staged_visible = False
        self._batch_visible = False
        if staged is not None:
            self._backend.write_batch(staged)

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
                    staged = self._staged = self._backend.new_batch()
                staged.delete(row)
                count += 1
        if not pending and not self._batch_visible:
            self._staged_visible = False  # nothing a read could see is left unwritten
        if count:
            self._staged_count += count
            if self._staged_count >= BATCH_LIMIT:
                self.flush_staged()

    def _changing(self) -> None:
        """Before a write other than ``add``: staged rows out, the last read forgotten."""
        if self._staged is not None or self._pending:
            self.flush_staged()
        self._seen = None

    def _index_cache(self, prefix: bytes) -> dict[bytes, int]:
        by_key = self._next.get(prefix)
        if by_key is None:
            if len(self._next) >= INDEX_CACHE_LIMIT:
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
        if len(self._floor) >= INDEX_CACHE_LIMIT:
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
        key_deserialize = self._key_serializer.deserialize
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
        key_deserialize = self._key_serializer.deserialize
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
        for key, _ in self._backend.scan_backwards(group, _successor(group)):
            return U64.unpack_from(key, len(key) - 8)[0] + 1
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
        prefix = self._prefix_memo.get(self._backend.key_part)
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
        pending[group + U64.pack(index)] = self._serialize(value)
        by_key[lex] = index + 1
        self._seen = None
        self._staged_visible = True
        if len(pending) >= BATCH_LIMIT:
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
                staged = self._staged = self._backend.new_batch()
            pop = self._pending.pop
            for index in range(len(rows), count):
                row = group + U64.pack(index)
                pop(row, None)
                staged.delete(row)
            for index, data in enumerate(rows):
                row = group + U64.pack(index)
                pop(row, None)
                staged.put(row, data)
            self._staged_visible = True
            self._batch_visible = True
            self._staged_count += max(len(rows), count)
            if self._staged_count >= BATCH_LIMIT:
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
        for key, _ in self._backend.scan_backwards(lower, upper):
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
        rows: Iterator[tuple[bytes, bytes]] = self._db.items(from_key=lower, read_opt=options)
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
        pack = U64.pack
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
            found: list[bytes | None] = self._db.get([rows[i][0] for i in missing])
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
        if seen is not None and seen[1] == upper and seen[0] == lower and len(self._floor) < INDEX_CACHE_LIMIT:
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
