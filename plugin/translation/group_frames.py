"""Data in and out of the STREAMING ``applyInPandasWithState`` function, without waste.

One call of the function handles one key group of one micro-batch (tens of
thousands of rows), so per-row pandas work dominates it unless avoided:

* in: :func:`group_rows` reads each input column once (``tolist()``) and orders
  the rows by ``_seq`` without concatenating frames. Records come pickled
  (``_v``) or, from a native keyed input, as typed columns - only where the
  Arrow -> pandas conversion Spark does is exact (:func:`typed_input_encoding`).
* out: :func:`output_blobs` writes the call's outputs as Arrow record batches
  (``[_tag,] _ts, payload``, the Arrow passes' layout and types) and hands them
  to Spark as Arrow IPC streams in a single ``_b`` binary column (one row per
  :data:`BLOB_ROWS` records); :func:`unpack_blobs`, a ``mapInArrow`` function
  right after the stateful operator, turns them back into rows. PySpark's own
  pandas output path pads its per-batch state column to the data length and
  concatenates it row by row; a handful of blob rows per call avoids that and
  keeps every Arrow type exact (no pandas round trip).
"""

from __future__ import annotations

import gc
import pickle
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat
from operator import itemgetter
from typing import Any, Optional

import pyarrow as pa

from ..operators.keygroup import KeyGroupColumns
from ..spark_types import is_spark_mappable, python_from_arrow, python_to_arrow
from ..state_store.errors import JobExecutionError
from ..state_store.row import Row
from .encoding import KEY, SIDE, TAG, TS, VALUE, Encoding, _fields_of, typed_encoding

__all__ = [
    "BLOB",
    "BLOB_ROWS",
    "pandas_exact",
    "typed_input_encoding",
    "typed_output_encoding",
    "output_schema",
    "group_rows",
    "output_blobs",
    "unpack_blobs",
    "gc_paused",
]

#: Name of the stateful operator's only output column (Arrow IPC streams).
BLOB = "_b"
#: At most this many records per blob (bounds one Spark row's size).
BLOB_ROWS = 1 << 16
SEQ = "_seq"

_ALWAYS_EXACT = ("STRING", "BOOLEAN")
_EXACT_WITHOUT_NULLS = ("LONG", "INT", "SHORT", "BYTE", "DOUBLE", "FLOAT")
_PICKLE = pickle.HIGHEST_PROTOCOL
_TAG_OF, _VALUE_OF, _TS_OF = itemgetter(0), itemgetter(1), itemgetter(2)


def pandas_exact(type_name: str, nullable: bool) -> bool:
    """True when a Spark column of this basic type comes back from pandas unchanged
    (nullable integers become float64 with NaN, nullable floats merge NaN and null)."""
    if type_name in _ALWAYS_EXACT:
        return True
    return type_name in _EXACT_WITHOUT_NULLS and not nullable


def typed_input_encoding(enc: Encoding, schema: Any) -> Optional[Encoding]:
    """``enc`` when the keyed function may read its typed columns of Spark ``schema``
    (a StructType) from pandas; None when the records must travel pickled."""
    if not enc.typed or enc.shape not in ("tuple", "row") or enc.type_info is None:
        return None
    nullable = {f.name: f.nullable for f in schema.fields}
    for column, t in zip(enc.columns, enc.type_info.get_field_types()):
        if column not in nullable or python_from_arrow(t) is not None:
            return None
        if not pandas_exact(t.type_name, nullable[column]):
            return None
    return enc


def typed_output_encoding(type_info: Any) -> Optional[Encoding]:
    """The typed encoding of a keyed operator's declared ``output_type`` (None: pickled)."""
    if type_info is None or not is_spark_mappable(type_info):
        return None
    return typed_encoding(type_info)


def output_schema(enc: Optional[Encoding], tagged: bool) -> pa.Schema:
    """Arrow schema of the blobs: ``[_tag string,] _ts int64, payload``."""
    fields = [pa.field(TAG, pa.string())] if tagged else []
    fields.append(pa.field(TS, pa.int64()))
    if enc is None:
        fields.append(pa.field(VALUE, pa.binary()))
    else:
        fields.extend(enc.arrow_fields())
    return pa.schema(fields)


# -- in ------------------------------------------------------------------------------------
def _timestamps(pdf: Any) -> list[Any]:
    """``_ts`` as ints / None (Spark hands a bigint column with nulls over as float64)."""
    column = pdf[TS]
    if column.isna().all():
        return [None] * len(column)
    return [None if t is None or t != t else int(t) for t in column.tolist()]


def _values(pdf: Any, enc: Optional[Encoding]) -> list[Any]:
    if enc is None:
        loads = pickle.loads
        return [loads(v) for v in pdf[VALUE].tolist()]
    columns = [pdf[c].tolist() for c in enc.columns]
    if enc.shape == "row":
        names = enc.columns
        return [Row(**dict(zip(names, vals))) for vals in zip(*columns)]
    return list(zip(*columns))


def group_rows(frames: list[Any], enc: Optional[Encoding], sided: bool) -> KeyGroupColumns:
    """``(key bytes, timestamp, record, input side)`` rows of one key group's frames, in
    ``_seq`` order (arrival order inside each upstream partition)."""
    import numpy as np

    keys: list[Any] = []
    stamps: list[Any] = []
    values: list[Any] = []
    sides: list[Any] = []
    for pdf in frames:
        keys.extend(pdf[KEY].tolist())
        stamps.extend(_timestamps(pdf))
        values.extend(_values(pdf, enc))
        if sided:
            sides.extend(pdf[SIDE].astype(int).tolist())
    seq = frames[0][SEQ].to_numpy() if len(frames) == 1 else \
        np.concatenate([p[SEQ].to_numpy() for p in frames])
    if len(seq) > 1 and not bool((seq[1:] >= seq[:-1]).all()):
        order = np.argsort(seq, kind="stable").tolist()
        keys = [keys[i] for i in order]
        stamps = [stamps[i] for i in order]
        values = [values[i] for i in order]
        if sided:
            sides = [sides[i] for i in order]
    return KeyGroupColumns(keys, stamps, values, sides if sided else None)


# -- out -----------------------------------------------------------------------------------
def _payload_arrays(values: list[Any], enc: Optional[Encoding], name: str) -> list[pa.Array]:
    """The records as Arrow arrays, by the Arrow passes' rules (``ColumnWriter``)."""
    if enc is None:
        dumps = pickle.dumps
        return [pa.array([dumps(v, _PICKLE) for v in values], type=pa.binary())]
    assert enc.type_info is not None
    fields = enc.arrow_fields()
    try:
        if enc.shape == "scalar":
            conv = python_to_arrow(enc.type_info)
            column = values if conv is None else [None if v is None else conv(v) for v in values]
            return [pa.array(column, type=fields[0].type)]
        width = len(enc.columns)
        convs = [python_to_arrow(t) for t in enc.type_info.get_field_types()]
        if values and set(map(type, values)) == {tuple} and set(map(len, values)) == {width}:
            columns: list[Any] = [list(c) for c in zip(*values)]
        else:
            columns = [[] for _ in range(width)]
            appends = [c.append for c in columns]
            names = enc.columns
            for value in values:
                parts: Iterable[Any] = repeat(None, width) if value is None else _fields_of(value, names)
                for append, x in zip(appends, parts):
                    append(x)
        return [pa.array(c if conv is None else [None if x is None else conv(x) for x in c],
                         type=f.type)
                for c, conv, f in zip(columns, convs, fields)]
    except (ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
        raise JobExecutionError(
            f"operator {name!r}: an output record does not match the declared output_type "
            f"{enc.type_info!r}: {type(exc).__name__}: {exc}"
        ) from exc


def output_blobs(outputs: list[Any], tags: frozenset[str], enc: Optional[Encoding],
                 name: str = "") -> Optional[Any]:
    """The output frame of one call: column ``_b``, one Arrow IPC stream per row.

    ``outputs`` are ``Output(tag, value, timestamp)`` tuples; side outputs whose tag
    no consumer reads are dropped (without ``tags``, every side output). None when
    nothing is emitted.
    """
    import pandas as pd

    if tags:
        kept = [o for o in outputs if o[0] is None or o[0] in tags]
    elif set(map(_TAG_OF, outputs)) - {None}:
        kept = [o for o in outputs if o[0] is None]
    else:
        kept = outputs
    if not kept:
        return None
    schema = output_schema(enc, bool(tags))
    arrays = [pa.array(list(map(_TAG_OF, kept)), type=pa.string())] if tags else []
    arrays.append(pa.array(list(map(_TS_OF, kept)), type=pa.int64()))
    arrays.extend(_payload_arrays(list(map(_VALUE_OF, kept)), enc, name))
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    blobs = []
    for start in range(0, batch.num_rows, BLOB_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write_batch(batch.slice(start, BLOB_ROWS))
        blobs.append(sink.getvalue().to_pybytes())
    return pd.DataFrame({BLOB: pd.Series(blobs, dtype=object)})


def unpack_blobs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function after the stateful operator: blobs -> their record batches."""
    for batch in batches:
        column = batch.column(0)
        for i in range(len(column)):
            blob = column[i]
            if not blob.is_valid:
                continue
            with pa.ipc.open_stream(blob.as_buffer()) as reader:
                yield from reader


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (restored after).

    A call allocates tens of thousands of short-lived, acyclic objects; the
    collector's passes over the worker's heap cost more than the work itself.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
