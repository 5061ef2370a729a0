"""The internal keyed-state backend interface (its states' interfaces: :mod:`.internal_state`).

The operators layer drives a :class:`KeyedStateBackend`: it sets the current key
(optionally with the key's pre-serialized bytes, the fast path), fetches states
by descriptor, switches namespaces on the internal states, registers timers in
:class:`~.timer_queue.TimerQueue` objects, and snapshots / restores everything as
:class:`~.entries.StateEntry` rows in canonical order (FLIP-41), which any
backend can restore.

Three implementations: ``backends.heap.HeapKeyedStateBackend``,
``backends.rocksdb.RocksDBKeyedStateBackend`` and
``backends.single_key.SingleKeyStateBackend`` (BATCH, FLIP-140).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .descriptors import (
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
    serializer_is_deterministic,
)
from .entries import (
    TIMER_STATE_PREFIX,
    StateEntry,
    StateKind,
    StateMetaInfo,
    sort_canonical,
    timer_state_name,
)
from .exceptions import (
    IncompatibleStateError,
    KeyGroupError,
    SavepointFormatError,
    StateBackendError,
    StateDescriptorError,
    StateError,
)
from .internal_state import InternalBinarySortedState, InternalKvState
from .keygroups import DEFAULT_MAX_PARALLELISM, assign_key_group, check_max_parallelism
from .namespaces import VOID_NAMESPACE, VOID_NAMESPACE_SERIALIZER
from .serializers import TypeSerializer
from .temporal import TemporalListState, TemporalValueState
from .timer_queue import Timer, TimerColumns, TimerQueue

__all__ = [
    "Timer",
    "TimerQueue",
    "KeyedStateBackend",
    "StateRegistration",
]


# --------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------
@dataclass
class StateRegistration:
    """A registered state: its descriptor, namespace serializer and state object."""

    descriptor: StateDescriptor
    namespace_serializer: TypeSerializer[Any]
    state: InternalKvState


class KeyedStateBackend(ABC):
    """Keyed state of one operator instance over a range of key groups.

    ``key_serializer`` must be deterministic (keys are grouped by their bytes);
    key groups are ``range(max_parallelism)``, and the backend owns
    ``key_group_range`` of them (default: all).
    """

    #: the canonical name of the backend's registration (``backends/registry.py``)
    backend_name: str = "abstract"
    #: True for a backend that holds only the current key's state (sorted BATCH input)
    holds_one_key: bool = False

    def __init__(
        self,
        key_serializer: TypeSerializer[Any],
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        key_group_range: range | None = None,
    ) -> None:
        if not isinstance(key_serializer, TypeSerializer):
            raise StateBackendError(
                f"{type(self).__name__}: key_serializer must be a TypeSerializer, "
                f"got {key_serializer!r}"
            )
        if not serializer_is_deterministic(key_serializer):
            raise StateBackendError(
                f"{type(self).__name__}: key serializer {key_serializer!r} is not deterministic; "
                "keys are grouped by their bytes"
            )
        self.key_serializer = key_serializer
        self.max_parallelism = check_max_parallelism(max_parallelism)
        if key_group_range is None:
            key_group_range = range(max_parallelism)
        if (
            not isinstance(key_group_range, range)
            or key_group_range.step != 1
            or len(key_group_range) == 0
            or key_group_range.start < 0
            or key_group_range.stop > max_parallelism
        ):
            raise KeyGroupError(
                f"{type(self).__name__}: key_group_range must be a non-empty range(start, stop) "
                f"inside range(0, {max_parallelism}), got {key_group_range!r}"
            )
        self.key_group_range = key_group_range
        self._full_range = len(key_group_range) == max_parallelism
        self._key: Any = None
        self._key_bytes: bytes | None = None
        self._states: dict[str, StateRegistration] = {}
        self._temporal_flavours: dict[str, str] = {}
        self._timer_queues: dict[str, TimerQueue] = {}
        self._restored_meta: dict[str, StateMetaInfo] = {}
        self._pending_timers: dict[str, list[StateEntry]] = {}
        #: restored timer columns whose queue does not exist yet (timer state name -> blocks)
        self._pending_timer_columns: dict[str, list[TimerColumns]] = {}
        self._closed = False

    # -- current key -------------------------------------------------------------------------
    @abstractmethod
    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        """Make ``key`` current; ``key_bytes`` is its serialized form when already known."""

    def get_current_key(self) -> Any:
        """The current key (``StateError`` when none was set)."""
        if self._key_bytes is None:
            raise StateError("no current key: call set_current_key first")
        return self._key

    def current_key_and_bytes(self) -> tuple[Any, bytes | None]:
        """``(key, key bytes)`` of the current key; key bytes None when no key is set.

        Raises nothing, for the hot paths (timer registration, timer firing).
        """
        return self._key, self._key_bytes

    def get_current_key_bytes(self) -> bytes:
        """Serialized current key."""
        if self._key_bytes is None:
            raise StateError("no current key: call set_current_key first")
        return self._key_bytes

    def get_current_key_group(self) -> int:
        """Key group of the current key."""
        return assign_key_group(self.get_current_key_bytes(), self.max_parallelism)

    def _check_key_group(self, key_group: int, key: Any) -> None:
        if key_group not in self.key_group_range:
            raise KeyGroupError(
                f"key {key!r} is in key group {key_group}, outside this backend's key groups "
                f"{self.key_group_range.start}..{self.key_group_range.stop - 1}"
            )

    def no_key_error(self, state_name: str) -> StateError:
        """The error of accessing state ``state_name`` while no key is current."""
        return StateError(
            f"no current key: call set_current_key before accessing state {state_name!r}"
        )

    # -- state registry ----------------------------------------------------------------------
    def get_state(
        self,
        descriptor: StateDescriptor,
        namespace_serializer: TypeSerializer[Any] = VOID_NAMESPACE_SERIALIZER,
    ) -> Any:
        """The state for ``descriptor`` (created on first use, then the same object).

        Re-registering a name with another kind, serializer or namespace serializer
        raises ``StateDescriptorError``.
        """
        self._check_open()
        if not isinstance(descriptor, StateDescriptor):
            raise StateDescriptorError(f"get_state needs a StateDescriptor, got {descriptor!r}")
        if not isinstance(namespace_serializer, TypeSerializer):
            raise StateDescriptorError(
                f"state {descriptor.name!r}: namespace_serializer must be a TypeSerializer, "
                f"got {namespace_serializer!r}"
            )
        registration = self._states.get(descriptor.name)
        if registration is not None:
            old = registration.descriptor
            if not old.is_compatible_with(descriptor):
                raise StateDescriptorError(
                    f"state {descriptor.name!r} is already registered as {old.kind.value} state "
                    f"with value serializer {old.value_serializer!r} (user key "
                    f"{old.user_key_serializer!r}); cannot register it as {descriptor.kind.value} "
                    f"state with value serializer {descriptor.value_serializer!r} (user key "
                    f"{descriptor.user_key_serializer!r})"
                )
            if registration.namespace_serializer != namespace_serializer:
                raise StateDescriptorError(
                    f"state {descriptor.name!r} is already registered with namespace serializer "
                    f"{registration.namespace_serializer!r}, not {namespace_serializer!r}"
                )
            return registration.state
        meta = self._restored_meta.get(descriptor.name)
        if meta is not None:
            self._check_restored(meta, descriptor.meta_info(self.key_serializer, namespace_serializer))
        state = self._create_state(descriptor, namespace_serializer)
        self._states[descriptor.name] = StateRegistration(descriptor, namespace_serializer, state)
        return state

    def get_binary_sorted_state(
        self,
        descriptor: BinarySortedStateDescriptor,
        namespace_serializer: TypeSerializer[Any] = VOID_NAMESPACE_SERIALIZER,
    ) -> InternalBinarySortedState:
        """The :class:`~.state.BinarySortedState` for ``descriptor``."""
        if not isinstance(descriptor, BinarySortedStateDescriptor):
            raise StateDescriptorError(
                f"get_binary_sorted_state needs a BinarySortedStateDescriptor, got {descriptor!r}"
            )
        return self.get_state(descriptor, namespace_serializer)

    def _temporal_sorted_state(
        self, descriptor: StateDescriptor, flavour: str
    ) -> InternalBinarySortedState:
        from . import serializers

        long_serializer = getattr(serializers, "LexicographicLongSerializer", None)
        if long_serializer is None:
            raise StateBackendError(
                "temporal state needs serializers.LexicographicLongSerializer, which is missing"
            )
        known = self._temporal_flavours.get(descriptor.name)
        if known is not None and known != flavour:
            raise StateDescriptorError(
                f"state {descriptor.name!r} is already registered as temporal {known} state; "
                f"cannot register it as temporal {flavour} state"
            )
        sorted_descriptor = BinarySortedStateDescriptor(
            descriptor.name,
            long_serializer.INSTANCE,
            descriptor.value_serializer,
            _internal=descriptor.internal,
        )
        ttl_config = descriptor.get_ttl_config()
        if ttl_config is not None:  # a temporal state expires per value, as its sorted state
            sorted_descriptor.enable_time_to_live(ttl_config)
        state = self.get_binary_sorted_state(sorted_descriptor)
        self._temporal_flavours[descriptor.name] = flavour
        return state

    def get_temporal_value_state(self, descriptor: ValueStateDescriptor) -> TemporalValueState:
        """A :class:`~.temporal.TemporalValueState` stored as a sorted state with long keys."""
        if not isinstance(descriptor, ValueStateDescriptor):
            raise StateDescriptorError(
                f"get_temporal_value_state needs a ValueStateDescriptor, got {descriptor!r}"
            )
        state = self._temporal_sorted_state(descriptor, "value")
        return TemporalValueState(state, state.set_current_namespace)

    def get_temporal_list_state(self, descriptor: ListStateDescriptor) -> TemporalListState:
        """A :class:`~.temporal.TemporalListState` stored as a sorted state with long keys."""
        if not isinstance(descriptor, ListStateDescriptor):
            raise StateDescriptorError(
                f"get_temporal_list_state needs a ListStateDescriptor, got {descriptor!r}"
            )
        state = self._temporal_sorted_state(descriptor, "list")
        return TemporalListState(state, state.set_current_namespace)

    @abstractmethod
    def _create_state(
        self, descriptor: StateDescriptor, namespace_serializer: TypeSerializer[Any]
    ) -> InternalKvState:
        """Create the backend's state object (and load restored entries of that name)."""

    # -- timers -----------------------------------------------------------------------------------
    def timer_queue(
        self, name: str, namespace_serializer: TypeSerializer[Any] = VOID_NAMESPACE_SERIALIZER
    ) -> TimerQueue:
        """The timer queue called ``name`` (created on first use, then the same object)."""
        self._check_open()
        if not isinstance(name, str) or not name or "\x00" in name:
            raise StateDescriptorError(f"timer queue name must be a non-empty str without NUL, got {name!r}")
        queue = self._timer_queues.get(name)
        if queue is not None:
            if queue.namespace_serializer != namespace_serializer:
                raise StateDescriptorError(
                    f"timer queue {name!r} already uses namespace serializer "
                    f"{queue.namespace_serializer!r}, not {namespace_serializer!r}"
                )
            return queue
        meta = self._restored_meta.get(timer_state_name(name))
        if meta is not None and not namespace_serializer.is_compatible_with(meta.namespace_serializer):
            raise IncompatibleStateError(
                f"timer queue {name!r}: restored timers have namespace serializer "
                f"{meta.namespace_serializer!r}, incompatible with {namespace_serializer!r}"
            )
        queue = TimerQueue(self, name, namespace_serializer)
        self._timer_queues[name] = queue
        pending = self._pending_timers.pop(timer_state_name(name), None)
        if pending:
            queue.restore_entries(pending)
        for columns in self._pending_timer_columns.pop(timer_state_name(name), ()):
            queue.restore_columns(columns)
        return queue

    def timer_entries(self) -> list[StateEntry]:
        """Entries of every timer (live queues and restored, unclaimed ones); unsorted."""
        entries: list[StateEntry] = []
        for queue in self._timer_queues.values():
            if queue:
                entries.extend(queue.snapshot_entries(self.max_parallelism))
        for pending in self._pending_timers.values():
            entries.extend(pending)
        if self._pending_timer_columns:  # no generator when none (a BATCH key's snapshot)
            for pending in self._pending_column_entries():
                entries.extend(pending)
        return entries

    def timer_runs(self) -> list[list[StateEntry]]:
        """Entries of every timer (live queues and restored, unclaimed ones) as lists in
        canonical order, one per timer state."""
        runs = [queue.snapshot_entries(self.max_parallelism) for queue in self._timer_queues.values()]
        runs.extend(sort_canonical(pending) for pending in self._pending_timers.values())
        runs.extend(map(sort_canonical, self._pending_column_entries()))
        return [run for run in runs if run]

    def _pending_column_entries(self) -> Iterator[list[StateEntry]]:
        """The entries of the restored timer columns no queue has claimed, per timer state."""
        for name, blocks in self._pending_timer_columns.items():
            yield [entry for columns in blocks
                   for entry in columns.entries(name, self.max_parallelism)]

    def take_timer_columns(self) -> list[tuple[str, TimerColumns]]:
        """Move every timer out of the backend as ``(timer state name, columns)``.

        Afterwards :meth:`snapshot` holds no timers but restored timer *entries* no queue
        has claimed. A STREAMING key group keeps its timers in this compact form between
        micro-batches (:meth:`restore_timer_columns` puts them back).
        """
        self._check_open()
        taken: list[tuple[str, TimerColumns]] = []
        for name, queue in self._timer_queues.items():
            columns = queue.take_columns()
            if columns is not None:
                taken.append((timer_state_name(name), columns))
        for state_name, blocks in self._pending_timer_columns.items():
            taken.extend((state_name, columns) for columns in blocks)
        self._pending_timer_columns.clear()
        return taken

    def restore_timer_columns(self, state_name: str, columns: TimerColumns) -> None:
        """Load timers of :meth:`take_timer_columns` after :meth:`restore` loaded the meta
        infos (``SavepointFormatError`` without one, ``KeyGroupError`` for a key outside
        the owned key groups)."""
        self._check_open()
        if not state_name.startswith(TIMER_STATE_PREFIX) or state_name not in self._restored_meta:
            raise SavepointFormatError(
                f"timer columns of state {state_name!r} have no timer meta info in the restored "
                "metadata")
        for key in dict.fromkeys(pair[0] for pair in columns.pairs):
            key_group = assign_key_group(key, self.max_parallelism)
            if key_group not in self.key_group_range:
                raise KeyGroupError(
                    f"timer of state {state_name!r}: key {bytes(key)!r:.60} is in key group "
                    f"{key_group}, outside this backend's key groups "
                    f"{self.key_group_range.start}..{self.key_group_range.stop - 1}")
        queue = self._timer_queues.get(state_name[len(TIMER_STATE_PREFIX):])
        if queue is not None:
            queue.restore_columns(columns)
        else:
            self._pending_timer_columns.setdefault(state_name, []).append(columns)

    # -- meta data ----------------------------------------------------------------------------------
    def state_meta_infos(self) -> list[StateMetaInfo]:
        """Meta info of every state and timer queue (registered or restored), sorted by name."""
        infos: dict[str, StateMetaInfo] = dict(self._restored_meta)
        for name, registration in self._states.items():
            infos[name] = registration.descriptor.meta_info(
                self.key_serializer, registration.namespace_serializer
            )
        for name, queue in self._timer_queues.items():
            infos[timer_state_name(name)] = StateMetaInfo(
                name=timer_state_name(name),
                kind=StateKind.TIMER,
                key_serializer=self.key_serializer.snapshot(),
                namespace_serializer=queue.namespace_serializer.snapshot(),
                user_key_serializer=None,
                value_serializer=None,
            )
        return [infos[name] for name in sorted(infos)]

    def _check_restored(self, restored: StateMetaInfo, current: StateMetaInfo) -> None:
        """Raise ``IncompatibleStateError`` unless ``current`` can read ``restored`` entries."""
        problems = []
        if restored.kind is not current.kind:
            problems.append(f"kind {restored.kind.value} != {current.kind.value}")
        for field in ("user_key_serializer", "value_serializer", "namespace_serializer"):
            old, new = getattr(restored, field), getattr(current, field)
            if old != new:
                problems.append(f"{field} {old!r} != {new!r}")
        if problems:
            raise IncompatibleStateError(
                f"state {restored.name!r}: restored state is incompatible with the program's "
                f"descriptor: {'; '.join(problems)}"
            )

    # -- snapshot / restore -----------------------------------------------------------------------
    @abstractmethod
    def snapshot(self, key_groups: Iterable[int] | None = None) -> Iterator[StateEntry]:
        """Every entry (states and timers) in canonical order, streaming.

        ``key_groups`` limits the snapshot to some owned key groups (default: all).
        """

    def _snapshot_key_groups(self, key_groups: Iterable[int] | None) -> list[int]:
        """The key groups a :meth:`snapshot` of ``key_groups`` covers, in order; a key group
        this backend does not own raises ``KeyGroupError``."""
        if key_groups is None:
            return list(self.key_group_range)
        selected = sorted(set(key_groups))
        for key_group in selected:
            if key_group not in self.key_group_range:
                raise KeyGroupError(
                    f"cannot snapshot key group {key_group}: this backend owns "
                    f"{self.key_group_range.start}..{self.key_group_range.stop - 1}"
                )
        return selected

    def restore(self, meta_infos: Iterable[StateMetaInfo], entries: Iterable[StateEntry]) -> None:
        """Load entries written by any backend's :meth:`snapshot` (any order for heap and
        single-key; RocksDB writes them as they come).

        Meta infos are checked against the backend's key serializer and any state
        already registered (``IncompatibleStateError``); entries of a state without
        meta info raise ``SavepointFormatError``; entries outside the owned key
        groups raise ``KeyGroupError``.
        """
        self._check_open()
        metas: dict[str, StateMetaInfo] = {}
        for meta in meta_infos:
            if not self.key_serializer.is_compatible_with(meta.key_serializer):
                raise IncompatibleStateError(
                    f"state {meta.name!r}: restored key serializer {meta.key_serializer!r} is "
                    f"incompatible with the backend's {self.key_serializer!r}"
                )
            registration = self._states.get(meta.name)
            if registration is not None:
                self._check_restored(
                    meta,
                    registration.descriptor.meta_info(
                        self.key_serializer, registration.namespace_serializer
                    ),
                )
            if meta.name.startswith(TIMER_STATE_PREFIX):
                queue = self._timer_queues.get(meta.name[len(TIMER_STATE_PREFIX) :])
                if queue is not None and not queue.namespace_serializer.is_compatible_with(
                    meta.namespace_serializer
                ):
                    raise IncompatibleStateError(
                        f"timer queue {queue.name!r}: restored namespace serializer "
                        f"{meta.namespace_serializer!r} is incompatible with "
                        f"{queue.namespace_serializer!r}"
                    )
            metas[meta.name] = meta
        self._restored_meta.update(metas)
        for_queues: dict[str, list[StateEntry]] = {}
        self._restore_entries(self._checked_entries(entries, for_queues))
        for name, timers in for_queues.items():
            self._timer_queues[name[len(TIMER_STATE_PREFIX) :]].restore_entries(timers)

    def _checked_entries(
        self, entries: Iterable[StateEntry], for_queues: dict[str, list[StateEntry]]
    ) -> Iterator[StateEntry]:
        """Validate state names and key groups; yield state entries.

        Timer entries go to ``for_queues`` (state name -> entries) when their queue
        exists, else to the pending timers. Names and key groups are checked once per
        distinct name and key bytes.
        """
        #: state name -> where its entries go: None (yield), or the list of its timers
        routes: dict[str, list[StateEntry] | None] = {}
        #: key bytes -> key group (every key seen is in an owned key group)
        seen: dict[bytes, int] = {}
        for entry in entries:
            name = entry[1]
            try:
                route = routes[name]
            except KeyError:
                route = routes[name] = self._route_of(name, for_queues)
            key_group = seen.get(entry[2])
            if key_group is None:
                key_group = self._checked_key_group(entry)
                seen[entry[2]] = key_group
            if entry[0] != key_group:
                self._checked_key_group(entry)  # raises
            if route is None:
                yield entry
            else:
                route.append(entry)

    def _route_of(
        self, name: str, for_queues: dict[str, list[StateEntry]]
    ) -> list[StateEntry] | None:
        """Where :meth:`_checked_entries` sends entries of state ``name`` (see there)."""
        if name not in self._restored_meta and name not in self._states:
            raise SavepointFormatError(
                f"entry of state {name!r} has no state meta info in the restored metadata"
            )
        if not name.startswith(TIMER_STATE_PREFIX):
            return None
        if name[len(TIMER_STATE_PREFIX) :] in self._timer_queues:
            return for_queues.setdefault(name, [])
        return self._pending_timers.setdefault(name, [])

    def _checked_key_group(self, entry: StateEntry) -> int:
        """The entry's key group; ``KeyGroupError`` unless owned and that of its key."""
        key_groups = self.key_group_range
        max_parallelism = self.max_parallelism
        name = entry.state_name
        if entry.key_group not in key_groups:
            raise KeyGroupError(
                f"entry of state {name!r} is in key group {entry.key_group}, outside this "
                f"backend's key groups {key_groups.start}..{key_groups.stop - 1}"
            )
        if assign_key_group(entry.key, max_parallelism) != entry.key_group:
            raise KeyGroupError(
                f"entry of state {name!r} says key group {entry.key_group}, but its key "
                f"{bytes(entry.key)!r:.60} belongs to key group "
                f"{assign_key_group(entry.key, max_parallelism)} under max parallelism "
                f"{max_parallelism}; was it written with another max parallelism?"
            )
        return entry.key_group

    @abstractmethod
    def _restore_entries(self, entries: Iterable[StateEntry]) -> None:
        """Load validated (non-timer) state entries."""

    # -- keys ------------------------------------------------------------------------------------
    @abstractmethod
    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        """Keys that have a value in state ``state_name`` under ``namespace``."""

    def _namespace_bytes_for(self, state_name: str, namespace: Any) -> bytes:
        registration = self._states.get(state_name)
        if registration is not None:
            return registration.namespace_serializer.serialize(namespace)
        if namespace is VOID_NAMESPACE:
            return b""
        meta = self._restored_meta.get(state_name)
        if meta is None:
            raise StateError(f"keys(): unknown state {state_name!r}")
        raise StateError(
            f"keys(): state {state_name!r} is restored but not registered yet; register it "
            "(get_state) before asking for keys under a non-void namespace"
        )

    # -- key-change listeners ------------------------------------------------------------------
    def add_key_change_listener(self, listener: Callable[[Any, bytes], None]) -> None:
        """Call ``listener(new_key, new_key_bytes)`` just before the current key changes.

        Only :class:`~.backends.single_key.SingleKeyStateBackend` calls listeners
        (it drops the previous key's state and timers right after them, so this is
        where a BATCH runtime fires the previous key's timers); other backends keep
        every key's state and never call them.
        """
        self._key_change_listeners().append(listener)

    def _key_change_listeners(self) -> list[Callable[[Any, bytes], None]]:
        listeners: list[Callable[[Any, bytes], None]] | None = getattr(self, "_listeners", None)
        if listeners is None:
            listeners = []
            self._listeners = listeners
        return listeners

    # -- lifecycle -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StateBackendError(f"{type(self).__name__} is closed")

    def close(self) -> None:
        """Release resources; the backend is unusable afterwards."""
        self._closed = True

    def __enter__(self) -> KeyedStateBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
