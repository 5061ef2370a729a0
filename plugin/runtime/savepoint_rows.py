"""Savepoints inside a BATCH keyed pass: restored entries in, each key's entries out.

A pass that restores reads its keyed input with ``RESTORE_COLUMNS`` rows (one state entry
each) sorted before each key's records, folds them into one restore row per key
(:func:`group_restore_rows`) and hands them to ``run_sorted_keyed``. A pass that writes a
savepoint snapshots each key at its end into an :class:`EntrySink`: either as
``SP_COLUMNS`` rows beside its records (:class:`EntryRows`, for a job that stages them) or
straight into savepoint files (``entry_files.EntryFileWriter``).
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Optional, Protocol

import pyarrow as pa

from ..operators.base import OperatorConfig, Output
from .encoding import KEY, KG, SIDE, TS, ColumnWriter, Encoding
from .entry_files import EntryFiles

__all__ = [
    "SP_COLUMNS", "SP_META", "SP_TAG", "RESTORE_COLUMNS", "SavepointColumnWriter",
    "SavepointSpec", "EntrySink", "EntryRows", "entry_sink", "restore_rows",
    "group_restore_rows", "with_savepoint",
]

#: Extra output columns of a keyed pass that writes a savepoint: one row per state entry
#: (key group, key, state name, namespace, user key, value); null on ordinary rows.
SP_COLUMNS: tuple[tuple[str, pa.DataType, str], ...] = (
    ("_spkg", pa.int32(), "int"),
    ("_spk", pa.binary(), "binary"),
    ("_spsn", pa.string(), "string"),
    ("_spns", pa.binary(), "binary"),
    ("_spuk", pa.binary(), "binary"),
    ("_spv", pa.binary(), "binary"),
)
#: ``_spsn`` of the one row per partition carrying the state meta infos (JSON list) in
#: ``_spv``; state names never contain NUL, so it cannot collide with a state.
SP_META = "\x00meta"
#: Extra input columns of a keyed pass that restores a savepoint (null on record rows):
#: state name, namespace, user key, value of one entry; ``_kg``/``_k`` carry its key.
RESTORE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_rsn", "string"), ("_rns", "binary"), ("_ruk", "binary"), ("_rv", "binary"),
)
#: ``Output.tag`` of a savepoint entry inside a pass (never a user tag: starts with NUL)
SP_TAG = "\x00savepoint-entry"
_STATE_ROW = -2  # input index of one restored entry before grouping per key


class SavepointColumnWriter(ColumnWriter):
    """A ColumnWriter whose ordinary rows get null ``SP_COLUMNS`` and which can append
    savepoint entry rows (null payload)."""

    def __init__(self, enc: Encoding, extra: list[pa.Field], name: str = "") -> None:
        super().__init__(enc, extra, name=name)
        self._pad = (None,) * len(SP_COLUMNS)
        self._lead = (None,) * (len(extra) - len(SP_COLUMNS))

    def append(self, extras: tuple[Any, ...], value: Any) -> Optional[pa.RecordBatch]:
        return super().append(extras + self._pad, value)

    def extend(self, extras: list[list[Any]], values: list[Any]) -> Iterator[pa.RecordBatch]:
        pads = [[None] * len(values)] * len(SP_COLUMNS)
        return super().extend(list(extras) + pads, values)

    def extend_entries(self, entries: list[Any]) -> Iterator[pa.RecordBatch]:
        """``append_entry`` for many entries at once, column-wise."""
        if not entries:
            return iter(())
        nones = [None] * len(entries)
        kg, name, key, ns, user_key, value = zip(*entries)  # StateEntry's field order
        extras = [nones] * len(self._lead) + [kg, key, name, ns, user_key, value]
        return self.extend_columns(extras, [nones] * len(self.payload_cols), len(entries))

    def append_entry(self, entry: Any) -> Optional[pa.RecordBatch]:
        extras = self._lead + (entry.key_group, entry.key, entry.state_name, entry.namespace,
                               entry.user_key, entry.value)
        for col, x in zip(self.extra_cols, extras):
            col.append(x)
        for col in self.payload_cols:
            col.append(None)
        self.n += 1
        if self.n >= self.batch_size:
            return self.flush()
        return None


# --------------------------------------------------------------------------------------------
# Savepoints (BATCH): restore rows in, entry rows out
# --------------------------------------------------------------------------------------------
def restore_rows(b: pa.RecordBatch, decode: Any, sided: bool) -> Iterator[tuple[Any, ...]]:
    """Rows of a batch that mixes restored entries (``_rsn`` set) and records, in order:
    records as ``(key, ts, value, side)``, entries as ``(key, None, StateEntry, _STATE_ROW)``."""
    import pyarrow.compute as pc

    from ..state_store.entries import StateEntry

    names = b.column(RESTORE_COLUMNS[0][0])
    keys = b.column(KEY).to_pylist()
    if names.null_count == b.num_rows:  # records only
        values = decode(b)
        ts = b.column(TS).to_pylist()
        sides = b.column(SIDE).to_pylist() if sided else itertools.repeat(0)
        yield from zip(keys, ts, values, sides)
        return
    recs = b.filter(pc.is_null(names))
    values_it = iter(decode(recs)) if recs.num_rows else iter(())
    ts_it = iter(recs.column(TS).to_pylist())
    sides_it = iter(recs.column(SIDE).to_pylist()) if sided else itertools.repeat(0)
    sns = names.to_pylist()
    kgs = b.column(KG).to_pylist()
    nss, uks, vs = (b.column(n).to_pylist() for n, _ in RESTORE_COLUMNS[1:])
    for i, sn in enumerate(sns):
        if sn is None:
            yield keys[i], next(ts_it), next(values_it), next(sides_it)
        else:
            key = keys[i]
            yield key, None, StateEntry(kgs[i], sn, key, nss[i] or b"", uks[i] or b"",
                                        vs[i] or b""), _STATE_ROW


def group_restore_rows(rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Fold each key's restored entries (sorted before its records) into ONE restore row
    ``(key, None, [entries], RESTORE_INPUT)`` for ``run_sorted_keyed``."""
    from ..operators.driver import RESTORE_INPUT

    pending_key: Any = None
    pending: list[Any] = []
    for row in rows:
        if row[3] == _STATE_ROW:
            if pending and row[0] != pending_key:
                yield pending_key, None, pending, RESTORE_INPUT
                pending = []
            pending_key = row[0]
            pending.append(row[2])
            continue
        if pending:  # the pending key's records follow, or it exists only in the savepoint
            yield pending_key, None, pending, RESTORE_INPUT
            pending = []
        yield row
    if pending:
        yield pending_key, None, pending, RESTORE_INPUT


class SavepointSpec(Protocol):
    """What the savepoint code reads of a pass's ``KeyedSpec``."""

    key_serializer: Any
    savepoint_write: bool
    savepoint_files: Optional[EntryFiles]
    restore_meta: Optional[tuple[Any, ...]]


class EntrySink(Protocol):
    """Where a savepoint-writing pass puts its state entries (the outputs to emit for them)."""

    def add(self, entries: Iterable[Any]) -> list[Output]:
        """Entries of one key (or the operator state), in canonical order."""

    def finish(self, metas_json: Optional[str]) -> list[Output]:
        """The pass ended: its state meta infos (JSON list; None when it has no keyed state)."""

    def abort(self) -> None:
        """The pass failed or stopped early."""


class EntryRows:
    """Entries leave the pass as ``SP_TAG`` outputs (``SP_COLUMNS`` rows), with one
    meta-info row at the end (staging: Spark splits them from the records)."""

    def add(self, entries: Iterable[Any]) -> list[Output]:
        return [Output(SP_TAG, e, None) for e in entries]

    def finish(self, metas_json: Optional[str]) -> list[Output]:
        from ..state_store.entries import StateEntry

        if metas_json is None:
            return []
        meta = StateEntry(-1, SP_META, b"", b"", b"", metas_json.encode("utf-8"))
        return [Output(SP_TAG, meta, None)]

    def abort(self) -> None:
        pass


def entry_sink(ks: SavepointSpec, backend: Any, config: OperatorConfig) -> Optional[EntrySink]:
    """The entry sink of a savepoint-writing pass (None when it writes no savepoint)."""
    if not ks.savepoint_write:
        return None
    if ks.savepoint_files is None:
        return EntryRows()

    def kinds() -> dict[str, str]:
        return {m.name: m.kind.value for m in backend.state_meta_infos()}

    return ks.savepoint_files.open(config.subtask_index, kinds)


def with_savepoint(operator: Any, backend: Any, rows: Iterator[tuple[Any, ...]],
                   ks: SavepointSpec, config: OperatorConfig, sink: Optional[EntrySink],
                   extra: Callable[[], list[Any]] = list) -> Iterator[Output]:
    """``run_sorted_keyed`` with restore rows, and (writing) each key's entries given to
    ``sink`` right after its end-of-key outputs, then ``extra()`` entries and the meta infos."""
    import json

    from ..operators.driver import run_sorted_keyed

    on_key_end = None
    if sink is not None:
        add = sink.add

        def on_key_end(b: Any) -> list[Output]:
            return add(b.snapshot())

    yield from run_sorted_keyed(operator, backend, rows, ks.key_serializer, config,
                                on_key_end=on_key_end, restore_meta=ks.restore_meta,
                                close_operator=False)
    if sink is None:
        return
    yield from sink.add(extra())
    metas = json.dumps([m.to_dict() for m in backend.state_meta_infos()], sort_keys=True)
    yield from sink.finish(metas)
