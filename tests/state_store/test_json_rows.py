"""JSON text <-> Rows of a ROW type (PyFlink's JSON row formats): members matched by field name,
others ignored, missing ones None (or an error with fail_on_missing_field), values checked
against their field's type; written back as compact JSON objects. Expected values are
written out by hand from the JSON texts."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from pyspark_datastream import Row, SerializationError, Types
from pyspark_datastream.state_store.json_rows import (
    json_row_reader,
    json_row_writer,
    json_type_problems,
)

EVENT = Types.ROW_NAMED(
    ["id", "name", "score", "ok", "tags", "attrs", "inner", "price", "day", "at"],
    [Types.LONG(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN(), Types.LIST(Types.STRING()),
     Types.MAP(Types.STRING(), Types.INT()), Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()]),
     Types.BIG_DEC(), Types.SQL_DATE(), Types.SQL_TIMESTAMP()])


def test_an_object_becomes_a_named_row_and_extra_members_are_ignored():
    text = ('{"extra": {"x": 1}, "id": 9007199254740993, "name": "é", "score": 2.5, "ok": false,'
            ' "tags": ["a", null], "attrs": {"k": -1}, "inner": {"b": "z", "a": 4},'
            ' "price": 0.1, "day": "2024-02-29", "at": "2024-05-01T12:00:00.250+02:00"}')
    row = json_row_reader(EVENT)(text)
    assert row == (9007199254740993, "é", 2.5, False, ["a", None], {"k": -1}, (4, "z"),
                   Decimal("0.1"), dt.date(2024, 2, 29), dt.datetime(2024, 5, 1, 10, 0, 0, 250000))
    assert row.name == "é" and row.inner.b == "z" and isinstance(row.inner, Row)
    assert type(row.price) is Decimal and str(row.price) == "0.1"  # exact, not a float


def test_missing_members_and_nulls_are_none_unless_fail_on_missing_field():
    read = json_row_reader(EVENT)
    assert read('{"id": 1, "name": null}') == (1,) + (None,) * 9
    with pytest.raises(SerializationError, match=r"could not find field 'name'"):
        json_row_reader(EVENT, fail_on_missing_field=True)('{"id": 1}')
    # a member present as null is not missing
    inner = Types.ROW_NAMED(["a"], [Types.INT()])
    assert json_row_reader(inner, fail_on_missing_field=True)('{"a": null}') == (None,)


@pytest.mark.parametrize("text,match", [
    ("{not json", r"not JSON"),
    ("[1, 2]", r"the JSON value \[1, 2\] is not an object"),
    ('{"id": "1"}', r'field id: "1" is not a Types.LONG\(\) value'),
    ('{"id": 1.5}', r"field id: 1.5 is not a Types.LONG\(\) value"),
    ('{"id": true}', r"field id: true is not a Types.LONG\(\) value"),
    ('{"ok": 1}', r"field ok: 1 is not a Types.BOOLEAN\(\) value"),
    ('{"name": 5}', r"field name: 5 is not a Types.STRING\(\) value"),
    ('{"inner": {"a": 2147483648}}', r"field inner.a: 2147483648 is not a Types.INT\(\)"),
    ('{"tags": ["a", 1]}', r"field tags\[\]: 1 is not a Types.STRING\(\) value"),
    ('{"attrs": {"k": "v"}}', r'field attrs\{\}: "v" is not a Types.INT\(\) value'),
    ('{"day": "29/02/2024"}', r"field day: .* is not a Types.SQL_DATE\(\) value"),
])
def test_a_value_not_of_its_fields_type_is_an_error_naming_the_field(text, match):
    with pytest.raises(SerializationError, match=match):
        json_row_reader(EVENT)(text)


def test_rows_are_written_as_compact_objects_by_field_name():
    row = Row(id=3, name="x", score=1.5, ok=True, tags=["a", None], attrs={"k": 1},
              inner=Row(a=None, b="q"), price=Decimal("12345678901234567890.000000001"),
              day=dt.date(2024, 1, 2), at=dt.datetime(2024, 1, 2, 3, 4, 5, 6000))
    text = json_row_writer(EVENT)(row)
    assert text == ('{"id":3,"name":"x","score":1.5,"ok":true,"tags":["a",null],"attrs":{"k":1},'
                    '"inner":{"a":null,"b":"q"},"price":12345678901234567890.000000001,'
                    '"day":"2024-01-02","at":"2024-01-02T03:04:05.006Z"}')
    assert json.loads(text)["at"].endswith("Z")
    # a tuple of the type writes the same; reading the text back gives the row
    assert json_row_writer(EVENT)(tuple(row)) == text
    assert json_row_reader(EVENT)(text) == row


def test_writing_a_value_of_the_wrong_arity_or_a_nan_is_an_error():
    pair = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.DOUBLE()])
    with pytest.raises(SerializationError, match=r"has 1 fields"):
        json_row_writer(pair)((1,))
    with pytest.raises(SerializationError, match=r"not a .* value"):
        json_row_writer(pair)((1, float("nan")))


def test_types_without_a_json_form_are_named_with_their_field():
    t = Types.ROW_NAMED(["raw", "m", "obj", "ok"],
                        [Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.MAP(Types.INT(), Types.INT()),
                         Types.PICKLED_BYTE_ARRAY(), Types.LIST(Types.LONG())])
    problems = json_type_problems(t)
    assert [p.split(":")[0] for p in problems] == ["raw", "m", "obj"]
    assert "STRING key" in problems[1]


def test_any_string_and_map_key_round_trips_as_the_json_module_writes_it():
    t = Types.ROW_NAMED(["s", "m"], [Types.STRING(), Types.MAP(Types.STRING(), Types.INT())])
    value = ("\ue000 12 \ue000 \"q\" é", {"a": 1, "\ue000": None})
    text = json_row_writer(t)(value)
    assert text == json.dumps({"s": value[0], "m": value[1]}, separators=(",", ":"))
    assert json_row_reader(t)(text) == value
