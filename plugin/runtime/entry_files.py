"""Savepoint entries written by a BATCH keyed pass straight into the savepoint's data folder.

A BATCH job that writes a savepoint (``env.execute(name, savepoint_path=...)``) snapshots
each key at its end inside the keyed pass. Rather than handing those entries back to Spark
beside the records (and staging, re-reading and re-sorting them), each task writes them as
one Parquet file of savepoint rows (:class:`EntryFileWriter`), in the order the pass
produced them: each key's entries together, in canonical order. The file appears under its
final name only when the task's pass ran to its end, so a retried or repeated task replaces
it whole; the task's state meta infos go to a small JSON file beside the driver's other
per-job files. The driver commits the data files, with the metadata row, as one Delta
version after every sink succeeded.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa

from ..state_store.entries import StateEntry
from ..state_store.errors import StateError

__all__ = ["EntryFiles", "EntryFileWriter", "entry_file_name", "meta_file_name"]

#: Entries buffered before they become one Parquet row group
_ROW_GROUP = 131_072
_FIELDS = len(StateEntry._fields)
_ROW_GROUP_FIELDS = _ROW_GROUP * _FIELDS
_chain = itertools.chain


def entry_file_name(operator_index: int, subtask: int) -> str:
    """Data file of one operator's pass partition (relative to the savepoint folder)."""
    return f"op-{operator_index:03d}-part-{subtask:05d}.parquet"


def meta_file_name(operator_index: int, subtask: int) -> str:
    """Meta-info file of one operator's pass partition (relative to the meta folder)."""
    return f"op-{operator_index:03d}-part-{subtask:05d}.json"


@dataclass(frozen=True)
class EntryFiles:
    """Where one keyed operator's pass writes its savepoint entries (pickled to executors)."""

    #: the savepoint version's data folder (the driver commits its ``*.parquet`` files)
    folder: str
    #: where each task leaves the operator's state meta infos (JSON list)
    meta_folder: str
    operator_uid: str
    #: names the operator's files (uids may hold any character)
    operator_index: int
    #: the savepoint table's Arrow schema
    schema: pa.Schema
    #: ``kind`` of operator (broadcast) state rows, key group -1
    broadcast_kind: str

    def open(self, subtask: int, kinds: Callable[[], dict[str, str]]) -> EntryFileWriter:
        """A writer for partition ``subtask``; ``kinds()`` gives ``state name -> kind`` of
        the states registered so far (asked again when an entry names a new state)."""
        return EntryFileWriter(self, subtask, kinds)


class EntryFileWriter:
    """Writes one pass partition's savepoint entries (see the module docstring).

    ``add`` and ``finish`` return the outputs the pass should emit for them: none, the
    entries leave through the file (the same calls of the staging path return rows)."""

    def __init__(self, files: EntryFiles, subtask: int,
                 kinds: Callable[[], dict[str, str]]) -> None:
        self.files = files
        self.subtask = subtask
        self._kinds_of = kinds
        self._kinds: dict[str, str] = {}
        #: the fields of the entries not yet written, one after another
        self._buffer: list[Any] = []
        self._writer: Any = None
        self._tmp = os.path.join(
            files.folder, f".{entry_file_name(files.operator_index, subtask)}."
                          f"{uuid.uuid4().hex[:12]}.tmp")
        self.rows = 0
        self.done = False

    def add(self, entries: Iterable[StateEntry]) -> list[Any]:
        """Buffer entries (a key's, in canonical order); a full buffer becomes a row group.

        The buffer is flat (six fields per entry): ints, strings and bytes the garbage
        collector does not track, where a list of entry tuples would be traversed by
        every collection while the pass runs."""
        buffer = self._buffer
        buffer.extend(_chain(*entries))
        if len(buffer) >= _ROW_GROUP_FIELDS:
            self._flush()
        return []

    def finish(self, metas_json: Optional[str]) -> list[Any]:
        """Write the rest; publish the data file (if any entry) and the meta infos."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            os.replace(self._tmp, os.path.join(
                self.files.folder, entry_file_name(self.files.operator_index, self.subtask)))
        meta_path = os.path.join(self.files.meta_folder,
                                 meta_file_name(self.files.operator_index, self.subtask))
        tmp = f"{meta_path}.{uuid.uuid4().hex[:12]}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"rows": self.rows, "metas": json.loads(metas_json or "[]")}, f)
        os.replace(tmp, meta_path)
        self.done = True
        return []

    def abort(self) -> None:
        """Drop a partial file (the pass failed or was not read to its end)."""
        if self._writer is not None:
            try:
                self._writer.close()
            finally:
                self._writer = None
        if not self.done and os.path.exists(self._tmp):
            os.remove(self._tmp)

    def _kinds_for(self, names: list[str], key_groups: list[int]) -> list[str]:
        """``kind`` of each entry: its state's, or the broadcast kind for operator state."""
        if min(key_groups) < 0:
            broadcast = self.files.broadcast_kind
            return [broadcast if kg < 0 else self._kinds_for([name], [kg])[0]
                    for kg, name in zip(key_groups, names)]
        known = self._kinds
        if not known.keys() >= set(names):
            known = self._kinds = self._kinds_of()
            unknown = sorted(set(names) - known.keys())
            if unknown:
                raise StateError(
                    f"operator {self.files.operator_uid!r}: savepoint entries of states "
                    f"{unknown} have no registered state (registered: {sorted(known)})")
        return list(map(known.__getitem__, names))

    def _flush(self) -> None:
        import pyarrow.parquet as pq

        fields, self._buffer = self._buffer, []
        if not fields:
            return
        key_group, names, keys, namespaces, user_keys, values = (
            fields[i::_FIELDS] for i in range(_FIELDS))  # StateEntry's field order
        n = len(key_group)
        columns = {"kind": self._kinds_for(names, key_group),
                   "operator_uid": [self.files.operator_uid] * n,
                   "key_group": key_group, "key": keys, "state_name": names,
                   "namespace": namespaces, "user_key": user_keys, "value": values}
        schema = self.files.schema
        table = pa.Table.from_arrays(
            [pa.array(columns[f.name], f.type) for f in schema], schema=schema)
        if self._writer is None:
            os.makedirs(self.files.folder, exist_ok=True)
            self._writer = pq.ParquetWriter(self._tmp, schema, compression="snappy")
        self._writer.write_table(table)
        self.rows += n
