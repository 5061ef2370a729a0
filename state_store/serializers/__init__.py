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

The modules, each importing only those above it:

* ``encoding``: byte-level helpers shared by the others (varints, errors, escaping,
  date/time and order-preserving int conversions);
* ``base``: the two interfaces; ``registry``: snapshot name -> serializer;
* ``plain``: single values; ``containers``: primitive arrays, lists, maps;
  ``records``: tuples and Rows;
* ``lexicographic``: order-preserving single values; ``lex_tuple``: their tuples;
* ``generic_key``: ``GenericKeySerializer``;
* ``ttl``: ``TtlSerializer`` (a state value with its last-access timestamp, state TTL).

This package imports all of them, so every serializer is registered for
``serializer_from_snapshot`` as soon as any one is imported; import the names
from here.
"""

from __future__ import annotations

from .base import LexicographicalTypeSerializer, TypeSerializer
from .containers import ListSerializer, MapSerializer, PrimitiveArraySerializer
from .generic_key import GenericKeySerializer
from .lex_tuple import LexicographicTupleSerializer
from .lexicographic import (
    LexicographicBigIntSerializer,
    LexicographicBooleanSerializer,
    LexicographicByteSerializer,
    LexicographicBytesSerializer,
    LexicographicDateSerializer,
    LexicographicDoubleSerializer,
    LexicographicFloatSerializer,
    LexicographicIntSerializer,
    LexicographicLongSerializer,
    LexicographicShortSerializer,
    LexicographicStringSerializer,
    LexicographicTimeSerializer,
    LexicographicTimestampSerializer,
)
from .plain import (
    BigDecimalSerializer,
    BigIntSerializer,
    BooleanSerializer,
    ByteSerializer,
    BytesSerializer,
    DateSerializer,
    DoubleSerializer,
    FloatSerializer,
    IntSerializer,
    LongSerializer,
    PickleSerializer,
    ShortSerializer,
    StringSerializer,
    TimeSerializer,
    TimestampSerializer,
)
from .records import RowSerializer, TupleSerializer
from .registry import register_serializer, serializer_from_snapshot
from .ttl import TtlSerializer, TtlValue

__all__ = [
    "BigDecimalSerializer",
    "BigIntSerializer",
    "BooleanSerializer",
    "ByteSerializer",
    "BytesSerializer",
    "DateSerializer",
    "DoubleSerializer",
    "FloatSerializer",
    "GenericKeySerializer",
    "IntSerializer",
    "LexicographicBigIntSerializer",
    "LexicographicBooleanSerializer",
    "LexicographicByteSerializer",
    "LexicographicBytesSerializer",
    "LexicographicDateSerializer",
    "LexicographicDoubleSerializer",
    "LexicographicFloatSerializer",
    "LexicographicIntSerializer",
    "LexicographicLongSerializer",
    "LexicographicShortSerializer",
    "LexicographicStringSerializer",
    "LexicographicTimeSerializer",
    "LexicographicTimestampSerializer",
    "LexicographicTupleSerializer",
    "LexicographicalTypeSerializer",
    "ListSerializer",
    "LongSerializer",
    "MapSerializer",
    "PickleSerializer",
    "PrimitiveArraySerializer",
    "RowSerializer",
    "ShortSerializer",
    "StringSerializer",
    "TimeSerializer",
    "TimestampSerializer",
    "TtlSerializer",
    "TtlValue",
    "TupleSerializer",
    "TypeSerializer",
    "register_serializer",
    "serializer_from_snapshot",
]

