"""``LexicographicTupleSerializer``: order-preserving composite keys (tuples and Rows).

The encoding is the concatenation of the parts' lexicographic encodings, which
are prefix-free, so tuples compare field by field in bytes. Apart from the
single-value serializers because its generated fast path (one ``Struct`` per run
of fixed-width ints, strings escaped inline) is a module's worth on its own.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from ..exceptions import SerializationError
from ..row import make_row
from .base import LexicographicalTypeSerializer, TypeSerializer
from .encoding import (
    ESC_ZERO,
    FAST_PATH_ERRORS,
    TERMINATOR,
    LazyCodec,
    bad_value,
    decode_whole,
)
from .lexicographic import LexicographicStringSerializer, fixed_int_layout
from .registry import register_serializer, serializer_from_snapshot

__all__ = ["LexicographicTupleSerializer"]


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
    ns: dict[str, Any] = {"ESC": ESC_ZERO, "TERM": TERMINATOR, "MK": make_row, "NAMES": names}
    ser_body: list[str] = []
    pieces: list[str] = []
    de_body: list[str] = []
    i = 0
    while i < n:
        part = parts[i]
        if fixed_int_layout(part) is not None:
            j = i
            fmt = ">"
            while j < n and (layout := fixed_int_layout(parts[j])) is not None:
                code, ns[f"O{j}"] = layout
                fmt += code
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


def _lexicographic_part(part: TypeSerializer[Any]) -> LexicographicalTypeSerializer[Any]:
    """``part``, checked to be lexicographic (``SerializationError`` if not)."""
    if not isinstance(part, LexicographicalTypeSerializer):
        raise SerializationError(
            f"LexicographicTupleSerializer: part {part!r} is not a "
            f"LexicographicalTypeSerializer"
        )
    return part


class LexicographicTupleSerializer(LazyCodec, LexicographicalTypeSerializer[tuple[Any, ...]]):
    """Fixed-arity tuple: concatenation of its lexicographic parts, in tuple order.

    Each part is prefix-free, so the concatenation is prefix-free and compares
    field by field. No field may be None. With ``field_names`` the values come
    back as ``Row`` (the lexicographic form of ``Types.ROW``).

    Args:
        parts: One LexicographicalTypeSerializer per field, in order.
        field_names: The Row field names, one per part; None gives plain tuples.

    Raises:
        SerializationError: A part is not a LexicographicalTypeSerializer, or the number of
            field names differs from the number of parts.
    """

    NAME = "LexicographicTupleSerializer"

    def __init__(
        self,
        parts: Sequence[LexicographicalTypeSerializer[Any]],
        field_names: Sequence[str] | None = None,
    ) -> None:
        self.parts = [_lexicographic_part(p) for p in parts]
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
        self._lazy_codec(bool(self.arity))  # generated on first use

    def _generate_codec(
        self,
    ) -> tuple[Callable[[Any], bytes], Callable[[bytes, int], tuple[Any, int]]]:
        return _compile_lex_tuple_codec(self.parts, self._names_tuple)

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
            except FAST_PATH_ERRORS:
                pass  # the checked path below raises the precise error (or handles it)
        return self._serialize_checked(value)

    def _serialize_checked(self, value: tuple[Any, ...]) -> bytes:
        if not isinstance(value, (tuple, list)):
            raise bad_value(self, value, "expected a tuple")
        if len(value) != self.arity:
            raise bad_value(self, value, f"expected {self.arity} fields, got {len(value)}")
        try:
            return b"".join([w(v) for w, v in zip(self._writers, value, strict=False)])
        except SerializationError as exc:
            raise bad_value(self, value, "a field cannot be serialized", exc) from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
        fast = self._fast_read
        if fast is not None:
            try:
                return fast(data, pos)
            except FAST_PATH_ERRORS:
                pass
        return self._read_checked(data, pos)

    def _read_checked(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
        out = []
        for read in self._readers:
            v, pos = read(data, pos)
            out.append(v)
        if self._names_tuple is not None:
            return make_row(self._names_tuple, out), pos
        return tuple(out), pos

    def deserialize(self, data: bytes) -> tuple[Any, ...]:
        return decode_whole(self, data, self.deserialize_nested)

    def find_comparator(self) -> Callable[[tuple[Any, ...], tuple[Any, ...]], int] | None:
        pairs = [c for c in (p.find_comparator() for p in self.parts) if c is not None]
        if len(pairs) != self.arity:
            return None

        def compare(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
            for c, x, y in zip(pairs, a, b, strict=False):
                r = c(x, y)
                if r:
                    return r
            return 0

        return compare


register_serializer(
    LexicographicTupleSerializer.NAME,
    lambda p: LexicographicTupleSerializer(
        [_lexicographic_part(serializer_from_snapshot(s)) for s in p["parts"]],
        p.get("names"),
    ),
)
