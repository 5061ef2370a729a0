"""A host-local copy of a RocksDB key group's version files (keygroup_store.py).

Version files are written once under unique names, so a copy on local disk is that file for
as long as it exists. Spark hands a partition's task to any idle Python worker of the
executor, and a worker without the key group's working copy rebuilds it from the files of
its committed version: with the checkpoint on object storage, it reads them here instead
when a worker of the same host wrote or read them before. A copy is written beside each
file written to (or read from) the checkpoint, checked against the size its pointer
records (and read as a version file, or deleted and the file read from the checkpoint),
and dropped when its key group's versions move past it. Any failure of the cache falls back
to the checkpoint's storage.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import uuid
from typing import IO, Any, Optional

__all__ = ["VersionCache", "cache_root", "file_seq", "host_scratch"]

logger = logging.getLogger(__name__)


def host_scratch() -> str:
    """The executor's Spark scratch directory (the first of ``SPARK_LOCAL_DIRS``, which Spark
    hands its Python workers and removes with the executor), else the temporary directory.

    Returns:
        The folder.
    """
    spark_dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d.strip()]
    return spark_dirs[0].strip() if spark_dirs else tempfile.gettempdir()


def file_seq(name: str) -> int:
    """The version number a version file's name starts with (-1: not a version file's name).

    Args:
        name: the file's name.

    Returns:
        The number.
    """
    try:
        return int(name.split("-", 1)[0])
    except ValueError:
        return -1


def cache_root(local_dir: Optional[str]) -> str:
    """The folder of a host's version file copies: under ``local_dir`` when the job gives
    one, else under the executor's Spark scratch (``SPARK_LOCAL_DIRS``, removed with the
    executor) or the temporary directory. Shared by the host's worker processes.

    Args:
        local_dir: the key group databases' folder the job chose (None: the default).

    Returns:
        The folder (created when first written).
    """
    return os.path.join(local_dir or host_scratch(), "pyspark-datastream-cache")


class VersionCache:
    """The host's copies of one checkpoint folder's version files, one folder per key group.

    Args:
        root: :func:`cache_root`.
        checkpoint_dir: the key group store's checkpoint folder (its copies are apart from
            every other store's).
    """

    def __init__(self, root: str, checkpoint_dir: str) -> None:
        digest = hashlib.sha256(checkpoint_dir.encode("utf-8")).hexdigest()[:24]
        self.folder = os.path.join(root, digest)
        self._warned = False

    def path(self, key_group: int, name: str) -> str:
        """Where the copy of version file ``name`` of ``key_group`` lives."""
        return os.path.join(self.folder, f"kg-{key_group:05d}", name)

    def open(self, key_group: int, name: str, size: int) -> Optional[IO[bytes]]:
        """The copy, opened for reading, when it exists with the size the pointer records.

        Args:
            key_group: the key group.
            name: the version file's name.
            size: its size in the committed pointer.

        Returns:
            The open file, or None (no copy; a copy of another size is deleted).
        """
        path = self.path(key_group, name)
        try:
            f = open(path, "rb")
        except OSError:
            return None
        try:
            right = os.fstat(f.fileno()).st_size == size
        except OSError as exc:
            f.close()
            self._failed("read", exc)
            return None
        if right:
            return f
        f.close()
        self.drop(key_group, name, "has the wrong size")
        return None

    def drop(self, key_group: int, name: str, why: str) -> None:
        """Delete the copy of ``name``, which does not stand for the file.

        Args:
            key_group: the key group.
            name: the version file's name.
            why: what is wrong with it (logged).
        """
        path = self.path(key_group, name)
        logger.warning("version file copy %s %s: deleted, the file is read from the "
                       "checkpoint", path, why)
        try:
            os.unlink(path)
        except OSError:
            pass

    def writer(self, key_group: int, name: str) -> Optional[CopyWriter]:
        """A copy being written (from the bytes written to, or read from, the checkpoint).

        Args:
            key_group: the key group.
            name: the version file's name.

        Returns:
            The writer, or None when the cache cannot be written.
        """
        path = self.path(key_group, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
            return CopyWriter(self, open(tmp, "wb"), tmp, path)
        except OSError as exc:
            self._failed("write", exc)
            return None

    def prune(self, key_group: int, keep: set[str], below: int) -> None:
        """Delete the key group's copies that no committed version reads any more: not in
        ``keep`` and of a version up to ``below`` (a newer one may be another worker's).

        Args:
            key_group: the key group.
            keep: names of the files of the committed (and the previous) versions.
            below: the highest version whose files may go.
        """
        folder = os.path.dirname(self.path(key_group, "x"))
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            if name in keep or name.endswith(".tmp"):
                continue
            if 0 <= file_seq(name) <= below:
                try:
                    os.unlink(os.path.join(folder, name))
                except OSError:
                    pass

    def _failed(self, what: str, exc: BaseException) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("the host cache of version files (%s) cannot %s: %s; the key "
                           "groups are read from the checkpoint", self.folder, what, exc)


class CopyWriter:
    """A copy of a version file being written; visible under its name only once complete
    (:meth:`finish`), never half-written."""

    def __init__(self, cache: VersionCache, f: IO[bytes], tmp: str, path: str) -> None:
        self._cache, self._f, self._tmp, self._path = cache, f, tmp, path
        self.size = 0
        self._ok = True

    def write(self, data: Any) -> None:
        """Append ``data`` (a failure drops the copy, not the caller's write)."""
        if not self._ok:
            return
        try:
            self.size += self._f.write(data)
        except OSError as exc:
            self._ok = False
            self._cache._failed("write", exc)

    def finish(self, size: int) -> None:
        """Publish the copy when it holds exactly ``size`` bytes; drop it otherwise.

        Args:
            size: the version file's size.
        """
        try:
            self._f.close()
            if self._ok and self.size == size:
                os.replace(self._tmp, self._path)
                return
        except OSError as exc:
            self._cache._failed("write", exc)
        self.discard()

    def discard(self) -> None:
        """Drop the copy (the file it copies was not written or not read whole)."""
        try:
            self._f.close()
            os.unlink(self._tmp)
        except OSError:
            pass


class TeeReader:
    """A version file read from the checkpoint that writes its bytes to a copy as they are
    read; closing it publishes the copy when every byte was read."""

    def __init__(self, f: IO[bytes], copy: CopyWriter, size: int) -> None:
        self._f, self._copy, self._size = f, copy, size
        self._closed = False

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._copy.write(data)
        return data

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        whole = not self._f.read(1)  # the caller stops at the end, or short of it
        self._f.close()
        if whole:
            self._copy.finish(self._size)
        else:
            self._copy.discard()

    def __enter__(self) -> TeeReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is not None:
            self._f.close()
            self._closed = True
            self._copy.discard()
        else:
            self.close()
