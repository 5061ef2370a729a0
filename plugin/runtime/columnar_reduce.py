"""A STREAMING rolling reduce that only sums fields, run on a key group's columns.

When the planner proves (by tracing the reduce function, or from a built-in ``sum``) that
every field of the running value either keeps its first value or adds up
(:class:`FieldReduce`), one call of the ``applyInPandasWithState`` function reads the typed
columns Spark hands over, puts the records in processing order as :func:`group_rows` does,
and computes every intermediate result with numpy (``operators/field_reduce.py``) instead
of calling the function once per record. Outputs (every intermediate result, with its
record's timestamp, in processing order) and state (the lean reduce's ``_reduce`` entries)
are those of the Python fold.

:func:`run_field_reduce` returns None, having changed nothing, whenever it cannot vouch
for that: nulls in the input, a state it does not read, a running value of another shape,
sums that could leave their type's range. The call then takes the Python path, which
reports any error as it always has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..operators.field_reduce import FIELD_KINDS, rolling_fields, sums_fit
from ..operators.keygroup import KeyGroupRuntime
from ..state_store.serializers import PickleSerializer
from .emit_order import arrival_keys, output_order
from .encoding import TS, Encoding
from .group_frames import (
    TypedInput,
    output_frame,
    output_schema,
    processing_order,
    serialized_keys,
)

__all__ = ["FieldReduce", "INTEGER_LIMITS", "FIRST_TYPES", "run_field_reduce"]

#: The largest magnitude a sum of each integer type may reach on this path.
INTEGER_LIMITS = {"LONG": 2**63 - 1, "INT": 2**31 - 1, "SHORT": 2**15 - 1, "BYTE": 2**7 - 1}
#: Types a ``first`` field may have: pandas hands them over exactly, and they compare (as
#: keys) and pickle as the Python values do.
FIRST_TYPES = ("STRING", "BOOLEAN") + tuple(INTEGER_LIMITS)
_PY_TYPES: dict[str, Any] = {"STRING": str, "BOOLEAN": bool, **{t: int for t in INTEGER_LIMITS}}


@dataclass(frozen=True)
class FieldReduce:
    """What each field of a reduce's running value does (``FIELD_KINDS``), planned on the
    driver for a typed input of ``types`` (type names) and pickled to the executors."""

    kinds: tuple[str, ...]
    types: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.kinds) != len(self.types) or set(self.kinds) - set(FIELD_KINDS):
            raise ValueError(f"not a field reduce: {self.kinds!r} over {self.types!r}")
        for kind, t in zip(self.kinds, self.types):
            if t not in (INTEGER_LIMITS if kind == "sum" else FIRST_TYPES):
                raise ValueError(f"a {kind} field of type {t} is not supported")


def run_field_reduce(plan: FieldReduce, typed: TypedInput, out_enc: Encoding, frames: list[Any],
                     state: Optional[bytes], key_group: int, key_serializer: Any,
                     runtime: KeyGroupRuntime, direct: bool = False, ordered: bool = False
                     ) -> Optional[tuple[Optional[bytes], Any]]:
    """One call of a field reduce over the key group's non-empty ``frames``, started from
    ``state``: ``(new state bytes or None, output frame)`` (``direct``: as arrays,
    ``group_frames.output_frame``; ``ordered``: with the order columns, emit_order.py), or
    None to take the Python path (nothing done)."""
    if not runtime.lean_reduce:
        return None
    restored = runtime.lean_restored(state)
    if restored is None:
        return None
    columns = _columns(frames, typed)
    if columns is None:
        return None
    stamps, nulls = _stamps(frames)
    import pandas as pd

    codes, uniques = pd.factorize(columns[typed.key_index], sort=False)
    if len(codes) and codes.min() < 0:  # a null key
        return None
    order = processing_order(frames, codes, stamps)
    if order is not None:
        codes, stamps = codes[order], stamps[order]
        columns = [c[order] for c in columns]
        nulls = None if nulls is None else nulls[order]
    keys = uniques.tolist()
    key_bytes = serialized_keys(keys, key_serializer,
                                (key_group, runtime.config.max_parallelism))
    start = _running(plan, key_bytes, restored, columns)
    if start is None:
        return None
    running, was_restored = start
    for kind, t, column, begin in zip(plan.kinds, plan.types, columns, running):
        if kind == "sum" and not sums_fit(column, begin[was_restored], INTEGER_LIMITS[t]):
            return None
    results, finals = rolling_fields(codes, plan.kinds, columns, running, was_restored)
    # the state: each key's final value, keyed by its bytes
    values = list(zip(*[f.tolist() for f in finals]))
    new_state, _ = runtime.lean_state(key_bytes, values, restored, key_group)
    schema = output_schema(out_enc, False, ordered)
    ts = (pa.nulls(len(stamps), pa.int64()) if nulls is not None and nulls.all()
          else pa.array(stamps, type=pa.int64(), mask=nulls))
    arrays = [ts]
    indices: Optional[pa.Array] = None
    for result, final, field in zip(results, finals, list(schema)[1:]):
        if result is None:  # a first field: each key's value, taken per record (in C)
            indices = pa.array(codes) if indices is None else indices
            arrays.append(pa.array(final, type=field.type).take(indices))
        else:
            arrays.append(pa.array(result, type=field.type))
    if ordered:  # one output per element, in processing order
        emitted = output_order(arrival_keys(frames, order), None, len(stamps))
        arrays.extend([pa.array(emitted[0], pa.int64()), pa.array(emitted[1], pa.int64())])
    return new_state, output_frame(pa.RecordBatch.from_arrays(arrays, schema=schema), direct)


def _columns(frames: list[Any], typed: TypedInput) -> Optional[list[np.ndarray]]:
    """The payload columns over all frames; None when any value is null (the key column's
    nulls show in its factorized codes)."""
    for i in typed.null_flags:
        if any(bool(p[TypedInput.flag(i)].any()) for p in frames):
            return None
    columns = []
    for index, name in enumerate(typed.enc.columns):
        parts = [p[name].to_numpy() for p in frames]
        column = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if column.dtype == object and index != typed.key_index:
            import pandas as pd

            if bool(pd.isna(column).any()):
                return None
        columns.append(column)
    return columns


def _stamps(frames: list[Any]) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Each record's timestamp (int64) and which are null (None: none is)."""
    parts = [p[TS].to_numpy() for p in frames]
    ts = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if ts.dtype.kind != "f":  # Spark hands a bigint column with nulls over as float64
        return ts.astype(np.int64, copy=False), None
    nulls = np.isnan(ts)
    return np.where(nulls, 0, ts).astype(np.int64), (nulls if nulls.any() else None)


def _running(plan: FieldReduce, key_bytes: list[bytes], restored: dict[bytes, tuple[Any, ...]],
             columns: list[np.ndarray]) -> Optional[tuple[list[np.ndarray], np.ndarray]]:
    """Per field, each key's restored running value (as arrays), and which keys have one;
    None when a restored value is not a tuple of the planned fields and types."""
    keys = len(key_bytes)
    was_restored = np.zeros(keys, dtype=bool)
    running = [np.zeros(keys, dtype=np.int64) if kind == "sum"
               else np.empty(keys, dtype=column.dtype)
               for kind, column in zip(plan.kinds, columns)]
    if not restored:
        return running, was_restored
    deserialize = PickleSerializer.INSTANCE.deserialize
    width = len(plan.kinds)
    for j, kb in enumerate(key_bytes):
        entry = restored.get(kb)
        if entry is None:
            continue
        try:
            value: Any = deserialize(entry[5])
        except Exception:  # noqa: BLE001 - the Python path reports it
            return None
        if type(value) is not tuple or len(value) != width:
            return None
        for field, t in enumerate(plan.types):
            if not _holds(t, value[field]):
                return None
            running[field][j] = value[field]
        was_restored[j] = True
    return running, was_restored


def _holds(type_name: str, value: Any) -> bool:
    """Whether ``value`` is exactly what a field of ``type_name`` holds on this path."""
    if type(value) is not _PY_TYPES[type_name]:
        return False
    limit = INTEGER_LIMITS.get(type_name)
    return limit is None or -limit <= value <= limit
