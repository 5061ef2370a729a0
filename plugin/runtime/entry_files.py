"""Savepoint entries written by a BATCH keyed pass straight into the savepoint's data folder.

A BATCH job that writes a savepoint (``env.execute(name, savepoint_path=...)``) snapshots
each key at its end inside the keyed pass. Rather than handing those entries back to Spark
beside the records (and staging, re-reading and re-sorting them), each task writes them as
one Parquet file of savepoint rows (:class:`EntryFileWriter`), in the order the pass
produced them: each key's entries together, in canonical order. Every byte goes through
the storage layer (``state_store/storage``), so the savepoint may be on object storage.

The data file is complete before anything names it: on a local path it is written under a
hidden name and renamed to its exact name (a retried or repeated task replaces it whole);
on an object store (no rename) each task attempt uploads its own object, named by the
attempt, once. When the pass ran to its end the task writes one small JSON report, whole,
under an exact name in the meta folder: its row count, state meta infos and the name of its
data file. The driver reads the reports by exact name (no listing right after a write) and
commits exactly the files they name, with the metadata row, as one Delta version after every
sink succeeded; files of failed or zombie attempts are named by no report and are removed.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa

from ..state_store.entries import StateEntry
from ..state_store.exceptions import StateError
from ..state_store.storage import Storage, failing_as

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

    #: the savepoint version's data folder (path or URI; the driver commits the files the
    #: tasks' reports name)
    folder: str
    #: where each task leaves its report (rows, state meta infos, data file name)
    meta_folder: str
    operator_uid: str
    #: names the operator's files (uids may hold any character)
    operator_index: int
    #: the savepoint table's Arrow schema
    schema: pa.Schema
    #: ``kind`` of operator (broadcast) state rows, key group -1
    broadcast_kind: str
    #: the storage layer the files are written through (picklable, options only)
    storage: Storage = field(default_factory=Storage)

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
        self._stream: Any = None
        name = entry_file_name(files.operator_index, subtask)
        attempt = uuid.uuid4().hex[:12]
        self._local = Storage.is_local(files.folder)
        #: the data file's name in the folder once published (what the report names)
        self.name = name if self._local else f"{name[:-len('.parquet')]}-{attempt}.parquet"
        #: where the file is written: a hidden temporary renamed at the end (local), or the
        #: attempt's own object, uploaded as it is written (object store)
        self._path = Storage.join(files.folder, f".{name}.{attempt}.tmp" if self._local
                                  else self.name)
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
        written = self._writer is not None
        if written:
            with failing_as("writing", self._path):  # the upload ends here on a store
                self._close()
                if self._local:
                    fs, tmp = self.files.storage.resolve(self._path)
                    fs.move(tmp, self.files.storage.resolve(
                        Storage.join(self.files.folder, self.name))[1])
        report = {"rows": self.rows, "metas": json.loads(metas_json or "[]"),
                  "file": self.name if written else None}
        self.files.storage.write_bytes(
            Storage.join(self.files.meta_folder,
                         meta_file_name(self.files.operator_index, self.subtask)),
            json.dumps(report).encode("utf-8"))
        self.done = True
        return []

    def _close(self) -> None:
        writer, stream = self._writer, self._stream
        self._writer = self._stream = None
        try:
            if writer is not None:
                writer.close()
        finally:
            if stream is not None:
                stream.close()

    def abort(self) -> None:
        """Drop a partial file (the pass failed or was not read to its end)."""
        if self.done:
            return
        opened = self._writer is not None
        try:
            self._close()
        except OSError:
            pass  # the store failed (what made the pass fail, often): nothing was published
        if opened:
            try:
                self.files.storage.delete_file(self._path)
            except OSError:
                pass  # an attempt's own name, which no report names: never read

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
            storage = self.files.storage
            fs, path = storage.resolve(self._path)
            if self._local:
                storage.makedirs(self.files.folder)
            # an object store: a multipart upload, visible only when closed whole
            with failing_as("writing", self._path):
                self._stream = fs.open_output_stream(path)
            self._writer = pq.ParquetWriter(self._stream, schema, compression="snappy")
        with failing_as("writing", self._path):  # a full part is uploaded as it is written
            self._writer.write_table(table)
        self.rows += n
