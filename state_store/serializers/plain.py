"""Plain serializers: compact, fast encodings of single values, for state values.

Numbers are fixed-width big-endian, top-level strings and bytes are raw (length
prefixed when nested), dates and times count from the epoch, ``PickleSerializer``
takes anything picklable. Their byte order is not their value order (and
``DoubleSerializer``/``FloatSerializer`` keep the exact IEEE bits, ``-0.0``
included), so keys use the lexicographic serializers instead.
"""

from __future__ import annotations

import datetime as _dt
import pickle
import struct
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from .base import TypeSerializer
from .encoding import (
    DECODE_ERRORS,
    EPOCH_DATE_ORDINAL,
    SMALL_VARINTS,
    as_bytes,
    bad_data,
    bad_value,
    datetime_to_micros,
    from_utf8,
    micros_to_datetime,
    micros_to_time,
    read_varint,
    time_to_micros,
    varint,
)
from .registry import Stateless, registered

__all__ = [
    "LongSerializer",
    "IntSerializer",
    "ShortSerializer",
    "ByteSerializer",
    "DoubleSerializer",
    "FloatSerializer",
    "BooleanBase",
    "BooleanSerializer",
    "StringSerializer",
    "BytesSerializer",
    "BigIntSerializer",
    "BigDecimalSerializer",
    "TimestampSerializer",
    "DateSerializer",
    "TimeSerializer",
    "PickleSerializer",
    "FIXED_WIDTH_CODES",
]


class _FixedStructSerializer(Stateless, TypeSerializer[Any]):
    """Fixed-width big-endian number; nested form has no length prefix."""

    _struct: ClassVar[struct.Struct]
    _what: ClassVar[str]

    def serialize(self, value: Any) -> bytes:
        try:
            return self._struct.pack(value)
        except (struct.error, TypeError, OverflowError) as exc:
            raise bad_value(self, value, f"expected {self._what}", exc) from exc

    def deserialize(self, data: bytes) -> Any:
        try:
            return self._struct.unpack(data)[0]
        except struct.error as exc:
            raise bad_data(self, data, f"expected exactly {self._struct.size} bytes") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Any, int]:
        try:
            return self._struct.unpack_from(data, pos)[0], pos + self._struct.size
        except struct.error as exc:
            raise bad_data(self, data, f"truncated at offset {pos}") from exc


@registered
class LongSerializer(_FixedStructSerializer):
    """64-bit signed int, 8 bytes big-endian."""

    NAME = "LongSerializer"
    _struct = struct.Struct(">q")
    _what = "an int in [-2**63, 2**63 - 1]"


@registered
class IntSerializer(_FixedStructSerializer):
    """32-bit signed int, 4 bytes big-endian."""

    NAME = "IntSerializer"
    _struct = struct.Struct(">i")
    _what = "an int in [-2**31, 2**31 - 1]"


@registered
class ShortSerializer(_FixedStructSerializer):
    """16-bit signed int, 2 bytes big-endian."""

    NAME = "ShortSerializer"
    _struct = struct.Struct(">h")
    _what = "an int in [-32768, 32767]"


@registered
class ByteSerializer(_FixedStructSerializer):
    """8-bit signed int, 1 byte."""

    NAME = "ByteSerializer"
    _struct = struct.Struct(">b")
    _what = "an int in [-128, 127]"


@registered
class DoubleSerializer(_FixedStructSerializer):
    """IEEE-754 double, 8 bytes big-endian, exact bits (-0.0 and NaN payloads kept)."""

    NAME = "DoubleSerializer"
    _struct = struct.Struct(">d")
    _what = "a float"


@registered
class FloatSerializer(_FixedStructSerializer):
    """IEEE-754 single, 4 bytes big-endian (Python floats are rounded to 32 bits)."""

    NAME = "FloatSerializer"
    _struct = struct.Struct(">f")
    _what = "a float within the 32-bit range"


_TRUE = b"\x01"
_FALSE = b"\x00"


class BooleanBase(Stateless):
    """bool as one byte 0x00/0x01: the body of the plain and the lexicographic boolean."""

    def serialize(self, value: Any) -> bytes:
        if value is True:
            return _TRUE
        if value is False:
            return _FALSE
        if isinstance(value, int) and value in (0, 1):
            return _TRUE if value else _FALSE
        raise bad_value(self, value, "expected a bool")

    def deserialize(self, data: bytes) -> bool:
        if data == _TRUE:
            return True
        if data == _FALSE:
            return False
        raise bad_data(self, data, "expected one byte 0x00 or 0x01")

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[bool, int]:
        try:
            b = data[pos]
        except IndexError as exc:
            raise bad_data(self, data, f"truncated at offset {pos}") from exc
        if b > 1:
            raise bad_data(self, data, f"bad boolean byte 0x{b:02x} at offset {pos}")
        return b == 1, pos + 1


@registered
class BooleanSerializer(BooleanBase, TypeSerializer[bool]):
    """bool as one byte 0x00/0x01."""

    NAME = "BooleanSerializer"

    def serialize_nested(self, value: Any) -> bytes:
        return self.serialize(value)


@registered
class StringSerializer(Stateless, TypeSerializer[str]):
    """UTF-8 (lone surrogates allowed via ``surrogatepass``); nested: varint length + bytes."""

    NAME = "StringSerializer"

    def serialize(self, value: str) -> bytes:
        try:
            return value.encode()
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
        except AttributeError as exc:
            raise bad_value(self, value, "expected a str") from exc

    def deserialize(self, data: bytes) -> str:
        try:
            return data.decode()
        except UnicodeDecodeError:
            pass
        except AttributeError as exc:
            raise bad_data(self, data, "expected bytes") from exc
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise bad_data(self, data, "invalid UTF-8") from exc

    def serialize_nested(self, value: str) -> bytes:
        raw = self.serialize(value)
        n = len(raw)
        return (SMALL_VARINTS[n] if n < 128 else varint(n)) + raw

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[str, int]:
        n, pos = read_varint(data, pos)
        end = pos + n
        if end > len(data):
            raise bad_data(self, data, f"truncated string of {n} bytes at offset {pos}")
        try:
            return from_utf8(data[pos:end]), end
        except UnicodeDecodeError as exc:
            raise bad_data(self, data, f"invalid UTF-8 at offset {pos}") from exc



@registered
class BytesSerializer(Stateless, TypeSerializer[bytes]):
    """Raw bytes (bytearray/memoryview accepted, bytes returned); nested: varint length."""

    NAME = "BytesSerializer"

    def serialize(self, value: bytes) -> bytes:
        return as_bytes(self, value)

    def deserialize(self, data: bytes) -> bytes:
        return bytes(data)

    def serialize_nested(self, value: bytes) -> bytes:
        raw = as_bytes(self, value)
        return varint(len(raw)) + raw


@registered
class BigIntSerializer(Stateless, TypeSerializer[int]):
    """Arbitrary-size int as minimal big-endian two's complement."""

    NAME = "BigIntSerializer"

    def serialize(self, value: int) -> bytes:
        if not isinstance(value, int):
            raise bad_value(self, value, "expected an int")
        return value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True)

    def deserialize(self, data: bytes) -> int:
        if not data:
            raise bad_data(self, data, "empty")
        return int.from_bytes(data, "big", signed=True)


@registered
class BigDecimalSerializer(Stateless, TypeSerializer[Decimal]):
    """``decimal.Decimal`` as its exact string form. Not deterministic (1.0 vs 1.00)."""

    NAME = "BigDecimalSerializer"
    is_deterministic = False

    def serialize(self, value: Decimal) -> bytes:
        if not isinstance(value, Decimal):
            raise bad_value(self, value, "expected a decimal.Decimal")
        return str(value).encode("ascii")

    def deserialize(self, data: bytes) -> Decimal:
        try:
            return Decimal(data.decode("ascii"))
        except (InvalidOperation, UnicodeDecodeError) as exc:
            raise bad_data(self, data, "not a decimal string") from exc



_q = struct.Struct(">q")
_i = struct.Struct(">i")


@registered
class TimestampSerializer(Stateless, TypeSerializer[_dt.datetime]):
    """``datetime`` as microseconds since the epoch (8 bytes). Naive = UTC; result is naive UTC."""

    NAME = "TimestampSerializer"

    def serialize(self, value: _dt.datetime) -> bytes:
        if not isinstance(value, _dt.datetime):
            raise bad_value(self, value, "expected a datetime.datetime")
        return _q.pack(datetime_to_micros(value))

    def deserialize(self, data: bytes) -> _dt.datetime:
        try:
            return micros_to_datetime(_q.unpack(data)[0])
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, "expected 8 bytes of a datetime") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.datetime, int]:
        try:
            return micros_to_datetime(_q.unpack_from(data, pos)[0]), pos + 8
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"bad datetime at offset {pos}") from exc


@registered
class DateSerializer(Stateless, TypeSerializer[_dt.date]):
    """``datetime.date`` as days since 1970-01-01 (4 bytes signed)."""

    NAME = "DateSerializer"

    def serialize(self, value: _dt.date) -> bytes:
        if not isinstance(value, _dt.date) or isinstance(value, _dt.datetime):
            raise bad_value(self, value, "expected a datetime.date")
        return _i.pack(value.toordinal() - EPOCH_DATE_ORDINAL)

    def deserialize(self, data: bytes) -> _dt.date:
        try:
            return _dt.date.fromordinal(_i.unpack(data)[0] + EPOCH_DATE_ORDINAL)
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, "expected 4 bytes of a date") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.date, int]:
        try:
            return _dt.date.fromordinal(_i.unpack_from(data, pos)[0] + EPOCH_DATE_ORDINAL), pos + 4
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"bad date at offset {pos}") from exc


@registered
class TimeSerializer(Stateless, TypeSerializer[_dt.time]):
    """Naive ``datetime.time`` as microseconds since midnight (8 bytes)."""

    NAME = "TimeSerializer"

    def serialize(self, value: _dt.time) -> bytes:
        if not isinstance(value, _dt.time):
            raise bad_value(self, value, "expected a datetime.time")
        try:
            return _q.pack(time_to_micros(value))
        except TypeError as exc:
            raise bad_value(self, value, "expected a naive time", exc) from exc

    def deserialize(self, data: bytes) -> _dt.time:
        try:
            return micros_to_time(_q.unpack(data)[0])
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, "expected 8 bytes of a time of day") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.time, int]:
        try:
            return micros_to_time(_q.unpack_from(data, pos)[0]), pos + 8
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"bad time at offset {pos}") from exc


@registered
class PickleSerializer(Stateless, TypeSerializer[Any]):
    """Any picklable value (pickle protocol 5). Not deterministic: never use for keys."""

    NAME = "PickleSerializer"
    is_deterministic = False
    #: The pickle protocol of every value it writes.
    PROTOCOL = 5

    def serialize(self, value: Any) -> bytes:
        try:
            return pickle.dumps(value, protocol=self.PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise bad_value(self, value, "not picklable", exc) from exc

    def deserialize(self, data: bytes) -> Any:
        try:
            return pickle.loads(data)
        except Exception as exc:  # pickle raises almost anything on bad input
            raise bad_data(self, data, f"unpickling failed: {type(exc).__name__}") from exc


#: struct codes of the fixed-width number serializers (exactly these classes): composites
#: pack runs of them, or whole lists of them, with one ``struct`` call
FIXED_WIDTH_CODES: dict[type, str] = {
    LongSerializer: "q",
    IntSerializer: "i",
    ShortSerializer: "h",
    ByteSerializer: "b",
    DoubleSerializer: "d",
    FloatSerializer: "f",
}
