"""The state bytes of a STREAMING key group between micro-batches (Spark-free).

Only :mod:`.keygroup` produces and reads them (Spark keeps them as the group's state):
a pickled ``(format tag, meta info dicts, entry tuples, max parallelism, timer blocks)``.
States are kept as unified entries; timers as columns
(:class:`~pyspark_datastream.state_store.timer_queue.TimerColumns`), so millions of
pending timers cost no per-timer entry, key or sort. Version-1 bytes (timers as
entries) are still read.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from itertools import repeat
from typing import Any

from ..state_store.entries import StateEntry, StateMetaInfo, sort_canonical
from ..state_store.exceptions import SavepointFormatError
from ..state_store.timer_queue import TimerColumns

__all__ = ["Timers", "decode_state", "dump_state", "encode_state", "load_state", "state_entries"]

#: Format tag of the state bytes (first element of the pickled tuple): v2 adds the
#: max parallelism and the timers as columns; v1 bytes (timers as entries) are still read.
_STATE_FORMAT = "pyspark-datastream/keygroup-state/v2"
_STATE_FORMAT_V1 = "pyspark-datastream/keygroup-state/v1"

#: A key group's timers as columns: ``(timer state name, columns)`` of each queue.
Timers = list[tuple[str, TimerColumns]]

_new_tuple = tuple.__new__


def encode_state(meta_infos: Iterable[StateMetaInfo], entries: Iterable[StateEntry]) -> bytes:
    """Bytes of a key group's state: meta infos (as dicts) and entries (unified layout)."""
    return dump_state([m.to_dict() for m in meta_infos], [tuple(e) for e in entries])


def dump_state(metas: list[dict[str, Any]], rows: list[tuple[Any, ...]],
               timers: Timers | None = None, max_parallelism: int = 0) -> bytes:
    """Inverse of :func:`load_state`: the bytes of raw meta dicts, entry tuples and timer
    columns, with the max parallelism their keys' key groups are computed with."""
    blocks = [(name, columns.pairs, columns.pair_index, columns.timestamps)
              for name, columns in timers or ()]
    return pickle.dumps((_STATE_FORMAT, metas, rows, max_parallelism, blocks),
                        pickle.HIGHEST_PROTOCOL)


def load_state(data: bytes) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], Timers, int]:
    """The raw ``(meta dicts, entry tuples, timers, max parallelism)`` of state bytes (see
    :func:`dump_state`; version-1 bytes hold no timer columns)."""
    try:
        loaded = pickle.loads(data)
        tag = loaded[0]
    except Exception as exc:
        raise SavepointFormatError(f"key group state bytes are unreadable: {exc}") from exc
    if tag == _STATE_FORMAT_V1 and len(loaded) == 3:
        return loaded[1], loaded[2], [], 0
    if tag != _STATE_FORMAT or len(loaded) != 5:
        raise SavepointFormatError(
            f"key group state has format {tag!r}, expected {_STATE_FORMAT!r}"
        )
    _, metas, rows, max_parallelism, blocks = loaded
    try:
        timers = [(name, TimerColumns(pairs, index, stamps))
                  for name, pairs, index, stamps in blocks]
    except (TypeError, ValueError) as exc:
        raise SavepointFormatError(f"key group state holds unreadable timers: {exc}") from exc
    return metas, rows, timers, max_parallelism


def state_entries(rows: list[tuple[Any, ...]]) -> list[StateEntry]:
    """``StateEntry(*row)`` of each row, at C speed (``SavepointFormatError`` on a bad row)."""
    if rows and set(map(len, rows)) != {len(StateEntry._fields)}:
        raise SavepointFormatError(
            f"key group state holds entries of {sorted(set(map(len, rows)))} fields, expected "
            f"{len(StateEntry._fields)}")
    return list(map(_new_tuple, repeat(StateEntry), rows))


def decode_state(data: bytes) -> tuple[list[StateMetaInfo], list[StateEntry]]:
    """Inverse of :func:`encode_state`, also of a micro-batch's state bytes: every entry,
    timers included, in canonical order; ``SavepointFormatError`` on foreign bytes."""
    metas, rows, timers, max_parallelism = load_state(data)
    meta_infos = [StateMetaInfo.from_dict(m) for m in metas]
    entries = state_entries(rows)
    if not timers:
        return meta_infos, entries
    for name, columns in timers:
        entries.extend(columns.entries(name, max_parallelism))
    return meta_infos, sort_canonical(entries)
