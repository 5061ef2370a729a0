"""A rolling reduce that only sums fields, computed over columns (no per-record Python).

``keyed.reduce(lambda a, b: (a[0], a[1] + b[1]))`` and ``keyed.sum(1)`` are rolling
reductions whose every field either keeps the first value of the key (its running value's,
or the first record's: ``first``) or adds up (``sum``). Over one STREAMING micro-batch of a
key group, the result after each record is then a per-key cumulative sum offset by the
key's running value, which numpy computes at C speed. The results are those of the Python
fold (:func:`~.lean_reduce.fold_in_order`) exactly, as long as no sum leaves the integer
range of its type: :func:`sums_fit` is the check that decides, before anything is computed,
whether this path may be taken (else the caller runs the Python fold, which reports an
overflow as the type's error).

Keys are given as ``codes`` (``0..keys-1`` in any order; equal keys, equal codes) and the
records in processing order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import numpy as np

__all__ = ["FIELD_KINDS", "first_positions", "sums_fit", "rolling_fields"]

#: What a field of the running value does: keep the first value, or add up.
FIELD_KINDS = ("first", "sum")


def first_positions(codes: np.ndarray, keys: int) -> np.ndarray:
    """The position of each key's first record (``-1`` for a key without records)."""
    first = np.full(keys, -1, dtype=np.int64)
    # assignment through repeated indexes keeps the last write: write in reverse order
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1, dtype=np.int64)
    return first


def sums_fit(column: np.ndarray, running: np.ndarray, limit: int) -> bool:
    """Whether every running sum of ``column`` (records) started from ``running`` (one
    value per key) stays within ``[-limit, limit]``: a conservative bound (the sum of all
    magnitudes plus the largest running one, in float64 with a margin for its rounding)."""
    magnitude = float(np.abs(column.astype(np.float64)).sum())
    if len(running):
        magnitude += float(np.abs(running.astype(np.float64)).max())
    return magnitude * (1 + 1e-6) + 1 <= limit


def rolling_fields(codes: np.ndarray, kinds: Sequence[str], columns: Sequence[np.ndarray],
                   running: Sequence[np.ndarray], restored: np.ndarray
                   ) -> tuple[list[Optional[np.ndarray]], list[np.ndarray]]:
    """Each record's result and each key's final value, field by field.

    ``codes``: each record's key; ``columns[i]``: field ``i`` of every record;
    ``running[i]``: field ``i`` of each key's running value (read where ``restored`` is
    true; a key without one starts from its first record, as the fold does). ``first``
    fields keep the running value's, else the first record's; ``sum`` fields add each
    record's value to the running sum (integer columns, checked by :func:`sums_fit`).
    Returns ``(results, finals)``: per field, an array over the records (None for a
    ``first`` field: its result for a record is its key's final value, ``final[codes]``)
    and one over the keys (in code order).
    """
    keys = len(restored)
    n = len(codes)
    first = first_positions(codes, keys)
    has_first = first >= 0
    # each key's records together, in order (a radix sort for up to 65536 keys)
    order = np.argsort(codes.astype(np.uint16) if keys <= 1 << 16 else codes, kind="stable")
    sorted_codes = codes[order]
    ends = np.flatnonzero(np.diff(sorted_codes)) if n else np.empty(0, dtype=np.int64)
    last = np.append(ends, n - 1) if n else ends  # position (in order) of each key's last
    last_codes = sorted_codes[last]
    results: list[Optional[np.ndarray]] = []
    finals: list[np.ndarray] = []
    for kind, column, start in zip(kinds, columns, running):
        if kind == "first":
            value = np.empty(keys, dtype=column.dtype)
            value[has_first] = column[first[has_first]]
            value[restored] = start[restored]
            results.append(None)
            finals.append(value)
            continue
        values = column.astype(np.int64)[order]
        totals = np.cumsum(values)
        # each key's sums: the running total minus the total before its first record
        before = np.zeros(keys, dtype=np.int64)
        before[sorted_codes[ends + 1]] = totals[ends]
        final = np.where(restored, start.astype(np.int64), 0)  # each key's starting sum
        in_order = totals + (final - before)[sorted_codes]
        result = np.empty(n, dtype=np.int64)
        result[order] = in_order
        final[last_codes] = in_order[last]
        results.append(result)
        finals.append(final)
    return results, finals
