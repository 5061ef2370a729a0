"""The lean rolling reduce of a STREAMING key group, in columns (no backend, no operator).

:class:`~.keygroup.KeyGroupRuntime` takes this path for a plain ``reduce`` on the heap
backend: one call folds a micro-batch's elements into the running value of their key in
arrival order, every intermediate result is an output, and the key group's state is the
``_reduce`` value state of every key in the unified entry layout. Everything here is per
element or per distinct key, so it stays in plain lists and dicts:

* :func:`fold_in_order` - the fold, keyed by whatever identifies a key in the call (its
  bytes, or its typed value when the reader has the distinct keys' bytes apart);
* :func:`reduce_entries` - the state entries after the fold: restored entries of
  untouched keys as they came, each touched key's latest value (a None result clears the
  key), in canonical order, sorted with C-level keys only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any, Optional

from ..state_store.errors import DataStreamError
from ..state_store.keygroups import assign_key_group
from ..state_store.namespaces import VOID_NAMESPACE, VOID_NAMESPACE_SERIALIZER
from ..state_store.serializers import PickleSerializer
from .base import user_function_error
from .keyed import REDUCE_STATE_NAME

__all__ = ["VOID_NS", "fold_in_order", "reduce_entries"]

#: Namespace bytes of keyed state without a namespace.
VOID_NS = VOID_NAMESPACE_SERIALIZER.serialize(VOID_NAMESPACE)
_KEY_GROUP = itemgetter(0)


def fold_in_order(reduce: Callable[[Any, Any], Any], name: str, keys: list[Any],
                  elements: list[Any], running: dict[Any, Any]) -> list[Any]:
    """Fold ``elements`` (in order) into ``running`` (key -> running value, updated in
    place); the result after each element. A key without a running value (or whose value
    a None result cleared) starts from the element itself."""
    get = running.get
    results: list[Any] = []
    append = results.append
    for key, value in zip(keys, elements):
        current = get(key)
        if current is None:
            reduced = value
        else:
            try:
                reduced = reduce(current, value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(name, "reduce", value, exc) from exc
        running[key] = reduced
        append(reduced)
    return results


def reduce_entries(running: dict[Any, Any], key_bytes: Optional[Mapping[Any, bytes]],
                   restored: dict[bytes, tuple[Any, ...]], max_parallelism: int
                   ) -> list[tuple[Any, ...]]:
    """The ``_reduce`` entries of a key group after :func:`fold_in_order`.

    ``running`` maps each key the call touched to its latest value; ``key_bytes`` gives a
    key's bytes (None: the keys are their bytes); ``restored`` maps key bytes to the
    entries the call started from. Canonical order (the encoded entry key's) is, for one
    state name and the void namespace, ``(key group, key length, key bytes)``.
    """
    serialize = PickleSerializer.INSTANCE.serialize
    entries = dict(restored)
    for key, value in running.items():
        kb = key if key_bytes is None else key_bytes[key]
        if value is None:  # a None result clears the key's state
            entries.pop(kb, None)
            continue
        old = restored.get(kb)
        group = old[0] if old is not None else assign_key_group(kb, max_parallelism)
        entries[kb] = (group, REDUCE_STATE_NAME, kb, VOID_NS, b"", serialize(value))
    order = sorted(entries)
    order.sort(key=len)  # stable: by length, then bytes
    if len(set(map(_KEY_GROUP, entries.values()))) > 1:
        order.sort(key=lambda kb: entries[kb][0])
    return list(map(entries.__getitem__, order))
