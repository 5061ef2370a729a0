"""The RocksDB backend's background TTL cleanup: the compaction filter, emulated.

rocksdict exposes no compaction-filter hook, so it runs as an incremental cleanup over the
stored rows of each state (see :mod:`...ttl`).
"""

from __future__ import annotations

from typing import Any, Optional

from ...descriptors import StateDescriptor
from ...entries import StateKind, encode_key_group, encode_state_name, prefix_successor
from ...serializers.ttl import TTL_TIMESTAMP
from ...ttl import CleanupPass
from ...ttl_states import TtlContext

__all__ = ["ROCKSDB_CLEANUP_ROWS", "RocksCleanup", "rocksdb_ttl_cleanup"]

#: rows the emulated RocksDB compaction-filter cleanup checks per state access
ROCKSDB_CLEANUP_ROWS = 5


def rocksdb_ttl_cleanup(backend: Any, original: Any, descriptor: StateDescriptor,
                        ctx: TtlContext, strategies: Any) -> None:
    """Install the emulated compaction filter of one TTL state
    (``cleanup_in_rocksdb_compact_filter``, or the default with background cleanup on); a
    ``TtlCleanup`` (:mod:`...ttl`). Sorted states keep rows and caches in memory: they are
    cleaned on read only.

    Args:
        backend: the RocksDB backend (``scan``, ``db``, ``key_group_range``).
        original: the wrapped plain state (unused: the cleanup works on stored rows).
        descriptor: the state's descriptor.
        ctx: the state's TTL context.
        strategies: the descriptor's cleanup strategies.
    """
    if descriptor.kind is StateKind.SORTED:
        return
    if strategies.get_rocksdb_compact_filter_cleanup_strategy() is not None:
        ctx.accessed = RocksCleanup(backend, descriptor.name, ctx).step


class RocksCleanup:
    """The emulated compaction filter: a cursor over the stored rows of one state (key group
    by key group); each step reads the next :data:`ROCKSDB_CLEANUP_ROWS` rows and deletes
    the expired ones (their first 8 value bytes are the last-access timestamp). After a pass
    over every key group, steps idle until a value can have expired (see :class:`~...ttl.CleanupPass`)."""

    def __init__(self, backend: Any, name: str, ctx: TtlContext) -> None:
        self._backend = backend
        self._ctx = ctx
        self._name_part = encode_state_name(name)
        self._groups = list(backend.key_group_range)
        self._group = 0
        self._after: Optional[bytes] = None
        self._pass = CleanupPass()

    def step(self) -> None:
        current, ctx = self._pass, self._ctx
        now = ctx.now()
        if current.idle(now):
            return
        if current.start is None:
            current.begin(now)
        ttl = ctx.ttl
        limit = now - ttl
        backend = self._backend
        # each seek costs one unit of the budget even when it finds nothing, so a step over
        # many empty key groups stays as cheap as one over rows
        budget = ROCKSDB_CLEANUP_ROWS
        expired: list[bytes] = []
        groups = self._groups
        earliest: Optional[int] = None
        while budget > 0:
            prefix = encode_key_group(groups[self._group]) + self._name_part
            lower = prefix if self._after is None else self._after + b"\x00"
            seen = 0
            full = False
            for key, value in backend.scan(lower, prefix_successor(prefix)):
                seen += 1
                stamp = TTL_TIMESTAMP.unpack_from(value)[0]
                if stamp <= limit:
                    expired.append(key)
                elif earliest is None or stamp < earliest:
                    earliest = stamp
                self._after = key
                if seen == budget:
                    full = True
                    break
            budget -= max(seen, 1)
            if not full:  # the group is done: the next one
                self._group = (self._group + 1) % len(groups)
                self._after = None
                if self._group == 0:  # every key group visited: the pass is complete
                    current.saw(None if earliest is None else earliest + ttl)
                    earliest = None
                    current.end(ttl)
                    break
        current.saw(None if earliest is None else earliest + ttl)
        if expired:
            db = backend.db
            for key in expired:
                db.delete(key)
