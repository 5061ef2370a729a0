"""The RocksDB key-group store of STREAMING keyed operators: a local database per key group
plus immutable, versioned change files, so that GroupState holds only a small pointer
(:class:`VersionPointer`) and the state can be restored on any executor.

The RocksDB registration's STREAMING key-group store (see ``registration.py``).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ...entries import StateEntry, StateMetaInfo
from ...exceptions import SavepointFormatError, StateBackendError
from ...storage import Storage
from .backend import RocksDBKeyedStateBackend
from .version_cache import TeeReader, VersionCache, cache_root, file_seq, host_scratch

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ...serializers import TypeSerializer

__all__ = ["RocksDBKeyGroupStore", "VersionPointer", "default_local_dir", "drop_local_copies",
           "open_copies_budget"]

#: Format tag of a RocksDB key group pointer (the only thing kept in GroupState): JSON
#: since v2; v1 (a pickled tuple of plain values) is still read, by an unpickler that
#: refuses every global, so a crafted pointer or file cannot run code.
_POINTER_FORMAT = "pyspark-datastream/rocksdb-pointer/v2"
_POINTER_FORMAT_V1 = "pyspark-datastream/rocksdb-pointer/v1"
#: version file magic: v2 has a JSON header, v1 a pickled one of plain values
_FILE_MAGIC = b"PDSKGV2\n"
_FILE_MAGIC_V1 = b"PDSKGV1\n"
_U32 = struct.Struct(">I")
_OP_DELETE = b"\x00"
_OP_PUT = b"\x01"
#: Local copies kept open per worker process (LRU); evicted ones are rebuilt from files.
_LOCAL_COPIES: OrderedDict[tuple[str, int], _LocalCopy] = OrderedDict()


@dataclass(frozen=True)
class VersionPointer:
    """What GroupState holds for a RocksDB key group: the version number and the
    ordered chain of immutable files (one base, then deltas) that rebuild it."""

    seq: int
    files: tuple[str, ...]
    sizes: tuple[int, ...]

    def to_bytes(self) -> bytes:
        """The pointer as versioned JSON (what GroupState keeps).

        Returns:
            its bytes.
        """
        return json.dumps({"format": _POINTER_FORMAT, "seq": self.seq,
                           "files": list(self.files), "sizes": list(self.sizes)},
                          separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> VersionPointer:
        """A pointer read back (JSON, or a v1 pointer through :func:`_plain_loads`).

        Args:
            data: what GroupState kept.
        Returns:
            the pointer.
        Raises:
            SavepointFormatError: it is not a pointer of a known format.
        """
        try:
            if data[:1] == b"{":
                doc = json.loads(data.decode("utf-8"))
                parts = (doc.get("format"), doc.get("seq"), doc.get("files"), doc.get("sizes"))
            else:
                parts = _plain_loads(data)
            tag = parts[0]
        except Exception as exc:
            raise SavepointFormatError(f"RocksDB key group pointer is unreadable: {exc}") from exc
        if tag not in (_POINTER_FORMAT, _POINTER_FORMAT_V1) or len(parts) != 4:
            raise SavepointFormatError(
                f"RocksDB key group pointer has format {tag!r}, expected {_POINTER_FORMAT!r}; "
                "was the job's state backend changed between runs?"
            )
        _, seq, files, sizes = parts
        if not all(isinstance(f, str) and "/" not in f and not f.startswith(".")
                   for f in files):
            raise SavepointFormatError(f"RocksDB key group pointer names bad files {files!r}")
        return cls(int(seq), tuple(files), tuple(int(n) for n in sizes))


class _PlainUnpickler(pickle.Unpickler):
    """Reads pickles of plain values only (v1 metadata): every global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise SavepointFormatError(
            f"refusing to load {module}.{name} from a key group pointer or file header "
            "(project metadata holds plain values only)")


def _plain_loads(data: bytes) -> Any:
    return _PlainUnpickler(io.BytesIO(data)).load()


def _encode_header(header: dict[str, Any]) -> bytes:
    doc = dict(header)
    doc["format"] = 2
    doc["timers_added"] = [t.hex() for t in header["timers_added"]]
    doc["timers_removed"] = [t.hex() for t in header["timers_removed"]]
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _decode_header(data: bytes) -> dict[str, Any]:
    doc = json.loads(data.decode("utf-8"))
    if doc.get("format") != 2:
        raise SavepointFormatError(f"unknown key group version file header format "
                                   f"{doc.get('format')!r}")
    doc["timers_added"] = [bytes.fromhex(t) for t in doc["timers_added"]]
    doc["timers_removed"] = [bytes.fromhex(t) for t in doc["timers_removed"]]
    return doc


def _read_header(path: str, f: Any) -> dict[str, Any]:
    """The header of version file ``path`` opened as ``f`` (left at its first record).

    Raises:
        SavepointFormatError: not a version file, or a header that does not read.
    """
    magic = f.read(len(_FILE_MAGIC))
    if magic not in (_FILE_MAGIC, _FILE_MAGIC_V1):
        raise SavepointFormatError(f"{path} is not a key group version file (magic {magic!r})")
    try:
        (n,) = _U32.unpack(f.read(4))
        raw = f.read(n)
        return _decode_header(raw) if magic == _FILE_MAGIC else _plain_loads(raw)
    except SavepointFormatError:
        raise
    except Exception as exc:
        raise SavepointFormatError(f"{path}: unreadable header ({exc})") from exc


@dataclass
class _LocalCopy:
    backend: Any
    pointer: Optional[VersionPointer]
    timers: set[bytes]


def default_local_dir() -> str:
    """Where a worker process keeps its local copies when no ``local_dir`` is given: under
    the executor's Spark scratch directory (``SPARK_LOCAL_DIRS``, which Spark hands its Python
    workers and removes with the executor), else under the temporary directory.

    Returns:
        a folder of this process (its pid in the name).
    """
    return os.path.join(host_scratch(), "pyspark-datastream-local", str(os.getpid()))


class RocksDBKeyGroupStore:
    """Key group state in RocksDB for STREAMING: incremental, versioned, restorable anywhere.

    * The working copy is a local rocksdict database per key group (under
      ``local_dir``), kept open in the worker process between micro-batches.
    * Each micro-batch's changes (raw rows put or deleted, timers added or removed,
      the state meta infos) are written to ONE new immutable file
      ``<checkpoint_dir>/kg-<n>/<seq>-<uuid>.delta``; every so often (when the
      deltas outgrow the base, or the chain gets long) a full ``.base`` file
      replaces the chain.
    * GroupState keeps only the :class:`VersionPointer` (seq + file names).
    * A call whose committed pointer differs from the local copy's (another
      executor, a restart, or a retried batch whose local copy is ahead of the
      commit) rebuilds the copy from the pointer's files.
    * Files that no committed pointer can reach any more (older chains, files of
      failed attempts) are deleted when the next version is written.

    ``checkpoint_dir`` (a path or URI of the storage layer, ``state_store/storage``) must be
    visible to every executor: on a cluster, a shared filesystem or an object store. Each
    version file is written once under a unique per-attempt name and read by the exact name
    the committed pointer holds, so a retried or zombie attempt cannot change what a
    committed version reads, and nothing depends on listing a folder right after a write.
    """

    def __init__(
        self,
        checkpoint_dir: str,
        key_serializer: TypeSerializer[Any],
        max_parallelism: int,
        *,
        local_dir: Optional[str] = None,
        block_cache_size: int = 8 << 20,
        write_buffer_size: int = 4 << 20,
        max_open: Optional[int] = None,
        max_chain: int = 16,
        max_tracked_bytes: int = 4 << 20,
        storage: Optional[Storage] = None,
        version_cache: bool = True,
    ) -> None:
        self.storage = storage or Storage()
        self.checkpoint_dir = (os.path.abspath(checkpoint_dir) if Storage.is_local(checkpoint_dir)
                               else checkpoint_dir.rstrip("/"))
        self.key_serializer = key_serializer
        self.max_parallelism = max_parallelism
        #: the host's copies of the version files, when they live on remote storage
        self.cache = (VersionCache(cache_root(local_dir), self.checkpoint_dir)
                      if version_cache and not Storage.is_local(self.checkpoint_dir) else None)
        self.local_dir = local_dir or default_local_dir()
        self.block_cache_size = block_cache_size
        self.write_buffer_size = write_buffer_size
        #: this store's local copies a worker keeps open (LRU): by default every key group,
        #: so a worker serving a partition keeps all of its key groups warm between
        #: micro-batches (fewer made every micro-batch rebuild most of them from files)
        self.max_open = max_open or max_parallelism
        self.max_chain = max_chain
        #: a micro-batch changing more than this writes a full base (bounded memory)
        self.max_tracked_bytes = max_tracked_bytes
        #: what this store read back from version files since it was made: the bytes and
        #: the key groups rebuilt because this worker held no current local copy, and of
        #: the bytes those read from the checkpoint's storage (the rest: the host's copies)
        self.restored_bytes = 0
        self.restored_key_groups = 0
        self.storage_bytes_read = 0

    # -- paths -----------------------------------------------------------------------------
    def folder(self, key_group: int) -> str:
        """Folder of one key group's version files."""
        return Storage.join(self.checkpoint_dir, f"kg-{key_group:05d}")

    def _new_backend(self, key_group: int) -> Any:
        return RocksDBKeyedStateBackend(
            self.key_serializer, self.max_parallelism, range(key_group, key_group + 1),
            directory=self.local_dir, block_cache_size=self.block_cache_size,
            write_buffer_size=self.write_buffer_size, track_changes=True,
            max_tracked_bytes=self.max_tracked_bytes)

    # -- acquire / commit / abandon --------------------------------------------------------
    def acquire(self, key_group: int, pointer: Optional[bytes]) -> Any:
        """The backend holding exactly the committed state ``pointer`` of ``key_group``."""
        wanted = VersionPointer.from_bytes(pointer) if pointer is not None else None
        slot = (self.checkpoint_dir, key_group)
        copy = _LOCAL_COPIES.get(slot)
        if copy is not None and copy.pointer == wanted and wanted is not None:
            _LOCAL_COPIES.move_to_end(slot)
            return copy.backend
        if copy is not None:  # stale: behind, or ahead of the commit (a retried batch)
            self.abandon(key_group)
        backend = self._new_backend(key_group)
        try:
            timers = self._rebuild(backend, key_group, wanted) if wanted is not None else set()
        except BaseException:
            backend.close()
            raise
        if wanted is not None:
            self.restored_bytes += sum(wanted.sizes)
            self.restored_key_groups += 1
        _LOCAL_COPIES[slot] = _LocalCopy(backend, wanted, timers)
        self._evict()
        return backend

    def _evict(self) -> None:
        """Close this store's least recently used copies past ``max_open``, and any
        store's past what the process may keep open (:func:`open_copies_budget`)."""
        mine = [slot for slot in _LOCAL_COPIES if slot[0] == self.checkpoint_dir]
        for slot in mine[:max(0, len(mine) - self.max_open)]:
            _LOCAL_COPIES.pop(slot).backend.close()
        budget = open_copies_budget(len(_LOCAL_COPIES))
        while len(_LOCAL_COPIES) > budget:
            _, old = _LOCAL_COPIES.popitem(last=False)
            old.backend.close()

    def abandon(self, key_group: int) -> None:
        """Drop the local copy (after a failure mid-batch its content is not committed)."""
        copy = _LOCAL_COPIES.pop((self.checkpoint_dir, key_group), None)
        if copy is not None:
            copy.backend.close()

    def commit(self, key_group: int, backend: Any) -> bytes:
        """Write this micro-batch's changes as a new immutable version; the new pointer."""
        slot = (self.checkpoint_dir, key_group)
        copy = _LOCAL_COPIES.get(slot)
        if copy is None or copy.backend is not backend:
            raise StateBackendError(
                f"RocksDB key group {key_group}: commit() of a backend that acquire() did not "
                "return (or that was evicted)")
        previous = copy.pointer
        changes = backend.take_changes()
        timers = {e.encoded_key() for e in backend.timer_entries()}
        metas = [m.to_dict() for m in backend.state_meta_infos()]
        seq = (previous.seq if previous is not None else 0) + 1
        delta_bytes = (sum(len(k) + len(v or b"") + 9 for k, v in changes.items())
                       if changes is not None else 0)
        rebase = (
            changes is None or previous is None or not previous.files or len(previous.files) >= self.max_chain
            or sum(previous.sizes[1:]) + delta_bytes > max(previous.sizes[0], 1 << 20)
        )
        if rebase:
            name, size = self._write_file(
                key_group, seq, "base", metas, sorted(timers), [],
                ((k, v) for k, v in backend.raw_items()))
            pointer = VersionPointer(seq, (name,), (size,))
        else:
            assert previous is not None and changes is not None
            added = sorted(timers - copy.timers)
            removed = sorted(copy.timers - timers)
            name, size = self._write_file(
                key_group, seq, "delta", metas, added, removed, sorted(changes.items()))
            pointer = VersionPointer(seq, previous.files + (name,), previous.sizes + (size,))
        copy.pointer = pointer
        copy.timers = timers

        self._collect(key_group, previous, pointer)
        return pointer.to_bytes()

    # -- files -----------------------------------------------------------------------------
    def _write_file(self, key_group: int, seq: int, kind: str, metas: list[Any],
                    timers_added: list[bytes], timers_removed: list[bytes],
                    rows: Iterable[tuple[bytes, Optional[bytes]]]) -> tuple[str, int]:
        name = f"{seq:012d}-{uuid.uuid4().hex[:12]}.{kind}"
        header = _encode_header({"kind": kind, "seq": seq, "metas": metas,
                                 "timers_added": timers_added, "timers_removed": timers_removed})
        pack = _U32.pack
        size = 0
        copy = self.cache.writer(key_group, name) if self.cache is not None else None
        try:
            # visible only when complete (storage layer: rename locally, one upload remotely)
            with self.storage.open_output(Storage.join(self.folder(key_group), name)) as f:
                def write(data: bytes) -> int:
                    if copy is not None:
                        copy.write(data)
                    return f.write(data)

                size += write(_FILE_MAGIC + pack(len(header)) + header)
                buf: list[bytes] = []
                for key, value in rows:
                    if value is None:
                        buf.append(_OP_DELETE + pack(len(key)) + key)
                    else:
                        buf.append(_OP_PUT + pack(len(key)) + key + pack(len(value)) + value)
                    if len(buf) >= 4096:
                        size += write(b"".join(buf))
                        buf.clear()
                size += write(b"".join(buf))
        except BaseException:
            if copy is not None:
                copy.discard()
            raise
        if copy is not None:
            copy.finish(size)
        return name, size

    def _open_version(self, key_group: int, name: str, size: int,
                      use_copy: bool = True) -> tuple[str, Any, bool]:
        """Version file ``name`` opened: the host's copy when it has one of ``size`` bytes
        (and ``use_copy``), else the checkpoint's file (copied to the host as it is read);
        whether it is the copy."""
        f: Any = (self.cache.open(key_group, name, size)
                  if self.cache is not None and use_copy else None)
        if f is not None:
            return f.name, f, True
        path = Storage.join(self.folder(key_group), name)
        try:
            f = self.storage.open_input(path)
        except OSError as exc:
            raise StateBackendError(
                f"RocksDB key group version file {path} is missing or unreadable: {exc}") from exc
        self.storage_bytes_read += size
        copy = self.cache.writer(key_group, name) if self.cache is not None else None
        return path, (f if copy is None else TeeReader(f, copy, size)), False

    def _read_file(self, key_group: int, name: str, size: int
                   ) -> tuple[dict[str, Any], Iterator[tuple[bytes, Optional[bytes]]]]:
        path, f, copied = self._open_version(key_group, name, size)
        try:
            header = _read_header(path, f)
        except SavepointFormatError:
            f.close()
            if not copied:
                raise
            # the host's copy does not read: drop it, read the checkpoint's file
            assert self.cache is not None
            self.cache.drop(key_group, name, "does not read as a version file")
            path, f, _ = self._open_version(key_group, name, size, use_copy=False)
            try:
                header = _read_header(path, f)
            except SavepointFormatError:
                f.close()
                raise

        def rows() -> Iterator[tuple[bytes, Optional[bytes]]]:
            unpack = _U32.unpack
            read = f.read
            with f:  # streamed record by record: a base file may be larger than memory
                while True:
                    head = read(5)
                    if not head:
                        return
                    if len(head) < 5:
                        raise SavepointFormatError(f"{path} is truncated")
                    key = read(unpack(head[1:5])[0])
                    if head[:1] == _OP_PUT:
                        value = read(unpack(read(4))[0])
                        yield key, value
                    else:
                        yield key, None

        return header, rows()

    def _rebuild(self, backend: Any, key_group: int, pointer: VersionPointer) -> set[bytes]:
        """Replay the pointer's files into an empty backend; the timer keys."""
        from ...entries import decode_entry_key

        timers: set[bytes] = set()
        metas: list[Any] = []
        for name, size in zip(pointer.files, pointer.sizes):
            header, rows = self._read_file(key_group, name, size)
            if header["kind"] == "base":
                timers = set()
            timers.update(header["timers_added"])
            timers.difference_update(header["timers_removed"])
            metas = header["metas"]
            backend.apply_changes(rows)
        timer_entries = []
        for raw in sorted(timers):
            k = decode_entry_key(raw)
            timer_entries.append(StateEntry(k.key_group, k.state_name, k.key, k.namespace,
                                            k.user_key, b""))
        backend.restore([StateMetaInfo.from_dict(m) for m in metas], timer_entries)
        backend.take_changes()
        if self.cache is not None:  # this host's copies of versions before this one
            self.cache.prune(key_group, set(pointer.files), pointer.seq - 1)
        return timers

    def _collect(self, key_group: int, previous: Optional[VersionPointer],
                 current: VersionPointer) -> None:
        """Delete files no committed pointer can reach: not in the previous (still the
        committed one until this batch commits) nor the new pointer, and not newer
        than the previous version (newer ones may belong to a running attempt); and
        their copies on this host."""
        if previous is None:
            # nothing is older than a first version (seq <= 0): no listing (on an object
            # store a LIST per key group and micro-batch is a round trip each)
            return
        keep = set(current.files) | set(previous.files)
        limit = previous.seq
        if self.cache is not None:
            self.cache.prune(key_group, keep, limit)
        folder = self.folder(key_group)
        for name in self.storage.list_names(folder):  # clean-up only: a miss waits a batch
            if name in keep or name.startswith("."):
                continue
            if file_seq(name) <= limit:
                self.storage.delete_file(Storage.join(folder, name))

    # -- savepoint hooks -------------------------------------------------------------------
    def export_entries(self, key_group: int, pointer: bytes
                       ) -> tuple[list[StateMetaInfo], list[StateEntry]]:
        """The committed state ``pointer`` as unified entries (for savepoints)."""
        backend = self.acquire(key_group, pointer)
        return backend.state_meta_infos(), list(backend.snapshot())

    def import_entries(self, key_group: int, metas: Iterable[StateMetaInfo],
                       entries: Iterable[StateEntry]) -> bytes:
        """A first version of ``key_group`` from unified entries (start from a savepoint)."""
        backend = self.acquire(key_group, None)
        try:
            backend.restore(list(metas), entries)
            return self.commit(key_group, backend)
        except BaseException:
            self.abandon(key_group)
            raise


#: file descriptors one open key-group database may hold (measured: 7 with one table file)
#: and those left for everything else in the worker
_FDS_PER_COPY = 16
_FDS_RESERVED = 256
#: the most copies the process's open-file limit allows (None: not computed yet)
_BUDGET: list[Optional[int]] = [None]


def open_copies_budget(wanted: int) -> int:
    """How many key-group databases this process may keep open for ``wanted``: once, the
    open-file soft limit is raised toward the hard limit to fit them (as databases do);
    what still does not fit is closed least recently used first.

    Args:
        wanted: The copies open now.

    Returns:
        The most copies to keep open (at least ``wanted`` when the limit allows it).
    """
    budget = _BUDGET[0]
    if budget is not None and wanted <= budget:
        return budget
    try:
        import resource
    except ImportError:  # pragma: no cover - no rlimits on this platform
        return max(wanted, 1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = max(wanted, 128) * 2 * _FDS_PER_COPY + _FDS_RESERVED  # room to grow
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    budget = (1 << 30 if soft == resource.RLIM_INFINITY
              else max(1, (soft - _FDS_RESERVED) // _FDS_PER_COPY))
    _BUDGET[0] = budget
    return budget


def drop_local_copies() -> int:
    """Close (and delete) every local RocksDB copy of this process; how many there were.

    A later call rebuilds from the committed version files, as a fresh executor does.
    """
    n = len(_LOCAL_COPIES)
    while _LOCAL_COPIES:
        _, copy = _LOCAL_COPIES.popitem()
        copy.backend.close()
    return n
