"""``GenericKeySerializer``: keys that have no declared type.

A key selector may return any of None, bool, int, float, str, bytes, dates,
datetimes and (nested) tuples or Rows of these. Each value is written as a tag
byte and an order-preserving body, so equal keys give equal bytes (keys are
grouped by their bytes) and the byte order is a stable total order across types.
Lists, sets and dicts are written structurally too (sets and dicts in the order of
their elements' bytes, so equal ones give equal bytes in every process); any other
picklable value is keyed by its pickled bytes, as PyFlink keys a Python key.
"""

from __future__ import annotations

import datetime as _dt
import operator
import pickle
from typing import Any

from ..exceptions import SerializationError
from ..row import Row, make_row
from .base import TypeSerializer
from .encoding import (
    DECODE_ERRORS,
    ESC_ZERO,
    LONG_OFFSET,
    TAG_U64,
    TERMINATOR,
    U64,
    bad_data,
    check_end,
    datetime_to_micros,
    decode_ordered_int,
    describe,
    encode_ordered_int,
    from_utf8,
    micros_to_datetime,
    read_escaped,
)
from .lexicographic import LexicographicDoubleSerializer
from .registry import Stateless, registered

__all__ = ["GenericKeySerializer"]


# Tags. Byte order across types follows the tag order:
#   None < False < True < int < float < str < bytes < date < naive datetime
#   < aware datetime < tuple < Row < list < set < frozenset < dict < pickled.
# 0x00 ends a tuple/Row, so a shorter tuple sorts before its extensions.
_G_END = 0x00
_G_NONE = 0x01
_G_FALSE = 0x02
_G_TRUE = 0x03
_G_INT = 0x04  # 0x04 big negative, 0x05 int64, 0x06 big positive
_G_INT64 = 0x05
_G_FLOAT = 0x08
_G_STR = 0x09
_G_BYTES = 0x0A
_G_DATE = 0x0B
_G_DATETIME = 0x0C
_G_DATETIME_TZ = 0x0D
_G_TUPLE = 0x0E
_G_ROW = 0x0F
_G_LIST = 0x10
_G_SET = 0x11
_G_FROZENSET = 0x12
_G_DICT = 0x13
_G_PICKLED = 0x14
#: pickle protocol of keys of other types: fixed, so a key's bytes stay the same across
#: Python versions (savepoints hold them)
_PICKLE_PROTOCOL = 4

_B_NONE = bytes((_G_NONE,))
_B_FALSE = bytes((_G_FALSE,))
_B_TRUE = bytes((_G_TRUE,))
_B_STR = bytes((_G_STR,))
_B_FLOAT = bytes((_G_FLOAT,))
_B_BYTES = bytes((_G_BYTES,))
_B_TUPLE = bytes((_G_TUPLE,))
_B_ROW = bytes((_G_ROW,))
_B_END = bytes((_G_END,))
_B_LIST = bytes((_G_LIST,))
_B_DICT = bytes((_G_DICT,))
_B_PICKLED = bytes((_G_PICKLED,))
_LEX_DOUBLE = LexicographicDoubleSerializer.INSTANCE
_UTC = _dt.timezone.utc
#: the str tag and terminator as text (both ASCII) for :meth:`GenericKeySerializer.serialize_many`
_S_STR = _B_STR.decode("ascii")
_S_TERMINATOR = TERMINATOR.decode("ascii")


def _escape(raw: bytes) -> bytes:
    return raw.replace(b"\x00", ESC_ZERO) + TERMINATOR


def _utf8(value: str) -> bytes:
    """UTF-8; lone surrogates pass through (strict first: same bytes, faster)."""
    try:
        return value.encode()
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


class GenericKeySerializer(Stateless, TypeSerializer[Any]):
    """Deterministic, prefix-free, tagged encoding of keys that have no declared type.

    Supports None, bool, int (any size), float, str, bytes, datetime.date,
    datetime.datetime and tuples / ``Row``s of these, nested; lists, sets, frozensets and
    dicts of supported values (sets and dicts by their elements' bytes, so equal ones are
    one key in every process); and any other picklable value by its pickled bytes
    (PyFlink's rule: two such values are one key when their pickles are equal). Each value is a tag
    byte followed by an order-preserving body, so the byte order is a stable
    total order: first by type (None < bool < int < float < str < bytes < date
    < naive datetime < aware datetime < tuple < Row), then by value (floats:
    -inf < ... < inf < NaN, -0.0 == 0.0; tuples element-wise, shorter first;
    Rows by values, then field names).

    The type is part of the key: ``1``, ``1.0`` and ``True`` are three keys, and
    so are ``(1, 2)`` and ``Row(1, 2)``. Subclasses are stored as their base
    (IntEnum -> int, namedtuple and PySpark's Row -> tuple); other integral
    numbers (e.g. numpy ints) as int, numpy floats/bools as float/bool. Aware datetimes are stored as UTC and come back with
    ``tzinfo=timezone.utc``.
    """

    NAME = "GenericKeySerializer"
    is_deterministic = True

    def serialize_many(self, values: list[Any]) -> list[bytes]:
        """:meth:`serialize` of each value; a list of plain strings (the common key) is
        encoded with C-level maps instead of one call per key."""
        if set(map(type, values)) == {str} and "\x00" not in "".join(values):
            # tag and terminator are ASCII: their UTF-8 is themselves, so each key is one
            # encode of the framed string (no NUL to escape)
            try:
                return [(_S_STR + value + _S_TERMINATOR).encode() for value in values]
            except UnicodeEncodeError:  # a lone surrogate: the per-key path handles it
                pass
        return list(map(self.serialize, values))

    def serialize(self, value: Any) -> bytes:
        t = type(value)
        if t is str:
            try:
                raw = value.encode()
            except UnicodeEncodeError:
                raw = value.encode("utf-8", "surrogatepass")
            return b"".join((_B_STR, raw.replace(b"\x00", ESC_ZERO), TERMINATOR))
        if t is int:
            if -LONG_OFFSET <= value < LONG_OFFSET:
                return TAG_U64.pack(_G_INT64, value + LONG_OFFSET)
            return encode_ordered_int(value, _G_INT)
        parts: list[bytes] = []
        if t is tuple:  # common composite key: flat tuple of str / int
            append = parts.append
            append(_B_TUPLE)
            for v in value:
                tv = type(v)
                if tv is str:
                    try:
                        raw = v.encode()
                    except UnicodeEncodeError:
                        raw = v.encode("utf-8", "surrogatepass")
                    append(_B_STR)
                    append(raw.replace(b"\x00", ESC_ZERO))
                    append(TERMINATOR)
                elif tv is int and -LONG_OFFSET <= v < LONG_OFFSET:
                    append(TAG_U64.pack(_G_INT64, v + LONG_OFFSET))
                else:
                    self._write(v, parts, value)
            append(_B_END)
            return b"".join(parts)
        self._write(value, parts, value)
        return b"".join(parts)

    serialize_nested = serialize

    def _write(self, value: Any, out: list[bytes], key: Any) -> None:
        t = type(value)
        if t is str:
            out.append(_B_STR)
            out.append(_escape(_utf8(value)))
        elif t is int:
            out.append(encode_ordered_int(value, _G_INT))
        elif t is tuple:
            out.append(_B_TUPLE)
            for v in value:
                self._write(v, out, key)
            out.append(_B_END)
        elif value is None:
            out.append(_B_NONE)
        elif t is bool:
            out.append(_B_TRUE if value else _B_FALSE)
        elif t is float:
            out.append(_B_FLOAT + _LEX_DOUBLE.serialize(value))
        elif t is bytes:
            out.append(_B_BYTES)
            out.append(_escape(value))
        elif t is Row or t.__base__ is Row or isinstance(value, Row):  # named, kinded: subclasses
            self._write_row(value, out, key)
        elif t is _dt.datetime:
            self._write_datetime(value, out)
        elif t is _dt.date:
            out.append(TAG_U64.pack(_G_DATE, value.toordinal() + LONG_OFFSET))
        else:
            self._write_other(value, out, key)

    def _write_row(self, value: Row, out: list[bytes], key: Any) -> None:
        out.append(_B_ROW)
        for v in value:
            self._write(v, out, key)
        out.append(_B_END)
        names = value._fields
        if names is None:
            out.append(_B_END)
        else:
            # 0x01 then each name escaped + terminated: unnamed Rows sort first.
            out.append(b"\x01")
            out.extend(_escape(_utf8(n)) for n in names)

    def _write_datetime(self, value: _dt.datetime, out: list[bytes]) -> None:
        if value.tzinfo is None or value.utcoffset() is None:
            out.append(
                TAG_U64.pack(
                    _G_DATETIME, datetime_to_micros(value.replace(tzinfo=None)) + LONG_OFFSET
                )
            )
        else:
            out.append(TAG_U64.pack(_G_DATETIME_TZ, datetime_to_micros(value) + LONG_OFFSET))

    def _write_other(self, value: Any, out: list[bytes], key: Any) -> None:
        """Subclasses of the supported types and integral numbers (numpy ints)."""
        if isinstance(value, bool):
            out.append(_B_TRUE if value else _B_FALSE)
        elif isinstance(value, int):
            out.append(encode_ordered_int(int(value), _G_INT))
        elif isinstance(value, float):
            out.append(_B_FLOAT + _LEX_DOUBLE.serialize(float(value)))
        elif isinstance(value, str):
            out.append(_B_STR)
            out.append(_escape(_utf8(str.__str__(value))))
        elif isinstance(value, (bytes, bytearray, memoryview)):
            out.append(_B_BYTES)
            out.append(_escape(bytes(value)))
        elif isinstance(value, Row):
            self._write_row(value, out, key)
        elif isinstance(value, tuple):
            self._write(tuple(value), out, key)
        elif isinstance(value, _dt.datetime):
            self._write_datetime(value, out)
        elif isinstance(value, _dt.date):
            out.append(TAG_U64.pack(_G_DATE, value.toordinal() + LONG_OFFSET))
        elif getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy.bool_
            out.append(_B_TRUE if value else _B_FALSE)
        elif getattr(getattr(value, "dtype", None), "kind", None) == "f":  # numpy floats
            out.append(_B_FLOAT + _LEX_DOUBLE.serialize(float(value)))
        elif hasattr(type(value), "__index__"):  # numpy ints and other integral types
            out.append(encode_ordered_int(operator.index(value), _G_INT))
        elif isinstance(value, list):
            out.append(_B_LIST)
            for v in value:
                self._write(v, out, key)
            out.append(_B_END)
        elif isinstance(value, (set, frozenset)):
            # by the elements' bytes, not iteration order (which follows the process's hash seed)
            out.append(bytes((_G_FROZENSET if isinstance(value, frozenset) else _G_SET,)))
            out.extend(sorted(self._bytes_of(v, key) for v in value))
            out.append(_B_END)
        elif isinstance(value, dict):
            out.append(_B_DICT)
            for entry in sorted(self._bytes_of(k, key) + self._bytes_of(v, key)
                                for k, v in value.items()):
                out.append(entry)
            out.append(_B_END)
        else:
            self._write_pickled(value, out, key)

    def _bytes_of(self, value: Any, key: Any) -> bytes:
        parts: list[bytes] = []
        self._write(value, parts, key)
        return b"".join(parts)

    @staticmethod
    def _write_pickled(value: Any, out: list[bytes], key: Any) -> None:
        """Any other value: its pickled bytes, as PyFlink keys a Python key (two values are
        one key when their pickles are equal)."""
        try:
            raw = pickle.dumps(value, protocol=_PICKLE_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - pickling runs the value's own code
            where = "" if value is key else f" inside key {describe(key)}"
            raise SerializationError(
                f"GenericKeySerializer cannot serialize a key value of type "
                f"{type(value).__name__!r}{where}: {describe(value)} cannot be pickled "
                f"({type(exc).__name__}: {exc}). Return a str/int/float/bytes/tuple key from "
                f"the key selector, or declare key_type with a deterministic type (e.g. "
                f"Types.STRING(), Types.LONG(), Types.TUPLE([...]))."
            ) from exc
        out.append(_B_PICKLED)
        out.append(_escape(raw))

    def deserialize(self, data: bytes) -> Any:
        try:
            tag = data[0]
            if tag == _G_STR and data.endswith(TERMINATOR):
                body = data[1:-2]
                if 0 not in body:
                    return from_utf8(body)
            if tag == _G_INT64 and len(data) == 9:
                return U64.unpack_from(data, 1)[0] - LONG_OFFSET
            value, pos = self._read(data, 0)
        except SerializationError as exc:
            raise bad_data(self, data, str(exc)) from exc
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"{type(exc).__name__}: {exc}") from exc
        check_end(self, data, pos)
        return value

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Any, int]:
        return self._read(data, pos)

    def _read(self, data: bytes, pos: int) -> tuple[Any, int]:
        tag = data[pos]
        pos += 1
        if tag == _G_STR:
            raw, pos = read_escaped(data, pos)
            return from_utf8(raw), pos
        if tag == _G_INT64:
            return U64.unpack_from(data, pos)[0] - LONG_OFFSET, pos + 8
        if tag == _G_TUPLE or tag == _G_ROW:
            values = []
            while data[pos] != _G_END:
                v, pos = self._read(data, pos)
                values.append(v)
            pos += 1
            if tag == _G_TUPLE:
                return tuple(values), pos
            marker = data[pos]
            pos += 1
            if marker == _G_END:
                return make_row(None, values), pos
            if marker != 0x01:
                raise ValueError(f"bad Row names marker 0x{marker:02x} at offset {pos - 1}")
            names = []
            for _ in values:
                raw, pos = read_escaped(data, pos)
                names.append(from_utf8(raw))
            return make_row(names, values), pos
        if tag == _G_NONE:
            return None, pos
        if tag == _G_FALSE:
            return False, pos
        if tag == _G_TRUE:
            return True, pos
        if _G_INT <= tag <= _G_INT + 2:
            return decode_ordered_int(data, pos - 1, _G_INT)
        if tag == _G_FLOAT:
            return _LEX_DOUBLE.deserialize_nested(data, pos)
        if tag == _G_BYTES:
            return read_escaped(data, pos)
        if tag == _G_DATE:
            return _dt.date.fromordinal(U64.unpack_from(data, pos)[0] - LONG_OFFSET), pos + 8
        if tag == _G_DATETIME:
            return micros_to_datetime(U64.unpack_from(data, pos)[0] - LONG_OFFSET), pos + 8
        if tag == _G_DATETIME_TZ:
            micros = U64.unpack_from(data, pos)[0] - LONG_OFFSET
            return micros_to_datetime(micros).replace(tzinfo=_UTC), pos + 8
        if _G_LIST <= tag <= _G_DICT:
            items = []
            while data[pos] != _G_END:
                v, pos = self._read(data, pos)
                items.append(v)
            pos += 1
            if tag == _G_LIST:
                return items, pos
            if tag == _G_DICT:
                return dict(zip(items[0::2], items[1::2])), pos
            return (set(items) if tag == _G_SET else frozenset(items)), pos
        if tag == _G_PICKLED:
            raw, pos = read_escaped(data, pos)
            return pickle.loads(raw), pos
        raise ValueError(f"unknown key tag 0x{tag:02x} at offset {pos - 1}")


registered(GenericKeySerializer)
