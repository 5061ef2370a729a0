"""JSON text to and from ``Row``s of a ``Types.ROW``/``ROW_NAMED`` type: the conversions behind
PyFlink's ``JsonRowDeserializationSchema`` and ``JsonRowSerializationSchema``.

A JSON object's members are matched to the row's fields by name (other members are ignored);
a value must be of its field's type (the table in the docs' Kafka page), else the text is a
:class:`SerializationError`. Plain Python: the readers and writers run inside the job's
Python passes on executors.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from typing import Any

from .exceptions import SerializationError
from .row import Row, named_row_class
from .typeinfo import (
    ElementTypeInfo,
    FieldsTypeInfo,
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    TypeInformation,
)

__all__ = ["json_type_problems", "json_row_reader", "json_row_writer"]

_INTEGERS = {"BYTE": 8, "SHORT": 16, "INT": 32, "LONG": 64}
_SCALARS = {"STRING", "CHAR", "BOOLEAN", "BIG_INT", "FLOAT", "DOUBLE", "BIG_DEC", "SQL_DATE",
            "SQL_TIME", "SQL_TIMESTAMP", *_INTEGERS}
_ARRAYS = {"LIST", "BASIC_ARRAY", "OBJECT_ARRAY", "PRIMITIVE_ARRAY"}


def json_type_problems(type_info: TypeInformation, path: str = "") -> list[str]:
    """What of ``type_info`` (a ROW type) has no JSON mapping, as ``field: type`` strings.

    Args:
        type_info: The row type.
        path: The field path so far (for nested rows).

    Returns:
        The problems; empty when every field maps.
    """
    name = getattr(type_info, "type_name", None)
    if name == "ROW" and isinstance(type_info, FieldsTypeInfo):
        problems = []
        for field, t in zip(type_info.get_field_names(), type_info.get_field_types()):
            problems += json_type_problems(t, f"{path}.{field}" if path else field)
        return problems
    if name in _SCALARS:
        return []
    if name in _ARRAYS and isinstance(type_info, (PrimitiveArrayTypeInfo, ElementTypeInfo)):
        element = type_info.element_type
        if name == "PRIMITIVE_ARRAY" and element.type_name == "BYTE":
            return [f"{path}: {type_info!r} (bytes have no JSON form)"]
        return json_type_problems(element, f"{path}[]")
    if isinstance(type_info, MapTypeInfo):
        if type_info.key_type.type_name != "STRING":
            return [f"{path}: {type_info!r} (JSON object keys are strings: use a STRING key)"]
        return json_type_problems(type_info.value_type, f"{path}{{}}")
    return [f"{path or 'the record'}: {type_info!r}"]


def _reader(t: TypeInformation, path: str, fail_on_missing: bool) -> Callable[[Any], Any]:
    name = t.type_name

    def bad(value: Any) -> SerializationError:
        shown = str(value) if isinstance(value, decimal.Decimal) else json.dumps(value)
        if not path:
            return SerializationError(f"the JSON value {shown[:80]} is not an object")
        return SerializationError(f"field {path}: {shown[:80]} is not a {t!r} value")

    if name == "ROW" and isinstance(t, FieldsTypeInfo):
        names = t.get_field_names()
        fields = [(n, _reader(ft, f"{path}.{n}" if path else n, fail_on_missing))
                  for n, ft in zip(names, t.get_field_types())]
        cls = named_row_class(tuple(names))

        def row(value: Any) -> Row:
            if not isinstance(value, dict):
                raise bad(value)
            out: list[Any] = []
            for field, read in fields:
                if field not in value:
                    if fail_on_missing:
                        raise SerializationError(
                            f"could not find field {field!r}"
                            f"{f' of {path}' if path else ''} in the JSON object")
                    out.append(None)
                else:
                    item = value[field]
                    out.append(None if item is None else read(item))
            return tuple.__new__(cls, out)

        return row
    if name in ("STRING", "CHAR"):
        def text(value: Any) -> str:
            if not isinstance(value, str):
                raise bad(value)
            return value
        return text
    if name == "BOOLEAN":
        def boolean(value: Any) -> bool:
            if not isinstance(value, bool):
                raise bad(value)
            return value
        return boolean
    if name in _INTEGERS or name == "BIG_INT":
        bits = _INTEGERS.get(name)

        def integer(value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad(value)
            if bits is not None and not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
                raise bad(value)
            return value
        return integer
    if name in ("FLOAT", "DOUBLE"):
        def number(value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
                raise bad(value)
            return float(value)
        return number
    if name == "BIG_DEC":
        def dec(value: Any) -> decimal.Decimal:
            if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
                raise bad(value)
            return decimal.Decimal(value)
        return dec
    if name in ("SQL_DATE", "SQL_TIME", "SQL_TIMESTAMP"):
        parse = {"SQL_DATE": dt.date.fromisoformat, "SQL_TIME": dt.time.fromisoformat,
                 "SQL_TIMESTAMP": _timestamp}[name]

        def temporal(value: Any) -> Any:
            if not isinstance(value, str):
                raise bad(value)
            try:
                return parse(value)
            except ValueError:
                raise bad(value) from None
        return temporal
    if name in _ARRAYS and isinstance(t, (PrimitiveArrayTypeInfo, ElementTypeInfo)):
        element = _reader(t.element_type, f"{path}[]", fail_on_missing)

        def array(value: Any) -> list[Any]:
            if not isinstance(value, list):
                raise bad(value)
            return [None if v is None else element(v) for v in value]
        return array
    if isinstance(t, MapTypeInfo):
        entry = _reader(t.value_type, f"{path}{{}}", fail_on_missing)

        def mapping(value: Any) -> dict[str, Any]:
            if not isinstance(value, dict):
                raise bad(value)
            return {k: None if v is None else entry(v) for k, v in value.items()}
        return mapping
    raise SerializationError(f"field {path}: {t!r} has no JSON mapping")


def _timestamp(text: str) -> dt.datetime:
    """RFC 3339 (``2024-05-01T12:00:00.250Z``, or with an offset) -> naive UTC datetime."""
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def json_row_reader(type_info: TypeInformation, fail_on_missing_field: bool = False
                    ) -> Callable[[str], Row]:
    """A function from JSON text (an object) to a ``Row`` of ``type_info``.

    Args:
        type_info: The ROW type (:func:`json_type_problems` empty).
        fail_on_missing_field: A field absent from the object is an error instead of None.

    Returns:
        The reader; it raises :class:`SerializationError` for text that is not a JSON object
        of the type.
    """
    read = _reader(type_info, "", fail_on_missing_field)

    def reader(text: str) -> Row:
        try:
            value = json.loads(text, parse_float=decimal.Decimal)
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"not JSON ({exc}): {str(text)[:80]!r}") from None
        return read(value)

    return reader


def _key_text(key: Any) -> str:
    """A JSON object key as ``json.dumps`` writes a dict key (a str as is; an int, float,
    bool or None converted to text)."""
    return json.dumps({key: None}, allow_nan=False)[1:-len(": null}")]


def _decimal_text(value: Any) -> str:
    """A BIG_DEC value's exact digits (an int's too)."""
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{value!r} is not a finite decimal")


def _writer(t: TypeInformation) -> Callable[[Any], str]:
    """The function from a value of ``t`` (not None) to its JSON text."""
    name = t.type_name

    def text(write: Callable[[Any], str], value: Any) -> str:
        return "null" if value is None else write(value)

    if name == "ROW" and isinstance(t, FieldsTypeInfo):
        keys = [json.dumps(n) for n in t.get_field_names()]
        fields = [_writer(ft) for ft in t.get_field_types()]

        def row(value: Any) -> str:
            if len(value) != len(keys):
                raise SerializationError(f"{value!r} has {len(value)} fields, {t!r} {len(keys)}")
            return "{" + ",".join(f"{k}:{text(w, v)}" for k, w, v in zip(keys, fields, value)) + "}"
        return row
    if name in _ARRAYS and isinstance(t, (PrimitiveArrayTypeInfo, ElementTypeInfo)):
        element = _writer(t.element_type)
        return lambda value: "[" + ",".join(text(element, v) for v in value) + "]"
    if isinstance(t, MapTypeInfo):
        entry = _writer(t.value_type)
        return lambda value: "{" + ",".join(f"{_key_text(k)}:{text(entry, v)}"
                                            for k, v in value.items()) + "}"
    if name == "BIG_DEC":
        return _decimal_text
    if name in ("SQL_DATE", "SQL_TIME"):
        return lambda value: json.dumps(value.isoformat())
    if name == "SQL_TIMESTAMP":
        return lambda value: json.dumps(value.isoformat(
            timespec="milliseconds" if value.microsecond % 1000 == 0 else "microseconds") + "Z")
    return lambda value: json.dumps(value, allow_nan=False)


def json_row_writer(type_info: TypeInformation) -> Callable[[Any], str]:
    """A function from a ``Row`` (or tuple) of ``type_info`` to compact JSON text.

    Args:
        type_info: The ROW type (:func:`json_type_problems` empty).

    Returns:
        The writer; fields are written by the type's field names, None as ``null``.
    """
    write = _writer(type_info)

    def writer(value: Any) -> str:
        try:
            return write(value)
        except (TypeError, ValueError, AttributeError) as exc:
            raise SerializationError(f"{value!r} is not a {type_info!r} value: {exc}") from None

    return writer
