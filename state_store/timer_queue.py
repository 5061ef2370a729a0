"""The timer queue of a keyed state backend, and the fired :class:`Timer`.

A queue holds the timers of one operator (event or processing time), each unique
per ``(timestamp, key, namespace)`` and ordered by ``(timestamp, key bytes,
namespace bytes)``. Timers are part of the backend's snapshot as entries of state
``_timer/<name>`` (user key: the lexicographic timestamp).

The queue is on the hot paths of STREAMING micro-batches (one ``add`` per element,
millions of timers snapshotted, restored and fired per key group), so restore and
snapshot work per distinct key rather than per timer where they can, and build
their lists at C speed (``map``/``zip``) rather than in Python loops. Restored timers
that are due when the queue is first polled are sorted once and fired from that sorted
list, rather than popped one by one from a heap.
"""

from __future__ import annotations

import heapq
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator
from functools import partial
from itertools import compress, repeat
from operator import itemgetter, not_
from typing import Any, NamedTuple, Protocol

from .bulk import numbered, paused_gc
from .entries import StateEntry, encode_key_group, encode_timestamp, join_parts, timer_state_name
from .exceptions import SavepointFormatError, StateError
from .keygroups import assign_key_group
from .namespaces import VOID_NAMESPACE, VOID_NAMESPACE_SERIALIZER
from .serializers import TypeSerializer

__all__ = ["CurrentKeySource", "Timer", "TimerColumns", "TimerQueue"]

_SIGN = 1 << 63
#: the largest timestamp (a long): polling up to it fires every timer
_LAST_TIMESTAMP = (1 << 63) - 1
_MASK64 = (1 << 64) - 1
_pack_u64 = struct.Struct(">Q").pack
_new_tuple = tuple.__new__
_heappush = heapq.heappush
_heappop = heapq.heappop
_STAMP = itemgetter(0)
_ITEM_KEY = itemgetter(1)
_ITEM_NAMESPACE = itemgetter(2)
_KEY = itemgetter(2)
_NAMESPACE = itemgetter(3)
_USER_KEY = itemgetter(4)
#: never a caller's namespace: the "no namespace serialized yet" marker
_NO_NAMESPACE = object()


class CurrentKeySource(Protocol):
    """What a :class:`TimerQueue` needs of its backend (the keyed state backend)."""

    key_serializer: TypeSerializer[Any]

    def current_key_and_bytes(self) -> tuple[Any, bytes | None]:
        """``(key, key bytes)`` of the current key; key bytes None when no key is set."""


class Timer(NamedTuple):
    """A fired timer: ``(timestamp, key, namespace, key_bytes)``.

    ``key_bytes`` is the serialized key, so ``backend.set_current_key(timer.key,
    timer.key_bytes)`` needs no serialization. A plain named tuple (no per-timer
    attribute dictionary): BATCH fires one timer per record of a sessionizer.
    """

    timestamp: int
    key: Any
    namespace: Any
    key_bytes: bytes


#: a plain ``(timestamp, key, namespace, key_bytes)`` tuple as a :class:`Timer`
_as_timer = partial(_new_tuple, Timer)


def encode_timestamps(stamps: Iterable[int]) -> list[bytes]:
    """Lexicographic-long user keys of many timer timestamps at once
    (:func:`~.entries.encode_timestamp` of each: the sign bit flipped, big-endian)."""
    return list(map(_pack_u64, map(_MASK64.__and__, map(_SIGN.__xor__, stamps))))


def decode_timestamps(user_keys: list[bytes]) -> list[int]:
    """Timer timestamps of many lexicographic-long user keys at once
    (:func:`~.entries.decode_timestamp` of each; ``SavepointFormatError`` unless all are 8 bytes)."""
    if not user_keys:
        return []
    if set(map(len, user_keys)) != {8}:
        bad = next(uk for uk in user_keys if len(uk) != 8)
        raise SavepointFormatError(f"timer user key {bad!r} is not 8 bytes")
    words = array("Q")
    if words.itemsize != 8:  # pragma: no cover - every supported platform has 8-byte Q
        return [struct.unpack(">Q", uk)[0] - _SIGN for uk in user_keys]
    words.frombytes(b"".join(user_keys))
    if sys.byteorder == "little":
        words.byteswap()
    return list(map(_SIGN.__rsub__, words))


class TimerQueue:
    """In-memory priority queue of the timers of one operator (event or processing time).

    A timer is ``(timestamp, key, namespace)``, unique per that triple. Timers
    are ordered by ``(timestamp, key bytes, namespace bytes)``. They are part
    of the backend's snapshot as entries of state ``_timer/<name>``.

    ``_live`` maps each timer ``(timestamp, key bytes, namespace bytes)`` to its
    ``(key, namespace)`` objects. Every live timer waits in one of three lists, which
    may also hold stale items (deleted, fired, or re-added duplicates) that readers skip:

    * ``_fresh``: restored timers nobody has looked at yet, in any order;
    * ``_run``: timers that were due when ``_fresh`` was settled, sorted in descending
      order (the next one last, so firing takes it with ``list.pop``);
    * ``_heap``: every other timer (added ones, restored ones that were not due).

    The lists are changed in place only, so an iterating ``poll_until`` keeps valid
    references to them.
    """

    def __init__(
        self,
        backend: CurrentKeySource,
        name: str,
        namespace_serializer: TypeSerializer[Any] = VOID_NAMESPACE_SERIALIZER,
    ) -> None:
        self._backend = backend
        self.name = name
        self.namespace_serializer = namespace_serializer
        self._heap: list[tuple[int, bytes, bytes]] = []
        self._run: list[tuple[int, bytes, bytes]] = []
        self._fresh: list[tuple[int, bytes, bytes]] = []
        #: live timers -> (key object, namespace object)
        self._live: dict[tuple[int, bytes, bytes], tuple[Any, Any]] = {}
        self._last_ns: Any = _NO_NAMESPACE
        self._last_ns_bytes = b""

    # -- helpers -------------------------------------------------------------------------------
    def _ns_bytes(self, namespace: Any) -> bytes:
        if namespace is self._last_ns:
            return self._last_ns_bytes
        data = self.namespace_serializer.serialize(namespace)
        self._last_ns, self._last_ns_bytes = namespace, data
        return data

    def _current(self) -> tuple[Any, bytes]:
        key, key_bytes = self._backend.current_key_and_bytes()
        if key_bytes is None:
            raise StateError(
                f"no current key: call set_current_key before using timer queue {self.name!r}"
            )
        return key, key_bytes

    def _discard(self, item: tuple[int, bytes, bytes]) -> bool:
        live = self._live
        if live.pop(item, None) is None:
            return False
        heap = self._heap
        waiting = len(heap) + len(self._run) + len(self._fresh)
        if waiting > 64 and waiting > 2 * len(live):
            heap[:] = live  # in place: poll_until holds these lists
            heapq.heapify(heap)
            self._run.clear()
            self._fresh.clear()
        return True

    def _settle_fresh(self, timestamp: int | None) -> None:
        """Move the restored timers on: those due at ``timestamp`` (None: none) to the
        sorted run, the others to the heap."""
        fresh = self._fresh
        stamps = list(map(_STAMP, fresh))
        if timestamp is None or min(stamps) > timestamp:
            due, rest = [], fresh[:]
        elif max(stamps) <= timestamp:
            due, rest = fresh[:], []
        else:
            flags = list(map(timestamp.__ge__, stamps))
            due = list(compress(fresh, flags))
            rest = list(compress(fresh, map(not_, flags)))
        fresh.clear()
        if rest:
            heap = self._heap
            heap += rest
            heapq.heapify(heap)
        if due:
            run = self._run
            run += due
            run.sort(reverse=True)

    # -- public API ----------------------------------------------------------------------------
    def add(self, timestamp: int, namespace: Any = VOID_NAMESPACE) -> None:
        """Register a timer for the current key (idempotent per (timestamp, key, namespace))."""
        key, key_bytes = self._backend.current_key_and_bytes()
        if key_bytes is None:
            key, key_bytes = self._current()  # raises the no-current-key error
        if namespace is self._last_ns:  # _ns_bytes inlined (hot path)
            ns_bytes = self._last_ns_bytes
        else:
            ns_bytes = self._ns_bytes(namespace)
        item = (timestamp if type(timestamp) is int else int(timestamp), key_bytes, ns_bytes)
        live = self._live
        if item not in live:
            live[item] = (key, namespace)
            _heappush(self._heap, item)

    def delete(self, timestamp: int, namespace: Any = VOID_NAMESPACE) -> None:
        """Remove a timer of the current key (no-op when absent)."""
        _, key_bytes = self._current()
        self._discard((int(timestamp), key_bytes, self._ns_bytes(namespace)))

    def peek_timestamp(self) -> int | None:
        """Earliest timer timestamp, or None when the queue is empty."""
        if self._fresh:
            self._settle_fresh(None)
        heap = self._heap
        run = self._run
        live = self._live
        while heap and heap[0] not in live:
            _heappop(heap)
        while run and run[-1] not in live:
            run.pop()
        if run:
            return min(run[-1][0], heap[0][0]) if heap else run[-1][0]
        return heap[0][0] if heap else None

    def poll_until(self, timestamp: int) -> Iterator[Timer]:
        """Remove and yield every timer with ``timestamp <= timestamp`` in timer order.

        Timers added while iterating (e.g. by ``on_timer``) are yielded too when due.
        At the last timestamp (end of input, a BATCH key's end) every timer is due: the
        heap is sorted once into the run, so each timer costs a ``list.pop``, not a heap pop.
        """
        return map(_as_timer, self.poll_tuples_until(timestamp))

    def poll_tuples_until(self, timestamp: int) -> Iterator[tuple[int, Any, Any, bytes]]:
        """:meth:`poll_until`, each timer a plain ``(timestamp, key, namespace, key_bytes)``
        tuple: for callers that unpack them (a :class:`Timer` costs a slower constructor
        call per fired timer, and BATCH fires one per record of a sessionizer)."""
        heap = self._heap  # these lists change in place only, so the references stay valid
        run = self._run
        fresh = self._fresh
        if timestamp >= _LAST_TIMESTAMP and heap and not run:
            run += heap
            heap.clear()
            run.sort(reverse=True)
        take = self._live.pop
        while True:
            if fresh:
                self._settle_fresh(timestamp)
            if run:
                item = run[-1]
                if heap and heap[0] < item:
                    item = heap[0]
                    if item[0] > timestamp:
                        return
                    _heappop(heap)
                else:
                    if item[0] > timestamp:
                        return
                    run.pop()
            elif heap:
                item = heap[0]
                if item[0] > timestamp:
                    return
                _heappop(heap)
            else:
                return
            info = take(item, None)
            if info is None:  # deleted, or a duplicate of a timer that already fired
                continue
            yield (item[0], info[0], info[1], item[1])

    def timers_for_current_key(self) -> list[tuple[int, Any]]:
        """``(timestamp, namespace)`` of the current key's timers, in timer order.

        Scans every timer (no index per key is kept: the hot paths would pay for it).
        """
        _, key_bytes = self._current()
        live = self._live
        items = sorted(item for item in live if item[1] == key_bytes)
        return [(item[0], live[item][1]) for item in items]

    def drop_key(self, key_bytes: bytes) -> None:
        """Remove every timer of one key (scans every timer)."""
        for item in [item for item in self._live if item[1] == key_bytes]:
            self._discard(item)

    def clear(self) -> None:
        """Remove every timer."""
        self._heap.clear()
        self._run.clear()
        self._fresh.clear()
        self._live.clear()

    def __len__(self) -> int:
        return len(self._live)

    def __bool__(self) -> bool:
        return bool(self._live)

    # -- snapshot / restore ----------------------------------------------------------------------
    def snapshot_entries(self, max_parallelism: int) -> list[StateEntry]:
        """All timers as entries, in canonical order (as ``sorted(..., key=StateEntry.encoded_key)``).

        One queue is one state name, so ordering by the entry key without the name
        (:func:`~.entries.join_parts`) gives the same order; key groups and key parts are
        computed once per distinct key.
        """
        live = self._live
        if not live:
            return []
        if len(live) == 1:  # e.g. a BATCH key's one pending timer, snapshotted at its end
            ((stamp, key_bytes, namespace),) = live
            return [_new_tuple(StateEntry, (
                assign_key_group(key_bytes, max_parallelism), timer_state_name(self.name),
                key_bytes, namespace, encode_timestamp(stamp), b""))]
        with paused_gc():
            return self._snapshot_entries(max_parallelism)

    def _snapshot_entries(self, max_parallelism: int) -> list[StateEntry]:
        live = self._live
        stamps = [item[0] for item in live]
        keys = [item[1] for item in live]
        namespaces = [item[2] for item in live]
        key_groups = dict.fromkeys(keys, 0)
        for key_bytes in key_groups:
            key_groups[key_bytes] = assign_key_group(key_bytes, max_parallelism)
        groups = list(map(key_groups.__getitem__, keys))
        user_keys = encode_timestamps(stamps)
        sort_keys = join_parts(map(encode_key_group, groups), keys, namespaces, user_keys)
        order = sorted(range(len(groups)), key=sort_keys.__getitem__)
        state_name = timer_state_name(self.name)
        return list(map(_new_tuple, repeat(StateEntry), zip(
            map(groups.__getitem__, order), repeat(state_name), map(keys.__getitem__, order),
            map(namespaces.__getitem__, order), map(user_keys.__getitem__, order), repeat(b""))))

    def restore_entries(self, entries: Iterable[StateEntry]) -> None:
        """Re-register timers from snapshot entries (any order).

        Each distinct key and namespace is deserialized once, and the timers of one
        ``(key, namespace)`` share one ``(key, namespace)`` tuple; restored timers wait
        unordered until the queue is first polled or peeked (``_settle_fresh``).
        """
        rows = entries if isinstance(entries, list) else list(entries)
        if not rows:
            return
        with paused_gc():
            self._restore_rows(rows)

    def _restore_rows(self, rows: list[StateEntry]) -> None:
        stamps = decode_timestamps(list(map(_USER_KEY, rows)))
        keys = list(map(_KEY, rows))
        namespaces = list(map(_NAMESPACE, rows))
        objects = self._pair_objects(dict.fromkeys(zip(keys, namespaces)))
        self._register(zip(stamps, keys, namespaces),
                       map(objects.__getitem__, zip(keys, namespaces)))

    def _pair_objects(self, pairs: Iterable[tuple[bytes, bytes]]) -> dict[tuple[bytes, bytes], Any]:
        """``(key bytes, namespace bytes) -> (key, namespace)`` of distinct pairs, each
        distinct key and namespace deserialized once; one shared tuple per pair."""
        pairs = list(pairs)
        key_objects = dict.fromkeys(map(itemgetter(0), pairs))
        deserialize = self._backend.key_serializer.deserialize
        for key_bytes in key_objects:
            key_objects[key_bytes] = deserialize(key_bytes)
        ns_objects = dict.fromkeys(map(itemgetter(1), pairs))
        deserialize = self.namespace_serializer.deserialize
        for ns_bytes in ns_objects:
            ns_objects[ns_bytes] = deserialize(ns_bytes)
        return {pair: (key_objects[pair[0]], ns_objects[pair[1]]) for pair in pairs}

    def _register(self, items: Iterable[tuple[int, bytes, bytes]], infos: Iterable[Any]) -> None:
        """Add restored timers (parallel ``items`` and ``(key, namespace)`` infos)."""
        live = self._live
        fresh = self._fresh
        if not live:
            # a duplicate entry maps to the same objects, so the last one wins harmlessly
            live.update(zip(items, infos))
            fresh += live
            return
        for item, info in zip(items, infos):
            if item not in live:
                live[item] = info
                fresh.append(item)

    # -- columns -----------------------------------------------------------------------------------
    def take_columns(self) -> TimerColumns | None:
        """Remove every timer and return them as :class:`TimerColumns` (None when empty).

        The compact form of a STREAMING key group's state bytes: no per-timer entry, key
        or sort, so millions of pending timers cost little to save and restore.
        """
        live = self._live
        if not live:
            return None
        with paused_gc():
            items = list(live)
            namespaces = set(map(_ITEM_NAMESPACE, items))
            if len(namespaces) == 1:  # e.g. every timer VOID: index by the key bytes alone,
                (namespace,) = namespaces  # whose hash is cached (a pair's is computed)
                keys, index = numbered(list(map(_ITEM_KEY, items)))
                pairs = [(key, namespace) for key in keys]
            else:
                pairs, index = numbered(list(zip(map(_ITEM_KEY, items),
                                                 map(_ITEM_NAMESPACE, items))))
            columns = TimerColumns(pairs, _le_bytes(array("I", index)),
                                   _le_bytes(array("q", map(_STAMP, items))))
        self.clear()
        return columns

    def restore_columns(self, columns: TimerColumns) -> None:
        """Re-register the timers of :meth:`take_columns` (``SavepointFormatError`` on
        inconsistent columns)."""
        pairs, index, stamps = columns.decoded()
        if not stamps:
            return
        with paused_gc():
            objects = self._pair_objects(pairs)
            infos = [objects[pair] for pair in pairs]
            keys = list(map([pair[0] for pair in pairs].__getitem__, index))
            namespaces = list(map([pair[1] for pair in pairs].__getitem__, index))
            self._register(zip(stamps, keys, namespaces), map(infos.__getitem__, index))


def _le_bytes(values: array) -> bytes:
    """The little-endian bytes of an array (the same on every machine of a cluster)."""
    if sys.byteorder == "big":  # pragma: no cover - no big-endian platform runs Spark here
        values.byteswap()
    return values.tobytes()


def _from_le_bytes(typecode: str, data: bytes) -> array:
    values = array(typecode)
    values.frombytes(data)
    if sys.byteorder == "big":  # pragma: no cover - see _le_bytes
        values.byteswap()
    return values


class TimerColumns(NamedTuple):
    """The timers of one queue as columns: ``pairs``, the distinct ``(key bytes, namespace
    bytes)``; per timer, the index of its pair (``pair_index``, uint32) and its timestamp
    (``timestamps``, int64), both as little-endian array bytes. Picklable; any order."""

    pairs: list[tuple[bytes, bytes]]
    pair_index: bytes
    timestamps: bytes

    def timer_count(self) -> int:
        """How many timers the columns hold."""
        return len(self.timestamps) // 8

    def decoded(self) -> tuple[list[tuple[bytes, bytes]], list[int], list[int]]:
        """``(pairs, pair index of each timer, timestamp of each timer)``, checked."""
        try:
            index = _from_le_bytes("I", self.pair_index).tolist()
            stamps = _from_le_bytes("q", self.timestamps).tolist()
        except (TypeError, ValueError) as exc:
            raise SavepointFormatError(f"timer columns are unreadable: {exc}") from exc
        if len(index) != len(stamps):
            raise SavepointFormatError(
                f"timer columns disagree: {len(index)} pair indexes, {len(stamps)} timestamps")
        if index and max(index) >= len(self.pairs):
            raise SavepointFormatError(
                f"timer columns name pair {max(index)} of only {len(self.pairs)}")
        return self.pairs, index, stamps

    def entries(self, state_name: str, max_parallelism: int) -> list[StateEntry]:
        """The timers as entries of state ``state_name`` (unsorted)."""
        pairs, index, stamps = self.decoded()
        groups = [assign_key_group(key, max_parallelism) for key, _ in pairs]
        return [StateEntry(groups[i], state_name, pairs[i][0], pairs[i][1], user_key, b"")
                for i, user_key in zip(index, encode_timestamps(stamps))]
