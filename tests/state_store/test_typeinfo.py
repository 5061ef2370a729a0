"""TypeInformation (PyFlink ``Types``), ``Row`` and ``infer_type_info``."""

from __future__ import annotations

import collections
import datetime as dt
import json
import math
import pickle
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark_datastream import GraphBuildError, SerializationError
from pyspark_datastream.state_store.serializers import (
    BytesSerializer,
    LexicographicalTypeSerializer,
    LexicographicLongSerializer,
    LexicographicStringSerializer,
    LexicographicTupleSerializer,
    LongSerializer,
    PickleSerializer,
    serializer_from_snapshot,
)
from pyspark_datastream.state_store.type_inference import infer_type_info
from pyspark_datastream.state_store.typeinfo import (
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    PickledBytesTypeInfo,
    Row,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from pyspark_datastream.state_store.types import Types

BASIC = [
    Types.STRING,
    Types.CHAR,
    Types.BOOLEAN,
    Types.BYTE,
    Types.SHORT,
    Types.INT,
    Types.LONG,
    Types.BIG_INT,
    Types.FLOAT,
    Types.DOUBLE,
    Types.BIG_DEC,
    Types.SQL_DATE,
    Types.SQL_TIME,
    Types.SQL_TIMESTAMP,
]
PRIMITIVE = ["BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE"]

# ---------------------------------------------------------------------------
# a strategy of (type, value strategy) pairs covering every type
# ---------------------------------------------------------------------------

_texts = st.text(max_size=6)
_VALUES: dict[str, Any] = {
    "STRING": _texts,
    "CHAR": st.characters(),
    "BOOLEAN": st.booleans(),
    "BYTE": st.integers(-128, 127),
    "SHORT": st.integers(-(2**15), 2**15 - 1),
    "INT": st.integers(-(2**31), 2**31 - 1),
    "LONG": st.integers(-(2**63), 2**63 - 1),
    "BIG_INT": st.integers(),
    "FLOAT": st.floats(width=32),
    "DOUBLE": st.floats(),
    "BIG_DEC": st.decimals(allow_nan=False),
    "SQL_DATE": st.dates(),
    "SQL_TIME": st.times(),
    "SQL_TIMESTAMP": st.datetimes(),
}


@st.composite
def typed_values(draw: Any, depth: int = 0) -> tuple[TypeInformation, Any]:
    kinds = ["basic"] * 3 + [
        "pickled",
        "primitive",
        "basic_array",
        "object_array",
        "list",
        "map",
        "tuple",
        "row",
    ]
    kind = draw(st.sampled_from(kinds)) if depth < 2 else "basic"
    if kind == "basic":
        t = draw(st.sampled_from(BASIC))()
        return t, _VALUES[t.type_name]
    if kind == "pickled":
        return Types.PICKLED_BYTE_ARRAY(), st.lists(st.integers() | _texts, max_size=3)
    if kind == "primitive":
        name = draw(st.sampled_from(PRIMITIVE))
        if name == "BYTE":
            return Types.PRIMITIVE_ARRAY(Types.BYTE()), st.binary(max_size=8)
        return Types.PRIMITIVE_ARRAY(BasicTypeInfo(name)), st.lists(_VALUES[name], max_size=4)
    if kind == "basic_array":
        t = draw(st.sampled_from(BASIC))()
        return Types.BASIC_ARRAY(t), st.lists(st.none() | _VALUES[t.type_name], max_size=4)
    if kind in ("object_array", "list"):
        et, ev = draw(typed_values(depth + 1))
        make = Types.OBJECT_ARRAY if kind == "object_array" else Types.LIST
        return make(et), st.lists(st.none() | ev, max_size=4)
    if kind == "map":
        kt = draw(st.sampled_from([Types.STRING, Types.LONG, Types.SQL_DATE]))()
        vt, vv = draw(typed_values(depth + 1))
        return Types.MAP(kt, vt), st.dictionaries(_VALUES[kt.type_name], st.none() | vv, max_size=3)
    n = draw(st.integers(0, 4))
    subs = [draw(typed_values(depth + 1)) for _ in range(n)]
    fields = st.tuples(*[st.none() | v for _, v in subs])
    if kind == "tuple":
        return Types.TUPLE([t for t, _ in subs]), fields
    if draw(st.booleans()):
        names = [f"col_{i}" for i in range(n)]
        return Types.ROW_NAMED(names, [t for t, _ in subs]), fields.map(
            lambda v: Row.from_fields(names, v)
        )
    return Types.ROW([t for t, _ in subs]), fields.map(lambda v: Row(*v))


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    return bool(a == b)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_type_round_trips_its_values_and_its_json(data: Any) -> None:
    t, values = data.draw(typed_values())
    value = data.draw(values)
    ser = t.create_serializer()
    assert _eq(ser.deserialize(ser.serialize(value)), value)
    # JSON description round trip (also through a string), equality and hash
    restored = TypeInformation.from_json(json.loads(json.dumps(t.to_json())))
    assert restored == t and hash(restored) == hash(t)
    assert TypeInformation.from_json(json.dumps(t.to_json())) == t
    assert restored.create_serializer() == ser
    assert serializer_from_snapshot(ser.snapshot()) == ser
    # repr is PyFlink's spelling and evaluates back to an equal type
    assert repr(t).startswith("Types.")
    assert eval(repr(t), {"Types": Types}) == t
    assert ser.is_deterministic == t.is_deterministic()
    lex = t.lexicographic_serializer()
    if lex is not None:
        assert isinstance(lex, LexicographicalTypeSerializer)
        assert t.is_deterministic()


def test_repr_matches_pyflink_spelling() -> None:
    assert (
        repr(Types.TUPLE([Types.STRING(), Types.LONG()]))
        == "Types.TUPLE([Types.STRING(), Types.LONG()])"
    )
    assert repr(Types.ROW([Types.INT()])) == "Types.ROW([Types.INT()])"
    assert repr(Types.ROW_NAMED(["a"], [Types.INT()])) == "Types.ROW_NAMED(['a'], [Types.INT()])"
    assert repr(Types.MAP(Types.STRING(), Types.LIST(Types.DOUBLE()))) == (
        "Types.MAP(Types.STRING(), Types.LIST(Types.DOUBLE()))"
    )
    assert repr(Types.PRIMITIVE_ARRAY(Types.BYTE())) == "Types.PRIMITIVE_ARRAY(Types.BYTE())"
    assert repr(Types.PICKLED_BYTE_ARRAY()) == "Types.PICKLED_BYTE_ARRAY()"


def test_json_is_stable() -> None:
    # Stored in savepoint metadata: the layout must not change.
    t = Types.ROW_NAMED(
        ["k", "v"], [Types.STRING(), Types.MAP(Types.LONG(), Types.BASIC_ARRAY(Types.DOUBLE()))]
    )
    assert t.to_json() == {
        "type": "ROW",
        "names": ["k", "v"],
        "fields": [
            {"type": "STRING"},
            {
                "type": "MAP",
                "key": {"type": "LONG"},
                "value": {"type": "BASIC_ARRAY", "element": {"type": "DOUBLE"}},
            },
        ],
    }
    assert Types.TUPLE([Types.SQL_TIMESTAMP()]).to_json() == {
        "type": "TUPLE",
        "fields": [{"type": "SQL_TIMESTAMP"}],
    }
    assert Types.PICKLED_BYTE_ARRAY().to_json() == {"type": "PICKLED_BYTE_ARRAY"}


def test_equality_and_hash() -> None:
    assert Types.LONG() == Types.LONG() and hash(Types.LONG()) == hash(Types.LONG())
    assert Types.LONG() != Types.INT()
    assert Types.LIST(Types.LONG()) != Types.BASIC_ARRAY(Types.LONG())
    assert Types.ROW([Types.LONG()]) == Types.ROW_NAMED(["f0"], [Types.LONG()])
    assert Types.ROW_NAMED(["a"], [Types.LONG()]) != Types.ROW_NAMED(["b"], [Types.LONG()])
    assert Types.TUPLE([Types.LONG()]) != Types.ROW([Types.LONG()])
    assert len({Types.STRING(), Types.STRING(), Types.LONG()}) == 2
    assert Types.LONG() != "LONG"


def test_attributes_for_other_layers() -> None:
    t = Types.MAP(Types.STRING(), Types.LIST(Types.LONG()))
    assert isinstance(t, MapTypeInfo) and t.type_name == "MAP"
    assert t.key_type == Types.STRING() and t.value_type == Types.LIST(Types.LONG())
    assert isinstance(t.value_type, ListTypeInfo) and t.value_type.element_type == Types.LONG()
    assert Types.PRIMITIVE_ARRAY(Types.INT()).element_type == Types.INT()
    assert Types.SQL_TIMESTAMP().type_name == "SQL_TIMESTAMP"
    assert Types.PICKLED_BYTE_ARRAY().type_name == "PICKLED_BYTE_ARRAY"


def test_tuple_and_row_fields() -> None:
    tup = Types.TUPLE([Types.STRING(), Types.LONG()])
    assert isinstance(tup, TupleTypeInfo)
    assert tup.get_field_names() == ["f0", "f1"]
    assert tup.get_field_types() == [Types.STRING(), Types.LONG()]
    assert tup.get_arity() == 2
    row = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.LONG()])
    assert isinstance(row, RowTypeInfo)
    assert row.get_field_names() == ["word", "count"] and row.field_names == ["word", "count"]
    assert row.get_field_types() == [Types.STRING(), Types.LONG()] and row.get_arity() == 2
    assert row.get_field_index("count") == 1 and row.get_field_index("nope") == -1
    assert Types.ROW([Types.INT(), Types.INT()]).get_field_names() == ["f0", "f1"]
    out = row.create_serializer().deserialize(row.create_serializer().serialize(("a", 3)))
    assert isinstance(out, Row) and out.word == "a" and out["count"] == 3


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (Types.LONG(), True),
        (Types.DOUBLE(), True),
        (Types.STRING(), True),
        (Types.SQL_TIMESTAMP(), True),
        (Types.BIG_DEC(), False),
        (Types.PICKLED_BYTE_ARRAY(), False),
        (Types.MAP(Types.STRING(), Types.LONG()), False),
        (Types.LIST(Types.LONG()), True),
        (Types.LIST(Types.PICKLED_BYTE_ARRAY()), False),
        (Types.TUPLE([Types.STRING(), Types.LONG()]), True),
        (Types.TUPLE([Types.STRING(), Types.MAP(Types.LONG(), Types.LONG())]), False),
        (Types.ROW_NAMED(["a"], [Types.PICKLED_BYTE_ARRAY()]), False),
        (Types.ROW([Types.BASIC_ARRAY(Types.STRING())]), True),
        (Types.PRIMITIVE_ARRAY(Types.BYTE()), True),
    ],
    ids=repr,
)
def test_is_deterministic(t: TypeInformation, expected: bool) -> None:
    assert t.is_deterministic() is expected
    assert t.create_serializer().is_deterministic is expected


def test_lexicographic_serializers() -> None:
    assert Types.LONG().lexicographic_serializer() is LexicographicLongSerializer.INSTANCE
    assert Types.STRING().lexicographic_serializer() is LexicographicStringSerializer.INSTANCE
    for make in BASIC:
        t = make()
        lex = t.lexicographic_serializer()
        assert (lex is None) == (t.type_name == "BIG_DEC"), t
    tup = Types.TUPLE([Types.STRING(), Types.LONG()]).lexicographic_serializer()
    assert tup == LexicographicTupleSerializer(
        [LexicographicStringSerializer.INSTANCE, LexicographicLongSerializer.INSTANCE]
    )
    assert tup is not None and tup.serialize(("a", 1)) < tup.serialize(("a", 2)) < tup.serialize(
        ("b", 0)
    )
    row = Types.ROW_NAMED(["w"], [Types.STRING()]).lexicographic_serializer()
    assert row is not None and row.deserialize(row.serialize(("x",))) == Row(w="x")
    assert Types.PRIMITIVE_ARRAY(Types.BYTE()).lexicographic_serializer() is not None
    assert Types.PRIMITIVE_ARRAY(Types.LONG()).lexicographic_serializer() is None
    assert (
        Types.TUPLE([Types.STRING(), Types.LIST(Types.LONG())]).lexicographic_serializer() is None
    )
    assert Types.MAP(Types.LONG(), Types.LONG()).lexicographic_serializer() is None
    assert Types.PICKLED_BYTE_ARRAY().lexicographic_serializer() is None


def test_key_serializer() -> None:
    assert Types.LONG().key_serializer() is LexicographicLongSerializer.INSTANCE
    lst = Types.LIST(Types.LONG())
    assert lst.key_serializer() == lst.create_serializer()
    with pytest.raises(
        SerializationError, match=r"Types.PICKLED_BYTE_ARRAY\(\) cannot be a key type"
    ):
        Types.PICKLED_BYTE_ARRAY().key_serializer()
    with pytest.raises(
        SerializationError, match=r"Types.MAP\(.*cannot be a key type.*not deterministic"
    ):
        Types.MAP(Types.LONG(), Types.LONG()).key_serializer()
    dbl = Types.DOUBLE().key_serializer()
    assert dbl.serialize(-0.0) == dbl.serialize(0.0)


def test_create_serializer_kinds() -> None:
    assert Types.LONG().create_serializer() is LongSerializer.INSTANCE
    assert Types.PRIMITIVE_ARRAY(Types.BYTE()).create_serializer() is BytesSerializer.INSTANCE
    assert Types.PICKLED_BYTE_ARRAY().create_serializer() is PickleSerializer.INSTANCE
    assert isinstance(Types.PICKLED_BYTE_ARRAY(), PickledBytesTypeInfo)
    longs = Types.PRIMITIVE_ARRAY(Types.LONG()).create_serializer()
    assert longs.serialize([1, 2]) == b"\x02" + (1).to_bytes(8, "big") + (2).to_bytes(8, "big")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Types.TUPLE(Types.LONG()), "TUPLE field types must be a list of TypeInformation"),
        (
            lambda: Types.TUPLE([Types.LONG(), int]),
            r"TUPLE field 1 must be a TypeInformation.*<class 'int'>",
        ),
        (
            lambda: Types.ROW_NAMED(["a", "b"], [Types.LONG()]),
            r"ROW_NAMED got 2 field names \['a', 'b'\] for 1 field types",
        ),
        (lambda: Types.ROW_NAMED(["a", "a"], [Types.LONG()] * 2), r"unique, duplicated: \['a'\]"),
        (lambda: Types.ROW_NAMED([1], [Types.LONG()]), "non-empty str"),
        (lambda: Types.ROW_NAMED("ab", [Types.LONG()] * 2), "must be a list of str"),
        (
            lambda: Types.PRIMITIVE_ARRAY(Types.STRING()),
            r"PRIMITIVE_ARRAY element type must be one of .* got Types.STRING\(\)",
        ),
        (
            lambda: Types.BASIC_ARRAY(Types.LIST(Types.LONG())),
            "BASIC_ARRAY element type must be a basic type",
        ),
        (lambda: Types.LIST("LONG"), "LIST element type must be a TypeInformation"),
        (lambda: Types.MAP(Types.LONG(), None), "MAP value type must be a TypeInformation"),
        (lambda: BasicTypeInfo("VARCHAR"), "unknown basic type 'VARCHAR'"),
    ],
)
def test_invalid_types_are_rejected(build: Any, message: str) -> None:
    with pytest.raises(GraphBuildError, match=message):
        build()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "VARCHAR"}, "unknown type 'VARCHAR'"),
        ({"kind": "LONG"}, "not a type description"),
        ({"type": "LIST"}, "lacks the field 'element'"),
        ({"type": "ROW", "names": ["a"], "fields": []}, "invalid type description"),
        ("{not json", "not valid JSON"),
    ],
)
def test_from_json_errors(data: Any, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        TypeInformation.from_json(data)


# ---------------------------------------------------------------------------
# Row
# ---------------------------------------------------------------------------


def test_row_basics() -> None:
    r = Row(name="Alice", age=11)
    assert r.name == "Alice" and r["age"] == 11 and r[0] == "Alice" and r[-1] == 11
    assert r.as_dict() == {"name": "Alice", "age": 11}
    assert r.get_field_names() == ["name", "age"]  # keyword order kept
    assert repr(r) == "Row(name='Alice', age=11)"
    assert len(r) == 2 and list(r) == ["Alice", 11]
    p = Row(1, "a")
    assert p.get_field_names() is None and repr(p) == "<Row(1, 'a')>"
    assert p == (1, "a") and (1, "a") == p and hash(p) == hash((1, "a"))
    assert Row(a=1) == Row(b=1) == (1,)  # positional equality
    assert Row(1, 2) < Row(1, 3)
    assert r[0:1] == ("Alice",)


def test_row_factory_and_from_fields() -> None:
    Person = Row("name", "age")
    alice = Person("Alice", 11)
    assert alice.name == "Alice" and alice.get_field_names() == ["name", "age"]
    with pytest.raises(ValueError, match="expects 2 values, got 1"):
        Person("Bob")
    assert Row.from_fields(["x"], [5]).x == 5
    with pytest.raises(ValueError, match="Row has 1 values but 2 field names"):
        Row.from_fields(["x", "y"], [5])


def test_row_errors() -> None:
    r = Row(a=1)
    with pytest.raises(AttributeError, match="Row has no field 'b'"):
        _ = r.b
    with pytest.raises(KeyError, match="Row has no field 'b'"):
        _ = r["b"]
    with pytest.raises(TypeError, match="either positional values or keyword fields"):
        Row(1, a=2)
    with pytest.raises(TypeError, match="cannot convert an unnamed Row to a dict"):
        Row(1).as_dict()
    with pytest.raises(AttributeError, match="Row has no field 'x'"):
        _ = Row(1).x


def test_row_pickles_with_names() -> None:
    r = Row(k="a", v=Row(x=1))
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.get_field_names() == ["k", "v"] and back.v.x == 1
    assert back.as_dict(recursive=True) == {"k": "a", "v": {"x": 1}}
    unnamed = pickle.loads(pickle.dumps(Row(1, 2)))
    assert unnamed.get_field_names() is None and unnamed == (1, 2)


# ---------------------------------------------------------------------------
# infer_type_info
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a", Types.STRING()),
        (True, Types.BOOLEAN()),
        (5, Types.LONG()),
        (2**63, Types.BIG_INT()),
        (1.5, Types.DOUBLE()),
        (b"x", Types.PRIMITIVE_ARRAY(Types.BYTE())),
        (dt.datetime(2020, 1, 1), Types.SQL_TIMESTAMP()),
        (dt.date(2020, 1, 1), Types.SQL_DATE()),
        (dt.time(1, 2), Types.SQL_TIME()),
        (Decimal("1.5"), Types.BIG_DEC()),
        (("a", 1), Types.TUPLE([Types.STRING(), Types.LONG()])),
        (
            ("a", (1.0, b"")),
            Types.TUPLE(
                [Types.STRING(), Types.TUPLE([Types.DOUBLE(), Types.PRIMITIVE_ARRAY(Types.BYTE())])]
            ),
        ),
        (Row(w="a", n=1), Types.ROW_NAMED(["w", "n"], [Types.STRING(), Types.LONG()])),
        (Row("a", 1), Types.ROW([Types.STRING(), Types.LONG()])),
        (collections.namedtuple("P", "x y")(1, 2), Types.TUPLE([Types.LONG(), Types.LONG()])),
        (None, None),
        ([1], None),
        ({"a": 1}, None),
        (object(), None),
        (("a", None), None),
        (("a", [1]), None),
    ],
    ids=lambda v: "object()" if type(v) is object else repr(v),
)
def test_infer_type_info(value: Any, expected: TypeInformation | None) -> None:
    assert infer_type_info(value) == expected


def test_infer_type_info_reads_pyspark_style_row_fields() -> None:
    class SparkLikeRow(tuple):
        __fields__ = ["word", "n"]

    assert infer_type_info(SparkLikeRow(("a", 1))) == Types.ROW_NAMED(
        ["word", "n"], [Types.STRING(), Types.LONG()]
    )


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.text(max_size=4)
        | st.integers()
        | st.floats()
        | st.booleans()
        | st.binary(max_size=4)
        | st.datetimes(),
        lambda c: st.lists(c, max_size=3).map(tuple),
        max_leaves=6,
    )
)
def test_inferred_types_serialize_their_value(value: Any) -> None:
    t = infer_type_info(value)
    assert t is not None
    ser = t.create_serializer()
    assert _eq(ser.deserialize(ser.serialize(value)), value)
