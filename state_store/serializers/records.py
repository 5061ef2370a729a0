"""Record serializers: ``TupleSerializer`` and ``RowSerializer`` (fixed arity, typed fields).

A record is a null bitmap followed by its non-null fields in nested form. Records
without None fields go through straight-line code generated once per field
layout (runs of fixed-width numbers packed by one ``struct``, strings encoded
inline); the generic loop defines the format and the error messages and takes
over whenever the generated code gives up.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ..exceptions import SerializationError
from ..row import Row, make_row
from .base import TypeSerializer
from .encoding import (
    FAST_PATH_ERRORS,
    SMALL_VARINTS,
    LazyCodec,
    bad_data,
    bad_value,
    decode_whole,
    read_masked,
    read_varint,
    varint,
)
from .plain import FIXED_WIDTH_CODES, StringSerializer
from .registry import register_serializer, serializer_from_snapshot

__all__ = ["TupleSerializer", "RowSerializer"]


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
        "SV": SMALL_VARINTS,
        "VI": varint,
        "RV": read_varint,
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
        if type(ser) in FIXED_WIDTH_CODES:
            j = i
            fmt = ">"
            while j < n and type(field_serializers[j]) in FIXED_WIDTH_CODES:
                fmt += FIXED_WIDTH_CODES[type(field_serializers[j])]
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


class _FieldsSerializer(LazyCodec, TypeSerializer[Any]):
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
        self._lazy_codec(bool(self.arity))

    def _generate_codec(
        self,
    ) -> tuple[
        Callable[[Any], bytes | None], Callable[[bytes, int], tuple[tuple[Any, ...], int] | None]
    ]:
        return _fields_codec(self.field_serializers)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._writers = [s.serialize_nested for s in self.field_serializers]
        self._readers = [s.deserialize_nested for s in self.field_serializers]
        self._install_lazy_codec()

    def _fields_of(self, value: Any) -> Sequence[Any]:
        if isinstance(value, (tuple, list)):
            return value
        raise bad_value(self, value, "expected a tuple")

    def serialize_nested(self, value: Any) -> bytes:
        fast = self._fast_serialize
        if fast is not None and isinstance(value, (tuple, list)):
            try:
                out = fast(value)
            except FAST_PATH_ERRORS:
                out = None
            if out is not None:
                return out
        return self._serialize_checked(value)

    serialize = serialize_nested

    def _serialize_checked(self, value: Any) -> bytes:
        fields = self._fields_of(value)
        if len(fields) != self.arity:
            raise bad_value(self, value, f"expected {self.arity} fields, got {len(fields)}")
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
            except FAST_PATH_ERRORS:
                result = None
            if result is not None:
                return result
        nb = self._mask_bytes
        end = pos + nb
        if end > len(data):
            raise bad_data(self, data, f"truncated null bitmap at offset {pos}")
        mask = int.from_bytes(data[pos:end], "little")
        return read_masked(data, end, mask, self._readers)

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
            except FAST_PATH_ERRORS:
                result = None
            if result is not None and result[1] == len(data):
                return self._build(result[0])
        return self._build(decode_whole(self, data, self._read_values))


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
                raise bad_value(self, value, f"missing field {exc.args[0]!r}") from exc
        raise bad_value(self, value, "expected a Row, tuple, list or dict")

    def _build(self, values: Sequence[Any]) -> Row:
        return make_row(self._names_tuple, values)


register_serializer(
    RowSerializer.NAME,
    lambda p: RowSerializer([serializer_from_snapshot(s) for s in p["fields"]], p.get("names")),
)
