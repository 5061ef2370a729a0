"""Spark schema objects to ``TypeInformation`` (driver side: reads ``pyspark.sql.types``)."""

from __future__ import annotations

from typing import Any

from ..state_store.exceptions import GraphBuildError
from ..state_store.typeinfo import TypeInformation
from ..state_store.types import Types

__all__ = ["type_info_from_spark", "type_info_from_schema"]


def type_info_from_spark(dt: Any) -> TypeInformation:
    from pyspark.sql import types as T

    simple = {
        T.StringType: Types.STRING, T.LongType: Types.LONG, T.IntegerType: Types.INT,
        T.ShortType: Types.SHORT, T.ByteType: Types.BYTE, T.DoubleType: Types.DOUBLE,
        T.FloatType: Types.FLOAT, T.BooleanType: Types.BOOLEAN,
        T.TimestampType: Types.SQL_TIMESTAMP, T.TimestampNTZType: Types.SQL_TIMESTAMP,
    }
    for cls, make in simple.items():
        if isinstance(dt, cls):
            return make()
    if isinstance(dt, T.BinaryType):
        return Types.PRIMITIVE_ARRAY(Types.BYTE())
    if isinstance(dt, T.DateType) and hasattr(Types, "SQL_DATE"):
        return Types.SQL_DATE()
    if isinstance(dt, T.ArrayType):
        return Types.LIST(type_info_from_spark(dt.elementType))
    if isinstance(dt, T.MapType):
        return Types.MAP(type_info_from_spark(dt.keyType), type_info_from_spark(dt.valueType))
    if isinstance(dt, T.StructType):
        return type_info_from_schema(dt)
    if isinstance(dt, T.DecimalType) and dt.scale == 0 and hasattr(Types, "BIG_INT"):
        return Types.BIG_INT()
    raise GraphBuildError(f"Spark type {dt.simpleString()} is not supported as a record field")


def type_info_from_schema(schema: Any) -> TypeInformation:
    """ROW_NAMED type of a Spark StructType."""
    names = [f.name for f in schema.fields]
    return Types.ROW_NAMED(names, [type_info_from_spark(f.dataType) for f in schema.fields])
