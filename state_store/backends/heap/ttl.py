"""The heap backend's background TTL cleanup: incremental, over the keys of each state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from ...descriptors import StateDescriptor
from ...entries import StateKind
from ...serializers import TtlValue
from ...ttl import CleanupPass
from ...ttl_states import TtlContext

__all__ = ["HeapCleanup", "heap_ttl_cleanup"]


def heap_ttl_cleanup(backend: Any, original: Any, descriptor: StateDescriptor, ctx: TtlContext,
                     strategies: Any) -> None:
    """Install the incremental cleanup of one TTL state (``cleanup_incrementally``, or the
    default with background cleanup on); a ``TtlCleanup`` (:mod:`...ttl`).

    Args:
        backend: the heap backend.
        original: the wrapped plain state (``container_keys``/``prune_container``).
        descriptor: the state's descriptor.
        ctx: the state's TTL context.
        strategies: the descriptor's cleanup strategies.
    """
    incremental = strategies.get_incremental_cleanup_strategy()
    if incremental is None:
        return
    step = HeapCleanup(original, descriptor.kind, ctx, incremental.get_cleanup_size()).step
    ctx.accessed = step
    if incremental.run_cleanup_for_every_record():
        backend.call_after_set_key(step)


class HeapCleanup:
    """A cursor over the keys (key, namespace) of one heap state: each step checks the next
    ``size`` of them and drops their expired values; a new pass lists the keys again. After a
    pass, steps idle until a value can have expired (see :class:`~...ttl.CleanupPass`)."""

    def __init__(self, original: Any, kind: StateKind, ctx: TtlContext, size: int) -> None:
        self._original = original
        self._ctx = ctx
        self._size = size
        self._pending: list[tuple[int, bytes, Any]] = []
        self._prune = _PRUNERS[kind]
        self._pass = CleanupPass()
        self._running = False

    def step(self) -> None:
        current, ctx = self._pass, self._ctx
        now = ctx.now()
        if current.idle(now):
            return
        if self._running:  # a prune writing through the state must not recurse
            return
        self._running = True
        try:
            original = self._original
            pending = self._pending
            prune, saw = self._prune, current.saw

            def check(container: Any) -> Any:
                kept, expiry = prune(container, ctx, now)
                saw(expiry)
                return kept

            for _ in range(self._size):
                if not pending:
                    if current.start is not None:  # a pass is complete
                        if now < current.end(ctx.ttl):
                            return
                    current.begin(now)
                    pending.extend(reversed(original.container_keys()))
                    if not pending:
                        return
                key_group, key_bytes, namespace = pending.pop()
                original.prune_container(key_group, key_bytes, namespace, check)
        finally:
            self._running = False


def _prune_value(container: TtlValue, ctx: TtlContext, now: int) -> tuple[Any, Optional[int]]:
    if ctx.is_expired(container, now):
        return None, None
    return container, container[1] + ctx.ttl


def _prune_list(container: list[TtlValue], ctx: TtlContext,
                now: int) -> tuple[Any, Optional[int]]:
    kept = [v for v in container if not ctx.is_expired(v, now)]
    earliest = min((v[1] for v in kept), default=None)
    expiry = None if earliest is None else earliest + ctx.ttl
    return (container if len(kept) == len(container) else (kept or None)), expiry


def _prune_map(container: dict[Any, TtlValue], ctx: TtlContext,
               now: int) -> tuple[Any, Optional[int]]:
    expired = [k for k, v in container.items() if ctx.is_expired(v, now)]
    for key in expired:
        del container[key]
    earliest = min((v[1] for v in container.values()), default=None)
    return (container or None), (None if earliest is None else earliest + ctx.ttl)


def _prune_sorted(container: Any, ctx: TtlContext, now: int) -> tuple[Any, Optional[int]]:
    earliest: Optional[int] = None
    for lex in list(container):
        slot = container[lex]
        kept = [v for v in slot[1] if not ctx.is_expired(v, now)]
        if not kept:
            del container[lex]
            continue
        if len(kept) != len(slot[1]):
            slot[1] = kept
        first = min(v[1] for v in kept)
        earliest = first if earliest is None else min(earliest, first)
    return (container or None), (None if earliest is None else earliest + ctx.ttl)


_PRUNERS: dict[StateKind, Callable[[Any, TtlContext, int], tuple[Any, Optional[int]]]] = {
    StateKind.VALUE: _prune_value,
    StateKind.REDUCING: _prune_value,
    StateKind.AGGREGATING: _prune_value,
    StateKind.LIST: _prune_list,
    StateKind.MAP: _prune_map,
    StateKind.SORTED: _prune_sorted,
}
