"""Helpers for bulk work: build millions of small objects without the cyclic GC running,
and number millions of values by their distinct ones with C-level maps.

Snapshotting or restoring a key group allocates millions of tuples (entries, timers)
that hold no cycles; every few hundred allocations the cyclic collector would run, and
the full collections it triggers traverse everything alive, about doubling the cost.
"""

from __future__ import annotations

import gc
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["numbered", "paused_gc"]

_V = TypeVar("_V", bound=Hashable)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block (re-enabled after, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def numbered(values: Sequence[_V]) -> tuple[list[_V], Iterator[int]]:
    """Number ``values`` by their distinct ones, in C-level maps (no Python loop per value).

    Args:
        values: hashable values; equal ones share a number.

    Returns:
        The distinct values in first-seen order, and each value's index among them (an
        iterator, in the order of ``values``).
    """
    distinct = dict.fromkeys(values)
    ids: dict[_V, int] = dict(zip(distinct, range(len(distinct))))
    return list(ids), map(ids.__getitem__, values)
