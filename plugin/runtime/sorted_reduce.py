"""BATCH's reduce over sorted input without a keyed operator: each key's run of records folded
into one output at its end (the function needs no runtime context: :func:`folds_without_context`),
over decoded records or straight over a typed key field's column runs."""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Optional

import pyarrow as pa

from ..operators.base import Output
from ..operators.functions import per_record_call
from ..state_store.row import take_emitted
from .encoding import Encoding

__all__ = ["folds_without_context", "key_column", "keys_from_field", "repeated", "sorted_reduce",
           "sorted_reduce_by_field"]


def folds_without_context(function: Any) -> bool:
    """Whether BATCH may run ``function`` as a plain fold outside a keyed operator (a sorted
    reduce, the pre-aggregation before the shuffle): it has no ``open`` or ``close`` of its
    own, so it uses no runtime context or keyed state and has no lifecycle to honour. Any
    other function runs only in the keyed operator, which opens it once before its first
    record and closes it after its last, as Flink does (Flink's keyed reduce has no
    pre-aggregation).

    Args:
        function: The reduce function (or its Row-shaping wrapper, which has an ``open``
            and ``close`` of its own exactly when the wrapped function has).

    Returns:
        True when it is a plain fold.
    """
    from ..state_store.functions import Function

    kind = type(function)
    return (getattr(kind, "open", Function.open) is Function.open
            and getattr(kind, "close", Function.close) is Function.close)


def repeated(items: list[Any], counts: list[int]) -> list[Any]:
    """``items`` with each item repeated its count times, in order."""
    return list(itertools.chain.from_iterable(map(itertools.repeat, items, counts)))


def sorted_reduce(function: Any, rows: Iterator[tuple[Any, ...]], name: str) -> Iterator[Output]:
    """FLIP-140 sorted reduce without per-record state access: one fold per run of equal keys,
    the final value emitted at the end of the key (timestamp MAX_WATERMARK, as ReduceOperator)."""
    from ..operators.base import MAX_WATERMARK, user_function_error

    reduce = per_record_call(function.reduce)
    current: Any = _NO_KEY
    acc: Any = None
    for key, _ts, value, _side in rows:
        if key != current:
            if current is not _NO_KEY:
                yield Output(None, take_emitted(acc), MAX_WATERMARK)
            current, acc = key, value
            continue
        try:
            acc = reduce(acc, value)
        except Exception as exc:  # noqa: BLE001
            raise user_function_error(name, "reduce", value, exc) from exc
    if current is not _NO_KEY:
        yield Output(None, take_emitted(acc), MAX_WATERMARK)


_NO_KEY = object()
#: a field of a decoded typed record (a tuple or a Row) without a Row's Python __getitem__
_ITEM = tuple.__getitem__


def key_column(enc: Encoding, index: int) -> Optional[str]:
    """The Arrow column holding key field ``index`` of a typed tuple/row encoding."""
    if not enc.typed or enc.shape == "scalar" or index >= len(enc.columns):
        return None
    return enc.columns[index]


def _run_starts(column: pa.Array) -> Optional[list[int]]:
    """Start offsets of the runs of equal values in a sorted key column (C speed), or None
    when the column has nulls or floats (Python's ``==`` decides those: None == None, and
    the per-record loop keeps that exact behaviour)."""
    import pyarrow.compute as pc

    if column.null_count or pa.types.is_floating(column.type):
        return None
    n = len(column)
    if n < 2:
        return [0]
    changed = pc.not_equal(column.slice(1), column.slice(0, n - 1))
    return [0] + [i + 1 for i in pc.indices_nonzero(changed).to_pylist()]


def sorted_reduce_by_field(function: Any, batches: Iterator[pa.RecordBatch], decode: Any,
                            index: int, name: str, column: Optional[str] = None,
                            counts: Optional[str] = None) -> Iterator[Output]:
    """``sorted_reduce`` for input sorted by one key field: runs of equal key values are
    folded straight from the decoded batches (no key bytes are needed: a reduce has no state
    to address). With the key's Arrow ``column``, run boundaries are found vectorised and
    each run is one ``functools.reduce`` over the user's function (still one Python call per
    element, in arrival order). With ``counts`` (a column of numbers of identical records,
    ``KeyedSpec.counted``) a row is folded in that many times, decoded once."""
    from functools import reduce as fold

    from ..operators.base import MAX_WATERMARK, user_function_error

    reduce = per_record_call(function.reduce)
    current: Any = _NO_KEY
    acc: Any = None
    out: list[Output] = []
    for b in batches:
        n = b.num_rows
        if n == 0:
            continue
        values = decode(b)
        starts = _run_starts(b.column(column)) if column is not None else None
        if counts is not None and not _all_ones(b.column(counts)):
            counted = b.column(counts).to_pylist()
            if starts is not None:  # the runs' rows, each repeated: runs start further on
                upto = list(itertools.accumulate(counted))
                starts = [0] + [upto[s - 1] for s in starts[1:]]
            values = repeated(values, counted)
            n = len(values)
        if starts is None:  # per record
            for value, k in zip(values, map(_ITEM, values, itertools.repeat(index))):
                if k == current and type(k) is type(current):
                    try:
                        acc = reduce(acc, value)
                    except Exception as exc:
                        raise user_function_error(name, "reduce", value, exc) from exc
                else:
                    if current is not _NO_KEY:
                        out.append(Output(None, take_emitted(acc), MAX_WATERMARK))
                    current, acc = k, value
        else:
            ends = starts[1:] + [n]
            for s, e in zip(starts, ends):
                k = _ITEM(values[s], index)
                if k == current and type(k) is type(current):  # the run goes on from before
                    acc = _fold_run(reduce, fold, acc, values, s, e, name)
                    continue
                if current is not _NO_KEY:
                    out.append(Output(None, take_emitted(acc), MAX_WATERMARK))
                current = k
                acc = _fold_run(reduce, fold, values[s], values, s + 1, e, name)
        if out:
            yield from out
            out.clear()
    if current is not _NO_KEY:
        yield Output(None, take_emitted(acc), MAX_WATERMARK)


def _all_ones(column: pa.Array) -> bool:
    """Whether a count column says every row is one record (no identical records)."""
    import pyarrow.compute as pc

    return column.null_count == 0 and pc.max(column).as_py() in (None, 1)


def _fold_run(reduce: Any, fold: Any, acc: Any, values: list[Any], start: int, end: int,
              name: str) -> Any:
    """``acc`` reduced with ``values[start:end]`` in order; a failure names the element."""
    if start >= end:
        return acc
    try:
        return fold(reduce, values[start:end] if end - start > 1 else (values[start],), acc)
    except Exception as first:  # replay the run one element at a time to name the element
        from ..operators.base import user_function_error

        for value in values[start:end]:
            try:
                acc = reduce(acc, value)
            except Exception as exc:
                raise user_function_error(name, "reduce", value, exc) from exc
        raise user_function_error(name, "reduce", values[end - 1], first) from first


def keys_from_field(values: list[Any], ts: list[Any], sides: Iterable[Any], index: int,
                     serialize: Callable[[Any], bytes]) -> Iterator[tuple[Any, ...]]:
    """(key bytes, ts, value, side) for records keyed by their field ``index``: each distinct
    key of the batch is serialized once and the rows are zipped in C. The field is one
    typed column (strings or integers), so keys that are equal are the same key."""
    # the tuple's own item lookup, in C: records may be Rows, whose [] is a Python method
    keys = list(map(_ITEM, values, itertools.repeat(index)))
    key_bytes = dict.fromkeys(keys)
    for key in key_bytes:
        key_bytes[key] = serialize(key)
    return zip(map(key_bytes.__getitem__, keys), ts, values, sides)
