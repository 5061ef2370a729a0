"""PyFlink's JSON row formats' builders (no Spark): what they accept and refuse, and the
functions they give a source or sink (ignore_parse_errors skips a value; otherwise a value
that is not a Row of the type is an error naming the schema)."""

from __future__ import annotations

import pickle

import pytest
from pyspark_datastream import (
    GraphBuildError,
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
    KafkaRecordSerializationSchema,
    KafkaSource,
    Row,
    SerializationError,
    Types,
    UnsupportedConnectorError,
)

USER = Types.ROW_NAMED(["name", "age"], [Types.STRING(), Types.INT()])


def test_the_deserialization_builder_keeps_its_flags_and_refuses_both():
    schema = JsonRowDeserializationSchema.builder().type_info(USER).fail_on_missing_field().build()
    assert (schema.type_info, schema.fail_on_missing_field, schema.ignore_parse_errors) == (
        USER, True, False)
    with pytest.raises(GraphBuildError, match="fail_on_missing_field and ignore_parse_errors"):
        (JsonRowDeserializationSchema.builder().type_info(USER).fail_on_missing_field()
         .ignore_parse_errors().build())
    with pytest.raises(GraphBuildError, match="call type_info first"):
        JsonRowDeserializationSchema.builder().build()
    with pytest.raises(UnsupportedConnectorError, match=r"json_schema\(\.\.\.\)"):
        JsonRowDeserializationSchema.builder().json_schema('{"type": "object"}')


@pytest.mark.parametrize("type_info,error,match", [
    (Types.STRING(), GraphBuildError, r"type_info must be Types.ROW_NAMED"),
    (Types.TUPLE([Types.INT()]), GraphBuildError, r"got Types.TUPLE"),
    (Types.ROW_NAMED(["b"], [Types.PRIMITIVE_ARRAY(Types.BYTE())]), UnsupportedConnectorError,
     r"no JSON mapping for b: Types.PRIMITIVE_ARRAY\(Types.BYTE\(\)\)"),
])
def test_both_builders_refuse_a_type_without_a_json_row_form(type_info, error, match):
    with pytest.raises(error, match=match):
        JsonRowDeserializationSchema.builder().type_info(type_info)
    with pytest.raises(error, match=match):
        JsonRowSerializationSchema.builder().with_type_info(type_info)


def test_the_parser_skips_or_fails_and_survives_pickling():
    lenient = JsonRowDeserializationSchema.builder().type_info(USER).ignore_parse_errors().build()
    parse = pickle.loads(pickle.dumps(lenient.parser()))  # as executors receive it
    assert list(parse('{"name": "ann", "age": 7}')) == [Row(name="ann", age=7)]
    assert list(parse('{"name": "ann", "age": "7"}')) == []  # skipped, as Flink's null
    strict = JsonRowDeserializationSchema.builder().type_info(USER).build().parser()
    with pytest.raises(SerializationError, match=r"^JsonRowDeserializationSchema: field age"):
        list(strict('{"age": 1.5}'))


def test_the_formatter_writes_rows_and_fails_naming_the_schema():
    schema = JsonRowSerializationSchema.builder().with_type_info(USER).build()
    write = pickle.loads(pickle.dumps(schema.formatter()))
    assert write(Row(name="bo", age=None)) == '{"name":"bo","age":null}'
    with pytest.raises(SerializationError, match=r"^JsonRowSerializationSchema: "):
        write(("too", 2, "many"))


def test_kafka_builders_take_the_json_schemas():
    source = (KafkaSource.builder().set_bootstrap_servers("b:9092").set_topics("users")
              .set_value_only_deserializer(
                  JsonRowDeserializationSchema.builder().type_info(USER).build()).build())
    assert source.spec["json"].type_info == USER
    record = (KafkaRecordSerializationSchema.builder().set_topic("out")
              .set_value_serialization_schema(
                  JsonRowSerializationSchema.builder().with_type_info(USER).build()).build())
    assert isinstance(record.value_schema, JsonRowSerializationSchema)
