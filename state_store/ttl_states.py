"""The state decorators of state TTL: each wraps a backend state that stores ``TtlValue``s.

:func:`.ttl.create_ttl_state` builds the wrapped (*original*) state from a descriptor
whose value serializer is a :class:`~.serializers.TtlSerializer` (and, for reducing and
aggregating state, whose function is a :class:`TtlReduceFunction` /
:class:`TtlAggregateFunction`), then wraps it here. The decorators give the user's
state interface and apply the semantics of the :class:`~.ttl_config.StateTtlConfig`:

* a value is *expired* when ``last access + ttl <= now`` (processing time, ms);
* writes stamp values with ``now``; reads do too under ``OnReadAndWrite``;
* a read that finds an expired value removes it; under ``NeverReturnExpired`` it is not
  returned, under ``ReturnExpiredIfNotCleanedUp`` it is returned this once;
* lists expire per element, maps per entry, sorted states per value; a list (or sorted
  entry) whose every element expired is removed when read;
* reducing/aggregating: an expired stored value is dropped (not reduced into) when a new
  value is added, unless ``ReturnExpiredIfNotCleanedUp``.

With ``expires=False`` (sorted BATCH execution, where TTL does not apply) values are
stamped but never expire. Merging namespaces merges the stored values as they are. The
decorators store plain ``(value, timestamp)`` pairs (cheaper to build than
:class:`~.serializers.TtlValue`, which the serializer reads back as).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .descriptors import StateDescriptor
from .entries import StateEntry
from .exceptions import StateError
from .internal_state import (
    InternalAggregatingState,
    InternalBinarySortedState,
    InternalKvState,
    InternalListState,
    InternalMapState,
    InternalReducingState,
    InternalValueState,
)
from .ttl_config import StateTtlConfig

__all__ = [
    "TtlContext",
    "TtlState",
    "TtlValueState",
    "TtlListState",
    "TtlMapState",
    "TtlReducingState",
    "TtlAggregatingState",
    "TtlSortedState",
    "TtlReduceFunction",
    "TtlAggregateFunction",
]

#: a stored value: ``(user value, last-access timestamp)`` (a ``TtlValue`` when deserialized)
Stamped = tuple[Any, int]

_RETURN_EXPIRED = StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
_ON_READ_AND_WRITE = StateTtlConfig.UpdateType.OnReadAndWrite
#: attributes of the original state that backends look up with ``getattr`` (optional ones)
_FORWARDED = frozenset({"flush_staged", "invalidate_cache", "_keys_in_namespace"})


def _no_cleanup() -> None:
    return None


class TtlContext:
    """What a TTL state and its functions share: the settings and the clock.

    ``now()`` is the processing time in ms; ``accessed()`` runs the incremental cleanup
    step of the state (set by the factory; a no-op by default).
    """

    __slots__ = ("name", "ttl", "expires", "return_expired", "update_on_read", "now", "accessed")

    def __init__(self, name: str, config: StateTtlConfig, now: Callable[[], int],
                 expires: bool) -> None:
        self.name = name
        self.ttl = config.get_ttl_millis()
        self.expires = expires
        self.return_expired = config.get_state_visibility() is _RETURN_EXPIRED
        self.update_on_read = config.get_update_type() is _ON_READ_AND_WRITE
        self.now = now
        self.accessed: Callable[[], None] = _no_cleanup

    def is_expired(self, stored: Stamped, now: int) -> bool:
        """``last access + ttl <= now`` (never without expiry)."""
        return self.expires and stored[1] + self.ttl <= now

    def unexpired(self, stored: Stamped | None, now: int) -> Any:
        """The user value of ``stored`` unless it is absent or expired and expired values
        are not returned; else None."""
        if stored is None or (not self.return_expired and self.is_expired(stored, now)):
            return None
        return stored[0]


class TtlReduceFunction:
    """The reduce function of the original reducing state (on ``TtlValue``s)."""

    def __init__(self, ctx: TtlContext, reduce: Callable[[Any, Any], Any]) -> None:
        self._ctx = ctx
        self._reduce = reduce

    def __call__(self, left: Stamped, right: Stamped) -> Stamped | None:
        ctx = self._ctx
        now = ctx.now()
        a, b = ctx.unexpired(left, now), ctx.unexpired(right, now)
        if a is not None and b is not None:
            reduced = self._reduce(a, b)
            if reduced is None:
                raise StateError(
                    f"the reduce function of reducing state {ctx.name!r} returned None")
            return (reduced, now)
        if a is not None:
            return (a, now)
        return None if b is None else (b, now)


class TtlAggregateFunction:
    """The aggregate function of the original aggregating state (``TtlValue`` accumulators)."""

    def __init__(self, ctx: TtlContext, function: Any) -> None:
        self._ctx = ctx
        self.function = function

    def create_accumulator(self) -> Stamped:
        return (self.function.create_accumulator(), self._ctx.now())

    def add(self, value: Any, accumulator: Stamped | None) -> Stamped:
        ctx = self._ctx
        now = ctx.now()
        current = ctx.unexpired(accumulator, now)
        if current is None:
            current = self.function.create_accumulator()
        added = self.function.add(value, current)
        if added is None:
            raise StateError(
                f"AggregateFunction.add of aggregating state {ctx.name!r} returned None; "
                "it must return the accumulator")
        return (added, now)

    def get_result(self, accumulator: Stamped) -> Any:
        return self.function.get_result(accumulator[0])

    def merge(self, left: Stamped, right: Stamped) -> Stamped | None:
        ctx = self._ctx
        now = ctx.now()
        a, b = ctx.unexpired(left, now), ctx.unexpired(right, now)
        if a is not None and b is not None:
            return (self.function.merge(a, b), now)
        if a is not None:
            return (a, now)
        return None if b is None else (b, now)


class TtlState(InternalKvState):
    """Base of the decorators: namespace, clear, snapshot and restore go to the original.

    ``original`` is the backend state holding ``TtlValue``s; ``descriptor`` the user's.
    ``snapshot_filter`` (set by the factory for full-snapshot cleanup) filters the
    entries :meth:`snapshot_entries` returns.
    """

    def __init__(self, original: Any, descriptor: StateDescriptor, ctx: TtlContext) -> None:
        self.original = original
        self.descriptor = descriptor
        self.namespace_serializer = original.namespace_serializer
        self.ctx = ctx
        self.snapshot_filter: Callable[[Iterable[StateEntry]], Iterator[StateEntry]] | None = None
        self._bind_descriptor()

    def __getattr__(self, name: str) -> Any:
        if name in _FORWARDED:
            return getattr(self.original, name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def set_current_namespace(self, namespace: Any) -> None:
        self.original.set_current_namespace(namespace)

    def get_current_namespace(self) -> Any:
        return self.original.get_current_namespace()

    def clear(self) -> None:
        self.ctx.accessed()
        self.original.clear()

    def snapshot_entries(self, key_group: int) -> Iterator[StateEntry]:
        """The original's entries of ``key_group`` (heap and single-key backends), without
        the expired ones when full-snapshot cleanup applies."""
        entries = self.original.snapshot_entries(key_group)
        return entries if self.snapshot_filter is None else self.snapshot_filter(entries)

    def load_entries(self, entries: Iterable[StateEntry]) -> None:
        self.original.load_entries(entries)

    def _checked(self, stored: Stamped, update: Callable[[Stamped], None],
                 clear: Callable[[], None]) -> Any:
        """The user value of a stored single value under the TTL rules (see the module)."""
        ctx = self.ctx
        now = ctx.now()
        if ctx.expires and stored[1] + ctx.ttl <= now:
            clear()
            return stored[0] if ctx.return_expired else None
        if ctx.update_on_read:
            update((stored[0], now))
        return stored[0]

    def _visible_elements(self, stored: list[Stamped], now: int,
                          replace: Callable[[list[Stamped]], None],
                          clear: Callable[[], None]) -> list[Any]:
        """Elements of a list (or sorted entry) a read returns; cleans up as Flink's list
        state does: all expired -> removed; ``OnReadAndWrite`` -> unexpired ones restamped."""
        ctx = self.ctx
        if not ctx.expires:
            if ctx.update_on_read:
                replace([(v[0], now) for v in stored])
            return [v[0] for v in stored]
        limit = now - ctx.ttl
        unexpired = [v for v in stored if v[1] > limit]
        shown = stored if ctx.return_expired else unexpired
        if not unexpired:
            clear()
        elif ctx.update_on_read:
            replace([(v[0], now) for v in unexpired])
        return [v[0] for v in shown]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.descriptor.name!r}, ttl={self.ctx.ttl} ms)"


class TtlValueState(TtlState, InternalValueState):
    """Value state with TTL."""

    def value(self) -> Any:
        ctx = self.ctx
        ctx.accessed()
        original = self.original
        stored = original.value()
        if stored is None:
            return None
        now = ctx.now()  # _checked inlined: the hot path
        if ctx.expires and stored[1] + ctx.ttl <= now:
            original.clear()
            return stored[0] if ctx.return_expired else None
        if ctx.update_on_read:
            original.update((stored[0], now))
        return stored[0]

    def update(self, value: Any) -> None:
        self.ctx.accessed()
        if value is None:
            self.original.clear()
        else:
            self.original.update((value, self.ctx.now()))


def _refuse_none(name: str, values: Iterable[Any]) -> list[Any]:
    items = list(values)
    if any(item is None for item in items):
        raise StateError(f"cannot add None to list state {name!r}")
    return items


class TtlListState(TtlState, InternalListState):
    """List state with TTL: each element expires on its own."""

    def get(self) -> list[Any]:
        self.ctx.accessed()
        original = self.original
        stored = original.get()
        if not stored:
            return []
        return self._visible_elements(list(stored), self.ctx.now(), original.update,
                                      original.clear)

    def add(self, value: Any) -> None:
        self.ctx.accessed()
        if value is None:
            raise StateError(f"cannot add None to list state {self.descriptor.name!r}")
        self.original.add((value, self.ctx.now()))

    def add_all(self, values: Iterable[Any] | None) -> None:
        self.ctx.accessed()
        if values is None:
            return
        items = _refuse_none(self.descriptor.name, values)
        if items:
            now = self.ctx.now()
            self.original.add_all([(v, now) for v in items])

    def update(self, values: Iterable[Any] | None) -> None:
        self.ctx.accessed()
        items = [] if values is None else _refuse_none(self.descriptor.name, values)
        now = self.ctx.now()
        self.original.update([(v, now) for v in items])

    def get_internal(self) -> list[Any] | None:
        return self.get() or None

    def update_internal(self, value: Any) -> None:
        self.update(value)

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        self.original.merge_namespaces(target, sources)

    def _merge_values(self, left: Any, right: Any) -> Any:
        return list(left) + list(right)


class TtlMapState(TtlState, InternalMapState):
    """Map state with TTL: each entry expires on its own."""

    def _wrapped(self, key: Any) -> Stamped | None:
        """The stored entry under the TTL rules (Flink's ``getWrapped``); None when absent
        or expired and not returned."""
        ctx = self.ctx
        ctx.accessed()
        original = self.original
        stored = original.get(key)
        if stored is None:
            return None
        now = ctx.now()
        if ctx.expires and stored[1] + ctx.ttl <= now:
            original.remove(key)
            return stored if ctx.return_expired else None
        if ctx.update_on_read:
            original.put(key, (stored[0], now))
        return stored

    def get(self, key: Any) -> Any:
        stored = self._wrapped(key)
        return None if stored is None else stored[0]

    def contains(self, key: Any) -> bool:
        return self._wrapped(key) is not None

    def put(self, key: Any, value: Any) -> None:
        self.ctx.accessed()
        self.original.put(key, (value, self.ctx.now()))

    def put_all(self, mapping: Any) -> None:
        self.ctx.accessed()
        pairs = mapping.items() if hasattr(mapping, "items") else mapping
        now = self.ctx.now()
        self.original.put_all([(k, (v, now)) for k, v in pairs])

    def remove(self, key: Any) -> None:
        self.ctx.accessed()
        self.original.remove(key)

    def _entries(self) -> Iterator[tuple[Any, Any]]:
        """Visible entries, lazily; expired ones are removed as they are passed."""
        ctx = self.ctx
        ctx.accessed()
        original = self.original
        now = ctx.now()
        expires, ttl = ctx.expires, ctx.ttl
        for key, stored in original.items():
            if expires and stored[1] + ttl <= now:
                original.remove(key)
                if ctx.return_expired:
                    yield key, stored[0]
                continue
            if ctx.update_on_read:
                original.put(key, (stored[0], now))
            yield key, stored[0]

    def items(self) -> Iterator[tuple[Any, Any]]:
        return self._entries()

    def keys(self) -> Iterator[Any]:
        return (key for key, _ in self._entries())

    def values(self) -> Iterator[Any]:
        return (value for _, value in self._entries())

    def is_empty(self) -> bool:
        ctx = self.ctx
        ctx.accessed()
        original = self.original
        if not ctx.expires or ctx.return_expired:
            return bool(original.is_empty())
        now = ctx.now()
        for key, stored in original.items():
            if stored[1] + ctx.ttl > now:
                return False
            original.remove(key)
        return True


class _TtlOneValueState(TtlState):
    """A reducing or aggregating state with TTL: its one stored value expires as one."""

    def get_internal(self) -> Any:
        self.ctx.accessed()
        original = self.original
        stored = original.get_internal()
        if stored is None:
            return None
        return self._checked(stored, original.update_internal, original.clear)

    def update_internal(self, value: Any) -> None:
        self.original.update_internal(None if value is None else (value, self.ctx.now()))

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        self.original.merge_namespaces(target, sources)


class TtlReducingState(_TtlOneValueState, InternalReducingState):
    """Reducing state with TTL (the reduced value expires as one)."""

    def get(self) -> Any:
        return self.get_internal()

    def add(self, value: Any) -> None:
        self.ctx.accessed()
        if value is None:
            self.original.clear()
        else:
            self.original.add((value, self.ctx.now()))

    def _merge_values(self, left: Any, right: Any) -> Any:
        return self._reduce(left, right)


class TtlAggregatingState(_TtlOneValueState, InternalAggregatingState):
    """Aggregating state with TTL (the accumulator expires as one)."""

    def get(self) -> Any:
        accumulator = self.get_internal()
        if accumulator is None:
            return None
        return self._agg_function.get_result(accumulator)

    def add(self, value: Any) -> None:
        self.ctx.accessed()
        if value is None:
            self.original.clear()
        else:
            self.original.add(value)

    def _merge_values(self, left: Any, right: Any) -> Any:
        return self._agg_function.merge(left, right)


class TtlSortedState(TtlState, InternalBinarySortedState):
    """Binary sorted state with TTL: each value under a sort key expires on its own, as a
    list state's elements do; a sort key whose values all expired is removed when read."""

    def _visible(self, key: Any, stored: list[Stamped], now: int) -> list[Any] | None:
        original = self.original
        values = self._visible_elements(
            stored, now, lambda kept: original.put(key, kept),
            lambda: original.clear_entry_at(key))
        return values or None

    def _visible_range(self, entries: Iterable[tuple[Any, list[Stamped]]]
                       ) -> list[tuple[Any, list[Any]]]:
        ctx = self.ctx
        ctx.accessed()
        now = ctx.now()
        found = []
        for key, stored in list(entries):  # read first: cleanup writes to the same state
            values = self._visible(key, stored, now)
            if values:
                found.append((key, values))
        return found

    def values_at(self, key: Any) -> list[Any] | None:
        self.ctx.accessed()
        stored = self.original.values_at(key)
        if not stored:
            return None
        return self._visible(key, stored, self.ctx.now())

    def add(self, key: Any, value: Any) -> None:
        self.ctx.accessed()
        self.original.add(key, (value, self.ctx.now()))

    def put(self, key: Any, values: Iterable[Any]) -> None:
        self.ctx.accessed()
        now = self.ctx.now()
        self.original.put(key, [(v, now) for v in values])

    def clear_entry_at(self, key: Any) -> None:
        self.ctx.accessed()
        self.original.clear_entry_at(key)

    def _edge(self, find: Callable[[Any], tuple[Any, list[Stamped]] | None], bound: Any
              ) -> tuple[Any, list[Any]] | None:
        """The first (or last) sort key with a visible value; expired keys met on the way
        are removed, so each step moves on."""
        ctx = self.ctx
        ctx.accessed()
        now = ctx.now()
        while True:
            entry = find(bound)
            if entry is None:
                return None
            key, stored = entry
            values = self._visible(key, stored, now)
            if values:
                return key, values

    def first_entry(self, from_key: Any = None) -> tuple[Any, list[Any]] | None:
        return self._edge(self.original.first_entry, from_key)

    def last_entry(self, to_key: Any = None) -> tuple[Any, list[Any]] | None:
        return self._edge(self.original.last_entry, to_key)

    def read_range(self, from_key: Any, to_key: Any, inclusive_to_key: bool
                   ) -> list[tuple[Any, list[Any]]]:
        return self._visible_range(self.original.read_range(from_key, to_key, inclusive_to_key))

    def read_range_until(self, to_key: Any, inclusive_to_key: bool
                         ) -> list[tuple[Any, list[Any]]]:
        return self._visible_range(self.original.read_range_until(to_key, inclusive_to_key))

    def read_range_from(self, from_key: Any) -> list[tuple[Any, list[Any]]]:
        return self._visible_range(self.original.read_range_from(from_key))

    def clear_range(self, from_key: Any, to_key: Any, inclusive_to_key: bool) -> None:
        self.ctx.accessed()
        self.original.clear_range(from_key, to_key, inclusive_to_key)

    def clear_range_until(self, to_key: Any, inclusive_to_key: bool) -> None:
        self.ctx.accessed()
        self.original.clear_range_until(to_key, inclusive_to_key)

    def clear_range_from(self, from_key: Any) -> None:
        self.ctx.accessed()
        self.original.clear_range_from(from_key)
