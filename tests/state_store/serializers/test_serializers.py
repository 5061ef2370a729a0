"""Serializers: round trips, FLIP-220 order preservation, prefix-freeness, snapshots, errors."""

from __future__ import annotations

import datetime as dt
import json
import math
import pickle
import struct
import threading
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark_datastream import SerializationError
from pyspark_datastream.state_store.row import Row
from pyspark_datastream.state_store.serializers import (
    BigDecimalSerializer,
    BigIntSerializer,
    BooleanSerializer,
    ByteSerializer,
    BytesSerializer,
    DateSerializer,
    DoubleSerializer,
    FloatSerializer,
    GenericKeySerializer,
    IntSerializer,
    LexicographicalTypeSerializer,
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
    LexicographicTupleSerializer,
    ListSerializer,
    LongSerializer,
    MapSerializer,
    PickleSerializer,
    PrimitiveArraySerializer,
    RowSerializer,
    ShortSerializer,
    StringSerializer,
    TimeSerializer,
    TimestampSerializer,
    TupleSerializer,
    TypeSerializer,
    register_serializer,
    serializer_from_snapshot,
)

# Modest example counts keep this file at a few seconds of CPU.
FAST = settings(max_examples=150, deadline=None)
SOME = settings(max_examples=60, deadline=None)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
UTC = dt.timezone.utc
F32_TINY = struct.unpack(">f", bytes.fromhex("00000001"))[0]
F32_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]

longs = st.integers(LONG_MIN, LONG_MAX)
ints = st.integers(-(2**31), 2**31 - 1)
shorts = st.integers(-(2**15), 2**15 - 1)
bytes8 = st.integers(-128, 127)
doubles = st.floats(allow_nan=True, allow_infinity=True)
float32s = st.floats(width=32, allow_nan=True, allow_infinity=True)
# Non-BMP, NUL and lone surrogates (category Cs) included.
texts = st.text(st.characters(blacklist_categories=()), max_size=12)
# Small alphabet: makes common prefixes, NULs and 0xFF-ish bytes frequent.
prefixy_texts = st.text(alphabet="\x00a\xff\U0001f600", max_size=5)
prefixy_bytes = st.lists(st.sampled_from([0, 1, 0xFF]), max_size=5).map(bytes)
naive_datetimes = st.datetimes()
aware_datetimes = st.datetimes(
    timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=5, minutes=30))])
)


def _same(a: Any, b: Any) -> bool:
    """Strict equality for round trips: same type, NaN equals NaN, -0.0 differs from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, Row):
        return a.get_field_names() == b.get_field_names() and _same(tuple(a), tuple(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return bool(a == b)


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _float_key(x: float) -> tuple[int, float]:
    """Total order the lexicographic float encoding promises: NaN last, -0.0 == 0.0."""
    return (1, 0.0) if math.isnan(x) else (0, x + 0.0)


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _check_order(ser: LexicographicalTypeSerializer[Any], a: Any, b: Any, key: Any = None) -> None:
    ka, kb = (a, b) if key is None else (key(a), key(b))
    ba, bb = ser.serialize(a), ser.serialize(b)
    assert _sign(_cmp(ka, kb)) == _sign(_cmp(ba, bb)), (a, b, ba, bb)
    assert (ka == kb) == (ba == bb), (a, b, ba, bb)
    # prefix-free: neither encoding is a proper prefix of the other
    if ba != bb:
        assert not bb.startswith(ba) and not ba.startswith(bb), (a, b, ba, bb)
    comparator = ser.find_comparator()
    if comparator is not None:
        assert _sign(comparator(a, b)) == _sign(_cmp(ba, bb))


def _check_nested(ser: TypeSerializer[Any], value: Any) -> Any:
    """serialize_nested/deserialize_nested agree and stop exactly at the end, with junk after."""
    nested = ser.serialize_nested(value)
    out, pos = ser.deserialize_nested(b"\x07" + nested + b"\x00\x01junk", 1)
    assert pos == 1 + len(nested)
    return out


# ---------------------------------------------------------------------------
# plain serializers: round trips
# ---------------------------------------------------------------------------

PLAIN_CASES = [
    (LongSerializer.INSTANCE, longs, [LONG_MIN, LONG_MAX, 0, -1]),
    (IntSerializer.INSTANCE, ints, [-(2**31), 2**31 - 1, 0]),
    (ShortSerializer.INSTANCE, shorts, [-(2**15), 2**15 - 1]),
    (ByteSerializer.INSTANCE, bytes8, [-128, 127]),
    (DoubleSerializer.INSTANCE, doubles, [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324]),
    (FloatSerializer.INSTANCE, float32s, [0.0, -0.0, math.inf, -math.inf, math.nan]),
    (BooleanSerializer.INSTANCE, st.booleans(), [True, False]),
    (StringSerializer.INSTANCE, texts, ["", "\x00", "a\x00b", "\U0001f600", "\ud800"]),
    (BytesSerializer.INSTANCE, st.binary(max_size=20), [b"", b"\x00", b"\x00\xff"]),
    (BigIntSerializer.INSTANCE, st.integers(), [0, -1, 2**200, -(2**200), LONG_MIN]),
    (TimestampSerializer.INSTANCE, naive_datetimes, [dt.datetime.min, dt.datetime.max]),
    (DateSerializer.INSTANCE, st.dates(), [dt.date.min, dt.date.max, dt.date(1970, 1, 1)]),
    (TimeSerializer.INSTANCE, st.times(), [dt.time.min, dt.time.max]),
    (
        BigDecimalSerializer.INSTANCE,
        st.decimals(allow_nan=False),
        [Decimal("1.00"), Decimal("-0"), Decimal("1E+30")],
    ),
    (
        PickleSerializer.INSTANCE,
        st.recursive(
            st.none() | st.integers() | texts,
            lambda c: st.lists(c, max_size=3) | st.tuples(c, c),
            max_leaves=8,
        ),
        [{"a": [1, 2]}, None],
    ),
]


@pytest.mark.parametrize(
    ("ser", "values", "boundaries"), PLAIN_CASES, ids=[type(c[0]).__name__ for c in PLAIN_CASES]
)
def test_plain_round_trip(ser: TypeSerializer[Any], values: Any, boundaries: list[Any]) -> None:
    for v in boundaries:
        assert _same(ser.deserialize(ser.serialize(v)), v), v
        assert _same(_check_nested(ser, v), v), v

    @SOME
    @given(values)
    def run(v: Any) -> None:
        assert _same(ser.deserialize(ser.serialize(v)), v)
        assert _same(_check_nested(ser, v), v)

    run()


def test_plain_encodings_are_the_documented_compact_ones() -> None:
    assert LongSerializer.INSTANCE.serialize(1) == b"\x00" * 7 + b"\x01"
    assert LongSerializer.INSTANCE.serialize(-1) == b"\xff" * 8
    assert IntSerializer.INSTANCE.serialize(-2) == b"\xff\xff\xff\xfe"
    assert DoubleSerializer.INSTANCE.serialize(1.0) == b"\x3f\xf0" + b"\x00" * 6
    assert StringSerializer.INSTANCE.serialize("hé") == "hé".encode()
    assert BytesSerializer.INSTANCE.serialize(bytearray(b"ab")) == b"ab"
    assert BooleanSerializer.INSTANCE.serialize(True) == b"\x01"
    assert StringSerializer.INSTANCE.serialize_nested("ab") == b"\x02ab"
    assert TimestampSerializer.INSTANCE.serialize(dt.datetime(1970, 1, 1, 0, 0, 1)) == (
        (1_000_000).to_bytes(8, "big")
    )


def test_timestamp_aware_values_are_stored_as_utc() -> None:
    ser = TimestampSerializer.INSTANCE
    aware = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert ser.deserialize(ser.serialize(aware)) == dt.datetime(2024, 5, 1, 10, 0)


def test_pickle_is_protocol_5_and_not_deterministic() -> None:
    data = PickleSerializer.INSTANCE.serialize({"k": 1})
    assert data[:2] == b"\x80\x05"
    assert PickleSerializer.INSTANCE.is_deterministic is False


# Composite values: a recursive (serializer, value strategy) generator.

_LEAVES: list[tuple[TypeSerializer[Any], Any]] = [
    (LongSerializer.INSTANCE, longs),
    (DoubleSerializer.INSTANCE, doubles),
    (StringSerializer.INSTANCE, texts),
    (BytesSerializer.INSTANCE, st.binary(max_size=6)),
    (BooleanSerializer.INSTANCE, st.booleans()),
    (TimestampSerializer.INSTANCE, naive_datetimes),
    (PrimitiveArraySerializer("INT"), st.lists(ints, max_size=4)),
    (PrimitiveArraySerializer("DOUBLE"), st.lists(doubles, max_size=4)),
    (PrimitiveArraySerializer("BOOLEAN"), st.lists(st.booleans(), max_size=4)),
]


@st.composite
def _ser_and_values(draw: Any, depth: int = 0) -> tuple[TypeSerializer[Any], Any]:
    kind = (
        draw(st.sampled_from(["leaf"] * 2 + ["list", "map", "tuple", "row"]))
        if depth < 2
        else "leaf"
    )
    if kind == "leaf":
        return draw(st.sampled_from(_LEAVES))
    if kind == "list":
        es, ev = draw(_ser_and_values(depth + 1))
        return ListSerializer(es), st.lists(st.none() | ev, max_size=10)
    if kind == "map":
        vs, vv = draw(_ser_and_values(depth + 1))
        return MapSerializer(StringSerializer.INSTANCE, vs), st.dictionaries(
            texts, st.none() | vv, max_size=4
        )
    n = draw(st.integers(0, 10 if depth == 0 else 3))  # > 8 fields: two bitmap bytes
    subs = [draw(_ser_and_values(depth + 1)) for _ in range(n)]
    field_values = st.tuples(*[st.none() | v for _, v in subs])
    if kind == "tuple":
        return TupleSerializer([s for s, _ in subs]), field_values
    names = [f"n{i}" for i in range(n)]
    return RowSerializer([s for s, _ in subs], names), field_values.map(
        lambda t: Row.from_fields(names, t)
    )


def _without_fast_paths(ser: TypeSerializer[Any]) -> TypeSerializer[Any]:
    """A copy whose tuple/row codecs all use the checked generic loop (the reference format)."""
    copy = serializer_from_snapshot(ser.snapshot())
    stack = [copy]
    while stack:
        s = stack.pop()
        if isinstance(s, (TupleSerializer, RowSerializer)):
            s._fast_serialize = s._fast_read = None
            stack.extend(s.field_serializers)
        elif isinstance(s, ListSerializer):
            stack.append(s.element_serializer)
        elif isinstance(s, MapSerializer):
            stack.extend([s.key_serializer, s.value_serializer])
    return copy


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_nested_composite_round_trip_and_snapshot(data: Any) -> None:
    ser, values = data.draw(_ser_and_values())
    value = data.draw(values)
    encoded = ser.serialize(value)
    assert _same(ser.deserialize(encoded), value)
    # the generated fast paths write and read exactly the reference bytes
    reference = _without_fast_paths(ser)
    assert reference.serialize(value) == encoded
    assert _same(reference.deserialize(encoded), value)
    assert _same(_check_nested(ser, value), value)
    restored = serializer_from_snapshot(json.loads(json.dumps(ser.snapshot())))
    assert restored == ser
    assert _same(restored.deserialize(ser.serialize(value)), value)


def test_composites_accept_other_sequences_and_return_their_own_type() -> None:
    assert ListSerializer(LongSerializer.INSTANCE).deserialize(
        ListSerializer(LongSerializer.INSTANCE).serialize((1, 2))
    ) == [1, 2]
    row_ser = RowSerializer([StringSerializer.INSTANCE, LongSerializer.INSTANCE], ["a", "b"])
    for given_value in [("x", 1), ["x", 1], {"b": 1, "a": "x"}, Row(a="x", b=1)]:
        out = row_ser.deserialize(row_ser.serialize(given_value))
        assert isinstance(out, Row) and out.a == "x" and out.b == 1
    assert TupleSerializer([LongSerializer.INSTANCE]).deserialize(
        b"\x00" + b"\x00" * 7 + b"\x05"
    ) == (5,)


def test_tuple_fast_path_falls_back_for_unusual_values() -> None:
    ser = TupleSerializer(
        [StringSerializer.INSTANCE, LongSerializer.INSTANCE, DoubleSerializer.INSTANCE]
    )
    for value in [
        ("\ud800", 1, 2.0),
        ("a", None, 2.0),
        ["a", 1, 2.0],
        Row("a", 1, 2.0),
        ("a", True, 1),
    ]:
        out = ser.deserialize(ser.serialize(value))
        assert out == tuple(value) and type(out) is tuple
    assert ser.serialize(("a", 1, 2.0)) == b"\x00\x01a" + (1).to_bytes(8, "big") + bytes.fromhex(
        "4000000000000000"
    )
    long_text = "x" * 300  # two-byte varint length
    assert ser.deserialize(ser.serialize((long_text, 1, 2.0)))[0] == long_text
    with pytest.raises(SerializationError, match="expected 3 fields, got 2"):
        ser.serialize(("a", 1))
    with pytest.raises(SerializationError, match=r"LongSerializer cannot serialize 'x'"):
        ser.serialize(("a", "x", 1.0))
    with pytest.raises(SerializationError, match="trailing bytes"):
        ser.deserialize(ser.serialize(("a", 1, 2.0)) + b"\x00")
    restored = pickle.loads(pickle.dumps(ser))
    assert restored.deserialize(ser.serialize(("a", 1, 2.0))) == ("a", 1, 2.0)


def test_null_bitmap_layout_for_tuples_and_lists() -> None:
    tup = TupleSerializer([LongSerializer.INSTANCE] * 9)
    data = tup.serialize((None, 1, None, None, None, None, None, None, None))
    # 2 bitmap bytes (9 fields), then the one non-null long
    assert data == bytes([0b11111101, 0b1]) + (1).to_bytes(8, "big")
    lst = ListSerializer(LongSerializer.INSTANCE)
    assert lst.serialize([1]) == b"\x01\x00" + (1).to_bytes(8, "big")
    assert lst.serialize([None]) == b"\x01\x01\x01"
    big = [None] * 200
    assert lst.deserialize(lst.serialize(big)) == big


def test_deterministic_flags() -> None:
    assert LongSerializer.INSTANCE.is_deterministic
    assert not PickleSerializer.INSTANCE.is_deterministic
    assert not MapSerializer(LongSerializer.INSTANCE, LongSerializer.INSTANCE).is_deterministic
    assert not BigDecimalSerializer.INSTANCE.is_deterministic
    assert TupleSerializer([LongSerializer.INSTANCE, StringSerializer.INSTANCE]).is_deterministic
    assert not TupleSerializer(
        [LongSerializer.INSTANCE, PickleSerializer.INSTANCE]
    ).is_deterministic
    assert not ListSerializer(PickleSerializer.INSTANCE).is_deterministic
    assert GenericKeySerializer.INSTANCE.is_deterministic
    assert LexicographicTupleSerializer([LexicographicLongSerializer.INSTANCE]).is_deterministic


# ---------------------------------------------------------------------------
# lexicographic serializers: round trip and order
# ---------------------------------------------------------------------------

LEX_CASES: list[tuple[LexicographicalTypeSerializer[Any], Any, list[Any], Any]] = [
    (LexicographicLongSerializer.INSTANCE, longs, [LONG_MIN, LONG_MAX, 0, -1, 1], None),
    (LexicographicIntSerializer.INSTANCE, ints, [-(2**31), 2**31 - 1, 0], None),
    (LexicographicShortSerializer.INSTANCE, shorts, [-(2**15), 2**15 - 1, 0], None),
    (LexicographicByteSerializer.INSTANCE, bytes8, [-128, 127, 0], None),
    (
        LexicographicDoubleSerializer.INSTANCE,
        doubles,
        [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308],
        _float_key,
    ),
    (
        LexicographicFloatSerializer.INSTANCE,
        float32s,
        [0.0, -0.0, math.inf, -math.inf, math.nan, F32_TINY, -F32_TINY, F32_MAX],
        _float_key,
    ),
    (
        LexicographicStringSerializer.INSTANCE,
        texts | prefixy_texts,
        ["", "\x00", "\x00\x00", "a", "\U0001f600", "\uffff", "\ud800"],
        None,
    ),
    (
        LexicographicBytesSerializer.INSTANCE,
        st.binary(max_size=8) | prefixy_bytes,
        [b"", b"\x00", b"\xff", b"\x00\xff", b"\x00\x00"],
        None,
    ),
    (LexicographicBooleanSerializer.INSTANCE, st.booleans(), [False, True], None),
    (
        LexicographicBigIntSerializer.INSTANCE,
        st.integers() | st.integers(-(2**80), 2**80),
        [0, LONG_MIN, LONG_MIN - 1, LONG_MAX, LONG_MAX + 1, 2**64, -(2**64), 2**300, -(2**300)],
        None,
    ),
    (
        LexicographicTimestampSerializer.INSTANCE,
        naive_datetimes,
        [dt.datetime.min, dt.datetime.max, dt.datetime(1970, 1, 1)],
        None,
    ),
    (LexicographicDateSerializer.INSTANCE, st.dates(), [dt.date.min, dt.date.max], None),
    (LexicographicTimeSerializer.INSTANCE, st.times(), [dt.time.min, dt.time.max], None),
]


def _lex_equal(ser: Any, out: Any, value: Any) -> bool:
    if isinstance(value, float):
        # -0.0 is normalised to 0.0; NaN canonicalised
        return _same(out, value + 0.0) if not math.isnan(value) else math.isnan(out)
    return _same(out, value)


@pytest.mark.parametrize(
    ("ser", "values", "boundaries", "key"), LEX_CASES, ids=[type(c[0]).__name__ for c in LEX_CASES]
)
def test_lexicographic_round_trip_and_order(
    ser: LexicographicalTypeSerializer[Any], values: Any, boundaries: list[Any], key: Any
) -> None:
    for v in boundaries:
        assert _lex_equal(ser, ser.deserialize(ser.serialize(v)), v), v
        assert _lex_equal(ser, _check_nested(ser, v), v), v
        for w in boundaries:
            _check_order(ser, v, w, key)

    @settings(max_examples=100, deadline=None)
    @given(values, values)
    def run(a: Any, b: Any) -> None:
        assert _lex_equal(ser, ser.deserialize(ser.serialize(a)), a)
        assert _lex_equal(ser, _check_nested(ser, a), a)
        _check_order(ser, a, b, key)

    run()


def test_double_zero_and_nan_policy() -> None:
    ser = LexicographicDoubleSerializer.INSTANCE
    assert ser.serialize(-0.0) == ser.serialize(0.0)
    assert math.copysign(1.0, ser.deserialize(ser.serialize(-0.0))) == 1.0
    nan_bytes = ser.serialize(math.nan)
    assert ser.serialize(float("-nan")) == nan_bytes  # canonical
    assert ser.serialize(struct_nan_with_payload()) == nan_bytes
    assert nan_bytes > ser.serialize(math.inf)
    assert ser.serialize(-math.inf) < ser.serialize(-1e308)


def struct_nan_with_payload() -> float:
    return struct.unpack(">d", bytes.fromhex("7ff0000000000123"))[0]


def test_lexicographic_encodings_are_stable() -> None:
    # These bytes feed key groups (crc32) and savepoints: they must never change.
    assert LexicographicLongSerializer.INSTANCE.serialize(0) == bytes.fromhex("8000000000000000")
    assert LexicographicLongSerializer.INSTANCE.serialize(-1) == bytes.fromhex("7fffffffffffffff")
    assert LexicographicIntSerializer.INSTANCE.serialize(1) == bytes.fromhex("80000001")
    assert LexicographicDoubleSerializer.INSTANCE.serialize(1.0) == bytes.fromhex(
        "bff0000000000000"
    )
    assert LexicographicDoubleSerializer.INSTANCE.serialize(-1.0) == bytes.fromhex(
        "400fffffffffffff"
    )
    assert LexicographicStringSerializer.INSTANCE.serialize("a\x00") == b"a\x00\xff\x00\x00"
    assert LexicographicStringSerializer.INSTANCE.serialize("") == b"\x00\x00"
    assert LexicographicBytesSerializer.INSTANCE.serialize(b"\x00") == b"\x00\xff\x00\x00"
    assert LexicographicTimestampSerializer.INSTANCE.serialize(dt.datetime(1970, 1, 1)) == (
        bytes.fromhex("8000000000000000")
    )


_LEX_PART_CASES = [
    (LexicographicStringSerializer.INSTANCE, prefixy_texts),
    (LexicographicBytesSerializer.INSTANCE, prefixy_bytes),
    (LexicographicLongSerializer.INSTANCE, st.integers(-3, 3) | longs),
    (LexicographicByteSerializer.INSTANCE, st.integers(-2, 2)),
    (LexicographicBooleanSerializer.INSTANCE, st.booleans()),
    (LexicographicBigIntSerializer.INSTANCE, st.integers(-2, 2) | st.integers()),
    (LexicographicTimestampSerializer.INSTANCE, naive_datetimes),
]


@st.composite
def _lex_tuple_case(draw: Any) -> tuple[LexicographicTupleSerializer, Any]:
    n = draw(st.integers(1, 4))
    picks = [draw(st.sampled_from(_LEX_PART_CASES)) for _ in range(n)]
    nested = draw(st.booleans())
    parts = [p for p, _ in picks]
    values = st.tuples(*[v for _, v in picks])
    if nested:  # a tuple inside a tuple, then a string after it
        inner = LexicographicTupleSerializer(parts)
        return (
            LexicographicTupleSerializer([inner, LexicographicStringSerializer.INSTANCE]),
            st.tuples(values, prefixy_texts),
        )
    return LexicographicTupleSerializer(parts), values


@FAST
@given(st.data())
def test_lexicographic_tuple_order_and_prefix_freeness(data: Any) -> None:
    ser, values = data.draw(_lex_tuple_case())
    a, b = data.draw(values), data.draw(values)
    encoded = ser.serialize(a)
    assert ser.deserialize(encoded) == a
    # the generated fast path writes and reads exactly what the part-by-part loop does
    assert ser._serialize_checked(a) == encoded
    assert ser._read_checked(encoded, 0) == (a, len(encoded))
    _check_order(ser, a, b)
    restored = serializer_from_snapshot(json.loads(json.dumps(ser.snapshot())))
    assert restored == ser and restored.deserialize(ser.serialize(a)) == a


@FAST
@given(st.tuples(prefixy_texts, prefixy_texts), st.tuples(prefixy_texts, prefixy_texts))
@example(("a", "b"), ("ab", ""))
@example(("", "\x00"), ("\x00", ""))
def test_string_pairs_do_not_bleed_into_each_other(a: tuple[str, str], b: tuple[str, str]) -> None:
    ser = LexicographicTupleSerializer(
        [LexicographicStringSerializer.INSTANCE, LexicographicStringSerializer.INSTANCE]
    )
    _check_order(ser, a, b)


def test_lexicographic_tuple_fast_path_falls_back() -> None:
    ser = LexicographicTupleSerializer(
        [
            LexicographicStringSerializer.INSTANCE,
            LexicographicLongSerializer.INSTANCE,
            LexicographicByteSerializer.INSTANCE,
        ]
    )
    for value in [("\ud800", 1, 2), ["a", 1, 2], Row("a", 1, 2), ("a", True, -128)]:
        assert ser.deserialize(ser.serialize(value)) == tuple(value)
    with pytest.raises(
        SerializationError, match=r"LexicographicByteSerializer cannot serialize 128"
    ):
        ser.serialize(("a", 1, 128))
    with pytest.raises(SerializationError, match=r"expected 3 fields, got 2"):
        ser.serialize(("a", 1))
    with pytest.raises(SerializationError, match="trailing bytes"):
        ser.deserialize(ser.serialize(("a", 1, 2)) + b"\x00")
    with pytest.raises(SerializationError, match="unterminated"):
        ser.deserialize(b"abc")
    clone = pickle.loads(pickle.dumps(ser))
    assert clone.deserialize(ser.serialize(("a", 1, 2))) == ("a", 1, 2)


def test_lexicographic_tuple_with_names_gives_rows() -> None:
    ser = LexicographicTupleSerializer(
        [LexicographicStringSerializer.INSTANCE, LexicographicLongSerializer.INSTANCE], ["w", "n"]
    )
    out = ser.deserialize(ser.serialize(Row(w="x", n=3)))
    assert isinstance(out, Row) and out.w == "x" and out.n == 3
    assert ser.snapshot()["params"]["names"] == ["w", "n"]
    cmp = ser.find_comparator()
    assert cmp is not None and cmp(("a", 2), ("a", 1)) == 1


def test_comparators() -> None:
    assert LexicographicDoubleSerializer.INSTANCE.find_comparator()(math.nan, math.inf) == 1
    assert LexicographicDoubleSerializer.INSTANCE.find_comparator()(math.nan, math.nan) == 0
    assert LexicographicDoubleSerializer.INSTANCE.find_comparator()(-0.0, 0.0) == 0
    assert LexicographicStringSerializer.INSTANCE.find_comparator()("a", "b") == -1
    ts = LexicographicTimestampSerializer.INSTANCE.find_comparator()
    aware = dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert ts(aware, dt.datetime(2020, 1, 1)) == 0


def test_lexicographic_timestamp_aware_is_utc() -> None:
    ser = LexicographicTimestampSerializer.INSTANCE
    aware = dt.datetime(2000, 1, 1, 5, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    assert ser.serialize(aware) == ser.serialize(dt.datetime(2000, 1, 1))
    assert ser.deserialize(ser.serialize(aware)) == dt.datetime(2000, 1, 1)


# ---------------------------------------------------------------------------
# GenericKeySerializer
# ---------------------------------------------------------------------------

_key_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | longs
    | doubles
    | texts
    | prefixy_texts
    | st.binary(max_size=6)
    | st.dates()
    | naive_datetimes
    | aware_datetimes
)
keys = st.recursive(
    _key_leaves,
    lambda c: (
        st.lists(c, max_size=4).map(tuple)
        | st.lists(c, max_size=3).map(lambda v: Row(*v))
        | st.lists(c, min_size=1, max_size=3).map(
            lambda v: Row.from_fields([f"c{i}" for i in range(len(v))], v)
        )
    ),
    max_leaves=8,
)


def _key_same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return a == b and (a.tzinfo is None) == (b.tzinfo is None)
    if type(a) is not type(b):
        return False
    if isinstance(a, Row):
        return a.get_field_names() == b.get_field_names() and _key_same(tuple(a), tuple(b))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_key_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@FAST
@given(keys, keys)
def test_generic_key_round_trip_determinism_and_prefix_freeness(a: Any, b: Any) -> None:
    ser = GenericKeySerializer.INSTANCE
    ba, bb = ser.serialize(a), ser.serialize(b)
    reference: list[bytes] = []
    ser._write(a, reference, a)  # the general recursive writer, without fast paths
    assert b"".join(reference) == ba
    assert _key_same(ser.deserialize(ba), a)
    assert _key_same(_check_nested(ser, a), a)
    assert ser.serialize(ser.deserialize(ba)) == ba  # stable re-encoding
    assert (ba == bb) == _key_same(a, b) or _canonical_equal(a, b)
    if ba != bb:
        assert not ba.startswith(bb) and not bb.startswith(ba)


@FAST
@given(st.one_of(st.lists(st.text()), st.lists(keys)))
def test_generic_key_serialize_many_equals_serialize_per_key(values: list[Any]) -> None:
    ser = GenericKeySerializer.INSTANCE
    assert ser.serialize_many(values) == [ser.serialize(v) for v in values]
    # NULs and lone surrogates in a list of strings take the per-key escapes
    if all(type(v) is str for v in values):
        for tricky in (values + ["a\x00b"], values + ["\ud800x"], values + ["a\x00b", "\ud800x"]):
            assert ser.serialize_many(tricky) == [ser.serialize(v) for v in tricky]


def _canonical_equal(a: Any, b: Any) -> bool:
    """Values the encoding deliberately identifies: -0.0/0.0, and equal aware instants."""
    ser = GenericKeySerializer.INSTANCE
    return _key_same(ser.deserialize(ser.serialize(a)), ser.deserialize(ser.serialize(b)))


@FAST
@given(
    st.one_of(
        st.tuples(st.integers(), st.integers()),
        st.tuples(texts | prefixy_texts, texts | prefixy_texts),
        st.tuples(st.binary(max_size=5), st.binary(max_size=5)),
        st.tuples(st.floats(allow_nan=False), st.floats(allow_nan=False)),
        st.tuples(st.dates(), st.dates()),
        st.tuples(naive_datetimes, naive_datetimes),
        st.tuples(aware_datetimes, aware_datetimes),
        st.tuples(
            st.lists(prefixy_texts | st.integers(-2, 2), max_size=3).map(tuple),
            st.lists(prefixy_texts | st.integers(-2, 2), max_size=3).map(tuple),
        ).filter(lambda p: _homogeneous(*p)),
    )
)
def test_generic_key_order_within_a_type(pair: tuple[Any, Any]) -> None:
    a, b = pair
    ser = GenericKeySerializer.INSTANCE
    ba, bb = ser.serialize(a), ser.serialize(b)
    assert _sign(_cmp(a, b)) == _sign(_cmp(ba, bb)), (a, b)
    assert (a == b) == (ba == bb)


def _homogeneous(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(type(x) is type(y) for x, y in zip(a, b, strict=False))


def test_generic_key_cross_type_order_is_the_documented_one() -> None:
    ser = GenericKeySerializer.INSTANCE
    ordered = [
        None,
        False,
        True,
        -(2**70),
        -5,
        7,
        2**70,
        -math.inf,
        1.5,
        math.nan,
        "",
        "a",
        b"",
        dt.date(2020, 1, 1),
        dt.datetime(2020, 1, 1),
        dt.datetime(2020, 1, 1, tzinfo=UTC),
        (),
        (1,),
        (1, 2),
        Row(),
        Row(1),
        Row(a=1),
    ]
    encoded = [ser.serialize(v) for v in ordered]
    assert encoded == sorted(encoded)
    assert len(set(encoded)) == len(encoded)


def test_generic_key_type_is_part_of_the_key() -> None:
    ser = GenericKeySerializer.INSTANCE
    assert len({ser.serialize(v) for v in (1, 1.0, True)}) == 3
    assert ser.serialize((1, 2)) != ser.serialize(Row(1, 2))
    assert ser.serialize(-0.0) == ser.serialize(0.0)


def test_generic_key_golden_bytes() -> None:
    # Key groups are crc32 of these bytes: any change reshuffles every savepoint.
    ser = GenericKeySerializer.INSTANCE
    assert ser.serialize("ab") == b"\x09ab\x00\x00"
    assert ser.serialize(1) == b"\x05" + bytes.fromhex("8000000000000001")
    assert ser.serialize(None) == b"\x01"
    assert (
        ser.serialize(("a", 1))
        == b"\x0e\x09a\x00\x00\x05" + bytes.fromhex("8000000000000001") + b"\x00"
    )
    assert ser.serialize(Row(k="a")) == b"\x0f\x09a\x00\x00\x00\x01k\x00\x00"


def test_generic_key_normalises_subclasses() -> None:
    import collections
    import enum

    class Color(enum.IntEnum):
        RED = 3

    Pair = collections.namedtuple("Pair", "x y")
    ser = GenericKeySerializer.INSTANCE
    assert ser.serialize(Color.RED) == ser.serialize(3)
    assert ser.serialize(Pair(1, "a")) == ser.serialize((1, "a"))
    assert ser.deserialize(ser.serialize(Pair(1, "a"))) == (1, "a")
    assert ser.serialize(bytearray(b"x")) == ser.serialize(b"x")

    class Name(str):
        pass

    assert ser.serialize(Name("n")) == ser.serialize("n")
    assert ser.serialize((Name("n"), Color.RED)) == ser.serialize(("n", 3))


@pytest.mark.parametrize("key", [[1, 2], [], ["a", [1.5, None]], {1, 2}, frozenset({"x", "y"}),
                                 {"a": 1, "b": [2]}, ("a", [1]), Decimal("1.5"),
                                 dt.timedelta(days=3)])
def test_generic_key_takes_any_picklable_key(key: Any) -> None:
    """PyFlink keys by any picklable value: lists, sets and dicts are written structurally
    (they come back equal, as the same type), anything else by its pickled bytes."""
    ser = GenericKeySerializer.INSTANCE
    back = ser.deserialize(ser.serialize(key))
    assert back == key and type(back) is type(key)


def test_generic_key_sets_and_dicts_do_not_depend_on_their_order() -> None:
    """Equal sets and dicts give equal bytes whatever their iteration order (a set of strings
    iterates in the process's hash-seed order, which differs between Spark's workers)."""
    ser = GenericKeySerializer.INSTANCE
    words = [f"w{i}" for i in range(50)]
    assert ser.serialize(set(words)) == ser.serialize(set(reversed(words)))
    assert ser.serialize({"a": 1, "b": 2}) == ser.serialize({"b": 2, "a": 1})
    assert ser.serialize({"a": 1}) != ser.serialize({"a": 2})
    assert len({ser.serialize(k) for k in ([1], (1,), {1}, frozenset({1}), {1: None})}) == 5


def test_generic_key_refuses_an_unpicklable_key_and_names_the_key() -> None:
    ser = GenericKeySerializer.INSTANCE
    lock = threading.Lock()
    with pytest.raises(SerializationError, match=r"type 'lock'.*cannot be pickled.*key_type"):
        ser.serialize(lock)
    with pytest.raises(SerializationError, match=r"type 'lock' inside key \('a', \[<unlocked"):
        ser.serialize(("a", [lock]))


def test_generic_key_rejects_corrupt_bytes() -> None:
    ser = GenericKeySerializer.INSTANCE
    with pytest.raises(SerializationError, match="unknown key tag 0x7f"):
        ser.deserialize(b"\x7f")
    with pytest.raises(SerializationError, match="trailing bytes"):
        ser.deserialize(ser.serialize("a") + b"\x01")
    with pytest.raises(SerializationError, match="GenericKeySerializer cannot deserialize"):
        ser.deserialize(b"\x09abc")


# ---------------------------------------------------------------------------
# snapshots
# ---------------------------------------------------------------------------

ALL_SERIALIZERS: list[TypeSerializer[Any]] = [
    *(c[0] for c in PLAIN_CASES),
    *(c[0] for c in LEX_CASES),
    GenericKeySerializer.INSTANCE,
    PrimitiveArraySerializer("LONG"),
    ListSerializer(StringSerializer.INSTANCE),
    MapSerializer(StringSerializer.INSTANCE, ListSerializer(DoubleSerializer.INSTANCE)),
    TupleSerializer([LongSerializer.INSTANCE, RowSerializer([StringSerializer.INSTANCE], ["s"])]),
    RowSerializer([LongSerializer.INSTANCE, StringSerializer.INSTANCE]),
    LexicographicTupleSerializer(
        [
            LexicographicStringSerializer.INSTANCE,
            LexicographicTupleSerializer([LexicographicLongSerializer.INSTANCE]),
        ]
    ),
]


@pytest.mark.parametrize("ser", ALL_SERIALIZERS, ids=repr)
def test_snapshot_round_trip(ser: TypeSerializer[Any]) -> None:
    snap = ser.snapshot()
    assert set(snap) == {"name", "params"}
    via_json = json.loads(json.dumps(snap))
    restored = serializer_from_snapshot(via_json)
    assert type(restored) is type(ser)
    assert restored == ser and hash(restored) == hash(ser)
    assert restored.snapshot() == snap
    assert restored.is_compatible_with(snap)
    assert restored.is_deterministic == ser.is_deterministic
    assert pickle.loads(pickle.dumps(ser)) == ser


def test_snapshots_distinguish_parameters() -> None:
    assert ListSerializer(LongSerializer.INSTANCE) != ListSerializer(IntSerializer.INSTANCE)
    assert RowSerializer([LongSerializer.INSTANCE], ["a"]) != RowSerializer(
        [LongSerializer.INSTANCE], ["b"]
    )
    assert not LongSerializer.INSTANCE.is_compatible_with(IntSerializer.INSTANCE.snapshot())


def test_serializer_from_snapshot_errors() -> None:
    with pytest.raises(SerializationError, match="unknown serializer 'NoSuchSerializer'"):
        serializer_from_snapshot({"name": "NoSuchSerializer", "params": {}})
    with pytest.raises(SerializationError, match="not a serializer snapshot"):
        serializer_from_snapshot(["LongSerializer"])  # type: ignore[arg-type]
    with pytest.raises(SerializationError, match="invalid params for serializer 'ListSerializer'"):
        serializer_from_snapshot({"name": "ListSerializer", "params": {}})
    with pytest.raises(SerializationError, match="unsupported element type 'STRING'"):
        serializer_from_snapshot(
            {"name": "PrimitiveArraySerializer", "params": {"element": "STRING"}}
        )


def test_register_serializer_for_other_layers() -> None:
    class _Upper(TypeSerializer[str]):
        def serialize(self, value: str) -> bytes:
            return value.upper().encode()

        def deserialize(self, data: bytes) -> str:
            return data.decode()

        def snapshot(self) -> dict[str, Any]:
            return {"name": "test.Upper", "params": {}}

    factory = lambda params: _Upper()  # noqa: E731
    register_serializer("test.Upper", factory)
    register_serializer("test.Upper", factory)  # idempotent for the same factory
    assert isinstance(serializer_from_snapshot({"name": "test.Upper", "params": {}}), _Upper)
    with pytest.raises(SerializationError, match="'LongSerializer' is already registered"):
        register_serializer("LongSerializer", factory)
    # a foreign serializer inside a composite uses the length-prefixed nested form
    lst = ListSerializer(_Upper())
    assert lst.deserialize(lst.serialize(["ab", "c"])) == ["AB", "C"]


def test_a_lexicographic_tuple_snapshot_with_a_plain_part_is_refused() -> None:
    snapshot = LexicographicTupleSerializer([LexicographicLongSerializer.INSTANCE]).snapshot()
    snapshot["params"]["parts"] = [LongSerializer.INSTANCE.snapshot()]
    with pytest.raises(SerializationError, match="is not a LexicographicalTypeSerializer"):
        serializer_from_snapshot(snapshot)
    with pytest.raises(SerializationError, match="is not a LexicographicalTypeSerializer"):
        LexicographicTupleSerializer([LongSerializer.INSTANCE])  # type: ignore[list-item]


def test_a_lexicographic_tuple_compares_with_its_parts_comparators() -> None:
    ser = LexicographicTupleSerializer(
        [LexicographicLongSerializer.INSTANCE, LexicographicLongSerializer.INSTANCE])
    compare = ser.find_comparator()
    assert compare is not None
    assert (compare((1, 2), (1, 3)), compare((2, 0), (1, 9)), compare((1, 1), (1, 1))) == (-1, 1, 0)

    class _NoComparator(LexicographicalTypeSerializer[bytes]):
        def serialize(self, value: bytes) -> bytes:
            return LexicographicBytesSerializer.INSTANCE.serialize(value)

        def deserialize(self, data: bytes) -> bytes:
            return LexicographicBytesSerializer.INSTANCE.deserialize(data)

        def snapshot(self) -> dict[str, Any]:
            return {"name": "test.NoComparator", "params": {}}

    # a part without a comparator: the tuple has none either
    parts = [LexicographicLongSerializer.INSTANCE, _NoComparator()]
    assert LexicographicTupleSerializer(parts).find_comparator() is None


# ---------------------------------------------------------------------------
# errors name the offending value
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ser", "value", "message"),
    [
        (
            LexicographicLongSerializer.INSTANCE,
            2**63,
            r"LexicographicLongSerializer cannot serialize 9223372036854775808 \(type int\): out of range for a 64-bit",
        ),
        (
            LexicographicLongSerializer.INSTANCE,
            -(2**63) - 1,
            "out of range for a 64-bit signed integer",
        ),
        (LexicographicIntSerializer.INSTANCE, 2**31, "out of range for a 32-bit signed integer"),
        (LexicographicByteSerializer.INSTANCE, 128, "out of range for a 8-bit"),
        (LexicographicLongSerializer.INSTANCE, "7", r"'7' \(type str\): expected an int"),
        (LexicographicLongSerializer.INSTANCE, 1.5, r"1.5 \(type float\): expected an int"),
        (LongSerializer.INSTANCE, 2**63, r"LongSerializer cannot serialize 9223372036854775808"),
        (LongSerializer.INSTANCE, None, r"None \(type NoneType\): expected an int"),
        (IntSerializer.INSTANCE, 2**31, "expected an int in"),
        (FloatSerializer.INSTANCE, 1e300, r"FloatSerializer cannot serialize 1e\+300"),
        (LexicographicFloatSerializer.INSTANCE, 1e300, r"1e\+300 \(type float\): expected a float"),
        (LexicographicDoubleSerializer.INSTANCE, "x", r"'x' \(type str\): expected a float"),
        (
            StringSerializer.INSTANCE,
            5,
            r"StringSerializer cannot serialize 5 \(type int\): expected a str",
        ),
        (LexicographicStringSerializer.INSTANCE, b"x", r"b'x' \(type bytes\): expected a str"),
        (BytesSerializer.INSTANCE, 5, r"5 \(type int\): expected bytes"),
        (LexicographicBytesSerializer.INSTANCE, "x", r"expected bytes"),
        (BooleanSerializer.INSTANCE, "yes", r"'yes' \(type str\): expected a bool"),
        (TimestampSerializer.INSTANCE, dt.date(2020, 1, 1), "expected a datetime.datetime"),
        (LexicographicTimestampSerializer.INSTANCE, 5, "expected a datetime.datetime"),
        (DateSerializer.INSTANCE, dt.datetime(2020, 1, 1), "expected a datetime.date"),
        (TimeSerializer.INSTANCE, dt.time(1, tzinfo=UTC), "expected a naive time"),
        (BigIntSerializer.INSTANCE, 1.0, "expected an int"),
        (BigDecimalSerializer.INSTANCE, 1.0, "expected a decimal.Decimal"),
        (PickleSerializer.INSTANCE, lambda: 1, "not picklable"),
        (PrimitiveArraySerializer("INT"), [1, "a"], "expected a sequence of int values"),
        (
            ListSerializer(LongSerializer.INSTANCE),
            5,
            r"ListSerializer cannot serialize 5 \(type int\): expected a list",
        ),
        (ListSerializer(LongSerializer.INSTANCE), [1, "a"], r"LongSerializer cannot serialize 'a'"),
        (MapSerializer(LongSerializer.INSTANCE, LongSerializer.INSTANCE), [1], "expected a dict"),
        (
            MapSerializer(LongSerializer.INSTANCE, LongSerializer.INSTANCE),
            {None: 1},
            "map keys must not be None",
        ),
        (TupleSerializer([LongSerializer.INSTANCE]), (1, 2), "expected 1 fields, got 2"),
        (TupleSerializer([LongSerializer.INSTANCE]), 1, "expected a tuple"),
        (RowSerializer([LongSerializer.INSTANCE], ["a"]), {"b": 1}, "missing field 'a'"),
        (
            LexicographicTupleSerializer([LexicographicLongSerializer.INSTANCE]),
            (1, 2),
            "expected 1 fields, got 2",
        ),
        (
            LexicographicTupleSerializer([LexicographicLongSerializer.INSTANCE]),
            (None,),
            r"a field cannot be serialized.*None",
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_serialize_errors_name_the_value(
    ser: TypeSerializer[Any], value: Any, message: str
) -> None:
    with pytest.raises(SerializationError, match=message):
        ser.serialize(value)


@pytest.mark.parametrize(
    ("ser", "data", "message"),
    [
        (
            LongSerializer.INSTANCE,
            b"\x00",
            "LongSerializer cannot deserialize 1 bytes .*exactly 8 bytes",
        ),
        (LexicographicLongSerializer.INSTANCE, b"\x00" * 9, "exactly 8 bytes"),
        (BooleanSerializer.INSTANCE, b"\x02", "expected one byte 0x00 or 0x01"),
        (StringSerializer.INSTANCE, b"\xff", "invalid UTF-8"),
        (LexicographicStringSerializer.INSTANCE, b"abc", "unterminated escaped string"),
        (LexicographicStringSerializer.INSTANCE, b"a\x00\x01\x00\x00", r"bad escape 0x00 0x01"),
        (LexicographicStringSerializer.INSTANCE, b"a\x00\x00b", "trailing bytes"),
        (ListSerializer(LongSerializer.INSTANCE), b"\x02\x00" + b"\x00" * 8, "truncated"),
        (ListSerializer(LongSerializer.INSTANCE), b"\x00\x00\x00", "1 trailing bytes"),
        (ListSerializer(LongSerializer.INSTANCE), b"\x01\x05", "bad null flag 0x05"),
        (TupleSerializer([LongSerializer.INSTANCE]), b"", "truncated null bitmap"),
        (PickleSerializer.INSTANCE, b"not a pickle", "unpickling failed"),
        (
            LexicographicTupleSerializer([LexicographicStringSerializer.INSTANCE]),
            b"ab",
            "unterminated",
        ),
        (BigIntSerializer.INSTANCE, b"", "empty"),
        (LexicographicBigIntSerializer.INSTANCE, b"\x09", "bad big-int tag"),
        (DateSerializer.INSTANCE, b"\x7f\xff\xff\xff", "expected 4 bytes of a date"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_deserialize_errors(ser: TypeSerializer[Any], data: bytes, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        ser.deserialize(data)


def test_foreign_errors_are_chained() -> None:
    with pytest.raises(SerializationError) as info:
        LongSerializer.INSTANCE.serialize("x")
    assert info.value.__cause__ is not None
