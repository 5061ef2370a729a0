"""Collection serializers: primitive arrays, lists and maps of nested serializers.

Counts are varints; lists and maps mark None elements/values in a null bitmap
and write the others in their serializer's nested form, so any element
serializer composes. Lists of fixed-width numbers without None are one packed
``struct`` array.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from ..exceptions import SerializationError
from .base import TypeSerializer
from .encoding import bad_data, bad_value, check_end, decode_whole, read_masked, read_varint, varint
from .plain import FIXED_WIDTH_CODES
from .registry import register_serializer, serializer_from_snapshot

__all__ = ["PrimitiveArraySerializer", "ListSerializer", "MapSerializer"]


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
            return varint(n) + struct.pack(f">{n}{self._code}", *value)
        except (struct.error, TypeError, OverflowError) as exc:
            raise bad_value(
                self, value, f"expected a sequence of {self.element.lower()} values", exc
            ) from exc

    serialize = serialize_nested

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[list[Any], int]:
        n, pos = read_varint(data, pos)
        try:
            values = list(struct.unpack_from(f">{n}{self._code}", data, pos))
        except struct.error as exc:
            raise bad_data(self, data, f"truncated array of {n} at offset {pos}") from exc
        return values, pos + n * self._size

    def deserialize(self, data: bytes) -> list[Any]:
        values, pos = self.deserialize_nested(data, 0)
        check_end(self, data, pos)
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
        code = FIXED_WIDTH_CODES.get(type(element_serializer))
        self._fixed_code = code
        self._fixed_size = struct.calcsize(">" + code) if code else 0

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.NAME, "params": {"element": self.element_serializer.snapshot()}}

    def serialize_nested(self, value: Sequence[Any]) -> bytes:
        if not isinstance(value, (list, tuple)):
            raise bad_value(self, value, "expected a list")
        n = len(value)
        write = self._write
        if not _has_none(value):
            code = self._fixed_code
            if code is not None:
                try:
                    return b"".join((varint(n), b"\x00", struct.pack(f">{n}{code}", *value)))
                except (struct.error, TypeError, OverflowError):
                    pass  # the element serializer below names the bad element
            return b"".join([varint(n), b"\x00", *[write(v) for v in value]])
        mask = _null_mask(value)
        parts = [varint(n), b"\x01", mask.to_bytes((n + 7) // 8, "little")]
        parts.extend(write(v) for v in value if v is not None)
        return b"".join(parts)

    serialize = serialize_nested

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[list[Any], int]:
        n, pos = read_varint(data, pos)
        try:
            flag = data[pos]
        except IndexError as exc:
            raise bad_data(self, data, f"truncated at offset {pos}") from exc
        pos += 1
        read = self._read
        if flag == 0 and self._fixed_code is not None:
            try:
                values = list(struct.unpack_from(f">{n}{self._fixed_code}", data, pos))
            except struct.error as exc:
                raise bad_data(self, data, f"truncated array of {n} at offset {pos}") from exc
            return values, pos + n * self._fixed_size
        if flag == 0:
            out: list[Any] = []
            append = out.append
            for _ in range(n):
                v, pos = read(data, pos)
                append(v)
            return out, pos
        if flag != 1:
            raise bad_data(self, data, f"bad null flag 0x{flag:02x} at offset {pos - 1}")
        nbytes = (n + 7) // 8
        mask = int.from_bytes(data[pos : pos + nbytes], "little")
        return read_masked(data, pos + nbytes, mask, repeat(read, n))

    def deserialize(self, data: bytes) -> list[Any]:
        return decode_whole(self, data, self.deserialize_nested)


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
            raise bad_value(self, value, "expected a dict") from exc
        n = len(items)
        wk = self.key_serializer.serialize_nested
        wv = self.value_serializer.serialize_nested
        values = [v for _, v in items]
        parts: list[bytes] = [varint(n)]
        if _has_none(values):
            parts.append(b"\x01")
            parts.append(_null_mask(values).to_bytes((n + 7) // 8, "little"))
        else:
            parts.append(b"\x00")
        for k, v in items:
            if k is None:
                raise bad_value(self, value, "map keys must not be None")
            parts.append(wk(k))
            if v is not None:
                parts.append(wv(v))
        return b"".join(parts)

    serialize = serialize_nested

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[dict[Any, Any], int]:
        n, pos = read_varint(data, pos)
        flag = data[pos]
        pos += 1
        mask = 0
        if flag == 1:
            nbytes = (n + 7) // 8
            mask = int.from_bytes(data[pos : pos + nbytes], "little")
            pos += nbytes
        elif flag != 0:
            raise bad_data(self, data, f"bad null flag 0x{flag:02x} at offset {pos - 1}")
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
        return decode_whole(self, data, self.deserialize_nested)


register_serializer(
    MapSerializer.NAME,
    lambda p: MapSerializer(
        serializer_from_snapshot(p["key"]), serializer_from_snapshot(p["value"])
    ),
)
