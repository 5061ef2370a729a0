"""Mapping between ``TypeInformation`` and Arrow types / Spark DDL strings, and value conversion.

Runs on executors too (no ``pyspark.sql``); the mapping from Spark schema objects is
``spark_io/schema.py`` (driver side)."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Optional

import pyarrow as pa

from ..state_store.exceptions import GraphBuildError
from ..state_store.row import Row, named_row_class
from ..state_store.typeinfo import (
    ElementTypeInfo,
    FieldsTypeInfo,
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    TypeInformation,
)

__all__ = [
    "is_spark_mappable",
    "spark_ddl_type",
    "arrow_type",
    "column_names",
    "python_from_arrow",
    "python_to_arrow",
    "python_from_spark",
]

#: builds a tuple or a Row of a named class from a list of values
_NEW = tuple.__new__

_BASIC_DDL = {
    "STRING": "string", "LONG": "bigint", "INT": "int", "SHORT": "smallint", "BYTE": "tinyint",
    "DOUBLE": "double", "FLOAT": "float", "BOOLEAN": "boolean", "SQL_TIMESTAMP": "timestamp",
    "BIG_INT": "decimal(38,0)", "SQL_DATE": "date",
}
_BASIC_ARROW = {
    "STRING": pa.string(), "LONG": pa.int64(), "INT": pa.int32(), "SHORT": pa.int16(),
    "BYTE": pa.int8(), "DOUBLE": pa.float64(), "FLOAT": pa.float32(), "BOOLEAN": pa.bool_(),
    "SQL_TIMESTAMP": pa.timestamp("us", tz="UTC"), "BIG_INT": pa.decimal128(38, 0),
    "SQL_DATE": pa.date32(),
}
_ARRAYS = ("PRIMITIVE_ARRAY", "BASIC_ARRAY", "LIST", "OBJECT_ARRAY")


def _elem(t: TypeInformation) -> TypeInformation:
    if isinstance(t, (PrimitiveArrayTypeInfo, ElementTypeInfo)):
        return t.element_type
    raise GraphBuildError(f"type {t!r} has no element type")


def _is_bytes(t: TypeInformation) -> bool:
    return t.type_name == "PRIMITIVE_ARRAY" and _elem(t).type_name == "BYTE"


def is_spark_mappable(t: TypeInformation) -> bool:
    """True when records of ``t`` can be Spark columns (not pickled)."""
    try:
        spark_ddl_type(t)
        return True
    except GraphBuildError:
        return False


def spark_ddl_type(t: TypeInformation) -> str:
    """Spark DDL type of ``t``; GraphBuildError for types Spark cannot hold."""
    name = t.type_name
    if name in _BASIC_DDL:
        return _BASIC_DDL[name]
    if _is_bytes(t):
        return "binary"
    if name in _ARRAYS:
        return f"array<{spark_ddl_type(_elem(t))}>"
    if isinstance(t, MapTypeInfo):
        return f"map<{spark_ddl_type(t.key_type)},{spark_ddl_type(t.value_type)}>"
    if isinstance(t, FieldsTypeInfo):
        fields = ", ".join(f"`{n}`: {spark_ddl_type(ft)}"
                           for n, ft in zip(t.get_field_names(), t.get_field_types()))
        return f"struct<{fields}>"
    raise GraphBuildError(f"type {t!r} has no Spark column type (records of it travel pickled)")


def arrow_type(t: TypeInformation) -> pa.DataType:
    name = t.type_name
    if name in _BASIC_ARROW:
        return _BASIC_ARROW[name]
    if _is_bytes(t):
        return pa.binary()
    if name in _ARRAYS:
        return pa.list_(arrow_type(_elem(t)))
    if isinstance(t, MapTypeInfo):
        return pa.map_(arrow_type(t.key_type), arrow_type(t.value_type))
    if isinstance(t, FieldsTypeInfo):
        return pa.struct([pa.field(n, arrow_type(ft))
                          for n, ft in zip(t.get_field_names(), t.get_field_types())])
    raise GraphBuildError(f"type {t!r} has no Arrow type")


def column_names(t: TypeInformation) -> list[str]:
    """Top-level column names of a typed stream: TUPLE f0.., ROW_NAMED its names, else 'value'."""
    if isinstance(t, FieldsTypeInfo):
        return list(t.get_field_names())
    return ["value"]


def _needs_conversion(t: TypeInformation) -> bool:
    name = t.type_name
    if name in ("SQL_TIMESTAMP", "TUPLE", "ROW", "ROW_NAMED", "MAP"):
        return True
    if name in _ARRAYS and not _is_bytes(t):
        return _needs_conversion(_elem(t)) or name == "LIST"
    return False


def python_from_arrow(t: TypeInformation) -> Optional[Callable[[Any], Any]]:
    """Converter from ``to_pylist()`` values to the record's Python values (None = identity)."""
    if not _needs_conversion(t):
        return None
    name = t.type_name
    if name == "SQL_TIMESTAMP":
        return lambda v: v.astimezone(_dt.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
    if isinstance(t, FieldsTypeInfo):
        names = list(t.get_field_names())
        convs = [python_from_arrow(ft) for ft in t.get_field_types()]
        row_class = named_row_class(tuple(names)) if name != "TUPLE" else tuple

        def conv_struct(v: Any) -> Any:
            vals = [v.get(n) for n in names] if isinstance(v, dict) else list(v)
            return _NEW(row_class, [x if c is None or x is None else c(x)
                                    for x, c in zip(vals, convs)])

        return conv_struct
    if isinstance(t, MapTypeInfo):
        kc = python_from_arrow(t.key_type)
        vc = python_from_arrow(t.value_type)

        def conv_map(v: Any) -> Any:
            items = v.items() if isinstance(v, dict) else v
            return {(k if kc is None or k is None else kc(k)): (x if vc is None or x is None else vc(x))
                    for k, x in items}

        return conv_map
    ec = python_from_arrow(_elem(t))
    return lambda v: [x if ec is None or x is None else ec(x) for x in v]


def python_to_arrow(t: TypeInformation) -> Optional[Callable[[Any], Any]]:
    """Converter from record values to values ``pa.array`` accepts (None = identity)."""
    name = t.type_name
    if name == "SQL_TIMESTAMP":
        return lambda v: v.replace(tzinfo=_dt.timezone.utc) if isinstance(v, _dt.datetime) and v.tzinfo is None else v
    if isinstance(t, FieldsTypeInfo):
        names = list(t.get_field_names())
        convs = [python_to_arrow(ft) for ft in t.get_field_types()]

        by_name = frozenset(names)

        def conv_struct(v: Any) -> Any:
            fields = v._fields if isinstance(v, Row) else None
            if fields is not None and list(fields) != names and by_name <= set(fields):
                vals = [v[n] for n in names]
            elif isinstance(v, dict):
                vals = [v.get(n) for n in names]
            else:
                vals = list(v)
            return {n: (x if c is None or x is None else c(x)) for n, x, c in zip(names, vals, convs)}

        return conv_struct
    if isinstance(t, MapTypeInfo):
        kc = python_to_arrow(t.key_type)
        vc = python_to_arrow(t.value_type)
        if kc is None and vc is None:
            return lambda v: list(v.items())
        return lambda v: [(k if kc is None else kc(k), x if vc is None or x is None else vc(x))
                          for k, x in v.items()]
    if name in _ARRAYS and not _is_bytes(t):
        ec = python_to_arrow(_elem(t))
        if ec is None:
            return None
        return lambda v: [x if x is None else ec(x) for x in v]
    return None


def python_from_spark(t: TypeInformation, shape: str, columns: tuple[str, ...]) -> Callable[[Any], Any]:
    """Converter from a collected Spark Row (payload columns only) to the record value."""
    if shape == "scalar":
        conv = _from_spark_value(t)
        return lambda row: conv(row[0])
    if not isinstance(t, FieldsTypeInfo):
        raise GraphBuildError(f"a {shape!r} record needs a type with fields, got {t!r}")
    convs = [_from_spark_value(ft) for ft in t.get_field_types()]
    names = list(columns)
    if shape == "row":
        row_names = t.get_field_names()
        row_class = named_row_class(tuple(row_names) if len(row_names) == len(names)
                                    else tuple(names))
        return lambda row: _NEW(row_class, [c(v) for c, v in zip(convs, row)])
    return lambda row: tuple(c(v) for c, v in zip(convs, row))


def _from_spark_value(t: TypeInformation) -> Callable[[Any], Any]:
    name = t.type_name
    if isinstance(t, FieldsTypeInfo):
        names = list(t.get_field_names())
        convs = [_from_spark_value(ft) for ft in t.get_field_types()]
        row_class = named_row_class(tuple(names)) if name != "TUPLE" else tuple

        def conv(v: Any) -> Any:
            if v is None:
                return None
            return _NEW(row_class, [c(x) for c, x in zip(convs, v)])

        return conv
    if _is_bytes(t):
        return lambda v: None if v is None else bytes(v)
    if name in _ARRAYS:
        ec = _from_spark_value(_elem(t))
        return lambda v: None if v is None else [ec(x) for x in v]
    if isinstance(t, MapTypeInfo):
        kc, vc = _from_spark_value(t.key_type), _from_spark_value(t.value_type)
        return lambda v: None if v is None else {kc(k): vc(x) for k, x in v.items()}
    return lambda v: v
