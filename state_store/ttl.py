"""State time-to-live in the state backends: the clock, the TTL states and their cleanup.

A descriptor with ``enable_time_to_live(config)`` (an enabled
:class:`~.ttl_config.StateTtlConfig`) gets, from every backend's ``_create_state``,
:func:`create_ttl_state`: a decorator from :mod:`.ttl_states` around a backend state
storing :class:`~.serializers.TtlValue` (value + last-access timestamp). So the
timestamps are part of the unified entry layout (value bytes = 8-byte timestamp + user
value bytes) and travel with the state everywhere it goes: STREAMING key-group commits,
restarts, savepoints.

**Clock.** TTL uses processing time. Each backend has one :class:`TtlTimeProvider`
(:func:`ttl_time_provider`): a keyed operator points it at its own processing-time
clock when it opens (the time the driver or the test harness set; the system clock
until one is set), so the test harness controls expiry with ``set_processing_time``.

**Cleanup** (besides on read, which always happens):

* full snapshot (``cleanup_full_snapshot``): expired entries are left out of a backend's
  ``snapshot()`` - savepoints from every backend, and the heap backend's STREAMING commits
  (the heap backend commits full snapshots); not RocksDB's STREAMING commits, which are
  incremental (as in Flink, where this strategy does not apply to incremental checkpoints);
* incremental (heap; ``cleanup_incrementally`` or, with background cleanup on, the default
  5 keys without per-record runs): every access of the state checks the next
  ``cleanup_size`` keys of a cursor over all of its keys and removes expired values; with
  ``run_cleanup_for_every_record`` also every time the backend's current key is set;
* RocksDB compaction filter (``cleanup_in_rocksdb_compact_filter``, or the default with
  background cleanup on): rocksdict exposes no compaction-filter hook, so on RocksDB it
  runs as an incremental cleanup instead: every access of the state checks the next
  :data:`~.backends.rocksdb.ttl.ROCKSDB_CLEANUP_ROWS` stored rows (values, list elements,
  map entries) of a cursor over the state's rows and deletes the expired ones. ``cleanup_incrementally`` has no
  effect on RocksDB, as in Flink.

Each backend brings its background cleanup in its registration (``ttl.py`` in its folder
under ``backends/``); this module holds what they share. Both background cleanups idle
after a full pass over the state until a value can have expired (the earliest expiry the
pass kept, or the pass start plus the TTL, :class:`CleanupPass`): a state read and written
all the time then pays one time comparison per access, not a scan.

The single-key backend (sorted BATCH execution) stamps values but never expires them and
does no cleanup: Flink's BATCH state backend does not apply TTL.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Optional

from .descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from .entries import (
    StateEntry,
    StateKind,
    encode_index,
    encode_sorted_user_key,
    split_sorted_user_key,
)
from .exceptions import StateDescriptorError
from .serializers import TtlSerializer
from .serializers.ttl import TTL_TIMESTAMP
from .ttl_states import (
    TtlAggregateFunction,
    TtlAggregatingState,
    TtlContext,
    TtlListState,
    TtlMapState,
    TtlReduceFunction,
    TtlReducingState,
    TtlSortedState,
    TtlState,
    TtlValueState,
)

__all__ = [
    "CleanupPass",
    "TtlCleanup",
    "TtlTimeProvider",
    "ttl_time_provider",
    "wall_clock_millis",
    "create_ttl_state",
    "drop_expired_entries",
    "full_snapshot_cleanup",
]

def wall_clock_millis() -> int:
    """Milliseconds since the epoch from the system clock."""
    import time

    return time.time_ns() // 1_000_000


class TtlTimeProvider:
    """The processing-time clock the TTL states of one backend read (ms).

    ``use(source)`` makes ``source()`` the time (a keyed operator's clock); until then,
    and after ``use(None)``, the system clock.
    """

    __slots__ = ("_source", "__weakref__")

    def __init__(self) -> None:
        self._source: Optional[Callable[[], int]] = None

    def use(self, source: Optional[Callable[[], int]]) -> None:
        """Read the time from ``source()`` from now on (None: the system clock)."""
        self._source = source

    def now(self) -> int:
        source = self._source
        return wall_clock_millis() if source is None else source()


_PROVIDERS: weakref.WeakKeyDictionary[Any, TtlTimeProvider] = weakref.WeakKeyDictionary()


def ttl_time_provider(backend: Any) -> TtlTimeProvider:
    """The TTL clock of ``backend`` (created on first use, then the same object)."""
    provider = _PROVIDERS.get(backend)
    if provider is None:
        provider = _PROVIDERS[backend] = TtlTimeProvider()
    return provider


#: a backend's background TTL cleanup: ``cleanup(backend, original, descriptor, ctx,
#: strategies)`` installs it for one TTL state (``original``: the wrapped plain state;
#: ``strategies``: the descriptor's ``CleanupStrategies``), e.g. as ``ctx.accessed``
TtlCleanup = Callable[[Any, Any, StateDescriptor, TtlContext, Any], None]


# --------------------------------------------------------------------------------------------
# the factory
# --------------------------------------------------------------------------------------------
_DECORATORS: dict[StateKind, type[TtlState]] = {
    StateKind.VALUE: TtlValueState,
    StateKind.LIST: TtlListState,
    StateKind.MAP: TtlMapState,
    StateKind.REDUCING: TtlReducingState,
    StateKind.AGGREGATING: TtlAggregatingState,
    StateKind.SORTED: TtlSortedState,
}


def _original_descriptor(descriptor: StateDescriptor, ctx: TtlContext) -> StateDescriptor:
    """The descriptor of the wrapped state: same name and kind, ``TtlValue`` values."""
    name = descriptor.name
    values = TtlSerializer(descriptor.value_serializer)
    if isinstance(descriptor, ValueStateDescriptor):
        return ValueStateDescriptor(name, values, _internal=True)
    if isinstance(descriptor, ListStateDescriptor):
        return ListStateDescriptor(name, values, _internal=True)
    if isinstance(descriptor, MapStateDescriptor):
        return MapStateDescriptor(name, descriptor.key_serializer, values, _internal=True)
    if isinstance(descriptor, ReducingStateDescriptor):
        return ReducingStateDescriptor(
            name, TtlReduceFunction(ctx, descriptor.reduce), values, _internal=True)
    if isinstance(descriptor, AggregatingStateDescriptor):
        return AggregatingStateDescriptor(
            name, TtlAggregateFunction(ctx, descriptor.agg_function), values, _internal=True)
    if isinstance(descriptor, BinarySortedStateDescriptor):
        return BinarySortedStateDescriptor(name, descriptor.key_serializer, values,
                                           _internal=True)
    raise StateDescriptorError(
        f"{type(descriptor).__name__} {name!r}: state TTL is not supported for this kind of state")


def create_ttl_state(
    backend: Any,
    descriptor: StateDescriptor,
    namespace_serializer: Any,
    create_original: Callable[[StateDescriptor, Any], Any],
    *,
    expires: bool = True,
    cleanup: Optional[TtlCleanup] = None,
) -> TtlState:
    """The TTL state of ``descriptor`` (TTL enabled) on ``backend``.

    ``create_original(descriptor, namespace_serializer)`` makes the backend's plain state
    (loading restored entries of the name). ``expires`` False stamps values without ever
    expiring them (sorted BATCH). ``cleanup`` is the background cleanup of the backend's
    registration (``StateBackendType.ttl_cleanup``), called once per TTL state; None: none.
    """
    config = descriptor.get_ttl_config()
    assert config is not None and config.is_enabled()
    provider = ttl_time_provider(backend)
    ctx = TtlContext(descriptor.name, config, provider.now, expires)
    original = create_original(_original_descriptor(descriptor, ctx), namespace_serializer)
    state = _DECORATORS[descriptor.kind](original, descriptor, ctx)
    if not expires:
        return state
    strategies = config.get_cleanup_strategies()
    if strategies.in_full_snapshot():
        state.snapshot_filter = lambda entries: drop_expired_entries(
            entries, {descriptor.name: (ctx.ttl, descriptor.kind)}, provider.now())
    if cleanup is not None:
        cleanup(backend, original, descriptor, ctx, strategies)
    return state


# --------------------------------------------------------------------------------------------
# incremental cleanup
# --------------------------------------------------------------------------------------------
class CleanupPass:
    """When a cleanup may idle: a full pass over a state that started at ``start`` and saw
    ``earliest`` as the earliest expiry of the values it kept can skip every step until the
    time reaches ``min(earliest, start + ttl)`` - no value can expire before that (a value it
    did not see was written after it started)."""

    __slots__ = ("start", "earliest", "idle_until")

    def __init__(self) -> None:
        self.start: Optional[int] = None
        self.earliest: Optional[int] = None
        self.idle_until: Optional[int] = None

    def idle(self, now: int) -> bool:
        """Whether a step at ``now`` may skip: no value can have expired since the last pass."""
        return self.idle_until is not None and now < self.idle_until

    def begin(self, now: int) -> None:
        self.start, self.earliest = now, None

    def saw(self, expiry: Optional[int]) -> None:
        if expiry is not None and (self.earliest is None or expiry < self.earliest):
            self.earliest = expiry

    def end(self, ttl: int) -> int:
        """End the pass; returns the new ``idle_until``."""
        assert self.start is not None
        bound = self.start + ttl
        idle_until = self.idle_until = bound if self.earliest is None else min(self.earliest, bound)
        self.start = None
        return idle_until


# --------------------------------------------------------------------------------------------
# full-snapshot cleanup
# --------------------------------------------------------------------------------------------
def drop_expired_entries(entries: Iterable[StateEntry], ttls: dict[str, tuple[int, StateKind]],
                         now: int) -> Iterator[StateEntry]:
    """``entries`` without the expired values of the states in ``ttls`` (name -> (ttl ms,
    kind)); list and sorted indices are renumbered ``0..n-1`` per group, as a snapshot has
    them. Each group's entries must be contiguous (true of every backend's snapshot)."""
    group: Optional[tuple[Any, ...]] = None
    counter = 0
    for entry in entries:
        found = ttls.get(entry.state_name)
        if found is None:
            yield entry
            continue
        ttl, kind = found
        if TTL_TIMESTAMP.unpack_from(entry.value)[0] + ttl <= now:
            continue
        if kind is StateKind.LIST or kind is StateKind.SORTED:
            lex = b"" if kind is StateKind.LIST else split_sorted_user_key(entry.user_key)[0]
            key = (entry.key_group, entry.state_name, entry.key, entry.namespace, lex)
            if key != group:
                group, counter = key, 0
            user_key = encode_index(counter) if kind is StateKind.LIST else (
                encode_sorted_user_key(lex, counter))
            counter += 1
            if user_key != entry.user_key:
                entry = entry._replace(user_key=user_key)
        yield entry


def full_snapshot_cleanup(entries: Iterator[StateEntry], states: Iterable[Any],
                          now: Callable[[], int]) -> Iterator[StateEntry]:
    """``entries`` of a backend snapshot without expired values of the TTL states among
    ``states`` that clean up in full snapshots (``entries`` as they are if there is none)."""
    ttls: dict[str, tuple[int, StateKind]] = {}
    for state in states:
        if isinstance(state, TtlState) and state.snapshot_filter is not None:
            ttls[state.descriptor.name] = (state.ctx.ttl, state.descriptor.kind)
    if not ttls:
        return entries
    return drop_expired_entries(entries, ttls, now())
