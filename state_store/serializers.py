"""Serializers: small pure classes turning values into bytes and back.

Interface contract (every serializer in the product follows it):

* ``serialize(value) -> bytes`` and ``deserialize(data) -> value`` round-trip.
* ``snapshot() -> dict``: a stable, JSON-serialisable description
  ``{"name": <class-level name>, "params": {...}}`` stored in savepoints; two
  serializers with equal snapshots read each other's bytes.
* ``is_deterministic``: equal values always give equal bytes (required for key
  serializers, since keys are grouped and sorted by their bytes, FLIP-140).
* ``LexicographicalTypeSerializer`` adds the FLIP-220 guarantee
  ``a < b  <=>  serialize(a) < serialize(b)`` bytewise, and is *prefix-free*
  (no encoding is a proper prefix of another), so encodings compose inside
  tuples and may be followed by further bytes without breaking order.

Concrete serializers are filled in below this base (see ``__all__``).

Nesting. Every serializer also has ``serialize_nested(value)`` and
``deserialize_nested(data, pos) -> (value, new_pos)``: the self-delimiting
form used inside composites (lists, maps, tuples, rows). By default it is the
plain bytes behind a varint length; fixed-width and prefix-free serializers
override it to write no length at all.

Three families live here:

* plain serializers (``LongSerializer``, ``StringSerializer``, ``RowSerializer``,
  ...): compact, fast, for state values. Top-level strings/bytes are raw, numbers
  fixed-width big-endian, composites length-prefixed with a null bitmap.
  ``DoubleSerializer``/``FloatSerializer`` keep the exact IEEE bits (``-0.0``
  stays ``-0.0``), so for keys prefer the lexicographic ones.
* lexicographic serializers (FLIP-220): byte order == value order, prefix-free.
* ``GenericKeySerializer``: keys with no declared type (tagged, prefix-free).

``serializer_from_snapshot(snapshot)`` rebuilds any of them from ``snapshot()``.
"""

from __future__ import annotations

import datetime as _dt
import json
import operator
import pickle
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Generic, TypeVar

from .errors import SerializationError
from .row import Row, _make_row

T = TypeVar("T")

__all__ = [
    "TypeSerializer",
    "LexicographicalTypeSerializer",
    # plain
    "StringSerializer",
    "LongSerializer",
    "IntSerializer",
    "ShortSerializer",
    "ByteSerializer",
    "DoubleSerializer",
    "FloatSerializer",
    "BooleanSerializer",
    "BigIntSerializer",
    "BigDecimalSerializer",
    "BytesSerializer",
    "DateSerializer",
    "TimeSerializer",
    "TimestampSerializer",
    "PickleSerializer",
    "PrimitiveArraySerializer",
    "ListSerializer",
    "MapSerializer",
    "TupleSerializer",
    "RowSerializer",
    # lexicographic
    "LexicographicLongSerializer",
    "LexicographicIntSerializer",
    "LexicographicShortSerializer",
    "LexicographicByteSerializer",
    "LexicographicDoubleSerializer",
    "LexicographicFloatSerializer",
    "LexicographicStringSerializer",
    "LexicographicBytesSerializer",
    "LexicographicBooleanSerializer",
    "LexicographicBigIntSerializer",
    "LexicographicDateSerializer",
    "LexicographicTimeSerializer",
    "LexicographicTimestampSerializer",
    "LexicographicTupleSerializer",
    # keys without a declared type
    "GenericKeySerializer",
    # restore
    "serializer_from_snapshot",
    "register_serializer",
]


class TypeSerializer(ABC, Generic[T]):
    """Turns values of one type into bytes and back."""

    #: Equal values give equal bytes (needed for keys). Pickle is not.
    is_deterministic: bool = True

    @abstractmethod
    def serialize(self, value: T) -> bytes:
        """Serialize ``value``; raise ``SerializationError`` naming the value on bad input."""

    @abstractmethod
    def deserialize(self, data: bytes) -> T:
        """Inverse of :meth:`serialize`."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """Stable JSON-able description ``{"name": ..., "params": {...}}``."""

    def is_compatible_with(self, snapshot: dict[str, Any]) -> bool:
        """True when bytes written by a serializer with ``snapshot`` are readable by this one."""
        return self.snapshot() == snapshot

    def serialize_nested(self, value: T) -> bytes:
        """Self-delimiting form used inside composites (default: varint length + bytes)."""
        data = self.serialize(value)
        return _varint(len(data)) + data

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[T, int]:
        """Read one :meth:`serialize_nested` value at ``pos``; return it and the next offset."""
        n, pos = _read_varint(data, pos)
        end = pos + n
        if end > len(data):
            raise SerializationError(
                f"{type(self).__name__}: truncated data, need {n} bytes at offset {pos}, "
                f"only {len(data) - pos} left"
            )
        return self.deserialize(data[pos:end]), end

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeSerializer) and self.snapshot() == other.snapshot()

    def __hash__(self) -> int:
        return hash(repr(self.snapshot()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.snapshot()['params']!r})"


class LexicographicalTypeSerializer(TypeSerializer[T]):
    """Serializer whose byte order equals value order (FLIP-220)."""

    def find_comparator(self) -> Callable[[T, T], int] | None:
        """Optional fast comparator on deserialized values (``-1/0/1``); None if absent."""
        return None

    def serialize_nested(self, value: T) -> bytes:
        """Prefix-free already: the nested form is the plain form (keeps byte order)."""
        return self.serialize(value)

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[T, int]:
        """Subclasses that are used inside tuples must find their own end; see concrete ones."""
        raise SerializationError(
            f"{type(self).__name__} does not implement deserialize_nested(), so it cannot "
            f"be a part of a LexicographicTupleSerializer"
        )


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

_SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def _varint(n: int) -> bytes:
    """Unsigned LEB128 of ``n >= 0``."""
    if n < 128:
        return _SMALL_VARINTS[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    try:
        b = data[pos]
        if b < 0x80:
            return b, pos + 1
        result = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
    except IndexError as exc:
        raise SerializationError(f"truncated varint at offset {pos} of {len(data)} bytes") from exc


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} (type {type(value).__name__})"


def _bad_value(
    ser: Any, value: Any, why: str, exc: BaseException | None = None
) -> SerializationError:
    msg = f"{type(ser).__name__} cannot serialize {_describe(value)}: {why}"
    if exc is not None and str(exc):
        msg += f" ({exc})"
    return SerializationError(msg)


def _bad_data(ser: Any, data: Any, why: str) -> SerializationError:
    shown = bytes(data[:40])
    more = "..." if len(data) > 40 else ""
    return SerializationError(
        f"{type(ser).__name__} cannot deserialize {len(data)} bytes {shown!r}{more}: {why}"
    )


def _natural_cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _check_end(ser: Any, data: bytes, pos: int) -> None:
    if pos != len(data):
        raise _bad_data(ser, data, f"{len(data) - pos} trailing bytes after offset {pos}")


_DECODE_ERRORS = (
    struct.error,
    IndexError,
    UnicodeDecodeError,
    ValueError,
    OverflowError,
    TypeError,
)

# Escaping for prefix-free byte strings: 0x00 -> 0x00 0xFF, end -> 0x00 0x00.
_ESC_ZERO = b"\x00\xff"
_TERMINATOR = b"\x00\x00"


def _escape(raw: bytes) -> bytes:
    return raw.replace(b"\x00", _ESC_ZERO) + _TERMINATOR


def _read_escaped(data: bytes, pos: int) -> tuple[bytes, int]:
    """Unescape one terminated byte string starting at ``pos``; return it and the next offset."""
    start = pos
    pieces: list[bytes] = []
    while True:
        i = data.find(b"\x00", pos)
        if i < 0 or i + 1 >= len(data):
            raise SerializationError(
                f"unterminated escaped string at offset {start} (no 0x00 0x00 terminator)"
            )
        nxt = data[i + 1]
        if nxt == 0x00:
            if not pieces:
                return data[start:i], i + 2
            pieces.append(data[pos:i])
            return b"".join(pieces), i + 2
        if nxt != 0xFF:
            raise SerializationError(f"bad escape 0x00 0x{nxt:02x} at offset {i}")
        pieces.append(data[pos : i + 1])
        pos = i + 2


def _unescape_whole(ser: Any, data: bytes) -> bytes:
    """Unescape a complete top-level encoding (fast path when it holds no 0x00)."""
    body = data[:-2]
    # ``0 in body`` (int needle) is several times faster than ``b"\x00" in body``.
    if data.endswith(_TERMINATOR) and 0 not in body:
        return body
    try:
        raw, pos = _read_escaped(data, 0)
    except SerializationError as exc:
        raise _bad_data(ser, data, str(exc)) from exc
    _check_end(ser, data, pos)
    return raw


def _utf8(value: str) -> bytes:
    """UTF-8; lone surrogates pass through (strict first: same bytes, faster)."""
    try:
        return value.encode()
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _from_utf8(raw: bytes) -> str:
    """Inverse of :func:`_utf8`; raises UnicodeDecodeError on invalid UTF-8."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogatepass")


_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_ONE_MICRO = _dt.timedelta(microseconds=1)


def _datetime_to_micros(value: Any) -> int:
    """Microseconds since 1970-01-01 UTC; naive datetimes are taken as UTC."""
    if value.tzinfo is None:
        return (value - _EPOCH_NAIVE) // _ONE_MICRO
    return (value - _EPOCH_UTC) // _ONE_MICRO


def _micros_to_datetime(micros: int) -> _dt.datetime:
    return _EPOCH_NAIVE + _dt.timedelta(microseconds=micros)


def _time_to_micros(value: _dt.time) -> int:
    if value.tzinfo is not None:
        raise TypeError("time values with a tzinfo are not supported")
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _micros_to_time(micros: int) -> _dt.time:
    if not 0 <= micros < 86_400_000_000:
        raise ValueError(f"time of day out of range: {micros} microseconds")
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return _dt.time(hour, minute, second, micro)


# ---------------------------------------------------------------------------
# registry for serializer_from_snapshot
# ---------------------------------------------------------------------------

_REGISTRY: dict[str, Callable[[dict[str, Any]], TypeSerializer[Any]]] = {}


def register_serializer(
    name: str, factory: Callable[[dict[str, Any]], TypeSerializer[Any]]
) -> None:
    """Make ``serializer_from_snapshot`` able to rebuild serializers named ``name``.

    ``factory(params)`` gets the snapshot's ``params`` dict. Other layers use this
    for their own serializers (e.g. window namespaces).
    """
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not factory:
        raise SerializationError(f"a serializer named {name!r} is already registered")
    _REGISTRY[name] = factory


def serializer_from_snapshot(snapshot: dict[str, Any]) -> TypeSerializer[Any]:
    """Rebuild a serializer from its :meth:`TypeSerializer.snapshot` (savepoint restore)."""
    if not isinstance(snapshot, dict) or "name" not in snapshot:
        raise SerializationError(
            f"not a serializer snapshot (expected a dict with 'name' and 'params'): {snapshot!r}"
        )
    name = snapshot["name"]
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SerializationError(
            f"unknown serializer {name!r} in snapshot {snapshot!r}; known: {sorted(_REGISTRY)}"
        )
    params = snapshot.get("params") or {}
    try:
        return factory(params)
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SerializationError(f"invalid params for serializer {name!r}: {params!r}") from exc


_S = TypeVar("_S", bound=type)


def _registered(cls: _S) -> _S:
    """Class decorator: register a parameterless serializer class by its NAME."""
    instance = cls()
    cls.INSTANCE = instance  # type: ignore[attr-defined]
    register_serializer(cls.NAME, lambda params: instance)  # type: ignore[attr-defined]
    return cls


class _Stateless:
    """Mixin: snapshot of a serializer without parameters."""

    NAME: ClassVar[str]
    #: The shared instance (set by the registration decorator).
    INSTANCE: ClassVar[Any]

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.NAME, "params": {}}


# ---------------------------------------------------------------------------
# plain serializers (state values)
# ---------------------------------------------------------------------------


class _FixedStructSerializer(_Stateless, TypeSerializer[Any]):
    """Fixed-width big-endian number; nested form has no length prefix."""

    _struct: ClassVar[struct.Struct]
    _what: ClassVar[str]

    def serialize(self, value: Any) -> bytes:
        try:
            return self._struct.pack(value)
        except (struct.error, TypeError, OverflowError) as exc:
            raise _bad_value(self, value, f"expected {self._what}", exc) from exc

    def deserialize(self, data: bytes) -> Any:
        try:
            return self._struct.unpack(data)[0]
        except struct.error as exc:
            raise _bad_data(self, data, f"expected exactly {self._struct.size} bytes") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Any, int]:
        try:
            return self._struct.unpack_from(data, pos)[0], pos + self._struct.size
        except struct.error as exc:
            raise _bad_data(self, data, f"truncated at offset {pos}") from exc


@_registered
class LongSerializer(_FixedStructSerializer):
    """64-bit signed int, 8 bytes big-endian."""

    NAME = "LongSerializer"
    _struct = struct.Struct(">q")
    _what = "an int in [-2**63, 2**63 - 1]"


@_registered
class IntSerializer(_FixedStructSerializer):
    """32-bit signed int, 4 bytes big-endian."""

    NAME = "IntSerializer"
    _struct = struct.Struct(">i")
    _what = "an int in [-2**31, 2**31 - 1]"


@_registered
class ShortSerializer(_FixedStructSerializer):
    """16-bit signed int, 2 bytes big-endian."""

    NAME = "ShortSerializer"
    _struct = struct.Struct(">h")
    _what = "an int in [-32768, 32767]"


@_registered
class ByteSerializer(_FixedStructSerializer):
    """8-bit signed int, 1 byte."""

    NAME = "ByteSerializer"
    _struct = struct.Struct(">b")
    _what = "an int in [-128, 127]"


@_registered
class DoubleSerializer(_FixedStructSerializer):
    """IEEE-754 double, 8 bytes big-endian, exact bits (-0.0 and NaN payloads kept)."""

    NAME = "DoubleSerializer"
    _struct = struct.Struct(">d")
    _what = "a float"


@_registered
class FloatSerializer(_FixedStructSerializer):
    """IEEE-754 single, 4 bytes big-endian (Python floats are rounded to 32 bits)."""

    NAME = "FloatSerializer"
    _struct = struct.Struct(">f")
    _what = "a float within the 32-bit range"


_TRUE = b"\x01"
_FALSE = b"\x00"


class _BooleanBase(_Stateless):
    def serialize(self, value: Any) -> bytes:
        if value is True:
            return _TRUE
        if value is False:
            return _FALSE
        if isinstance(value, int) and value in (0, 1):
            return _TRUE if value else _FALSE
        raise _bad_value(self, value, "expected a bool")

    def deserialize(self, data: bytes) -> bool:
        if data == _TRUE:
            return True
        if data == _FALSE:
            return False
        raise _bad_data(self, data, "expected one byte 0x00 or 0x01")

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[bool, int]:
        try:
            b = data[pos]
        except IndexError as exc:
            raise _bad_data(self, data, f"truncated at offset {pos}") from exc
        if b > 1:
            raise _bad_data(self, data, f"bad boolean byte 0x{b:02x} at offset {pos}")
        return b == 1, pos + 1


@_registered
class BooleanSerializer(_BooleanBase, TypeSerializer[bool]):
    """bool as one byte 0x00/0x01."""

    NAME = "BooleanSerializer"

    def serialize_nested(self, value: Any) -> bytes:
        return self.serialize(value)


@_registered
class StringSerializer(_Stateless, TypeSerializer[str]):
    """UTF-8 (lone surrogates allowed via ``surrogatepass``); nested: varint length + bytes."""

    NAME = "StringSerializer"

    def serialize(self, value: str) -> bytes:
        try:
            return value.encode()
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
        except AttributeError as exc:
            raise _bad_value(self, value, "expected a str") from exc

    def deserialize(self, data: bytes) -> str:
        try:
            return data.decode()
        except UnicodeDecodeError:
            pass
        except AttributeError as exc:
            raise _bad_data(self, data, "expected bytes") from exc
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise _bad_data(self, data, "invalid UTF-8") from exc

    def serialize_nested(self, value: str) -> bytes:
        raw = self.serialize(value)
        n = len(raw)
        return (_SMALL_VARINTS[n] if n < 128 else _varint(n)) + raw

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[str, int]:
        n, pos = _read_varint(data, pos)
        end = pos + n
        if end > len(data):
            raise _bad_data(self, data, f"truncated string of {n} bytes at offset {pos}")
        try:
            return _from_utf8(data[pos:end]), end
        except UnicodeDecodeError as exc:
            raise _bad_data(self, data, f"invalid UTF-8 at offset {pos}") from exc


def _as_bytes(ser: Any, value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise _bad_value(ser, value, "expected bytes, bytearray or memoryview")


@_registered
class BytesSerializer(_Stateless, TypeSerializer[bytes]):
    """Raw bytes (bytearray/memoryview accepted, bytes returned); nested: varint length."""

    NAME = "BytesSerializer"

    def serialize(self, value: bytes) -> bytes:
        return _as_bytes(self, value)

    def deserialize(self, data: bytes) -> bytes:
        return bytes(data)

    def serialize_nested(self, value: bytes) -> bytes:
        raw = _as_bytes(self, value)
        return _varint(len(raw)) + raw


@_registered
class BigIntSerializer(_Stateless, TypeSerializer[int]):
    """Arbitrary-size int as minimal big-endian two's complement."""

    NAME = "BigIntSerializer"

    def serialize(self, value: int) -> bytes:
        if not isinstance(value, int):
            raise _bad_value(self, value, "expected an int")
        return value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True)

    def deserialize(self, data: bytes) -> int:
        if not data:
            raise _bad_data(self, data, "empty")
        return int.from_bytes(data, "big", signed=True)


@_registered
class BigDecimalSerializer(_Stateless, TypeSerializer[Decimal]):
    """``decimal.Decimal`` as its exact string form. Not deterministic (1.0 vs 1.00)."""

    NAME = "BigDecimalSerializer"
    is_deterministic = False

    def serialize(self, value: Decimal) -> bytes:
        if not isinstance(value, Decimal):
            raise _bad_value(self, value, "expected a decimal.Decimal")
        return str(value).encode("ascii")

    def deserialize(self, data: bytes) -> Decimal:
        try:
            return Decimal(data.decode("ascii"))
        except (InvalidOperation, UnicodeDecodeError) as exc:
            raise _bad_data(self, data, "not a decimal string") from exc


_Q = struct.Struct(">Q")
_q = struct.Struct(">q")
_i = struct.Struct(">i")
_I = struct.Struct(">I")


@_registered
class TimestampSerializer(_Stateless, TypeSerializer[_dt.datetime]):
    """``datetime`` as microseconds since the epoch (8 bytes). Naive = UTC; result is naive UTC."""

    NAME = "TimestampSerializer"

    def serialize(self, value: _dt.datetime) -> bytes:
        if not isinstance(value, _dt.datetime):
            raise _bad_value(self, value, "expected a datetime.datetime")
        return _q.pack(_datetime_to_micros(value))

    def deserialize(self, data: bytes) -> _dt.datetime:
        try:
            return _micros_to_datetime(_q.unpack(data)[0])
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, "expected 8 bytes of a datetime") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.datetime, int]:
        try:
            return _micros_to_datetime(_q.unpack_from(data, pos)[0]), pos + 8
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, f"bad datetime at offset {pos}") from exc


@_registered
class DateSerializer(_Stateless, TypeSerializer[_dt.date]):
    """``datetime.date`` as days since 1970-01-01 (4 bytes signed)."""

    NAME = "DateSerializer"

    def serialize(self, value: _dt.date) -> bytes:
        if not isinstance(value, _dt.date) or isinstance(value, _dt.datetime):
            raise _bad_value(self, value, "expected a datetime.date")
        return _i.pack(value.toordinal() - _EPOCH_DATE_ORDINAL)

    def deserialize(self, data: bytes) -> _dt.date:
        try:
            return _dt.date.fromordinal(_i.unpack(data)[0] + _EPOCH_DATE_ORDINAL)
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, "expected 4 bytes of a date") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.date, int]:
        try:
            return _dt.date.fromordinal(_i.unpack_from(data, pos)[0] + _EPOCH_DATE_ORDINAL), pos + 4
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, f"bad date at offset {pos}") from exc


@_registered
class TimeSerializer(_Stateless, TypeSerializer[_dt.time]):
    """Naive ``datetime.time`` as microseconds since midnight (8 bytes)."""

    NAME = "TimeSerializer"

    def serialize(self, value: _dt.time) -> bytes:
        if not isinstance(value, _dt.time):
            raise _bad_value(self, value, "expected a datetime.time")
        try:
            return _q.pack(_time_to_micros(value))
        except TypeError as exc:
            raise _bad_value(self, value, "expected a naive time", exc) from exc

    def deserialize(self, data: bytes) -> _dt.time:
        try:
            return _micros_to_time(_q.unpack(data)[0])
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, "expected 8 bytes of a time of day") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.time, int]:
        try:
            return _micros_to_time(_q.unpack_from(data, pos)[0]), pos + 8
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, f"bad time at offset {pos}") from exc


@_registered
class PickleSerializer(_Stateless, TypeSerializer[Any]):
    """Any picklable value (pickle protocol 5). Not deterministic: never use for keys."""

    NAME = "PickleSerializer"
    is_deterministic = False

    def serialize(self, value: Any) -> bytes:
        try:
            return pickle.dumps(value, protocol=5)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise _bad_value(self, value, "not picklable", exc) from exc

    def deserialize(self, data: bytes) -> Any:
        try:
            return pickle.loads(data)
        except Exception as exc:  # pickle raises almost anything on bad input
            raise _bad_data(self, data, f"unpickling failed: {type(exc).__name__}") from exc


_PRIMITIVE_CODES = {
    "BOOLEAN": "?",
    "BYTE": "b",
    "SHORT": "h",
    "INT": "i",
    "LONG": "q",
    "FLOAT": "f",
    "DOUBLE": "d",
}


class PrimitiveArraySerializer(TypeSerializer[list[Any]]):
    """List of one primitive type (no nulls): varint count + packed big-endian values.

    ``element`` is a type name: BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT or DOUBLE.
    (``PRIMITIVE_ARRAY(BYTE)`` values are ``bytes`` and use ``BytesSerializer``;
    this serializer with BYTE is for lists of small ints.)
    """

    NAME = "PrimitiveArraySerializer"

    def __init__(self, element: str) -> None:
        code = _PRIMITIVE_CODES.get(element)
        if code is None:
            raise SerializationError(
                f"PrimitiveArraySerializer: unsupported element type {element!r}; "
                f"expected one of {sorted(_PRIMITIVE_CODES)}"
            )
        self.element = element
        self._code = code
        self._size = struct.calcsize(">" + code)

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.NAME, "params": {"element": self.element}}

    def serialize_nested(self, value: Sequence[Any]) -> bytes:
        try:
            if self._code == "?" and not all(v is True or v is False for v in value):
                raise TypeError("not all values are bools")
            n = len(value)
            return _varint(n) + struct.pack(f">{n}{self._code}", *value)
        except (struct.error, TypeError, OverflowError) as exc:
            raise _bad_value(
                self, value, f"expected a sequence of {self.element.lower()} values", exc
            ) from exc

    serialize = serialize_nested

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[list[Any], int]:
        n, pos = _read_varint(data, pos)
        try:
            values = list(struct.unpack_from(f">{n}{self._code}", data, pos))
        except struct.error as exc:
            raise _bad_data(self, data, f"truncated array of {n} at offset {pos}") from exc
        return values, pos + n * self._size

    def deserialize(self, data: bytes) -> list[Any]:
        values, pos = self.deserialize_nested(data, 0)
        _check_end(self, data, pos)
        return values


register_serializer(PrimitiveArraySerializer.NAME, lambda p: PrimitiveArraySerializer(p["element"]))


def _has_none(values: Any) -> bool:
    """Identity test only (``None in values`` would call ``__eq__``, e.g. on numpy arrays)."""
    for v in values:
        if v is None:
            return True
    return False


def _null_mask(values: Sequence[Any]) -> int:
    mask = 0
    bit = 1
    for v in values:
        if v is None:
            mask |= bit
        bit <<= 1
    return mask


class ListSerializer(TypeSerializer[list[Any]]):
    """List of one element type, None elements allowed (LIST, BASIC_ARRAY, OBJECT_ARRAY).

    Layout: varint count, then 0x00 (no nulls) or 0x01 + a little-endian null
    bitmap of ceil(count/8) bytes, then the non-null elements in nested form.
    Tuples are accepted as input; a list is returned.
    """

    NAME = "ListSerializer"

    def __init__(self, element_serializer: TypeSerializer[Any]) -> None:
        self.element_serializer = element_serializer
        self.is_deterministic = element_serializer.is_deterministic
        self._write = element_serializer.serialize_nested
        self._read = element_serializer.deserialize_nested
        # Fixed-width numbers without nulls: the elements are one packed struct array.
        code = _FIXED_CODES.get(type(element_serializer))
        self._fixed_code = code
        self._fixed_size = struct.calcsize(">" + code) if code else 0

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.NAME, "params": {"element": self.element_serializer.snapshot()}}

    def serialize_nested(self, value: Sequence[Any]) -> bytes:
        if not isinstance(value, (list, tuple)):
            raise _bad_value(self, value, "expected a list")
        n = len(value)
        write = self._write
        if not _has_none(value):
            code = self._fixed_code
            if code is not None:
                try:
                    return b"".join((_varint(n), b"\x00", struct.pack(f">{n}{code}", *value)))
                except (struct.error, TypeError, OverflowError):
                    pass  # the element serializer below names the bad element
            return b"".join([_varint(n), b"\x00", *[write(v) for v in value]])
        mask = _null_mask(value)
        parts = [_varint(n), b"\x01", mask.to_bytes((n + 7) // 8, "little")]
        parts.extend(write(v) for v in value if v is not None)
        return b"".join(parts)

    serialize = serialize_nested

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[list[Any], int]:
        n, pos = _read_varint(data, pos)
        try:
            flag = data[pos]
        except IndexError as exc:
            raise _bad_data(self, data, f"truncated at offset {pos}") from exc
        pos += 1
        read = self._read
        if flag == 0 and self._fixed_code is not None:
            try:
                values = list(struct.unpack_from(f">{n}{self._fixed_code}", data, pos))
            except struct.error as exc:
                raise _bad_data(self, data, f"truncated array of {n} at offset {pos}") from exc
            return values, pos + n * self._fixed_size
        out: list[Any] = []
        append = out.append
        if flag == 0:
            for _ in range(n):
                v, pos = read(data, pos)
                append(v)
            return out, pos
        if flag != 1:
            raise _bad_data(self, data, f"bad null flag 0x{flag:02x} at offset {pos - 1}")
        nbytes = (n + 7) // 8
        mask = int.from_bytes(data[pos : pos + nbytes], "little")
        pos += nbytes
        for i in range(n):
            if mask >> i & 1:
                append(None)
            else:
                v, pos = read(data, pos)
                append(v)
        return out, pos

    def deserialize(self, data: bytes) -> list[Any]:
        try:
            values, pos = self.deserialize_nested(data, 0)
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, str(exc)) from exc
        _check_end(self, data, pos)
        return values


register_serializer(
    ListSerializer.NAME, lambda p: ListSerializer(serializer_from_snapshot(p["element"]))
)


class MapSerializer(TypeSerializer[dict[Any, Any]]):
    """dict with non-null keys and nullable values, in iteration order. Not deterministic.

    Layout: varint count, null flag/bitmap for the values (as ``ListSerializer``),
    then key, value pairs (null values skipped).
    """

    NAME = "MapSerializer"
    is_deterministic = False

    def __init__(
        self, key_serializer: TypeSerializer[Any], value_serializer: TypeSerializer[Any]
    ) -> None:
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer

    def snapshot(self) -> dict[str, Any]:
        return {
            "name": self.NAME,
            "params": {
                "key": self.key_serializer.snapshot(),
                "value": self.value_serializer.snapshot(),
            },
        }

    def serialize_nested(self, value: dict[Any, Any]) -> bytes:
        try:
            items = list(value.items())
        except AttributeError as exc:
            raise _bad_value(self, value, "expected a dict") from exc
        n = len(items)
        wk = self.key_serializer.serialize_nested
        wv = self.value_serializer.serialize_nested
        values = [v for _, v in items]
        parts: list[bytes] = [_varint(n)]
        if _has_none(values):
            parts.append(b"\x01")
            parts.append(_null_mask(values).to_bytes((n + 7) // 8, "little"))
        else:
            parts.append(b"\x00")
        for k, v in items:
            if k is None:
                raise _bad_value(self, value, "map keys must not be None")
            parts.append(wk(k))
            if v is not None:
                parts.append(wv(v))
        return b"".join(parts)

    serialize = serialize_nested

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[dict[Any, Any], int]:
        n, pos = _read_varint(data, pos)
        flag = data[pos]
        pos += 1
        mask = 0
        if flag == 1:
            nbytes = (n + 7) // 8
            mask = int.from_bytes(data[pos : pos + nbytes], "little")
            pos += nbytes
        elif flag != 0:
            raise _bad_data(self, data, f"bad null flag 0x{flag:02x} at offset {pos - 1}")
        rk = self.key_serializer.deserialize_nested
        rv = self.value_serializer.deserialize_nested
        out: dict[Any, Any] = {}
        for i in range(n):
            k, pos = rk(data, pos)
            if mask >> i & 1:
                out[k] = None
            else:
                out[k], pos = rv(data, pos)
        return out, pos

    def deserialize(self, data: bytes) -> dict[Any, Any]:
        try:
            values, pos = self.deserialize_nested(data, 0)
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, str(exc)) from exc
        _check_end(self, data, pos)
        return values


register_serializer(
    MapSerializer.NAME,
    lambda p: MapSerializer(
        serializer_from_snapshot(p["key"]), serializer_from_snapshot(p["value"])
    ),
)


# Errors that make a compiled fast path give up and defer to the checked slow path
# (which then either succeeds, e.g. for lone surrogates, or raises a precise error).
_FAST_PATH_ERRORS = (
    struct.error,
    AttributeError,
    TypeError,
    ValueError,  # includes UnicodeError and SerializationError
    OverflowError,
    IndexError,
)

_FIXED_CODES: dict[type, str] = {
    LongSerializer: "q",
    IntSerializer: "i",
    ShortSerializer: "h",
    ByteSerializer: "b",
    DoubleSerializer: "d",
    FloatSerializer: "f",
}


_CODEC_CACHE: dict[str, tuple[Any, Any]] = {}
_CODEC_CACHE_SIZE = 512


def _fields_codec(
    field_serializers: Sequence[TypeSerializer[Any]],
) -> tuple[
    Callable[[Any], bytes | None], Callable[[bytes, int], tuple[tuple[Any, ...], int] | None]
]:
    """Cached :func:`_compile_fields_codec` (equal snapshots read and write the same bytes)."""
    try:
        key = json.dumps([s.snapshot() for s in field_serializers], sort_keys=True)
    except (TypeError, ValueError):  # a foreign serializer with a non-JSON snapshot
        return _compile_fields_codec(field_serializers)
    codec = _CODEC_CACHE.get(key)
    if codec is None:
        codec = _compile_fields_codec(field_serializers)
        if len(_CODEC_CACHE) >= _CODEC_CACHE_SIZE:
            _CODEC_CACHE.clear()
        _CODEC_CACHE[key] = codec
    return codec


def _compile_fields_codec(
    field_serializers: Sequence[TypeSerializer[Any]],
) -> tuple[
    Callable[[Any], bytes | None], Callable[[bytes, int], tuple[tuple[Any, ...], int] | None]
]:
    """Generate straight-line code for a record without None fields.

    Consecutive fixed-width numbers are packed with one ``Struct``; strings are
    encoded inline; other fields call their serializer. The generated functions
    return None when a field is None / the bitmap is not all zero, and may raise
    anything on bad input: callers then use the checked slow path, so the bytes
    and the errors are exactly the slow path's.
    """
    n = len(field_serializers)
    names = [f"v{i}" for i in range(n)]
    mask_bytes = (n + 7) // 8
    ns: dict[str, Any] = {
        "SV": _SMALL_VARINTS,
        "VI": _varint,
        "RV": _read_varint,
        "ZM": bytes(mask_bytes),
    }
    ser_body: list[str] = []
    parts: list[str] = ["ZM"]
    # all-zero null bitmap, else None (the caller's loop handles nulls)
    zero_test = "data[pos]" if mask_bytes == 1 else f"data[pos : pos + {mask_bytes}] != ZM"
    de_body: list[str] = [f"    if {zero_test}:", "        return None", f"    pos += {mask_bytes}"]
    i = 0
    while i < n:
        ser = field_serializers[i]
        if type(ser) in _FIXED_CODES:
            j = i
            fmt = ">"
            while j < n and type(field_serializers[j]) in _FIXED_CODES:
                fmt += _FIXED_CODES[type(field_serializers[j])]
                j += 1
            compiled = struct.Struct(fmt)
            ns[f"S{i}"] = compiled
            group = ", ".join(names[i:j])
            parts.append(f"S{i}.pack({group})")
            de_body.append(f"    {group}, = S{i}.unpack_from(data, pos)")
            de_body.append(f"    pos += {compiled.size}")
            i = j
            continue
        v = names[i]
        if type(ser) is StringSerializer:
            ser_body.append(f"    r{i} = {v}.encode()")
            ser_body.append(f"    n{i} = len(r{i})")
            parts.append(f"(SV[n{i}] if n{i} < 128 else VI(n{i}))")
            parts.append(f"r{i}")
            de_body.append("    size = data[pos]")
            de_body.append("    if size < 128:")
            de_body.append("        pos += 1")
            de_body.append("    else:")
            de_body.append("        size, pos = RV(data, pos)")
            de_body.append("    end = pos + size")
            de_body.append("    if end > len(data):")
            de_body.append("        return None")
            de_body.append(f"    {v} = data[pos:end].decode()")
            de_body.append("    pos = end")
        else:
            ns[f"W{i}"] = ser.serialize_nested
            ns[f"R{i}"] = ser.deserialize_nested
            parts.append(f"W{i}({v})")
            de_body.append(f"    {v}, pos = R{i}(data, pos)")
        i += 1
    target = ", ".join(names) + ","
    none_test = " or ".join(f"{v} is None" for v in names)
    src = "\n".join(
        [
            "def fast_serialize(value):",
            f"    {target} = value",
            f"    if {none_test}:",
            "        return None",
            *ser_body,
            f"    return b''.join(({', '.join(parts)},))",
            "",
            "def fast_read(data, pos):",
            *de_body,
            f"    return ({target}), pos",
        ]
    )
    exec(compile(src, "<pyspark_datastream fields codec>", "exec"), ns)  # noqa: S102
    return ns["fast_serialize"], ns["fast_read"]


class _FieldsSerializer(TypeSerializer[Any]):
    """Fixed arity record: null bitmap of ceil(arity/8) bytes, then non-null fields nested.

    Records without None fields go through generated straight-line code
    (:func:`_compile_fields_codec`); anything unusual falls back to the checked
    generic loop, which defines the format and the error messages.
    """

    NAME: ClassVar[str]

    def __init__(self, field_serializers: Sequence[TypeSerializer[Any]]) -> None:
        self.field_serializers = list(field_serializers)
        for s in self.field_serializers:
            if not isinstance(s, TypeSerializer):
                raise SerializationError(
                    f"{type(self).__name__}: field serializer {s!r} is not a TypeSerializer"
                )
        self.arity = len(self.field_serializers)
        self.is_deterministic = all(s.is_deterministic for s in self.field_serializers)
        self._writers = [s.serialize_nested for s in self.field_serializers]
        self._readers = [s.deserialize_nested for s in self.field_serializers]
        self._mask_bytes = (self.arity + 7) // 8
        self._install_lazy_codec()

    def _install_lazy_codec(self) -> None:
        """Generate the fast codec on first use (construction stays cheap)."""
        self._fast_serialize: Callable[[Any], bytes | None] | None = None
        self._fast_read: Callable[[bytes, int], tuple[tuple[Any, ...], int] | None] | None = None
        if self.arity:
            self._fast_serialize = self._compile_and_serialize
            self._fast_read = self._compile_and_read

    def _compile(self) -> None:
        self._fast_serialize, self._fast_read = _fields_codec(self.field_serializers)

    def _compile_and_serialize(self, value: Any) -> bytes | None:
        self._compile()
        return self._fast_serialize(value)  # type: ignore[misc]

    def _compile_and_read(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int] | None:
        self._compile()
        return self._fast_read(data, pos)  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        # generated functions and bound methods are rebuilt after unpickling
        state = self.__dict__.copy()
        for name in ("_fast_serialize", "_fast_read", "_writers", "_readers"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._writers = [s.serialize_nested for s in self.field_serializers]
        self._readers = [s.deserialize_nested for s in self.field_serializers]
        self._install_lazy_codec()

    def _fields_of(self, value: Any) -> Sequence[Any]:
        if isinstance(value, (tuple, list)):
            return value
        raise _bad_value(self, value, "expected a tuple")

    def serialize_nested(self, value: Any) -> bytes:
        fast = self._fast_serialize
        if fast is not None and isinstance(value, (tuple, list)):
            try:
                out = fast(value)
            except _FAST_PATH_ERRORS:
                out = None
            if out is not None:
                return out
        return self._serialize_checked(value)

    serialize = serialize_nested

    def _serialize_checked(self, value: Any) -> bytes:
        fields = self._fields_of(value)
        if len(fields) != self.arity:
            raise _bad_value(self, value, f"expected {self.arity} fields, got {len(fields)}")
        parts: list[bytes] = [b""]
        append = parts.append
        mask = 0
        bit = 1
        for write, v in zip(self._writers, fields, strict=True):
            if v is None:
                mask |= bit
            else:
                append(write(v))
            bit <<= 1
        parts[0] = mask.to_bytes(self._mask_bytes, "little")
        return b"".join(parts)

    def _read_values(self, data: bytes, pos: int) -> tuple[Sequence[Any], int]:
        fast = self._fast_read
        if fast is not None:
            try:
                result = fast(data, pos)
            except _FAST_PATH_ERRORS:
                result = None
            if result is not None:
                return result
        nb = self._mask_bytes
        end = pos + nb
        if end > len(data):
            raise _bad_data(self, data, f"truncated null bitmap at offset {pos}")
        mask = int.from_bytes(data[pos:end], "little")
        pos = end
        out: list[Any] = []
        append = out.append
        for i, read in enumerate(self._readers):
            if mask >> i & 1:
                append(None)
            else:
                v, pos = read(data, pos)
                append(v)
        return out, pos

    def _build(self, values: Sequence[Any]) -> Any:
        raise NotImplementedError

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Any, int]:
        values, pos = self._read_values(data, pos)
        return self._build(values), pos

    def deserialize(self, data: bytes) -> Any:
        fast = self._fast_read
        if fast is not None:
            try:
                result = fast(data, 0)
            except _FAST_PATH_ERRORS:
                result = None
            if result is not None and result[1] == len(data):
                return self._build(result[0])
        try:
            values, pos = self._read_values(data, 0)
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, str(exc)) from exc
        _check_end(self, data, pos)
        return self._build(values)


class TupleSerializer(_FieldsSerializer):
    """Python tuple of fixed arity (lists/Rows accepted as input); None fields allowed."""

    NAME = "TupleSerializer"

    def snapshot(self) -> dict[str, Any]:
        return {
            "name": self.NAME,
            "params": {"fields": [s.snapshot() for s in self.field_serializers]},
        }

    def _build(self, values: Sequence[Any]) -> tuple[Any, ...]:
        return values if type(values) is tuple else tuple(values)


register_serializer(
    TupleSerializer.NAME,
    lambda p: TupleSerializer([serializer_from_snapshot(s) for s in p["fields"]]),
)


class RowSerializer(_FieldsSerializer):
    """``Row`` with named fields (tuples, lists and ``{name: value}`` dicts accepted as input)."""

    NAME = "RowSerializer"

    def __init__(
        self,
        field_serializers: Sequence[TypeSerializer[Any]],
        field_names: Sequence[str] | None = None,
    ) -> None:
        super().__init__(field_serializers)
        if field_names is None:
            field_names = [f"f{i}" for i in range(self.arity)]
        if len(field_names) != self.arity:
            raise SerializationError(
                f"RowSerializer: {len(field_names)} field names {list(field_names)!r} for "
                f"{self.arity} field serializers"
            )
        self.field_names = [str(n) for n in field_names]
        self._names_tuple = tuple(self.field_names)

    def snapshot(self) -> dict[str, Any]:
        return {
            "name": self.NAME,
            "params": {
                "fields": [s.snapshot() for s in self.field_serializers],
                "names": list(self.field_names),
            },
        }

    def _fields_of(self, value: Any) -> Sequence[Any]:
        if isinstance(value, (tuple, list)):
            return value
        if isinstance(value, dict):
            try:
                return [value[n] for n in self.field_names]
            except KeyError as exc:
                raise _bad_value(self, value, f"missing field {exc.args[0]!r}") from exc
        raise _bad_value(self, value, "expected a Row, tuple, list or dict")

    def _build(self, values: Sequence[Any]) -> Row:
        return _make_row(self._names_tuple, values)


register_serializer(
    RowSerializer.NAME,
    lambda p: RowSerializer([serializer_from_snapshot(s) for s in p["fields"]], p.get("names")),
)


# ---------------------------------------------------------------------------
# lexicographic serializers (FLIP-220)
# ---------------------------------------------------------------------------


class _LexIntegerSerializer(_Stateless, LexicographicalTypeSerializer[int]):
    """Signed int of fixed width: add the offset 2**(bits-1) (flips the sign bit), big-endian."""

    _struct: ClassVar[struct.Struct]
    _offset: ClassVar[int]
    _bits: ClassVar[int]

    def serialize(self, value: int) -> bytes:
        try:
            return self._struct.pack(value + self._offset)
        except (struct.error, TypeError) as exc:
            if isinstance(value, int):
                raise _bad_value(
                    self, value, f"out of range for a {self._bits}-bit signed integer"
                ) from exc
            raise _bad_value(self, value, "expected an int") from exc

    def deserialize(self, data: bytes) -> int:
        try:
            return self._struct.unpack(data)[0] - self._offset
        except struct.error as exc:
            raise _bad_data(self, data, f"expected exactly {self._struct.size} bytes") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[int, int]:
        try:
            return self._struct.unpack_from(data, pos)[0] - self._offset, pos + self._struct.size
        except struct.error as exc:
            raise _bad_data(self, data, f"truncated at offset {pos}") from exc

    def find_comparator(self) -> Callable[[int, int], int]:
        return _natural_cmp


@_registered
class LexicographicLongSerializer(_LexIntegerSerializer):
    """64-bit signed int, sign bit flipped, big-endian; out of range -> SerializationError."""

    NAME = "LexicographicLongSerializer"
    _struct = struct.Struct(">Q")
    _offset = 1 << 63
    _bits = 64


@_registered
class LexicographicIntSerializer(_LexIntegerSerializer):
    """32-bit signed int, sign bit flipped, big-endian."""

    NAME = "LexicographicIntSerializer"
    _struct = struct.Struct(">I")
    _offset = 1 << 31
    _bits = 32


@_registered
class LexicographicShortSerializer(_LexIntegerSerializer):
    """16-bit signed int, sign bit flipped, big-endian."""

    NAME = "LexicographicShortSerializer"
    _struct = struct.Struct(">H")
    _offset = 1 << 15
    _bits = 16


@_registered
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


class _LexFloatingSerializer(_Stateless, LexicographicalTypeSerializer[float]):
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
            raise _bad_value(self, value, "expected a float", exc) from exc
        if bits & self._sign:
            if bits == self._sign:  # -0.0 (also a negative value rounded to 32-bit -0.0)
                return self._zero_bytes
            return self._uint.pack(bits ^ self._all)
        return self._uint.pack(bits | self._sign)

    def _coerce(self, value: Any) -> float:
        """ints, float subclasses and numbers with ``__float__`` (numpy); not str/bytes."""
        if isinstance(value, (str, bytes, bytearray)) or not hasattr(type(value), "__float__"):
            raise _bad_value(self, value, "expected a float")
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
            raise _bad_value(self, value, "expected a float", exc) from exc

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
            raise _bad_data(self, data, f"expected exactly {self._uint.size} bytes") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[float, int]:
        try:
            return self._decode(self._uint.unpack_from(data, pos)[0]), pos + self._uint.size
        except struct.error as exc:
            raise _bad_data(self, data, f"truncated at offset {pos}") from exc

    def find_comparator(self) -> Callable[[float, float], int]:
        return _float_cmp


@_registered
class LexicographicDoubleSerializer(_LexFloatingSerializer):
    """64-bit double, order-preserving (see ``_LexFloatingSerializer``)."""

    NAME = "LexicographicDoubleSerializer"
    _float = struct.Struct(">d")
    _uint = struct.Struct(">Q")
    _sign = 1 << 63
    _all = (1 << 64) - 1
    _nan_bytes = struct.pack(">Q", 0x7FF8000000000000 | (1 << 63))
    _zero_bytes = struct.pack(">Q", 1 << 63)


@_registered
class LexicographicFloatSerializer(_LexFloatingSerializer):
    """32-bit float, order-preserving; Python floats are rounded to 32 bits first."""

    NAME = "LexicographicFloatSerializer"
    _float = struct.Struct(">f")
    _uint = struct.Struct(">I")
    _sign = 1 << 31
    _all = (1 << 32) - 1
    _nan_bytes = struct.pack(">I", 0x7FC00000 | (1 << 31))
    _zero_bytes = struct.pack(">I", 1 << 31)


@_registered
class LexicographicStringSerializer(_Stateless, LexicographicalTypeSerializer[str]):
    """UTF-8 (code point order), 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x00."""

    NAME = "LexicographicStringSerializer"

    def serialize(self, value: str) -> bytes:
        try:
            raw = value.encode()
        except UnicodeEncodeError:
            raw = value.encode("utf-8", "surrogatepass")
        except AttributeError as exc:
            raise _bad_value(self, value, "expected a str") from exc
        return raw.replace(b"\x00", _ESC_ZERO) + _TERMINATOR

    def deserialize(self, data: bytes) -> str:
        raw = _unescape_whole(self, data)
        try:
            return _from_utf8(raw)
        except UnicodeDecodeError as exc:
            raise _bad_data(self, data, "invalid UTF-8") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[str, int]:
        raw, pos = _read_escaped(data, pos)
        return _from_utf8(raw), pos

    def find_comparator(self) -> Callable[[str, str], int]:
        return _natural_cmp


@_registered
class LexicographicBytesSerializer(_Stateless, LexicographicalTypeSerializer[bytes]):
    """Raw bytes, 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x00."""

    NAME = "LexicographicBytesSerializer"

    def serialize(self, value: bytes) -> bytes:
        return _as_bytes(self, value).replace(b"\x00", _ESC_ZERO) + _TERMINATOR

    def deserialize(self, data: bytes) -> bytes:
        return _unescape_whole(self, data)

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[bytes, int]:
        return _read_escaped(data, pos)

    def find_comparator(self) -> Callable[[bytes, bytes], int]:
        return _natural_cmp


@_registered
class LexicographicBooleanSerializer(_BooleanBase, LexicographicalTypeSerializer[bool]):
    """False = 0x00 < True = 0x01."""

    NAME = "LexicographicBooleanSerializer"

    def find_comparator(self) -> Callable[[bool, bool], int]:
        return _natural_cmp


_LEX_LONG = LexicographicLongSerializer.INSTANCE
_LEX_INT = LexicographicIntSerializer.INSTANCE


@_registered
class LexicographicTimestampSerializer(_Stateless, LexicographicalTypeSerializer[_dt.datetime]):
    """``datetime`` -> microseconds since epoch (naive = UTC) as a lexicographic long.

    Aware datetimes are converted to UTC; values come back naive (UTC).
    """

    NAME = "LexicographicTimestampSerializer"

    def serialize(self, value: _dt.datetime) -> bytes:
        if not isinstance(value, _dt.datetime):
            raise _bad_value(self, value, "expected a datetime.datetime")
        return _Q.pack(_datetime_to_micros(value) + (1 << 63))

    def deserialize(self, data: bytes) -> _dt.datetime:
        try:
            return _micros_to_datetime(_Q.unpack(data)[0] - (1 << 63))
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, "expected 8 bytes of a datetime") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.datetime, int]:
        try:
            return _micros_to_datetime(_Q.unpack_from(data, pos)[0] - (1 << 63)), pos + 8
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, f"bad datetime at offset {pos}") from exc

    def find_comparator(self) -> Callable[[_dt.datetime, _dt.datetime], int]:
        def compare(a: _dt.datetime, b: _dt.datetime) -> int:
            return _natural_cmp(_datetime_to_micros(a), _datetime_to_micros(b))

        return compare


@_registered
class LexicographicDateSerializer(_Stateless, LexicographicalTypeSerializer[_dt.date]):
    """``datetime.date`` -> days since 1970-01-01 as a lexicographic int."""

    NAME = "LexicographicDateSerializer"

    def serialize(self, value: _dt.date) -> bytes:
        if not isinstance(value, _dt.date) or isinstance(value, _dt.datetime):
            raise _bad_value(self, value, "expected a datetime.date")
        return _LEX_INT.serialize(value.toordinal() - _EPOCH_DATE_ORDINAL)

    def deserialize(self, data: bytes) -> _dt.date:
        days = _LEX_INT.deserialize(data)
        try:
            return _dt.date.fromordinal(days + _EPOCH_DATE_ORDINAL)
        except (ValueError, OverflowError) as exc:
            raise _bad_data(self, data, "date out of range") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.date, int]:
        days, pos = _LEX_INT.deserialize_nested(data, pos)
        return _dt.date.fromordinal(days + _EPOCH_DATE_ORDINAL), pos

    def find_comparator(self) -> Callable[[_dt.date, _dt.date], int]:
        return _natural_cmp


@_registered
class LexicographicTimeSerializer(_Stateless, LexicographicalTypeSerializer[_dt.time]):
    """Naive ``datetime.time`` -> microseconds since midnight as a lexicographic long."""

    NAME = "LexicographicTimeSerializer"

    def serialize(self, value: _dt.time) -> bytes:
        if not isinstance(value, _dt.time):
            raise _bad_value(self, value, "expected a datetime.time")
        try:
            return _LEX_LONG.serialize(_time_to_micros(value))
        except TypeError as exc:
            raise _bad_value(self, value, "expected a naive time", exc) from exc

    def deserialize(self, data: bytes) -> _dt.time:
        micros = _LEX_LONG.deserialize(data)
        try:
            return _micros_to_time(micros)
        except ValueError as exc:
            raise _bad_data(self, data, str(exc)) from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[_dt.time, int]:
        micros, pos = _LEX_LONG.deserialize_nested(data, pos)
        return _micros_to_time(micros), pos

    def find_comparator(self) -> Callable[[_dt.time, _dt.time], int]:
        return _natural_cmp


# Arbitrary-size ints, order preserving and prefix-free. Three tags keep the order:
#   0x01 + 4-byte (0xFFFFFFFF - n) + n inverted magnitude bytes   value < -2**63
#   0x02 + 8-byte sign-flipped long                                 -2**63 <= value < 2**63
#   0x03 + 4-byte n + n magnitude bytes                             value >= 2**63
_BIG_NEG, _BIG_MID, _BIG_POS = 1, 2, 3
_TAG_Q = struct.Struct(">BQ")
_TAG_I = struct.Struct(">BI")
_LONG_OFFSET = 1 << 63


def _encode_ordered_int(value: int, tag_base: int) -> bytes:
    """Order-preserving, prefix-free bytes of any int; tags are ``tag_base + 0/1/2``."""
    if -_LONG_OFFSET <= value < _LONG_OFFSET:
        return _TAG_Q.pack(tag_base + 1, value + _LONG_OFFSET)
    if value > 0:
        n = (value.bit_length() + 7) // 8
        return _TAG_I.pack(tag_base + 2, n) + value.to_bytes(n, "big")
    magnitude = -value
    n = (magnitude.bit_length() + 7) // 8
    inverted = ((1 << (8 * n)) - 1) ^ magnitude
    return _TAG_I.pack(tag_base, 0xFFFFFFFF - n) + inverted.to_bytes(n, "big")


def _decode_ordered_int(data: bytes, pos: int, tag_base: int) -> tuple[int, int]:
    tag = data[pos] - tag_base
    if tag == 1:
        return _Q.unpack_from(data, pos + 1)[0] - _LONG_OFFSET, pos + 9
    if tag != 0 and tag != 2:
        raise ValueError(f"bad big-int tag 0x{data[pos]:02x} at offset {pos}")
    n = _I.unpack_from(data, pos + 1)[0]
    if tag == 2:
        end = pos + 5 + n
        if end > len(data):
            raise ValueError("truncated big int")
        return int.from_bytes(data[pos + 5 : end], "big"), end
    n = 0xFFFFFFFF - n
    end = pos + 5 + n
    if end > len(data):
        raise ValueError("truncated big int")
    inverted = int.from_bytes(data[pos + 5 : end], "big")
    return -(((1 << (8 * n)) - 1) ^ inverted), end


@_registered
class LexicographicBigIntSerializer(_Stateless, LexicographicalTypeSerializer[int]):
    """Arbitrary-size int, order preserving: int64 range in 9 bytes, larger ones length-tagged."""

    NAME = "LexicographicBigIntSerializer"

    def serialize(self, value: int) -> bytes:
        if not isinstance(value, int):
            raise _bad_value(self, value, "expected an int")
        return _encode_ordered_int(value, _BIG_NEG)

    def deserialize(self, data: bytes) -> int:
        try:
            value, pos = _decode_ordered_int(data, 0, _BIG_NEG)
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, str(exc)) from exc
        _check_end(self, data, pos)
        return value

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[int, int]:
        return _decode_ordered_int(data, pos, _BIG_NEG)

    def find_comparator(self) -> Callable[[int, int], int]:
        return _natural_cmp


_LEX_INT_TYPES = (
    LexicographicLongSerializer,
    LexicographicIntSerializer,
    LexicographicShortSerializer,
    LexicographicByteSerializer,
)


def _compile_lex_tuple_codec(
    parts: Sequence[LexicographicalTypeSerializer[Any]], names: tuple[str, ...] | None
) -> tuple[Callable[[Any], bytes], Callable[[bytes, int], tuple[Any, int]]]:
    """Straight-line code for a lexicographic tuple (same bytes as the part-by-part loop).

    Consecutive fixed-width integers share one ``Struct``; strings are escaped
    inline; other parts call their serializer. Errors of any kind make the
    caller retry on the checked path, which raises the precise error.
    """
    n = len(parts)
    vs = [f"v{i}" for i in range(n)]
    ns: dict[str, Any] = {"ESC": _ESC_ZERO, "TERM": _TERMINATOR, "MK": _make_row, "NAMES": names}
    ser_body: list[str] = []
    pieces: list[str] = []
    de_body: list[str] = []
    i = 0
    while i < n:
        part = parts[i]
        if type(part) in _LEX_INT_TYPES:
            j = i
            fmt = ">"
            while j < n and type(parts[j]) in _LEX_INT_TYPES:
                int_part: Any = parts[j]
                fmt += int_part._struct.format[1:]
                ns[f"O{j}"] = int_part._offset
                j += 1
            compiled = struct.Struct(fmt)
            ns[f"S{i}"] = compiled
            pieces.append(f"S{i}.pack({', '.join(f'{vs[k]} + O{k}' for k in range(i, j))})")
            de_body.append(f"    {', '.join(vs[i:j])}, = S{i}.unpack_from(data, pos)")
            de_body.extend(f"    {vs[k]} -= O{k}" for k in range(i, j))
            de_body.append(f"    pos += {compiled.size}")
            i = j
            continue
        if type(part) is LexicographicStringSerializer:
            ser_body.append(f"    r{i} = {vs[i]}.encode().replace(b'\\x00', ESC) + TERM")
            pieces.append(f"r{i}")
        else:
            ns[f"W{i}"] = part.serialize
            pieces.append(f"W{i}({vs[i]})")
        ns[f"R{i}"] = part.deserialize_nested
        de_body.append(f"    {vs[i]}, pos = R{i}(data, pos)")
        i += 1
    target = ", ".join(vs) + ","
    result = f"MK(NAMES, ({target}))" if names is not None else f"({target})"
    src = "\n".join(
        [
            "def fast_serialize(value):",
            f"    {target} = value",
            *ser_body,
            f"    return b''.join(({', '.join(pieces)},))",
            "",
            "def fast_read(data, pos):",
            *de_body,
            f"    return {result}, pos",
        ]
    )
    exec(compile(src, "<pyspark_datastream lexicographic tuple codec>", "exec"), ns)  # noqa: S102
    return ns["fast_serialize"], ns["fast_read"]


class LexicographicTupleSerializer(LexicographicalTypeSerializer[tuple[Any, ...]]):
    """Fixed-arity tuple: concatenation of its lexicographic parts, in tuple order.

    Each part is prefix-free, so the concatenation is prefix-free and compares
    field by field. No field may be None. With ``field_names`` the values come
    back as ``Row`` (the lexicographic form of ``Types.ROW``).
    """

    NAME = "LexicographicTupleSerializer"

    def __init__(
        self,
        parts: Sequence[LexicographicalTypeSerializer[Any]],
        field_names: Sequence[str] | None = None,
    ) -> None:
        self.parts = list(parts)
        for p in self.parts:
            if not isinstance(p, LexicographicalTypeSerializer):
                raise SerializationError(
                    f"LexicographicTupleSerializer: part {p!r} is not a "
                    f"LexicographicalTypeSerializer"
                )
        self.arity = len(self.parts)
        self.field_names = list(field_names) if field_names is not None else None
        if self.field_names is not None and len(self.field_names) != self.arity:
            raise SerializationError(
                f"LexicographicTupleSerializer: {len(self.field_names)} field names "
                f"{self.field_names!r} for {self.arity} parts"
            )
        self._names_tuple = tuple(self.field_names) if self.field_names is not None else None
        self._setup()

    def _setup(self) -> None:
        self._writers = [p.serialize for p in self.parts]
        self._readers = [p.deserialize_nested for p in self.parts]
        # generated on first use, see _compile_lex_tuple_codec
        self._fast_serialize: Callable[[Any], bytes] | None = None
        self._fast_read: Callable[[bytes, int], tuple[Any, int]] | None = None
        if self.arity:
            self._fast_serialize = self._compile_and_serialize
            self._fast_read = self._compile_and_read

    def _compile(self) -> None:
        self._fast_serialize, self._fast_read = _compile_lex_tuple_codec(
            self.parts, self._names_tuple
        )

    def _compile_and_serialize(self, value: Any) -> bytes:
        self._compile()
        return self._fast_serialize(value)  # type: ignore[misc]

    def _compile_and_read(self, data: bytes, pos: int) -> tuple[Any, int]:
        self._compile()
        return self._fast_read(data, pos)  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_fast_serialize", "_fast_read", "_writers", "_readers"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    def snapshot(self) -> dict[str, Any]:
        params: dict[str, Any] = {"parts": [p.snapshot() for p in self.parts]}
        if self.field_names is not None:
            params["names"] = list(self.field_names)
        return {"name": self.NAME, "params": params}

    def serialize(self, value: tuple[Any, ...]) -> bytes:
        fast = self._fast_serialize
        if fast is not None and isinstance(value, (tuple, list)):
            try:
                return fast(value)
            except _FAST_PATH_ERRORS:
                pass  # the checked path below raises the precise error (or handles it)
        return self._serialize_checked(value)

    def _serialize_checked(self, value: tuple[Any, ...]) -> bytes:
        if not isinstance(value, (tuple, list)):
            raise _bad_value(self, value, "expected a tuple")
        if len(value) != self.arity:
            raise _bad_value(self, value, f"expected {self.arity} fields, got {len(value)}")
        try:
            return b"".join([w(v) for w, v in zip(self._writers, value, strict=False)])
        except SerializationError as exc:
            raise _bad_value(self, value, "a field cannot be serialized", exc) from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
        fast = self._fast_read
        if fast is not None:
            try:
                return fast(data, pos)
            except _FAST_PATH_ERRORS:
                pass
        return self._read_checked(data, pos)

    def _read_checked(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
        out = []
        for read in self._readers:
            v, pos = read(data, pos)
            out.append(v)
        if self._names_tuple is not None:
            return _make_row(self._names_tuple, out), pos
        return tuple(out), pos

    def deserialize(self, data: bytes) -> tuple[Any, ...]:
        try:
            value, pos = self.deserialize_nested(data, 0)
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, str(exc)) from exc
        _check_end(self, data, pos)
        return value

    def find_comparator(self) -> Callable[[tuple[Any, ...], tuple[Any, ...]], int] | None:
        cmps = [p.find_comparator() for p in self.parts]
        if any(c is None for c in cmps):
            return None
        pairs = list(cmps)

        def compare(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
            for c, x, y in zip(pairs, a, b, strict=False):
                r = c(x, y)  # type: ignore[misc]
                if r:
                    return r
            return 0

        return compare


register_serializer(
    LexicographicTupleSerializer.NAME,
    lambda p: LexicographicTupleSerializer(
        [serializer_from_snapshot(s) for s in p["parts"]],  # type: ignore[misc]
        p.get("names"),
    ),
)


# ---------------------------------------------------------------------------
# GenericKeySerializer: keys without a declared type
# ---------------------------------------------------------------------------

# Tags. Byte order across types follows the tag order:
#   None < False < True < int < float < str < bytes < date < naive datetime
#   < aware datetime < tuple < Row.
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

_B_NONE = bytes((_G_NONE,))
_B_FALSE = bytes((_G_FALSE,))
_B_TRUE = bytes((_G_TRUE,))
_B_STR = bytes((_G_STR,))
_B_FLOAT = bytes((_G_FLOAT,))
_B_BYTES = bytes((_G_BYTES,))
_B_TUPLE = bytes((_G_TUPLE,))
_B_ROW = bytes((_G_ROW,))
_B_END = bytes((_G_END,))
_LEX_DOUBLE = LexicographicDoubleSerializer.INSTANCE
_UTC = _dt.timezone.utc


class GenericKeySerializer(_Stateless, TypeSerializer[Any]):
    """Deterministic, prefix-free, tagged encoding of keys that have no declared type.

    Supports None, bool, int (any size), float, str, bytes, datetime.date,
    datetime.datetime and tuples / ``Row``s of these, nested. Each value is a tag
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

    def serialize(self, value: Any) -> bytes:
        t = type(value)
        if t is str:
            try:
                raw = value.encode()
            except UnicodeEncodeError:
                raw = value.encode("utf-8", "surrogatepass")
            return b"".join((_B_STR, raw.replace(b"\x00", _ESC_ZERO), _TERMINATOR))
        if t is int:
            if -_LONG_OFFSET <= value < _LONG_OFFSET:
                return _TAG_Q.pack(_G_INT64, value + _LONG_OFFSET)
            return _encode_ordered_int(value, _G_INT)
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
                    append(raw.replace(b"\x00", _ESC_ZERO))
                    append(_TERMINATOR)
                elif tv is int and -_LONG_OFFSET <= v < _LONG_OFFSET:
                    append(_TAG_Q.pack(_G_INT64, v + _LONG_OFFSET))
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
            out.append(_encode_ordered_int(value, _G_INT))
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
        elif t is Row:
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
        elif t is _dt.datetime:
            self._write_datetime(value, out)
        elif t is _dt.date:
            out.append(_TAG_Q.pack(_G_DATE, value.toordinal() + _LONG_OFFSET))
        else:
            self._write_other(value, out, key)

    def _write_datetime(self, value: _dt.datetime, out: list[bytes]) -> None:
        if value.tzinfo is None or value.utcoffset() is None:
            out.append(
                _TAG_Q.pack(
                    _G_DATETIME, _datetime_to_micros(value.replace(tzinfo=None)) + _LONG_OFFSET
                )
            )
        else:
            out.append(_TAG_Q.pack(_G_DATETIME_TZ, _datetime_to_micros(value) + _LONG_OFFSET))

    def _write_other(self, value: Any, out: list[bytes], key: Any) -> None:
        """Subclasses of the supported types and integral numbers (numpy ints)."""
        if isinstance(value, bool):
            out.append(_B_TRUE if value else _B_FALSE)
        elif isinstance(value, int):
            out.append(_encode_ordered_int(int(value), _G_INT))
        elif isinstance(value, float):
            out.append(_B_FLOAT + _LEX_DOUBLE.serialize(float(value)))
        elif isinstance(value, str):
            out.append(_B_STR)
            out.append(_escape(_utf8(str.__str__(value))))
        elif isinstance(value, (bytes, bytearray, memoryview)):
            out.append(_B_BYTES)
            out.append(_escape(bytes(value)))
        elif isinstance(value, Row):
            self._write(_make_row(value._fields, tuple(value)), out, key)
        elif isinstance(value, tuple):
            self._write(tuple(value), out, key)
        elif isinstance(value, _dt.datetime):
            self._write_datetime(value, out)
        elif isinstance(value, _dt.date):
            out.append(_TAG_Q.pack(_G_DATE, value.toordinal() + _LONG_OFFSET))
        elif getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy.bool_
            out.append(_B_TRUE if value else _B_FALSE)
        elif getattr(getattr(value, "dtype", None), "kind", None) == "f":  # numpy floats
            out.append(_B_FLOAT + _LEX_DOUBLE.serialize(float(value)))
        elif hasattr(type(value), "__index__"):  # numpy ints and other integral types
            out.append(_encode_ordered_int(operator.index(value), _G_INT))
        else:
            where = "" if value is key else f" inside key {_describe(key)}"
            raise SerializationError(
                f"GenericKeySerializer cannot serialize a key value of type "
                f"{type(value).__name__!r}{where}: {_describe(value)} is not a supported key. "
                f"Return a str/int/float/bytes/tuple key from the key selector, or declare "
                f"key_type with a deterministic type (e.g. Types.STRING(), Types.LONG(), "
                f"Types.TUPLE([...]))."
            )

    def deserialize(self, data: bytes) -> Any:
        try:
            tag = data[0]
            if tag == _G_STR and data.endswith(_TERMINATOR):
                body = data[1:-2]
                if 0 not in body:
                    return _from_utf8(body)
            if tag == _G_INT64 and len(data) == 9:
                return _Q.unpack_from(data, 1)[0] - _LONG_OFFSET
            value, pos = self._read(data, 0)
        except SerializationError as exc:
            raise _bad_data(self, data, str(exc)) from exc
        except _DECODE_ERRORS as exc:
            raise _bad_data(self, data, f"{type(exc).__name__}: {exc}") from exc
        _check_end(self, data, pos)
        return value

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Any, int]:
        return self._read(data, pos)

    def _read(self, data: bytes, pos: int) -> tuple[Any, int]:
        tag = data[pos]
        pos += 1
        if tag == _G_STR:
            raw, pos = _read_escaped(data, pos)
            return _from_utf8(raw), pos
        if tag == _G_INT64:
            return _Q.unpack_from(data, pos)[0] - _LONG_OFFSET, pos + 8
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
                return _make_row(None, values), pos
            if marker != 0x01:
                raise ValueError(f"bad Row names marker 0x{marker:02x} at offset {pos - 1}")
            names = []
            for _ in values:
                raw, pos = _read_escaped(data, pos)
                names.append(_from_utf8(raw))
            return _make_row(names, values), pos
        if tag == _G_NONE:
            return None, pos
        if tag == _G_FALSE:
            return False, pos
        if tag == _G_TRUE:
            return True, pos
        if _G_INT <= tag <= _G_INT + 2:
            return _decode_ordered_int(data, pos - 1, _G_INT)
        if tag == _G_FLOAT:
            return _LEX_DOUBLE.deserialize_nested(data, pos)
        if tag == _G_BYTES:
            return _read_escaped(data, pos)
        if tag == _G_DATE:
            return _dt.date.fromordinal(_Q.unpack_from(data, pos)[0] - _LONG_OFFSET), pos + 8
        if tag == _G_DATETIME:
            return _micros_to_datetime(_Q.unpack_from(data, pos)[0] - _LONG_OFFSET), pos + 8
        if tag == _G_DATETIME_TZ:
            micros = _Q.unpack_from(data, pos)[0] - _LONG_OFFSET
            return _micros_to_datetime(micros).replace(tzinfo=_UTC), pos + 8
        raise ValueError(f"unknown key tag 0x{tag:02x} at offset {pos - 1}")


_registered(GenericKeySerializer)
