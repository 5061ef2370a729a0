"""How records travel between Spark stages, and their Arrow (de)coding.

Every internal DataFrame has a nullable ``_ts`` (event timestamp, ms) column
and the record payload either as *typed* columns (the operator declared an
``output_type`` Spark can hold) or as one ``_v`` binary column of pickled
records. Keyed inputs add ``_kg`` (key group) and ``_k`` (key bytes); passes
with consumed side outputs add ``_tag`` (null for the main output).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import pyarrow as pa

from ..spark_types import (
    arrow_type,
    column_names,
    python_from_arrow,
    python_to_arrow,
    spark_ddl_type,
)
from ..state_store.row import Row
from ..state_store.typeinfo import TypeInformation

__all__ = ["Encoding", "PICKLED", "typed_encoding", "make_decoder", "ColumnWriter"]

TS, VALUE, TAG, KG, KEY, SIDE = "_ts", "_v", "_tag", "_kg", "_k", "_side"
_PICKLE = pickle.HIGHEST_PROTOCOL


@dataclass(frozen=True)
class Encoding:
    """Payload layout: ``kind`` 'typed' or 'pickled'; ``shape`` tuple, row or scalar."""

    kind: str
    type_info: Optional[TypeInformation] = None
    columns: tuple[str, ...] = (VALUE,)
    shape: str = "pickled"

    @property
    def typed(self) -> bool:
        return self.kind == "typed"

    def spark_fields(self) -> list[str]:
        """DDL fragments ``name type`` for the payload columns."""
        if not self.typed:
            return [f"{VALUE} binary"]
        assert self.type_info is not None
        if self.shape == "scalar":
            return [f"`{self.columns[0]}` {spark_ddl_type(self.type_info)}"]
        types = self.type_info.get_field_types()
        return [f"`{c}` {spark_ddl_type(t)}" for c, t in zip(self.columns, types)]

    def arrow_fields(self) -> list[pa.Field]:
        if not self.typed:
            return [pa.field(VALUE, pa.binary())]
        assert self.type_info is not None
        if self.shape == "scalar":
            return [pa.field(self.columns[0], arrow_type(self.type_info))]
        return [pa.field(c, arrow_type(t)) for c, t in zip(self.columns, self.type_info.get_field_types())]


PICKLED = Encoding("pickled")


def typed_encoding(type_info: TypeInformation, shape: Optional[str] = None,
                   columns: Optional[tuple[str, ...]] = None) -> Encoding:
    """Typed encoding of ``type_info`` (tuple/row fields as columns, else one column)."""
    cols = tuple(columns) if columns is not None else tuple(column_names(type_info))
    if shape is None:
        name = type_info.type_name
        shape = "tuple" if name == "TUPLE" else "row" if name in ("ROW", "ROW_NAMED") else "scalar"
    return Encoding("typed", type_info, cols, shape)


def make_decoder(enc: Encoding) -> Callable[[pa.RecordBatch], list[Any]]:
    """Function turning an Arrow batch into the list of Python records it holds."""
    if not enc.typed:
        loads = pickle.loads

        def decode_pickled(batch: pa.RecordBatch) -> list[Any]:
            return [loads(b) for b in batch.column(VALUE).to_pylist()]

        return decode_pickled
    assert enc.type_info is not None
    if enc.shape == "scalar":
        conv = python_from_arrow(enc.type_info)
        col = enc.columns[0]

        def decode_scalar(batch: pa.RecordBatch) -> list[Any]:
            values = batch.column(col).to_pylist()
            return values if conv is None else [conv(v) for v in values]

        return decode_scalar
    field_types = enc.type_info.get_field_types()
    convs = [python_from_arrow(t) for t in field_types]
    cols = enc.columns
    names = tuple(cols)
    as_row = enc.shape == "row"

    def decode_fields(batch: pa.RecordBatch) -> list[Any]:
        columns = []
        for c, conv in zip(cols, convs):
            values = batch.column(c).to_pylist()
            columns.append(values if conv is None else [None if v is None else conv(v) for v in values])
        if as_row:
            return [Row(**dict(zip(names, vals))) for vals in zip(*columns)]
        return list(zip(*columns))

    return decode_fields


class ColumnWriter:
    """Accumulates output records column-wise and emits Arrow batches."""

    def __init__(self, enc: Encoding, extra: list[pa.Field], batch_size: int = 8192) -> None:
        self.enc = enc
        self.extra = extra
        payload = enc.arrow_fields()
        self.schema = pa.schema(extra + payload)
        self.batch_size = batch_size
        self.extra_cols: list[list[Any]] = [[] for _ in extra]
        self.payload_cols: list[list[Any]] = [[] for _ in payload]
        self.n = 0
        if enc.typed:
            assert enc.type_info is not None
            types = [enc.type_info] if enc.shape == "scalar" else enc.type_info.get_field_types()
            self.convs = [python_to_arrow(t) for t in types]
        else:
            self.convs = [None]
        self._names = enc.columns

    def append(self, extras: tuple[Any, ...], value: Any) -> Optional[pa.RecordBatch]:
        for col, x in zip(self.extra_cols, extras):
            col.append(x)
        enc = self.enc
        if not enc.typed:
            self.payload_cols[0].append(pickle.dumps(value, _PICKLE))
        elif enc.shape == "scalar":
            conv = self.convs[0]
            self.payload_cols[0].append(value if conv is None else conv(value))
        else:
            if value is None:
                for col in self.payload_cols:
                    col.append(None)
            else:
                values = _fields_of(value, self._names)
                for col, conv, v in zip(self.payload_cols, self.convs, values):
                    col.append(v if conv is None or v is None else conv(v))
        self.n += 1
        if self.n >= self.batch_size:
            return self.flush()
        return None

    def extend(self, extras: list[list[Any]], values: list[Any]) -> Iterator[pa.RecordBatch]:
        """``append`` for many records at once (``extras`` column-wise): plain tuples of a
        typed tuple/row encoding become columns at C speed; anything else goes one by one."""
        width = len(self._names)
        pickled = not self.enc.typed
        if not pickled and (self.enc.shape == "scalar" or not all(
                type(v) is tuple and len(v) == width for v in values)):
            for i, value in enumerate(values):
                batch = self.append(tuple(col[i] for col in extras), value)
                if batch is not None:
                    yield batch
            return
        i = 0
        while i < len(values):
            j = min(len(values), i + self.batch_size - self.n)
            for col, xs in zip(self.extra_cols, extras):
                col.extend(xs[i:j])
            if pickled:
                dumps = pickle.dumps
                self.payload_cols[0].extend([dumps(v, _PICKLE) for v in values[i:j]])
            else:
                for col, conv, field in zip(self.payload_cols, self.convs, zip(*values[i:j])):
                    col.extend(field if conv is None else [None if v is None else conv(v) for v in field])
            self.n += j - i
            i = j
            if self.n >= self.batch_size:
                batch = self.flush()
                if batch is not None:
                    yield batch

    def flush(self) -> Optional[pa.RecordBatch]:
        if self.n == 0:
            return None
        arrays = [pa.array(c, type=f.type) for c, f in zip(self.extra_cols + self.payload_cols,
                                                            self.schema)]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self.extra_cols = [[] for _ in self.extra]
        self.payload_cols = [[] for _ in self.payload_cols]
        self.n = 0
        return batch


def _fields_of(value: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    if isinstance(value, Row) and value._fields is not None and set(value._fields) >= set(names):
        return tuple(value[n] for n in names)
    if isinstance(value, (tuple, list)):
        if len(value) != len(names):
            raise ValueError(
                f"record {value!r} has {len(value)} fields but the declared output_type has "
                f"{len(names)} ({', '.join(names)})"
            )
        return tuple(value)
    if isinstance(value, dict):
        return tuple(value.get(n) for n in names)
    raise ValueError(
        f"record {value!r} of type {type(value).__name__} does not match the declared "
        f"output_type with fields ({', '.join(names)})"
    )
