"""``RocksDBKeyedStateBackend``: keyed state in an embedded RocksDB (via ``rocksdict``).

The storage keys ARE the unified entry keys of :mod:`...entries`, so state is
ordered by (key group, state name, key, namespace, user key) on disk and
``snapshot()`` is one ordered scan (merged with the in-memory timers). Each
value is stored serialized; every access (de)serializes, which is what lets
the state outgrow memory.

* List state: one entry per element (user key = uint64 index); ``add`` appends
  one entry without reading the list (next index from a small cache, else one
  bounded reverse seek).
* Map state: one entry per map entry.
* Sorted state: one entry per value (user key = lexicographic key + index);
  lookups and ranges are bounded native iterators, never a scan of the state.
  Its adds (and the deletes of rows a range clear left below a *floor*) are
  staged in a ``WriteBatch`` written before any read that could see them, and
  before every whole-database read (snapshot, change capture, ``keys``,
  :meth:`RocksDBKeyedStateBackend.flush`); see :class:`.sorted_state.RocksSortedState`.
* Deletes of several entries (clear, range clears) iterate the bounded range and
  delete through a ``WriteBatch``.

The write-ahead log is disabled (durability comes from snapshots, as in Flink).

The modules: ``common`` (row-layout codecs and limits), ``states`` (value,
reducing, aggregating, list and map state), ``sorted_state`` (binary sorted
state), ``tracking`` (change capture for incremental checkpoints), ``backend``
(the backend, which creates the states), ``ttl`` (the emulated compaction-filter
TTL cleanup), ``keygroup_store`` (the STREAMING key-group store: versioned files,
savepoint export/import) and ``registration`` (the backend's ``StateBackendType``).
Import the backend from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .backend import RocksDBKeyedStateBackend

__all__ = ["RocksDBKeyedStateBackend"]


def __getattr__(name: str) -> Any:
    # imported on first use, so registering the backend does not load rocksdict
    if name == "RocksDBKeyedStateBackend":
        from .backend import RocksDBKeyedStateBackend

        return RocksDBKeyedStateBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
