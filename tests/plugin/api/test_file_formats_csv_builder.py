"""CsvSchemaBuilder's remaining PyFlink calls: columns copied from a schema, cleared and
counted; strict headers as Spark's ``enforceSchema=false``; the array separators kept (array
columns are refused); the escape character forgotten."""

from __future__ import annotations

import pytest
from pyspark_datastream import CsvSchema, GraphBuildError, Types


def test_columns_from_a_schema_clear_and_size():
    base = CsvSchema.builder().add_string_column("a").add_number_column("b").build()
    builder = CsvSchema.builder().add_boolean_column("flag").add_columns_from(base)
    assert builder.size() == 3
    schema = builder.build()
    assert schema.row_type == Types.ROW_NAMED(["flag", "a", "b"],
                                              [Types.BOOLEAN(), Types.STRING(), Types.LONG()])
    assert builder.clear_columns().size() == 0
    with pytest.raises(GraphBuildError, match="already defined"):
        CsvSchema.builder().add_string_column("a").add_columns_from(base)
    with pytest.raises(GraphBuildError, match="add_columns_from"):
        CsvSchema.builder().add_columns_from("a,b")


def test_dialect_calls_set_sparks_options():
    schema = (CsvSchema.builder().add_string_column("a").set_use_header().set_strict_headers()
              .set_escape_char("~").disable_escape_char()
              .set_array_element_separator("|").remove_array_element_separator(0)
              .disable_array_element_separator().set_any_property_name("rest").build())
    assert schema.options["enforceSchema"] == "false"
    assert "escape" not in schema.options
    loose = CsvSchema.builder().add_string_column("a").set_strict_headers().set_strict_headers(
        False).build()
    assert "enforceSchema" not in loose.options
