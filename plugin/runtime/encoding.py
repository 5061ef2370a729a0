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
from itertools import repeat
from typing import Any, Callable, Iterator, Optional

import pyarrow as pa

from ..operators.exceptions import OutputTypeError
from ..state_store.row import Row, named_row_class
from ..state_store.typeinfo import FieldsTypeInfo, TypeInformation
from .spark_types import (
    arrow_type,
    column_names,
    is_spark_mappable,
    python_from_arrow,
    python_to_arrow,
    spark_ddl_type,
)

__all__ = ["Encoding", "PICKLED", "typed_encoding", "make_decoder", "row_names", "ColumnWriter",
           "checked_array", "fields_of", "output_check", "record_arrays"]

TS, VALUE, TAG, KG, KEY, SIDE = "_ts", "_v", "_tag", "_kg", "_k", "_side"
#: BATCH pass output: null on records; the last rows of a task carry its operator instances'
#: metrics (JSON), taken by the stage's progress observation and filtered out
METRICS = "_metrics"
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

    def declared_type(self) -> TypeInformation:
        """The type a typed encoding's records are declared with.

        Raises:
            TypeError: the encoding is pickled (it declares no type).
        """
        if self.type_info is None:
            raise TypeError(f"a {self.kind} encoding declares no type")
        return self.type_info

    def field_types(self) -> list[TypeInformation]:
        """The declared types of the payload columns, in order: the type itself for a scalar,
        its fields' for a tuple or row.

        Raises:
            TypeError: the encoding is not typed, or a tuple/row shape holds a type without fields.
        """
        t = self.declared_type()
        if self.shape == "scalar":
            return [t]
        if not isinstance(t, FieldsTypeInfo):
            raise TypeError(f"a {self.shape} encoding needs a type with fields, got {t!r}")
        return t.get_field_types()

    def spark_fields(self) -> list[str]:
        """DDL fragments ``name type`` for the payload columns."""
        return [f"`{name}` {kind}" for name, kind in self.spark_columns()]

    def spark_columns(self) -> list[tuple[str, str]]:
        """``(name, Spark DDL type)`` of the payload columns."""
        if not self.typed:
            return [(VALUE, "binary")]
        return [(c, spark_ddl_type(t)) for c, t in zip(self.columns, self.field_types())]

    def arrow_fields(self) -> list[pa.Field]:
        if not self.typed:
            return [pa.field(VALUE, pa.binary())]
        return [pa.field(c, arrow_type(t)) for c, t in zip(self.columns, self.field_types())]


PICKLED = Encoding("pickled")


def typed_encoding(type_info: TypeInformation, shape: Optional[str] = None,
                   columns: Optional[tuple[str, ...]] = None) -> Encoding:
    """Typed encoding of ``type_info`` (tuple/row fields as columns, else one column)."""
    cols = tuple(columns) if columns is not None else tuple(column_names(type_info))
    if shape is None:
        name = type_info.type_name
        shape = "tuple" if name == "TUPLE" else "row" if name in ("ROW", "ROW_NAMED") else "scalar"
    return Encoding("typed", type_info, cols, shape)


def row_names(enc: Encoding) -> tuple[str, ...]:
    """The field names of the Rows a typed ``row``-shaped encoding decodes into: its type's
    (the same as its columns, except for a DataFrame source read with a type of other
    names)."""
    names = (enc.type_info.get_field_names() if isinstance(enc.type_info, FieldsTypeInfo)
             else None)
    return tuple(names) if names is not None and len(names) == len(enc.columns) else enc.columns


def make_decoder(enc: Encoding) -> Callable[[pa.RecordBatch], list[Any]]:
    """Function turning an Arrow batch into the list of Python records it holds (a typed
    ROW/ROW_NAMED encoding gives named Rows, a TUPLE one tuples)."""
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
    convs = [python_from_arrow(t) for t in enc.field_types()]
    cols = enc.columns
    row_class = named_row_class(row_names(enc)) if enc.shape == "row" else None
    new = tuple.__new__

    def decode_fields(batch: pa.RecordBatch) -> list[Any]:
        columns = []
        for c, conv in zip(cols, convs):
            values = batch.column(c).to_pylist()
            columns.append(values if conv is None else [None if v is None else conv(v) for v in values])
        if row_class is not None:  # one C call per record, no Python loop
            return list(map(new, repeat(row_class), zip(*columns)))
        return list(zip(*columns))

    return decode_fields


class ColumnWriter:
    """Accumulates output records column-wise and emits Arrow batches."""

    def __init__(self, enc: Encoding, extra: list[pa.Field], batch_size: int = 8192,
                 name: str = "") -> None:
        self.enc = enc
        self.name = name  # the operator whose records these are (for OutputTypeError)
        self.extra = extra
        payload = enc.arrow_fields()
        self.schema = pa.schema(extra + payload)
        self.batch_size = batch_size
        self.extra_cols: list[list[Any]] = [[] for _ in extra]
        self.payload_cols: list[list[Any]] = [[] for _ in payload]
        self.n = 0
        if enc.typed:
            self.convs = [python_to_arrow(t) for t in enc.field_types()]
        else:
            self.convs = [None]
        self._names = enc.columns
        #: besides plain tuples, the Rows whose fields are these columns in order go into the
        #: columns as they are (``extend``)
        self._row_class = named_row_class(enc.columns) if enc.shape == "row" else tuple

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
                values = fields_of(value, self._names, self.name)
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
        row_class = self._row_class
        if not pickled and (self.enc.shape == "scalar" or not all(
                (type(v) is tuple or type(v) is row_class) and len(v) == width for v in values)):
            for i, value in enumerate(values):
                # the base append: a subclass's append may add extras of its own
                batch = ColumnWriter.append(self, tuple(col[i] for col in extras), value)
                if batch is not None:
                    yield batch
            return
        if pickled:
            dumps = pickle.dumps
            payload: list[Any] = [[dumps(v, _PICKLE) for v in values]]
        else:
            payload = [field if conv is None else [None if v is None else conv(v) for v in field]
                       for conv, field in zip(self.convs, zip(*values))]
        yield from self.extend_columns(extras, payload, len(values))

    def extend_columns(self, extras: list[Any], payload: list[Any], n: int
                       ) -> Iterator[pa.RecordBatch]:
        """``n`` rows given as columns (each a sequence of ``n`` Arrow-ready values): every
        extra column, then every payload column; a batch is emitted whenever one fills."""
        i = 0
        while i < n:
            j = min(n, i + self.batch_size - self.n)
            for col, xs in zip(self.extra_cols, extras):
                col.extend(xs[i:j])
            for col, xs in zip(self.payload_cols, payload):
                col.extend(xs[i:j])
            self.n += j - i
            i = j
            if self.n >= self.batch_size:
                batch = self.flush()
                if batch is not None:
                    yield batch

    def flush(self) -> Optional[pa.RecordBatch]:
        if self.n == 0:
            return None
        arrays = [pa.array(c, type=f.type) for c, f in zip(self.extra_cols, self.schema)]
        if self.enc.typed:
            payload = list(self.schema)[len(self.extra):]
            arrays += [checked_array(c, f.type, self.name, self.enc, i)
                       for i, (c, f) in enumerate(zip(self.payload_cols, payload))]
        else:
            arrays += [pa.array(self.payload_cols[0], type=pa.binary())]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self.extra_cols = [[] for _ in self.extra]
        self.payload_cols = [[] for _ in self.payload_cols]
        self.n = 0
        return batch


def _declared(enc: Encoding, index: int) -> tuple[str, Any]:
    """``(field name, declared type)`` of payload column ``index``."""
    assert enc.type_info is not None
    if enc.shape == "scalar":
        return enc.columns[0], enc.type_info
    return enc.columns[index], enc.field_types()[index]


def _fits(value: Any, arrow_t: pa.DataType) -> bool:
    """Whether one Python value may go into a column of ``arrow_t`` (int widens to float)."""
    if value is None:
        return True
    kind = type(value)
    if pa.types.is_boolean(arrow_t):
        return kind is bool
    if pa.types.is_integer(arrow_t):
        return isinstance(value, int) and kind is not bool
    if pa.types.is_floating(arrow_t):
        return isinstance(value, (int, float)) and kind is not bool
    if pa.types.is_string(arrow_t):
        return isinstance(value, str)
    if pa.types.is_binary(arrow_t):
        return isinstance(value, (bytes, bytearray, memoryview))
    return True


def _strict(arrow_t: pa.DataType) -> bool:
    return (pa.types.is_boolean(arrow_t) or pa.types.is_integer(arrow_t)
            or pa.types.is_floating(arrow_t) or pa.types.is_string(arrow_t)
            or pa.types.is_binary(arrow_t))


def _widens(inferred: pa.DataType, arrow_t: pa.DataType) -> bool:
    """Casts that keep every value: int -> float/double and int -> a narrower int (range
    checked by the safe cast), double -> FLOAT (Python floats are doubles)."""
    if pa.types.is_integer(inferred):
        return pa.types.is_integer(arrow_t) or pa.types.is_floating(arrow_t)
    return pa.types.is_floating(inferred) and pa.types.is_floating(arrow_t)


def checked_array(values: list[Any], arrow_t: pa.DataType, operator: str, enc: Encoding,
                  index: int) -> pa.Array:
    """Payload column ``index`` of ``enc`` as an Arrow array of ``arrow_t``, refusing any
    value the declared type cannot hold as it is (``pa.array(..., type=int64)`` would
    truncate 1.75 to 1): basic columns are built from the inferred type and only cast where
    nothing is lost; others are built by Arrow directly. Raises :class:`OutputTypeError`."""
    try:
        if not _strict(arrow_t):
            return pa.array(values, type=arrow_t)
        inferred = pa.array(values)
        if inferred.type == arrow_t:
            return inferred
        if pa.types.is_null(inferred.type) or _widens(inferred.type, arrow_t):
            return inferred.cast(arrow_t, safe=True)
        failure: Optional[BaseException] = None
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        failure = exc
    field, declared = _declared(enc, index)
    bad = next((v for v in values if not _fits(v, arrow_t)), None)
    if bad is None and failure is not None:  # every value has a fitting type: out of range
        bad = next((v for v in values if v is not None and _out_of_range(v, arrow_t)), None)
    what = (f"{bad!r:.60} ({type(bad).__name__})" if bad is not None
            else f"a value ({type(failure).__name__}: {failure})")
    raise OutputTypeError(
        f"operator {operator!r}: an output record does not match the declared output_type "
        f"{enc.type_info!r}: field {field!r} is declared {declared!r} but holds {what} (no "
        f"value is converted silently)") from failure


def _out_of_range(value: Any, arrow_t: pa.DataType) -> bool:
    try:
        pa.array([value]).cast(arrow_t, safe=True)
        return False
    except (pa.ArrowException, OverflowError):
        return True


def record_arrays(values: list[Any], enc: Encoding, operator: str) -> list[pa.Array]:
    """Whole records as the Arrow payload arrays of the typed ``enc``, checked as
    :class:`ColumnWriter` checks them (used by the STREAMING group output and to check
    records collected to the driver)."""
    try:
        return _record_arrays(values, enc, operator)
    except OutputTypeError:
        raise
    except (ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
        raise OutputTypeError(
            f"operator {operator!r}: an output record does not match the declared output_type "
            f"{enc.type_info!r}: {type(exc).__name__}: {exc}") from exc


def _record_arrays(values: list[Any], enc: Encoding, operator: str) -> list[pa.Array]:
    assert enc.type_info is not None
    fields = enc.arrow_fields()
    if enc.shape == "scalar":
        conv = python_to_arrow(enc.type_info)
        column = values if conv is None else [None if v is None else conv(v) for v in values]
        return [checked_array(column, fields[0].type, operator, enc, 0)]
    width = len(enc.columns)
    convs = [python_to_arrow(t) for t in enc.field_types()]
    plain = {tuple, named_row_class(enc.columns)} if enc.shape == "row" else {tuple}
    if values and set(map(type, values)) <= plain and set(map(len, values)) == {width}:
        columns: list[list[Any]] = [list(c) for c in zip(*values)]
    else:
        columns = [[] for _ in range(width)]
        appends = [c.append for c in columns]
        for value in values:
            parts = (None,) * width if value is None else fields_of(value, enc.columns, operator)
            for append, x in zip(appends, parts):
                append(x)
    return [checked_array(c if conv is None else [None if x is None else conv(x) for x in c],
                          f.type, operator, enc, i)
            for i, (c, conv, f) in enumerate(zip(columns, convs, fields))]


def output_check(output_type: Optional[TypeInformation], enc: Encoding, operator: str
                 ) -> Optional[Callable[[list[Any]], list[Any]]]:
    """For records that reach the driver pickled (collect, print) although their operator
    declares an output_type Spark can hold: a check of a list of them by the rules typed
    columns are built with, so every sink raises the same OutputTypeError; None when there
    is nothing to check."""
    if enc.typed or output_type is None or not is_spark_mappable(output_type):
        return None
    typed = typed_encoding(output_type)

    def check(records: list[Any]) -> list[Any]:
        for i in range(0, len(records), 8192):
            record_arrays(records[i:i + 8192], typed, operator)
        return records

    return check


def fields_of(value: Any, names: tuple[str, ...], operator: str = "") -> tuple[Any, ...]:
    """The field values of a record for the typed columns ``names``."""
    where = f"operator {operator!r}: " if operator else ""
    if isinstance(value, Row) and value._fields is not None:
        fields = value._fields
        if fields == names:
            return value
        if set(fields) >= set(names):
            return tuple(value[n] for n in names)
    if isinstance(value, (tuple, list)):
        if len(value) != len(names):
            raise OutputTypeError(
                f"{where}record {value!r:.80} has {len(value)} fields but the declared "
                f"output_type has {len(names)} ({', '.join(names)})"
            )
        return tuple(value)
    if isinstance(value, dict):
        return tuple(value.get(n) for n in names)
    raise OutputTypeError(
        f"{where}record {value!r:.80} of type {type(value).__name__} does not match the "
        f"declared output_type with fields ({', '.join(names)})"
    )
