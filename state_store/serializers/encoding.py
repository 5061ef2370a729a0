"""Byte-level building blocks shared by the serializer modules.

Varints, the error constructors every serializer raises through (so messages name
the serializer and show the value or bytes), the 0x00-escaping of prefix-free byte
strings, the UTF-8 and date/time conversions, and the order-preserving encoding of
arbitrary-size ints. They live apart from the serializers so that the plain,
composite, lexicographic and key serializer modules share one copy without
importing each other.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Callable, Iterable
from typing import Any

from ..exceptions import SerializationError

__all__ = [
    # varints
    "SMALL_VARINTS",
    "varint",
    "read_varint",
    # errors
    "describe",
    "bad_value",
    "bad_data",
    "check_end",
    "decode_whole",
    "read_masked",
    "LazyCodec",
    "DECODE_ERRORS",
    "FAST_PATH_ERRORS",
    "natural_cmp",
    # bytes and strings
    "as_bytes",
    "ESC_ZERO",
    "TERMINATOR",
    "read_escaped",
    "from_utf8",
    # dates and times
    "EPOCH_DATE_ORDINAL",
    "datetime_to_micros",
    "micros_to_datetime",
    "time_to_micros",
    "micros_to_time",
    # order-preserving ints
    "U64",
    "TAG_U64",
    "LONG_OFFSET",
    "encode_ordered_int",
    "decode_ordered_int",
]

# ---------------------------------------------------------------------------
# varints
# ---------------------------------------------------------------------------

SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def varint(n: int) -> bytes:
    """Unsigned LEB128 of ``n >= 0``."""
    if n < 128:
        return SMALL_VARINTS[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
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


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} (type {type(value).__name__})"


def bad_value(
    ser: Any, value: Any, why: str, exc: BaseException | None = None
) -> SerializationError:
    msg = f"{type(ser).__name__} cannot serialize {describe(value)}: {why}"
    if exc is not None and str(exc):
        msg += f" ({exc})"
    return SerializationError(msg)


def bad_data(ser: Any, data: Any, why: str) -> SerializationError:
    shown = bytes(data[:40])
    more = "..." if len(data) > 40 else ""
    return SerializationError(
        f"{type(ser).__name__} cannot deserialize {len(data)} bytes {shown!r}{more}: {why}"
    )


def natural_cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def check_end(ser: Any, data: bytes, pos: int) -> None:
    if pos != len(data):
        raise bad_data(ser, data, f"{len(data) - pos} trailing bytes after offset {pos}")


DECODE_ERRORS = (
    struct.error,
    IndexError,
    UnicodeDecodeError,
    ValueError,
    OverflowError,
    TypeError,
)


def decode_whole(ser: Any, data: bytes, read: Callable[[bytes, int], tuple[Any, int]]) -> Any:
    """The value ``read(data, 0)`` decodes, which must take all of ``data``.

    Raises:
        SerializationError: Bytes ``read`` cannot decode, or bytes left after the value.
    """
    try:
        value, pos = read(data, 0)
    except DECODE_ERRORS as exc:
        raise bad_data(ser, data, str(exc)) from exc
    check_end(ser, data, pos)
    return value



def read_masked(data: bytes, pos: int, mask: int,
                readers: Iterable[Callable[[bytes, int], tuple[Any, int]]]) -> tuple[list[Any], int]:
    """The values ``readers`` read in turn from ``data`` at ``pos``, and the offset after them;
    where bit i of the null ``mask`` is set, the i-th value is None and nothing is read."""
    out: list[Any] = []
    append = out.append
    for i, read in enumerate(readers):
        if mask >> i & 1:
            append(None)
        else:
            v, pos = read(data, pos)
            append(v)
    return out, pos

class LazyCodec:
    """A serializer whose per-record codec is generated on first use, so that construction
    stays cheap: ``_fast_serialize`` and ``_fast_read`` start as functions that generate the
    codec (``_generate_codec``), install it in their place and run it. Pickles leave the
    generated functions and the bound methods out (``__setstate__`` rebuilds them)."""

    _fast_serialize: Callable[[Any], Any] | None
    _fast_read: Callable[[bytes, int], Any] | None

    def _lazy_codec(self, enabled: bool) -> None:
        self._fast_serialize = self._compile_and_serialize if enabled else None
        self._fast_read = self._compile_and_read if enabled else None

    def _generate_codec(self) -> tuple[Callable[[Any], Any], Callable[[bytes, int], Any]]:
        raise NotImplementedError

    def _compile(self) -> tuple[Callable[[Any], Any], Callable[[bytes, int], Any]]:
        """Install the generated codec (replacing the lazy one) and return it."""
        fast_serialize, fast_read = self._generate_codec()
        self._fast_serialize, self._fast_read = fast_serialize, fast_read
        return fast_serialize, fast_read

    def _compile_and_serialize(self, value: Any) -> Any:
        return self._compile()[0](value)

    def _compile_and_read(self, data: bytes, pos: int) -> Any:
        return self._compile()[1](data, pos)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_fast_serialize", "_fast_read", "_writers", "_readers"):
            state.pop(name, None)
        return state

# Errors that make a compiled fast path give up and defer to the checked slow path
# (which then either succeeds, e.g. for lone surrogates, or raises a precise error).
FAST_PATH_ERRORS = (
    struct.error,
    AttributeError,
    TypeError,
    ValueError,  # includes UnicodeError and SerializationError
    OverflowError,
    IndexError,
)


# ---------------------------------------------------------------------------
# bytes and strings
# ---------------------------------------------------------------------------


def as_bytes(ser: Any, value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise bad_value(ser, value, "expected bytes, bytearray or memoryview")


# Escaping for prefix-free byte strings: 0x00 -> 0x00 0xFF, end -> 0x00 0x00.
ESC_ZERO = b"\x00\xff"
TERMINATOR = b"\x00\x00"


def read_escaped(data: bytes, pos: int) -> tuple[bytes, int]:
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


def from_utf8(raw: bytes) -> str:
    """UTF-8 decoding that lets lone surrogates through (``surrogatepass``), strict first
    (same result, faster); raises UnicodeDecodeError on invalid UTF-8."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------
# dates and times
# ---------------------------------------------------------------------------

_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
EPOCH_DATE_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_ONE_MICRO = _dt.timedelta(microseconds=1)


def datetime_to_micros(value: Any) -> int:
    """Microseconds since 1970-01-01 UTC; naive datetimes are taken as UTC."""
    if value.tzinfo is None:
        return (value - _EPOCH_NAIVE) // _ONE_MICRO
    return (value - _EPOCH_UTC) // _ONE_MICRO


def micros_to_datetime(micros: int) -> _dt.datetime:
    return _EPOCH_NAIVE + _dt.timedelta(microseconds=micros)


def time_to_micros(value: _dt.time) -> int:
    if value.tzinfo is not None:
        raise TypeError("time values with a tzinfo are not supported")
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def micros_to_time(micros: int) -> _dt.time:
    if not 0 <= micros < 86_400_000_000:
        raise ValueError(f"time of day out of range: {micros} microseconds")
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return _dt.time(hour, minute, second, micro)


# ---------------------------------------------------------------------------
# order-preserving ints
# ---------------------------------------------------------------------------

#: unsigned 64-bit big-endian
U64 = struct.Struct(">Q")
_I = struct.Struct(">I")

# Arbitrary-size ints, order preserving and prefix-free. Three tags keep the order:
#   0x01 + 4-byte (0xFFFFFFFF - n) + n inverted magnitude bytes   value < -2**63
#   0x02 + 8-byte sign-flipped long                                 -2**63 <= value < 2**63
#   0x03 + 4-byte n + n magnitude bytes                             value >= 2**63
TAG_U64 = struct.Struct(">BQ")
_TAG_I = struct.Struct(">BI")
LONG_OFFSET = 1 << 63


def encode_ordered_int(value: int, tag_base: int) -> bytes:
    """Order-preserving, prefix-free bytes of any int; tags are ``tag_base + 0/1/2``."""
    if -LONG_OFFSET <= value < LONG_OFFSET:
        return TAG_U64.pack(tag_base + 1, value + LONG_OFFSET)
    if value > 0:
        n = (value.bit_length() + 7) // 8
        return _TAG_I.pack(tag_base + 2, n) + value.to_bytes(n, "big")
    magnitude = -value
    n = (magnitude.bit_length() + 7) // 8
    inverted = ((1 << (8 * n)) - 1) ^ magnitude
    return _TAG_I.pack(tag_base, 0xFFFFFFFF - n) + inverted.to_bytes(n, "big")


def decode_ordered_int(data: bytes, pos: int, tag_base: int) -> tuple[int, int]:
    tag = data[pos] - tag_base
    if tag == 1:
        return U64.unpack_from(data, pos + 1)[0] - LONG_OFFSET, pos + 9
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

