"""``RocksDBKeyedStateBackend``: the keyed state backend over one embedded RocksDB.

It owns the database (opened in its own folder, deleted on close), the current
key, snapshot and restore (one ordered scan merged with the in-memory timers),
change capture for incremental checkpoints, and the storage access its states
use (``states.StorageAccess``: bounded scans, range deletes, write batches).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

import rocksdict

from ...entries import (
    StateEntry,
    StateKind,
    decode_entry_key,
    encode_key_group,
    encode_state_name,
    prefix_successor,
)
from ...exceptions import StateBackendError, StateError
from ...keygroups import DEFAULT_MAX_PARALLELISM
from ...namespaces import VOID_NAMESPACE
from ...serializers import TypeSerializer
from ...ttl import full_snapshot_cleanup, ttl_time_provider
from ..base import TableStateBackend
from .common import BATCH_LIMIT, KEY_MEMO_LIMIT, U32, U64, UNSET
from .sorted_state import RocksSortedState
from .states import (
    RocksAggregatingState,
    RocksListState,
    RocksMapState,
    RocksReducingState,
    RocksState,
    RocksValueState,
)
from .tracking import RecordingBatch, TrackingDB
from .ttl import rocksdb_ttl_cleanup

__all__ = ["RocksDBKeyedStateBackend"]

_crc32 = zlib.crc32
_KG_BYTES = [struct.pack(">H", i) for i in range(1 << 15)]

_ROCKS_STATES: dict[StateKind, type[RocksState]] = {
    StateKind.VALUE: RocksValueState,
    StateKind.LIST: RocksListState,
    StateKind.MAP: RocksMapState,
    StateKind.REDUCING: RocksReducingState,
    StateKind.AGGREGATING: RocksAggregatingState,
    StateKind.SORTED: RocksSortedState,
}


class RocksDBKeyedStateBackend(TableStateBackend):
    """RocksDB backend: state on local disk, bounded memory (Flink's ``RocksDBKeyedStateBackend``).

    ``directory``: parent folder for the database (default: a fresh temp dir); the
    backend creates its own sub-folder there and deletes it on :meth:`close`.
    ``block_cache_size`` / ``write_buffer_size`` / ``max_write_buffer_number``
    bound RocksDB's memory.
    """

    backend_name = "rocksdb"
    STATE_CLASSES = _ROCKS_STATES
    TTL_CLEANUP = rocksdb_ttl_cleanup

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
                    f"RocksDBKeyedStateBackend: option {option} must be a positive int, "
                    f"got {value!r}"
                )
        #: the current key's row-key parts, read by the states on every access: its key
        #: group (2 bytes) and its length-prefixed bytes (``UNSET`` until a key is set: a
        #: state's row key then cannot be built, and the state raises the no-key error)
        self.key_part = UNSET
        self.kg_part = UNSET
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
            #: the database the states read and write (the tracking proxy with track_changes)
            self.db: rocksdict.Rdict | TrackingDB = rocksdict.Rdict(
                os.path.join(self._path, "db"), options)
            write_options = rocksdict.WriteOptions()
            write_options.disable_wal = True  # type: ignore[method-assign, assignment]  # rocksdict's stub declares WriteOptions.disable_wal a method; it is a property
            self.db.set_write_options(write_options)
            self._write_options = write_options
        except Exception as exc:
            if hasattr(self, "_path"):
                shutil.rmtree(self._path, ignore_errors=True)
            raise StateBackendError(
                f"RocksDBKeyedStateBackend: cannot open RocksDB under {directory!r}: {exc}"
            ) from exc
        # closes the database and deletes its folder even if close() is never called
        self._finalizer = weakref.finalize(self, _close_and_delete, self.db, self._path)
        #: with ``track_changes``: the proxy remembering every changed raw key
        self._tracker: TrackingDB | None = None
        if track_changes:
            self._tracker = TrackingDB(self.db, max_tracked_bytes)
            self.db = self._tracker

    # -- storage access (the states' too: states.StorageAccess) ----------------------------------
    # The ReadOptions must outlive the native iterator (it holds the bound slices), so
    # these helpers are generators keeping it referenced while iterating.
    def scan(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Rows with ``lower <= key < upper`` in key order."""
        read_options = rocksdict.ReadOptions()
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        yield from self.db.items(from_key=lower, read_opt=read_options)

    def scan_backwards(self, lower: bytes, upper: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Rows with ``lower <= key < upper`` in reverse key order."""
        read_options = rocksdict.ReadOptions()
        read_options.set_iterate_lower_bound(lower)
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        # a raw-mode database's rows are bytes (the stub types keys for every mode)
        rows = cast(Iterator[tuple[bytes, bytes]],
                    self.db.items(backwards=True, read_opt=read_options))
        for key, value in rows:
            if key < lower:
                return
            yield key, value

    def _keys(self, lower: bytes, upper: bytes | None) -> Iterator[bytes]:
        read_options = rocksdict.ReadOptions()
        if upper is not None:
            read_options.set_iterate_upper_bound(upper)
        yield from self.db.keys(from_key=lower, read_opt=read_options)

    def write_batch(self, batch: rocksdict.WriteBatch) -> None:
        self.db.write(batch, self._write_options)

    def new_batch(self) -> Any:
        """A write batch (a recording one when changes are tracked)."""
        if self._tracker is not None:
            return RecordingBatch()
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
                "RocksDBKeyedStateBackend.take_changes(): the backend was built without "
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
        real = self._tracker.real_db if self._tracker is not None else self.db
        batch = rocksdict.WriteBatch(raw_mode=True)
        count = total = 0
        for key, value in changes:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
            count += 1
            if count >= BATCH_LIMIT:
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
        return self.scan(b"", None)

    def delete_rows(self, lower: bytes, upper: bytes | None) -> None:
        """Delete ``lower <= key < upper`` through bounded iteration + WriteBatch."""
        self._write_in_batches(lambda batch, key: batch.delete(key), self._keys(lower, upper))

    def _write_in_batches(self, apply: Callable[[Any, Any], None], items: Iterable[Any]) -> None:
        """``apply(batch, item)`` for every item, written in WriteBatches of at most
        ``BATCH_LIMIT`` items each."""
        batch = self.new_batch()
        count = 0
        for item in items:
            apply(batch, item)
            count += 1
            if count >= BATCH_LIMIT:
                self.write_batch(batch)
                batch = self.new_batch()
                count = 0
        if count:
            self.write_batch(batch)

    # -- current key -------------------------------------------------------------------------------
    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        if key_bytes is None:
            key_bytes = self.key_serializer.serialize(key)
        memo = self._key_memo.get(key_bytes)
        if memo is None:
            key_group = _crc32(key_bytes) % self.max_parallelism
            if not self._full_range and key_group not in self.key_group_range:
                self._check_key_group(key_group, key)
            if len(self._key_memo) >= KEY_MEMO_LIMIT:
                self._key_memo.clear()
            memo = self._key_memo[key_bytes] = (
                key_group, _KG_BYTES[key_group], U32.pack(len(key_bytes)) + key_bytes)
        self._key = key
        self._key_bytes = key_bytes
        self._kg, self.kg_part, self.key_part = memo

    def get_current_key_group(self) -> int:
        if self._key_bytes is None:
            raise StateError("no current key: call set_current_key first")
        return self._kg

    # -- states ------------------------------------------------------------------------------------
    def _kind_of(self, state_name: str) -> StateKind:
        registration = self._states.get(state_name)
        if registration is not None:
            return registration.descriptor.kind
        return self._restored_meta[state_name].kind

    # -- snapshot / restore ------------------------------------------------------------------------
    def _restore_entries(self, entries: Iterable[StateEntry]) -> None:
        self._flush_staged()
        self._write_in_batches(lambda batch, entry: batch.put(entry.encoded_key(), entry.value),
                               entries)
        for registration in self._states.values():
            invalidate = getattr(registration.state, "invalidate_cache", None)
            if invalidate is not None:
                invalidate()

    def snapshot(self, key_groups: Iterable[int] | None = None) -> Iterator[StateEntry]:
        """Ordered scan of the owned key groups merged with the timers; streaming."""
        self._check_open()
        self._flush_staged()
        selected = self._snapshot_key_groups(key_groups)
        timers: dict[int, list[StateEntry]] = {}
        for entry in self.timer_entries():
            timers.setdefault(entry.key_group, []).append(entry)
        for group in timers.values():
            group.sort(key=StateEntry.encoded_key)
        kinds = {name: self._kind_of(name) for name in self._restored_meta}
        kinds.update({name: reg.descriptor.kind for name, reg in self._states.items()})
        return full_snapshot_cleanup(
            self._snapshot(selected, timers, kinds),
            [reg.state for reg in self._states.values()], ttl_time_provider(self).now)

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
            scanned = self._renumbered(self.scan(lower, upper), kinds)
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
                index = U64.unpack_from(raw_key, len(raw_key) - 8)[0]
                if index != counter:
                    user_key = user_key[:-8] + U64.pack(counter)
                    raw_key = group_key + U64.pack(counter)
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
        ns_part = U32.pack(len(ns_bytes)) + ns_bytes
        for key_group in self.key_group_range:
            state_prefix = _KG_BYTES[key_group] + name_part
            end = prefix_successor(state_prefix)
            lower = state_prefix
            while True:
                raw = next(self._keys(lower, end), None)
                if raw is None:
                    break
                start = len(state_prefix)
                (key_len,) = U32.unpack_from(raw, start)
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

