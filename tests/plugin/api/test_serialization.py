"""PyFlink's serialization schema bases (the connectors' schemas are ones), ByteArraySchema
and RowFieldExtractorSchema; the Kafka source refuses a schema it does not read by name."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    ByteArraySchema,
    DeserializationSchema,
    GraphBuildError,
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
    KafkaSource,
    Row,
    RowFieldExtractorSchema,
    SerializationSchema,
    SimpleStringSchema,
    Types,
    UnsupportedConnectorError,
)


def test_the_connectors_schemas_are_serialization_schemas():
    assert isinstance(SimpleStringSchema(), SerializationSchema)
    assert isinstance(SimpleStringSchema(), DeserializationSchema)
    row = Types.ROW_NAMED(["a"], [Types.INT()])
    assert isinstance(JsonRowSerializationSchema.builder().with_type_info(row).build(),
                      SerializationSchema)
    assert isinstance(JsonRowDeserializationSchema.builder().type_info(row).build(),
                      DeserializationSchema)


def test_byte_array_schema_keeps_the_bytes():
    schema = ByteArraySchema()
    assert schema.serialize(bytearray(b"\x00a")) == b"\x00a"
    assert schema.deserialize(b"xyz") == b"xyz"
    with pytest.raises(GraphBuildError, match="ByteArraySchema"):
        schema.serialize("text")


def test_row_field_extractor_gives_one_fields_bytes():
    schema = RowFieldExtractorSchema(1)
    assert schema.serialize(Row("k", "v\u00e9")) == "v\u00e9".encode()
    assert schema.serialize(("k", b"\x01")) == b"\x01"
    with pytest.raises(GraphBuildError, match="no such field"):
        schema.serialize(Row("only"))
    with pytest.raises(GraphBuildError, match="bytes or str"):
        schema.serialize(Row("k", 3))
    with pytest.raises(GraphBuildError, match="field index"):
        RowFieldExtractorSchema(-1)


def test_the_kafka_source_refuses_a_schema_it_does_not_read():
    with pytest.raises(UnsupportedConnectorError, match="ByteArraySchema"):
        KafkaSource.builder().set_value_only_deserializer(ByteArraySchema())
