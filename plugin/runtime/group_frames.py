"""Data in and out of the STREAMING ``applyInPandasWithState`` function, without waste.

One call of the function handles one key group of one micro-batch (tens of
thousands of rows), so per-row pandas work dominates it unless avoided:

* in: :func:`group_rows` reads each input column once (``tolist()``) and orders
  the rows by ``_seq`` without concatenating frames. Records come pickled
  (``_v``) with their key bytes (``_k``) or, from a native keyed input, as typed
  columns whose key field is serialized here - only types the Arrow -> pandas
  conversion Spark does keeps exact, nullable numbers with a null-flag column
  (:class:`TypedInput`).
* out: :func:`output_blobs` writes the call's outputs as Arrow record batches
  (``[_tag,] _ts, payload``, the Arrow passes' layout and types). PySpark's own
  pandas output path pads its per-batch state column to the data length and
  concatenates it row by row (a quarter of the worker's time on 4M rows), so the
  records leave in a few rows (one per :data:`BLOB_ROWS` records or
  :data:`BLOB_BYTES` bytes): when every column has a plain type
  (:func:`direct_output`), as one list per column (:func:`array_frame`), which
  Spark explodes into rows itself; otherwise as Arrow IPC streams in one ``_b``
  binary column, which :func:`unpack_blobs`, a ``mapInArrow`` pass right after
  the stateful operator (a second Python worker per task), turns back into rows.
  Both keep every value exact.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..operators.exceptions import JobExecutionError
from ..operators.keygroup import KeyGroupColumns
from ..state_store.bulk import numbered
from ..state_store.exceptions import SerializationError
from ..state_store.keygroups import key_groups_of
from ..state_store.row import named_row_class
from .encoding import KEY, SIDE, TAG, TS, VALUE, Encoding, record_arrays, row_names, typed_encoding
from .rows import RowShape, is_row_type
from .spark_types import is_spark_mappable, python_from_arrow

__all__ = [
    "ORDER",
    "ORDER_ROW",
    "BLOB",
    "NBYTES",
    "BLOB_ROWS",
    "BLOB_BYTES",
    "TypedInput",
    "typed_input",
    "typed_output_encoding",
    "output_encoding",
    "output_schema",
    "group_rows",
    "processing_order",
    "distinct_key_bytes",
    "serialized_keys",
    "output_blobs",
    "batch_blobs",
    "column_blobs",
    "array_frame",
    "float_columns",
    "nan_column",
    "direct_output",
    "output_frame",
    "unpack_blobs",
    "release_arrow_memory",
]

#: Name of the stateful operator's only output column (Arrow IPC streams).
BLOB = "_b"
#: At most this many records, and about this many bytes, per blob (one Spark row).
BLOB_ROWS = 1 << 16
BLOB_BYTES = 16 << 20
#: Blob bytes :func:`unpack_blobs` reads between two releases of Arrow's unused memory.
RELEASE_BYTES = 16 << 20
#: ``attrs`` entry of a direct output frame: the Arrow bytes of its records
NBYTES = "nbytes"
SEQ = "_seq"
#: Second ordering column of a file stream's native keyed input (``streaming._file_row_seq``):
#: ``hash(file path) << ROW_INDEX_BITS | row index``
SEQ_ROW = "_seq_row"
ROW_INDEX_BITS = 42
#: ``_seq`` of a Python keyed input pass: ``read partition << SPLIT_SHIFT | position``
SPLIT_SHIFT = 40
#: A keyed stage's output columns giving each record's place in its Spark partition's
#: arrival order (emit_order.py), when it feeds another keyed stage
ORDER, ORDER_ROW = "_oseq", "_oseq_row"

_ALWAYS_EXACT = ("STRING", "BOOLEAN")
_NUMERIC = ("LONG", "INT", "SHORT", "BYTE", "DOUBLE", "FLOAT")
_PICKLE = pickle.HIGHEST_PROTOCOL
_TAG_OF, _VALUE_OF, _TS_OF = itemgetter(0), itemgetter(1), itemgetter(2)


@dataclass(frozen=True)
class TypedInput:
    """How a keyed function reads typed records (and their key) from its input frames.

    ``null_flags`` are the payload positions of nullable numeric columns: pandas turns
    such a column with nulls into float64 (NaN and null merge, integers above 2**53
    lose precision), so Spark sends it with nulls replaced by 0 plus a boolean column
    :meth:`flag` that marks them.
    """

    enc: Encoding
    key_index: int
    null_flags: tuple[int, ...] = ()

    @staticmethod
    def flag(index: int) -> str:
        """Name of the null-flag column of payload position ``index``."""
        return f"_n{index}"


def typed_input(enc: Encoding, schema: Any, key_index: int) -> Optional[TypedInput]:
    """How to read ``enc``'s typed columns of Spark ``schema`` (a StructType) from pandas
    exactly; None when the records must travel pickled (types pandas changes)."""
    if not enc.typed or enc.shape not in ("tuple", "row") or enc.type_info is None:
        return None
    nullable = {f.name: f.nullable for f in schema.fields}
    flags = []
    for i, (column, t) in enumerate(zip(enc.columns, enc.field_types())):
        if column not in nullable or python_from_arrow(t) is not None:
            return None
        if t.type_name in _NUMERIC:
            if nullable[column]:
                flags.append(i)
        elif t.type_name not in _ALWAYS_EXACT:
            return None
    return TypedInput(enc, key_index, tuple(flags))


def typed_output_encoding(type_info: Any) -> Optional[Encoding]:
    """The typed encoding of a keyed operator's declared ``output_type`` when it is a TUPLE
    Spark can hold (records come back as tuples, as returned); None: pickled records
    (ROW types travel as pickled Rows, :func:`output_encoding`)."""
    if type_info is None or type_info.type_name != "TUPLE" or not is_spark_mappable(type_info):
        return None
    return typed_encoding(type_info)


def output_encoding(type_info: Any, tagged: bool) -> Optional[Encoding]:
    """How a keyed operator's main records leave it: typed columns for a TUPLE Spark can
    hold (:func:`typed_output_encoding`, without side outputs); for a ROW type, pickled
    named Rows (a ``pickled`` encoding of ``row`` shape: what the function returned made
    a Row, as every consumer of a ROW stream reads it, ``runtime/rows.py``); None: pickled
    as returned."""
    if is_row_type(type_info):
        return Encoding("pickled", type_info, (VALUE,), "row")
    return None if tagged else typed_output_encoding(type_info)


def output_schema(enc: Optional[Encoding], tagged: bool, ordered: bool = False) -> pa.Schema:
    """Arrow schema of the blobs: ``[_tag string,] _ts int64, payload[, _oseq int64,
    _oseq_row int64]`` (the order columns when ``ordered``: emit_order.py)."""
    fields = [pa.field(TAG, pa.string())] if tagged else []
    fields.append(pa.field(TS, pa.int64()))
    if enc is None:
        fields.append(pa.field(VALUE, pa.binary()))
    else:
        fields.extend(enc.arrow_fields())
    if ordered:
        fields.extend([pa.field(ORDER, pa.int64()), pa.field(ORDER_ROW, pa.int64())])
    return pa.schema(fields)


# -- in ------------------------------------------------------------------------------------
def _timestamps(pdf: Any) -> list[Any]:
    """``_ts`` as ints / None (Spark hands a bigint column with nulls over as float64)."""
    column = pdf[TS]
    if column.dtype.kind in "iu":  # no nulls: already ints
        return column.tolist()
    if column.isna().all():
        return [None] * len(column)
    return [None if t is None or t != t else int(t) for t in column.tolist()]


def _typed_columns_in(pdf: Any, typed: TypedInput) -> list[list[Any]]:
    """The payload columns as Python lists (flagged nulls restored)."""
    columns = [pdf[c].tolist() for c in typed.enc.columns]
    for i in typed.null_flags:
        flags = pdf[TypedInput.flag(i)].tolist()
        if any(flags):
            columns[i] = [None if null else v for v, null in zip(columns[i], flags)]
    return columns


def _records(columns: list[list[Any]], enc: Encoding) -> list[Any]:
    if enc.shape == "row":
        return list(map(tuple.__new__, repeat(named_row_class(row_names(enc))), zip(*columns)))
    return list(zip(*columns))


def distinct_key_bytes(keys: list[Any], serializer: Any,
                       key_group: Optional[tuple[int, int]]) -> dict[Any, bytes]:
    """The bytes of each distinct typed key (serialized once per call and, with
    ``key_group = (group, max parallelism)``, checked against Spark's ``_kg``)."""
    out = dict.fromkeys(keys)
    return dict(zip(out, serialized_keys(list(out), serializer, key_group)))


def serialized_keys(keys: list[Any], serializer: Any,
                    key_group: Optional[tuple[int, int]]) -> list[bytes]:
    """``serializer``'s bytes of each key (C-level maps: a call has up to hundreds of
    thousands of distinct keys), each checked to belong to ``key_group`` (``(group, max
    parallelism)``) when given: the key group Spark computed from its native key bytes."""
    many = getattr(serializer, "serialize_many", None)  # a batch form, where it has one
    try:
        out = many(keys) if many is not None else list(map(serializer.serialize, keys))
    except Exception:
        for key in keys:  # find the key and report it
            try:
                serializer.serialize(key)
            except Exception as exc:
                raise SerializationError(
                    f"cannot serialize key {key!r:.80} with {serializer!r}: {exc}") from exc
        raise
    if key_group is not None:
        groups = np.asarray(key_groups_of(out, key_group[1]), dtype=np.int64)
        wrong = np.flatnonzero(groups != key_group[0])
        if len(wrong):
            key, own = keys[int(wrong[0])], int(groups[wrong[0]])
            raise JobExecutionError(
                f"key {key!r:.80}: Spark placed it in key group {key_group[0]} but "
                f"its bytes from {serializer!r} belong to key group {own} (native "
                "key bytes disagree)")
    return out


def group_rows(frames: list[Any], typed: Optional[TypedInput], sided: bool,
               key_serializer: Any = None,
               key_group: Optional[tuple[int, int]] = None,
               order_out: Optional[list[Any]] = None) -> KeyGroupColumns:
    """``(key bytes, timestamp, record, input side)`` rows of one key group's frames in
    processing order: arrival order inside each upstream split (``_seq``), the splits of
    one key merged by event time (:func:`_merge_splits_by_event_time`).

    Without ``typed`` the frames carry ``_k`` and pickled ``_v``. With it they carry
    typed columns and no ``_k``: the key is a field of the record, each distinct key is
    serialized with ``key_serializer`` and checked against ``key_group`` (``(group, max
    parallelism)``), and the columns hold each element's key value and those bytes
    (``KeyGroupColumns.key_values``/``key_bytes``)."""
    keys: list[Any] = []
    stamps: list[Any] = []
    values: list[Any] = []
    sides: list[Any] = []
    loads = pickle.loads
    for pdf in frames:
        if typed is None:
            keys.extend(pdf[KEY].tolist())
            values.extend([loads(v) for v in pdf[VALUE].tolist()])
        else:
            columns = _typed_columns_in(pdf, typed)
            keys.extend(columns[typed.key_index])
            values.extend(_records(columns, typed.enc))
        stamps.extend(_timestamps(pdf))
        if sided:
            sides.extend(pdf[SIDE].astype(int).tolist())
    key_bytes = (distinct_key_bytes(keys, key_serializer, key_group)
                 if typed is not None else None)
    if key_bytes is not None and any(type(k) is float for k in key_bytes):
        # float keys are no dict keys: NaNs are unequal to each other and -0.0 == 0.0,
        # while their bytes decide what one key is
        keys, key_bytes = list(map(key_bytes.__getitem__, keys)), None
    order = processing_order(frames, keys, stamps, sides if sided else None, key_bytes)
    if order_out is not None:  # the caller's: the frames' rows in processing order
        order_out.append(order)
    if order is not None and len(order) > 1:
        take = itemgetter(*order.tolist())  # one C call per column
        keys, stamps, values = list(take(keys)), list(take(stamps)), list(take(values))
        if sided:
            sides = list(take(sides))
    if key_bytes is not None:
        return KeyGroupColumns(None, stamps, values, sides if sided else None, key_values=keys,
                               key_bytes=key_bytes,
                               key_group=None if key_group is None else key_group[0])
    return KeyGroupColumns(keys, stamps, values, sides if sided else None)


def processing_order(frames: list[Any], keys: Any, stamps: Any, sides: Optional[Any] = None,
                     key_bytes: Optional[dict[Any, bytes]] = None) -> Optional[Any]:
    """The order (an index array; None: as given) in which one key group's records of
    ``frames`` (concatenated) are processed: arrival order inside each upstream split
    (``_seq``, and ``_seq_row`` for a file stream), each key's records of different splits
    merged by event time (:func:`_merge_splits_by_event_time`). ``keys`` identify each
    record's key (equal keys equal; mapped through ``key_bytes`` when given), ``stamps``
    are their timestamps, ``sides`` their input sides (None: one input)."""
    import numpy as np

    seq = frames[0][SEQ].to_numpy() if len(frames) == 1 else \
        np.concatenate([p[SEQ].to_numpy() for p in frames])
    order: Optional[Any] = None
    rows_seq: Optional[Any] = None
    if SEQ_ROW in frames[0].columns:  # (file time, file and row) order
        rows_seq = np.concatenate([p[SEQ_ROW].to_numpy() for p in frames])
        ascending = (seq[1:] > seq[:-1]) | ((seq[1:] == seq[:-1]) & (rows_seq[1:] >= rows_seq[:-1]))
        if not bool(ascending.all()):
            order = np.lexsort((rows_seq, seq))
    elif len(seq) > 1 and not bool((seq[1:] >= seq[:-1]).all()):
        order = np.argsort(seq, kind="stable")
    if len(seq) > 1 and not any(bool(p[TS].isna().any()) for p in frames):
        # splits: a file of a file stream (its time and file hash), else a read partition
        split = [seq, rows_seq >> ROW_INDEX_BITS] if rows_seq is not None \
            else [seq >> SPLIT_SHIFT]
        if sides is not None:
            split.append(np.asarray(sides))
        if key_bytes is not None:
            keys = list(map(key_bytes.__getitem__, keys))
        order = _merge_splits_by_event_time(order, keys, np.asarray(stamps, dtype=np.int64),
                                            split)
    return order


def _merge_splits_by_event_time(order: Optional[Any], keys: list[Any], stamps: Any,
                                split: list[Any]) -> Optional[Any]:
    """The arrival ``order`` (None: as given) with each key's records of different upstream
    splits merged by event time; None when nothing moves.

    Flink keeps the order of each split and leaves the interleaving of splits open; a
    micro-batch here reads splits (files, read partitions) in an order that has nothing to
    do with event time (Spark reads larger files first), so without a merge a key whose
    records span two files could see its later records first, and an order-sensitive
    function (a sessionizer comparing each record with the previous one) then disagrees
    with BATCH, which sorts by time. Each record's sort key is the running maximum event
    time of its key within its split (non-decreasing along the split, so each split keeps
    its order; ties keep arrival order): splits whose records are in time order per key
    come out merged into time order per key, as BATCH sees them.
    """
    if all(bool((s == s[0]).all()) for s in split):
        return order  # one split: arrival order is the only order
    n = len(keys)
    base = np.arange(n) if order is None else np.asarray(order)
    # one code per (key, split) pair, renumbered after each column so codes stay below n
    group = np.fromiter(numbered(keys)[1], dtype=np.int64, count=n)
    for column in split:
        values, codes = np.unique(column, return_inverse=True)
        group = np.unique(group * len(values) + codes, return_inverse=True)[1]
    group = group[base]
    # event times as their ranks: the same order, and small enough to offset per pair
    ranks = np.unique(stamps[base], return_inverse=True)[1].astype(np.int64)
    by_group = np.argsort(group, kind="stable")  # each pair's records in arrival order
    grouped = group[by_group]
    pair = np.cumsum(np.concatenate(([0], grouped[1:] != grouped[:-1]))).astype(np.int64)
    width = int(ranks.max()) + 1  # pair * width + rank < n * n: no overflow below 3e9 rows
    running = np.empty(n, dtype=np.int64)
    running[by_group] = np.maximum.accumulate(ranks[by_group] + pair * width) - pair * width
    if bool((running[1:] >= running[:-1]).all()):
        return order
    return base[np.argsort(running, kind="stable")]


# -- out -----------------------------------------------------------------------------------
def _payload_arrays(values: list[Any], enc: Optional[Encoding], name: str) -> list[pa.Array]:
    """The records as Arrow arrays, checked by the Arrow passes' rules (``ColumnWriter``)."""
    if enc is None or not enc.typed:
        dumps = pickle.dumps
        return [pa.array([dumps(v, _PICKLE) for v in values], type=pa.binary())]
    return record_arrays(values, enc, name)


def output_blobs(outputs: list[Any], tags: frozenset[str], enc: Optional[Encoding],
                 name: str = "") -> Optional[Any]:
    """The output frame of one call: column ``_b``, one Arrow IPC stream per row.

    ``outputs`` are ``Output(tag, value, timestamp)`` tuples; side outputs whose tag
    no consumer reads are dropped (without ``tags``, every side output). None when
    nothing is emitted.
    """
    return column_blobs(list(map(_TAG_OF, outputs)), list(map(_VALUE_OF, outputs)),
                        list(map(_TS_OF, outputs)), tags, enc, name)


def column_blobs(out_tags: Optional[list[Optional[str]]], values: list[Any],
                 stamps: list[Optional[int]], tags: frozenset[str], enc: Optional[Encoding],
                 name: str = "", direct: bool = False,
                 order: Optional[tuple[Any, Any]] = None) -> Optional[Any]:
    """:func:`output_blobs` of outputs given as columns (``out_tags`` None: every output is
    a main output, as ``KeyGroupResult.output_columns`` gives a lean reduce's); with
    ``direct``, as :func:`array_frame`; ``order``: each output's ``(_oseq, _oseq_row)``
    (emit_order.py), as two int64 arrays."""
    if out_tags is not None and (tags or set(out_tags) - {None}):
        kept = [i for i, t in enumerate(out_tags) if t is None or t in tags]
        out_tags = [out_tags[i] for i in kept]
        values = [values[i] for i in kept]
        stamps = [stamps[i] for i in kept]
        if order is not None:
            order = (order[0][kept], order[1][kept])
    if not values:
        return None
    schema = output_schema(enc, bool(tags), order is not None)
    arrays = []
    if tags:
        arrays.append(pa.array(out_tags if out_tags is not None else [None] * len(values),
                               type=pa.string()))
    arrays.append(pa.array(stamps, type=pa.int64()))
    if enc is not None and not enc.typed and enc.shape == "row":  # main records as Rows
        shape = RowShape.of(enc.type_info, name)
        assert shape is not None
        values = ([shape(v) for v in values] if out_tags is None else
                  [shape(v) if t is None else v for t, v in zip(out_tags, values)])
    arrays.extend(_payload_arrays(values, enc, name))
    if order is not None:
        arrays.extend([pa.array(order[0], type=pa.int64()), pa.array(order[1], type=pa.int64())])
    return output_frame(pa.RecordBatch.from_arrays(arrays, schema=schema), direct)


def direct_output(schema: pa.Schema) -> bool:
    """Whether outputs of ``schema`` leave the keyed call as arrays (:func:`array_frame`):
    when every column is an integer, float, boolean, string or binary (pickled records
    too), which PySpark's conversion of lists keeps exact (NaNs aside, which the query
    restores); other types leave as blobs."""
    return all(_direct_type(f.type) for f in schema)


def _direct_type(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or t == pa.string() or t == pa.binary())


def output_frame(batch: pa.RecordBatch, direct: bool = False) -> Any:
    """The output frame holding ``batch`` (the :func:`output_schema` layout): its blobs
    (:func:`batch_blobs`), or with ``direct`` (a :func:`direct_output` schema) its columns
    as arrays (:func:`array_frame`)."""
    return array_frame(batch) if direct else batch_blobs(batch)


def array_frame(batch: pa.RecordBatch) -> Any:
    """The output frame holding ``batch`` as arrays: one row per :func:`_chunk_rows` records,
    each column's values of them as one list (the query explodes them back into rows; a
    row of empty arrays gives none), and for each float column its :func:`nan_column`: the
    positions of its NaNs, which PySpark's conversion would turn into nulls (None when
    there are none). ``attrs["nbytes"]``: the records' Arrow bytes."""
    import pandas as pd
    import pyarrow.compute as pc

    step = _chunk_rows(batch)
    starts = range(0, batch.num_rows, step)
    columns = {name: _objects([column.slice(start, step).to_pylist() for start in starts])
               for name, column in zip(batch.schema.names, batch.columns)}
    nans: dict[str, Any] = {}
    for name in float_columns(batch.schema):
        flags = pc.fill_null(pc.is_nan(batch.column(name)), False).to_numpy(zero_copy_only=False)
        nans[nan_column(name)] = _objects([
            (np.flatnonzero(flags[start:start + step]).tolist() or None) for start in starts])
    frame = pd.DataFrame({**columns, **nans})
    frame.attrs[NBYTES] = batch.nbytes
    return frame


def float_columns(schema: pa.Schema) -> list[str]:
    """The float columns of ``schema``: those an :func:`array_frame` gives a
    :func:`nan_column`."""
    return [f.name for f in schema if pa.types.is_floating(f.type)]


def nan_column(name: str) -> str:
    """The column of :func:`array_frame` listing the NaN positions of float column ``name``."""
    return f"_nan_{name}"


def _objects(values: list[Any]) -> Any:
    """``values`` as a one-dimensional object array (lists stay elements)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def _chunk_rows(batch: pa.RecordBatch) -> int:
    """Records per output row: at most :data:`BLOB_ROWS`, about :data:`BLOB_BYTES`."""
    return max(1, min(BLOB_ROWS, batch.num_rows * BLOB_BYTES // max(batch.nbytes, 1)))


def batch_blobs(batch: pa.RecordBatch) -> Any:
    """The output frame holding ``batch`` (the :func:`output_schema` layout): column ``_b``,
    one Arrow IPC stream of at most :data:`BLOB_ROWS` records / ~:data:`BLOB_BYTES` per row."""
    import pandas as pd

    schema = batch.schema
    rows = batch.num_rows
    step = _chunk_rows(batch)
    blobs = []
    for start in range(0, rows, step):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write_batch(batch.slice(start, step))
        blobs.append(sink.getvalue().to_pybytes())
    return pd.DataFrame({BLOB: pd.Series(blobs, dtype=object)})


def release_arrow_memory() -> None:
    """Return to the system the memory Arrow's allocator still keeps from batches already
    freed (it keeps it otherwise: each stateful Python worker grew by tens of MB)."""
    pa.default_memory_pool().release_unused()


def unpack_blobs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function after the stateful operator: blobs -> their record batches.

    Every :data:`RELEASE_BYTES` of blobs read, :func:`release_arrow_memory` (the batches
    already sent on no longer need it)."""
    read = 0
    for batch in batches:
        read += batch.nbytes
        if read >= RELEASE_BYTES:
            release_arrow_memory()
            read = 0
        column = batch.column(0)
        for i in range(len(column)):
            blob = column[i]
            if not blob.is_valid:
                continue
            with pa.ipc.open_stream(blob.as_buffer()) as reader:
                yield from reader
