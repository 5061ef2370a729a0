"""``TtlSerializer``: a state value with its last-access timestamp (state TTL).

A state whose descriptor has time-to-live enabled stores every value (a value state's
value, each list element, each map value, a reducing value or an accumulator) as a
:class:`TtlValue`. Its bytes are the timestamp first, then the user value::

    8 bytes   last-access timestamp, ms since the epoch, big-endian signed
    rest      the user value serializer's bytes

so a cleanup can read a row's timestamp without decoding the value. The snapshot
``{"name": "TtlValue", "params": {"value": <user value serializer snapshot>}}`` differs
from the plain user serializer's, which is what makes restoring TTL state into a
descriptor without TTL (or the reverse) incompatible.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from ..exceptions import SerializationError
from .base import TypeSerializer
from .registry import register_serializer, serializer_from_snapshot

__all__ = ["TtlValue", "TtlSerializer", "is_ttl_snapshot", "TTL_TIMESTAMP"]

#: the timestamp prefix of a serialized :class:`TtlValue`
TTL_TIMESTAMP = struct.Struct(">q")
_NAME = "TtlValue"


class TtlValue(NamedTuple):
    """A user value and the processing time (ms) it was last accessed at."""

    user_value: Any
    last_access_timestamp: int

    def get_user_value(self) -> Any:
        return self.user_value

    def get_last_access_timestamp(self) -> int:
        return self.last_access_timestamp


class TtlSerializer(TypeSerializer[TtlValue]):
    """Serializer of :class:`TtlValue` around the user value serializer ``value_serializer``."""

    def __init__(self, value_serializer: TypeSerializer[Any]) -> None:
        if not isinstance(value_serializer, TypeSerializer):
            raise SerializationError(
                f"TtlSerializer needs a TypeSerializer, got {value_serializer!r:.80}")
        if isinstance(value_serializer, TtlSerializer):
            raise SerializationError("TtlSerializer cannot wrap another TtlSerializer")
        self.value_serializer = value_serializer
        self.is_deterministic = bool(getattr(value_serializer, "is_deterministic", False))

    def serialize(self, value: TtlValue) -> bytes:
        try:
            stamp = TTL_TIMESTAMP.pack(value[1])
        except (struct.error, TypeError, IndexError) as exc:
            raise SerializationError(
                f"TtlSerializer: {value!r:.80} is not a (value, timestamp) TtlValue: {exc}"
            ) from exc
        return stamp + self.value_serializer.serialize(value[0])

    def deserialize(self, data: bytes) -> TtlValue:
        if len(data) < 8:
            raise SerializationError(
                f"TtlSerializer: {bytes(data[:16])!r} is shorter than its 8-byte timestamp")
        return TtlValue(self.value_serializer.deserialize(data[8:]),
                        TTL_TIMESTAMP.unpack_from(data)[0])

    def snapshot(self) -> dict[str, Any]:
        return {"name": _NAME, "params": {"value": self.value_serializer.snapshot()}}

    def __repr__(self) -> str:
        return f"TtlSerializer({self.value_serializer!r})"


def is_ttl_snapshot(snapshot: Any) -> bool:
    """True when ``snapshot`` (a serializer snapshot dict) is a :class:`TtlSerializer`'s."""
    return isinstance(snapshot, dict) and snapshot.get("name") == _NAME


register_serializer(
    _NAME, lambda params: TtlSerializer(serializer_from_snapshot(params["value"])))
