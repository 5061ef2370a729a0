"""The lean rolling reduce of a STREAMING key group, in columns (no backend, no operator).

:class:`~.keygroup.KeyGroupRuntime` takes this path for a plain ``reduce`` on the heap
backend: one call folds a micro-batch's elements into the running value of their key in
arrival order, every intermediate result is an output, and the key group's state is the
``_reduce`` value state of every key in the unified entry layout. Everything here is per
element or per distinct key, so it stays in plain lists and dicts:

* :func:`fold_in_order` - the fold, keyed by whatever identifies a key in the call (its
  bytes, or its typed value when the reader has the distinct keys' bytes apart);
* :func:`keyed_entries` - the state entries after the fold, given each touched key's
  bytes and latest value: restored entries of untouched keys as they came, each touched
  key's latest value (a None result clears the key), in canonical order, sorted with
  C-level keys only.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from itertools import repeat
from operator import itemgetter
from typing import Any, Optional

from ..state_store.exceptions import DataStreamError
from ..state_store.keygroups import assign_key_group
from ..state_store.namespaces import VOID_NAMESPACE, VOID_NAMESPACE_SERIALIZER
from ..state_store.serializers import PickleSerializer
from .base import user_function_error
from .keyed import REDUCE_STATE_NAME

__all__ = ["VOID_NS", "fold_in_order", "keyed_entries"]

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


def keyed_entries(kbs: list[bytes], values: list[Any], restored: dict[bytes, tuple[Any, ...]],
                  max_parallelism: int, key_group: Optional[int] = None) -> list[tuple[Any, ...]]:
    """The ``_reduce`` entries of a key group whose touched keys (distinct ``kbs``, their
    bytes) now hold ``values`` (a None value clears its key), started from ``restored``
    (key bytes -> the entries the call started from; untouched ones are kept as they
    came). ``key_group``, when the caller has checked it, is the key group of every key
    (else each new key's is computed). Canonical order (the encoded entry key's) is, for
    one state name and the void namespace, ``(key group, key length, key bytes)``. Built
    with C-level maps and sorts: a call touches up to hundreds of thousands of keys.
    """
    cleared = [kb for kb, value in zip(kbs, values) if value is None]
    if cleared:  # a None result clears the key's state
        kept = [(kb, value) for kb, value in zip(kbs, values) if value is not None]
        kbs, values = [kb for kb, _ in kept], [value for _, value in kept]
    payloads = _pickled(values)
    if not restored and key_group is not None:  # one key group, nothing to merge
        payload_of = dict(zip(kbs, payloads))
        order = sorted(payload_of)
        order.sort(key=len)  # stable: by length, then bytes
        return list(zip(repeat(key_group), repeat(REDUCE_STATE_NAME), order, repeat(VOID_NS),
                        repeat(b""), map(payload_of.__getitem__, order)))
    if key_group is not None:
        groups: Any = repeat(key_group)
    else:
        groups = [restored[kb][0] if kb in restored else assign_key_group(kb, max_parallelism)
                  for kb in kbs]
    entries = dict(restored)
    for kb in cleared:
        entries.pop(kb, None)
    entries.update(zip(kbs, zip(groups, repeat(REDUCE_STATE_NAME), kbs, repeat(VOID_NS),
                                repeat(b""), payloads)))
    order = sorted(entries)
    order.sort(key=len)  # stable: by length, then bytes
    if len(set(map(_KEY_GROUP, entries.values()))) > 1:
        order.sort(key=lambda kb: entries[kb][0])
    return list(map(entries.__getitem__, order))


def _pickled(values: list[Any]) -> list[bytes]:
    """``PickleSerializer`` bytes of each value; its error (naming the value) on failure."""
    try:
        return list(map(pickle.dumps, values, repeat(PickleSerializer.PROTOCOL)))
    except Exception:
        serialize = PickleSerializer.INSTANCE.serialize
        return list(map(serialize, values))  # raises the serializer's error for the bad one
