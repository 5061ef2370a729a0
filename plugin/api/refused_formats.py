"""PyFlink's Avro, Parquet and ORC formats beyond ``ParquetColumnarRowInputFormat`` (Avro
schemas and row schemas, the bulk writers of ``FileSink.for_bulk_format``): each is refused
with PyFlink's methods present, each raising :class:`UnsupportedConnectorError` naming the call
and the Spark reader or writer to use instead.
"""

from __future__ import annotations

from .refused_connectors import RefusedApi, refuses

__all__ = [
    "AvroSchema",
    "AvroInputFormat",
    "AvroRowDeserializationSchema",
    "AvroRowSerializationSchema",
    "GenericRecordAvroTypeInfo",
    "AvroBulkWriters",
    "AvroParquetReaders",
    "AvroParquetWriters",
    "ParquetBulkWriters",
    "OrcBulkWriters",
]

_AVRO = ("read or write Avro with Spark's `avro` data source (the spark-avro package): "
         "`spark.read.format(\"avro\")` into `env.from_dataframe`, or `ds.to_dataframe()` "
         "written with `.write.format(\"avro\")`")
_BULK = ("`FileSink.for_bulk_format` is refused: write `ds.to_dataframe()` with Spark's "
         "Parquet, ORC or Avro writer, or use `ds.sink_to_delta(path)`")


class _RefusedFormat(RefusedApi):
    """A refused class of PyFlink's formats package."""

    _PACKAGE = "pyflink.datastream.formats"


class _RefusedAvro(_RefusedFormat):
    """A refused class of PyFlink's Avro format."""

    _MODULE = "avro"
    _INSTEAD = _AVRO


@refuses(
    "@parse_file(file_path)", "@parse_string(json_schema)",
)
class AvroSchema(_RefusedAvro):
    """PyFlink's Avro ``AvroSchema``: refused when constructed or called, as the Avro
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""



@refuses(
    "__init__(path, schema)", "get_java_object()", "get_produced_type()",
)
class AvroInputFormat(_RefusedAvro):
    """PyFlink's Avro ``AvroInputFormat``: refused when constructed or called, as the Avro
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""



@refuses(
    "__init__(record_class=None, avro_schema_string=None)",
)
class AvroRowDeserializationSchema(_RefusedAvro):
    """PyFlink's Avro ``AvroRowDeserializationSchema``: refused when constructed or called, as the Avro
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""



@refuses(
    "__init__(record_class=None, avro_schema_string=None)",
)
class AvroRowSerializationSchema(_RefusedAvro):
    """PyFlink's Avro ``AvroRowSerializationSchema``: refused when constructed or called, as the Avro
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""



@refuses(
    "__init__(schema)", "from_internal_type(obj)", "get_java_type_info()", "need_conversion()",
    "to_internal_type(obj)",
)
class GenericRecordAvroTypeInfo(_RefusedAvro):
    """PyFlink's Avro ``GenericRecordAvroTypeInfo``: refused when constructed or called, as the Avro
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""



@refuses(
    "@for_generic_record(schema)",
)
class AvroBulkWriters(_RefusedFormat):
    """PyFlink's Avro ``AvroBulkWriters``: refused when constructed or called, as the Avro
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "avro"
    _INSTEAD = _BULK


@refuses(
    "@for_generic_record(schema)",
)
class AvroParquetReaders(_RefusedFormat):
    """PyFlink's Avro-Parquet ``AvroParquetReaders``: refused when constructed or called, as the Avro-Parquet
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "parquet"
    _INSTEAD = _AVRO


@refuses(
    "@for_generic_record(schema)",
)
class AvroParquetWriters(_RefusedFormat):
    """PyFlink's Avro-Parquet ``AvroParquetWriters``: refused when constructed or called, as the Avro-Parquet
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "parquet"
    _INSTEAD = _BULK


@refuses(
    "@for_row_type(row_type, hadoop_config=None, utc_timestamp=None)",
)
class ParquetBulkWriters(_RefusedFormat):
    """PyFlink's Parquet ``ParquetBulkWriters``: refused when constructed or called, as the Parquet
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "parquet"
    _INSTEAD = _BULK


@refuses(
    "@for_row_type(row_type, writer_properties=None, hadoop_config=None)",
)
class OrcBulkWriters(_RefusedFormat):
    """PyFlink's ORC ``OrcBulkWriters``: refused when constructed or called, as the ORC
    format is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "orc"
    _INSTEAD = _BULK
