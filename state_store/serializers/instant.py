"""``Instant`` (PyFlink's ``pyflink.common.time.Instant``) and its serializers.

``Types.INSTANT()`` records are Instants: seconds and nanoseconds since the epoch. They
are not Spark columns (no Spark type holds nanoseconds): records of the type travel
pickled between stages, and keys and state use the serializers here.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

from .base import LexicographicalTypeSerializer, TypeSerializer
from .encoding import DECODE_ERRORS, bad_data, bad_value, natural_cmp
from .registry import Stateless, registered

__all__ = ["Instant", "InstantSerializer", "LexicographicInstantSerializer"]

_PLAIN = struct.Struct(">qi")
_LEX = struct.Struct(">QI")
_SIGN = 1 << 63


@functools.total_ordering
class Instant:
    """A point in time: whole seconds since the epoch and nanoseconds within the second.

    Args:
        seconds: Whole seconds since the epoch (negative before 1970).
        nanos: Nanoseconds within the second, 0 to 999,999,999.

    Raises:
        TypeError: ``seconds`` or ``nanos`` is not an int.
        ValueError: ``nanos`` is outside 0..999,999,999.

    Example:
        >>> Instant.of_epoch_milli(1500).to_epoch_milli()
        1500
    """

    __slots__ = ("seconds", "nanos")

    def __init__(self, seconds: int, nanos: int = 0) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int) or \
                isinstance(nanos, bool) or not isinstance(nanos, int):
            raise TypeError(f"Instant needs int seconds and nanos, got ({seconds!r}, {nanos!r})")
        if not 0 <= nanos < 10**9:
            raise ValueError(f"Instant nanos must be in 0..999999999, got {nanos!r}")
        self.seconds = seconds
        self.nanos = nanos

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        """The Instant ``epoch_milli`` milliseconds after the epoch.

        Args:
            epoch_milli: milliseconds since 1970-01-01T00:00:00Z (negative: before).

        Returns:
            The Instant.
        """
        seconds, millis = divmod(epoch_milli, 1000)
        return Instant(seconds, millis * 1_000_000)

    def to_epoch_milli(self) -> int:
        """Milliseconds since the epoch (sub-millisecond nanoseconds are dropped).

        Returns:
            The milliseconds.
        """
        return self.seconds * 1000 + self.nanos // 1_000_000

    def _key(self) -> tuple[int, int]:
        return self.seconds, self.nanos

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Instant) and self._key() == other._key()

    def __lt__(self, other: Instant) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(("Instant", self.seconds, self.nanos))

    def __reduce__(self) -> tuple[Any, ...]:
        return Instant, (self.seconds, self.nanos)

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


@registered
class InstantSerializer(Stateless, TypeSerializer[Instant]):
    """``Instant`` as 8 bytes of seconds and 4 of nanoseconds (Flink's layout)."""

    NAME = "InstantSerializer"

    def serialize(self, value: Instant) -> bytes:
        if not isinstance(value, Instant):
            raise bad_value(self, value, "expected an Instant")
        return _PLAIN.pack(value.seconds, value.nanos)

    def deserialize(self, data: bytes) -> Instant:
        try:
            return Instant(*_PLAIN.unpack(data))
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, "expected 12 bytes of an Instant") from exc

    serialize_nested = serialize

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Instant, int]:
        try:
            return Instant(*_PLAIN.unpack_from(data, pos)), pos + 12
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"bad Instant at offset {pos}") from exc


@registered
class LexicographicInstantSerializer(Stateless, LexicographicalTypeSerializer[Instant]):
    """``Instant`` whose bytes order as the instants do (sign-flipped seconds, nanos)."""

    NAME = "LexicographicInstantSerializer"

    def serialize(self, value: Instant) -> bytes:
        if not isinstance(value, Instant):
            raise bad_value(self, value, "expected an Instant")
        return _LEX.pack(value.seconds + _SIGN, value.nanos)

    def deserialize(self, data: bytes) -> Instant:
        try:
            seconds, nanos = _LEX.unpack(data)
            return Instant(seconds - _SIGN, nanos)
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, "expected 12 bytes of an Instant") from exc

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[Instant, int]:
        try:
            seconds, nanos = _LEX.unpack_from(data, pos)
            return Instant(seconds - _SIGN, nanos), pos + 12
        except DECODE_ERRORS as exc:
            raise bad_data(self, data, f"bad Instant at offset {pos}") from exc

    def find_comparator(self) -> Callable[[Instant, Instant], int]:
        def compare(a: Instant, b: Instant) -> int:
            return natural_cmp((a.seconds, a.nanos), (b.seconds, b.nanos))

        return compare
