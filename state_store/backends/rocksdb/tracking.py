"""Change tracking for incremental checkpoints: the database proxy and its write batch.

With ``track_changes`` the backend's states write through ``TrackingDB``, which
forwards every write to the real database and remembers the changed raw keys
(bounded: past its limit it drops the record and says so), and batch their
writes in a ``RecordingBatch`` that the proxy can read back.
"""

from __future__ import annotations

from typing import Any

import rocksdict

from ...exceptions import StateBackendError

__all__ = ["RecordingBatch", "TrackingDB"]


class RecordingBatch:
    """A write batch as a Python list, so the tracking proxy can see what it writes."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes) -> None:
        self.ops.append((key, value))

    def delete(self, key: bytes) -> None:
        self.ops.append((key, None))


class TrackingDB:
    """Forwards to the real ``Rdict`` and remembers each changed key (None = deleted)."""

    def __init__(self, db: rocksdict.Rdict, limit: int) -> None:
        self.real_db = db
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
        self.real_db.put(key, value)
        if not self.overflow:
            self._record(key, value)

    def delete(self, key: bytes) -> None:
        self.real_db.delete(key)
        if not self.overflow:
            self._record(key, None)

    def write(self, batch: Any, options: Any = None) -> None:
        if isinstance(batch, RecordingBatch):
            real = rocksdict.WriteBatch(raw_mode=True)
            for key, value in batch.ops:
                if value is None:
                    real.delete(key)
                else:
                    real.put(key, value)
            self.real_db.write(real, options)
            for key, value in batch.ops:
                if self.overflow:
                    break
                self._record(key, value)
        else:
            raise StateBackendError("a tracked RocksDB backend only writes recording batches")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real_db, name)
