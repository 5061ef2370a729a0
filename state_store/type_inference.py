"""``infer_type_info``: the ``TypeInformation`` of a Python value, where one can be inferred."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import Any

from .row import Row
from .typeinfo import (
    BasicTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)

__all__ = ["infer_type_info"]


_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1


def infer_type_info(value: Any) -> TypeInformation | None:
    """Best-effort type of a Python value; None when it cannot be inferred.

    str -> STRING, bool -> BOOLEAN, int -> LONG (BIG_INT outside 64 bits),
    float -> DOUBLE, bytes/bytearray -> PRIMITIVE_ARRAY(BYTE), datetime ->
    SQL_TIMESTAMP, date -> SQL_DATE, time -> SQL_TIME, Decimal -> BIG_DEC,
    ``Row`` (or any tuple with ``__fields__``, like PySpark's Row) -> ROW_NAMED
    (ROW when unnamed), other tuple -> TUPLE of the inferred fields. None,
    lists, dicts and other objects (and tuples containing them) give None.

    Args:
        value: The value.

    Returns:
        Its type, or None.
    """
    if isinstance(value, bool):
        return BasicTypeInfo("BOOLEAN")
    if isinstance(value, str):
        return BasicTypeInfo("STRING")
    if isinstance(value, int):
        if _LONG_MIN <= value <= _LONG_MAX:
            return BasicTypeInfo("LONG")
        return BasicTypeInfo("BIG_INT")
    if isinstance(value, float):
        return BasicTypeInfo("DOUBLE")
    if isinstance(value, (bytes, bytearray)):
        return PrimitiveArrayTypeInfo(BasicTypeInfo("BYTE"))
    if isinstance(value, _dt.datetime):
        return BasicTypeInfo("SQL_TIMESTAMP")
    if isinstance(value, _dt.date):
        return BasicTypeInfo("SQL_DATE")
    if isinstance(value, _dt.time):
        return BasicTypeInfo("SQL_TIME")
    if isinstance(value, Decimal):
        return BasicTypeInfo("BIG_DEC")
    if isinstance(value, tuple):
        fields = [infer_type_info(v) for v in value]
        if any(f is None for f in fields):
            return None
        types: list[TypeInformation] = [f for f in fields if f is not None]
        if isinstance(value, Row):
            names = value.get_field_names()
            return RowTypeInfo(types, names)
        spark_names = getattr(value, "__fields__", None)
        if isinstance(spark_names, (list, tuple)) and len(spark_names) == len(types):
            return RowTypeInfo(types, [str(n) for n in spark_names])
        return TupleTypeInfo(types)
    return None
