"""Lexicographic serializers of single values: byte order equals value order.

For keys of sorted state and timers: ``a < b`` exactly when ``serialize(a) <
serialize(b)`` bytewise, and no encoding is a prefix of another, so the
encodings compose inside ``LexicographicTupleSerializer`` (see ``lex_tuple``).
Fixed-width ints flip their sign bit, floats use the order-preserving IEEE
transform, strings and bytes are 0x00-escaped and terminated, dates and times
count from the epoch.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Callable
from typing import Any, ClassVar

from ..exceptions import SerializationError
from .base import LexicographicalTypeSerializer
from .encoding import (
    DECODE_ERRORS,
    EPOCH_DATE_ORDINAL,
    ESC_ZERO,
    TERMINATOR,
    U64,
    as_bytes,
    bad_data,
    bad_value,
    check_end,
    datetime_to_micros,
    decode_ordered_int,
    decode_whole,
    encode_ordered_int,
    from_utf8,
    micros_to_datetime,
    micros_to_time,
    natural_cmp,
    read_escaped,
    time_to_micros,
)
from .plain import BooleanBase
from .registry import Stateless, registered

__all__ = [
    "LexicographicLongSerializer",
    "LexicographicIntSerializer",
    "LexicographicShortSerializer",
    "LexicographicByteSerializer",
    "LexicographicDoubleSerializer",
    "LexicographicFloatSerializer",
    "LexicographicStringSerializer",
    "LexicographicBytesSerializer",
    "LexicographicBooleanSerializer",
    "LexicographicTimestampSerializer",
    "LexicographicDateSerializer",
    "LexicographicTimeSerializer",
    "LexicographicBigIntSerializer",
    "fixed_int_layout",
]


def _unescape_whole(ser: Any, data: bytes) -> bytes:
    """Unescape a complete top-level encoding (fast path when it holds no 0x00)."""
    body = data[:-2]
    # ``0 in body`` (int needle) is several times faster than ``b"\x00" in body``.
    if data.endswith(TERMINATOR) and 0 not in body:
        return body
    try:
        raw, pos = read_escaped(data, 0)
    except SerializationError as exc:
        raise bad_data(ser, data, str(exc)) from exc
    check_end(ser, data, pos)
    return raw


class _LexIntegerSerializer(Stateless, LexicographicalTypeSerializer[int]):
    """Signed int of fixed width: add the offset 2**(bits-1) (flips the sign bit), big-endian."""

    _struct: ClassVar[struct.Struct]
    _offset: ClassVar[int]
    _bits: ClassVar[int]

    def serialize(self, value: int) -> bytes:
        try:
            return self._struct.pack(value + self._offset)
        except (struct.error, TypeError) as exc:
            if isinstance(value, int):
                raise bad_value(
                    self, value, f"out of range for a {self._bits}-bit signed integer"
                ) from exc
            raise bad_value(self, value, "expected an int") from exc

    def deserialize(self, data: bytes) -> int:
        try:
            return self._struct.unpack(data)[0] - self._offset
        except struct.error as exc:
            raise bad_data(self, data, f"expected exactly {self._struct.size} bytes") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[int, int]:
        try:
            return self._struct.unpack_from(data, pos)[0] - self._offset, pos + self._struct.size
        except struct.error as exc:
            raise bad_data(self, data, f"truncated at offset {pos}") from exc

    def find_comparator(self) -> Callable[[int, int], int]:
        return natural_cmp


@registered
class LexicographicLongSerializer(_LexIntegerSerializer):
    """64-bit signed int, sign bit flipped, big-endian; out of range -> SerializationError."""

    NAME = "LexicographicLongSerializer"
    _struct = struct.Struct(">Q")
    _offset = 1 << 63
    _bits = 64


@registered
class LexicographicIntSerializer(_LexIntegerSerializer):
    """32-bit signed int, sign bit flipped, big-endian."""

    NAME = "LexicographicIntSerializer"
    _struct = struct.Struct(">I")
    _offset = 1 << 31
    _bits = 32


@registered
class LexicographicShortSerializer(_LexIntegerSerializer):
    """16-bit signed int, sign bit flipped, big-endian."""

    NAME = "LexicographicShortSerializer"
    _struct = struct.Struct(">H")
    _offset = 1 << 15
    _bits = 16


@registered
class LexicographicByteSerializer(_LexIntegerSerializer):
    """8-bit signed int, sign bit flipped."""

    NAME = "LexicographicByteSerializer"
    _struct = struct.Struct(">B")
    _offset = 1 << 7
    _bits = 8


def _float_cmp(a: float, b: float) -> int:
    """Order of the lexicographic float encodings: NaN last and equal to itself; -0.0 == 0.0."""
    if a != a:
        return 0 if b != b else 1
    if b != b:
        return -1
    return (a > b) - (a < b)


class _LexFloatingSerializer(Stateless, LexicographicalTypeSerializer[float]):
    """IEEE-754 order-preserving transform.

    Positive (sign bit clear): flip the sign bit; negative: flip all bits.
    ``-0.0`` is normalised to ``0.0`` (equal values, equal bytes; it decodes as
    ``0.0``). Every NaN is canonicalised to the positive quiet NaN, which sorts
    after ``+inf`` (so NaN is the largest value and equal to itself in bytes).
    """

    _float: ClassVar[struct.Struct]
    _uint: ClassVar[struct.Struct]
    _sign: ClassVar[int]
    _all: ClassVar[int]
    _nan_bytes: ClassVar[bytes]
    _zero_bytes: ClassVar[bytes]

    def serialize(self, value: float) -> bytes:
        if type(value) is not float:
            value = self._coerce(value)
        if value != value:
            return self._nan_bytes
        try:
            bits = self._uint.unpack(self._float.pack(value))[0]
        except (struct.error, OverflowError) as exc:
            raise bad_value(self, value, "expected a float", exc) from exc
        if bits & self._sign:
            if bits == self._sign:  # -0.0 (also a negative value rounded to 32-bit -0.0)
                return self._zero_bytes
            return self._uint.pack(bits ^ self._all)
        return self._uint.pack(bits | self._sign)

    def _coerce(self, value: Any) -> float:
        """ints, float subclasses and numbers with ``__float__`` (numpy); not str/bytes."""
        if isinstance(value, (str, bytes, bytearray)) or not hasattr(type(value), "__float__"):
            raise bad_value(self, value, "expected a float")
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
            raise bad_value(self, value, "expected a float", exc) from exc

    def _decode(self, bits: int) -> float:
        if bits & self._sign:
            bits ^= self._sign
        else:
            bits ^= self._all
        return self._float.unpack(self._uint.pack(bits))[0]

    def deserialize(self, data: bytes) -> float:
        try:
            return self._decode(self._uint.unpack(data)[0])
        except struct.error as exc:
            raise bad_data(self, data, f"expected exactly {self._uint.size} bytes") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[float, int]:
        try:
            return self._decode(self._uint.unpack_from(data, pos)[0]), pos + self._uint.size
        except struct.error as exc:
            raise bad_data(self, data, f"truncated at offset {pos}") from exc

    def find_comparator(self) -> Callable[[float, float], int]:
        return _float_cmp


@registered
class LexicographicDoubleSerializer(_LexFloatingSerializer):
    """64-bit double, order-preserving (see ``_LexFloatingSerializer``)."""

    NAME = "LexicographicDoubleSerializer"
    _float = struct.Struct(">d")
    _uint = struct.Struct(">Q")
    _sign = 1 << 63
    _all = (1 << 64) - 1
    _nan_bytes = struct.pack(">Q", 0x7FF8000000000000 | (1 << 63))
    _zero_bytes = struct.pack(">Q", 1 << 63)


@registered
class LexicographicFloatSerializer(_LexFloatingSerializer):
    """32-bit float, order-preserving; Python floats are rounded to 32 bits first."""

    NAME = "LexicographicFloatSerializer"
    _float = struct.Struct(">f")
    _uint = struct.Struct(">I")
    _sign = 1 << 31
    _all = (1 << 32) - 1
    _nan_bytes = struct.pack(">I", 0x7FC00000 | (1 << 31))
    _zero_bytes = struct.pack(">I", 1 << 31)


@registered
class LexicographicStringSerializer(Stateless, LexicographicalTypeSerializer[str]):
    """UTF-8 (code point order), 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x00."""

    NAME = "LexicographicStringSerializer"

    def serialize(self, value: str) -> bytes:
        try:
            raw = value.encode()
        except UnicodeEncodeError:
            raw = value.encode("utf-8", "surrogatepass")
        except AttributeError as exc:
            raise bad_value(self, value, "expected a str") from exc
        return raw.replace(b"\x00", ESC_ZERO) + TERMINATOR

    def deserialize(self, data: bytes) -> str:
        raw = _unescape_whole(self, data)
        try:
            return from_utf8(raw)
        except UnicodeDecodeError as exc:
            raise bad_data(self, data, "invalid UTF-8") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[str, int]:
        raw, pos = read_escaped(data, pos)
        return from_utf8(raw), pos

    def find_comparator(self) -> Callable[[str, str], int]:
        return natural_cmp


@registered
class LexicographicBytesSerializer(Stateless, LexicographicalTypeSerializer[bytes]):
    """Raw bytes, 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x00."""

    NAME = "LexicographicBytesSerializer"

    def serialize(self, value: bytes) -> bytes:
        return as_bytes(self, value).replace(b"\x00", ESC_ZERO) + TERMINATOR

    def deserialize(self, data: bytes) -> bytes:
        return _unescape_whole(self, data)

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[bytes, int]:
        return read_escaped(data, pos)

    def find_comparator(self) -> Callable[[bytes, bytes], int]:
        return natural_cmp


@registered
class LexicographicBooleanSerializer(BooleanBase, LexicographicalTypeSerializer[bool]):
    """False = 0x00 < True = 0x01."""

    NAME = "LexicographicBooleanSerializer"

    def find_comparator(self) -> Callable[[bool, bool], int]:
        return natural_cmp


_LEX_LONG = LexicographicLongSerializer.INSTANCE
_LEX_INT = LexicographicIntSerializer.INSTANCE


@registered
class LexicographicTimestampSerializer(Stateless, LexicographicalTypeSerializer[_dt.datetime]):
    """``datetime`` -> microseconds since epoch (naive = UTC) as a lexicographic long.

    Aware datetimes are converted to UTC; values come back naive (UTC).
    """

    NAME = "LexicographicTimestampSerializer"

    def serialize(self, value: _dt.datetime) -> bytes:
        if not isinstance(value, _dt.datetime):
            raise bad_value(self, value, "expected a datetime.datetime")
        return U64.pack(datetime_to_micros(value) + (1 << 63))

    def deserialize(self, data: bytes) -> _dt.datetime:
        try:
            return micros_to_datetime(U64.unpack(data)[0] - (1 << 63))
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, "expected 8 bytes of a datetime") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.datetime, int]:
        try:
            return micros_to_datetime(U64.unpack_from(data, pos)[0] - (1 << 63)), pos + 8
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"bad datetime at offset {pos}") from exc

    def find_comparator(self) -> Callable[[_dt.datetime, _dt.datetime], int]:
        def compare(a: _dt.datetime, b: _dt.datetime) -> int:
            return natural_cmp(datetime_to_micros(a), datetime_to_micros(b))

        return compare


@registered
class LexicographicDateSerializer(Stateless, LexicographicalTypeSerializer[_dt.date]):
    """``datetime.date`` -> days since 1970-01-01 as a lexicographic int."""

    NAME = "LexicographicDateSerializer"

    def serialize(self, value: _dt.date) -> bytes:
        if not isinstance(value, _dt.date) or isinstance(value, _dt.datetime):
            raise bad_value(self, value, "expected a datetime.date")
        return _LEX_INT.serialize(value.toordinal() - EPOCH_DATE_ORDINAL)

    def deserialize(self, data: bytes) -> _dt.date:
        days = _LEX_INT.deserialize(data)
        try:
            return _dt.date.fromordinal(days + EPOCH_DATE_ORDINAL)
        except (ValueError, OverflowError) as exc:
            raise bad_data(self, data, "date out of range") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.date, int]:
        days, pos = _LEX_INT.deserialize_nested(data, pos)
        return _dt.date.fromordinal(days + EPOCH_DATE_ORDINAL), pos

    def find_comparator(self) -> Callable[[_dt.date, _dt.date], int]:
        return natural_cmp


@registered
class LexicographicTimeSerializer(Stateless, LexicographicalTypeSerializer[_dt.time]):
    """Naive ``datetime.time`` -> microseconds since midnight as a lexicographic long."""

    NAME = "LexicographicTimeSerializer"

    def serialize(self, value: _dt.time) -> bytes:
        if not isinstance(value, _dt.time):
            raise bad_value(self, value, "expected a datetime.time")
        try:
            return _LEX_LONG.serialize(time_to_micros(value))
        except TypeError as exc:
            raise bad_value(self, value, "expected a naive time", exc) from exc

    def deserialize(self, data: bytes) -> _dt.time:
        micros = _LEX_LONG.deserialize(data)
        try:
            return micros_to_time(micros)
        except ValueError as exc:
            raise bad_data(self, data, str(exc)) from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.time, int]:
        micros, pos = _LEX_LONG.deserialize_nested(data, pos)
        return micros_to_time(micros), pos

    def find_comparator(self) -> Callable[[_dt.time, _dt.time], int]:
        return natural_cmp



# the tags of LexicographicBigIntSerializer (see encode_ordered_int)
_BIG_NEG, _BIG_MID, _BIG_POS = 1, 2, 3


@registered
class LexicographicBigIntSerializer(Stateless, LexicographicalTypeSerializer[int]):
    """Arbitrary-size int, order preserving: int64 range in 9 bytes, larger ones length-tagged."""

    NAME = "LexicographicBigIntSerializer"

    def serialize(self, value: int) -> bytes:
        if not isinstance(value, int):
            raise bad_value(self, value, "expected an int")
        return encode_ordered_int(value, _BIG_NEG)

    def deserialize(self, data: bytes) -> int:
        value: int = decode_whole(self, data, self.deserialize_nested)
        return value

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[int, int]:
        return decode_ordered_int(data, pos, _BIG_NEG)

    def find_comparator(self) -> Callable[[int, int], int]:
        return natural_cmp



_FIXED_INT_TYPES = (
    LexicographicLongSerializer,
    LexicographicIntSerializer,
    LexicographicShortSerializer,
    LexicographicByteSerializer,
)


def fixed_int_layout(serializer: Any) -> tuple[str, int] | None:
    """``(struct code, offset)`` of a fixed-width lexicographic int serializer, else None.

    Only the four classes themselves qualify (not subclasses): a tuple codec packs a
    run of them with one ``Struct`` of these codes, each value plus its offset.
    """
    if type(serializer) in _FIXED_INT_TYPES:
        return serializer._struct.format[1:], serializer._offset
    return None
