"""PyFlink's file formats a ``FileSource`` reads with Spark's own readers: CSV
(``CsvReaderFormat.for_schema(CsvSchema)``, a stream format) and Parquet
(``ParquetColumnarRowInputFormat(row_type)``, a bulk format). Each gives its schema's named
``Row`` records; the builders' options map onto Spark's CSV options, and an option Spark's
reader has no counterpart for is refused by name.
"""

from __future__ import annotations

from typing import Any, NoReturn, Optional

from ..runtime.spark_types import spark_ddl_type
from ..state_store.exceptions import GraphBuildError
from ..state_store.typeinfo import FieldsTypeInfo, TypeInformation
from ..state_store.types import Types
from .connector_checks import nonempty_text, require_utf8, unsupported_option

__all__ = ["StreamFormat", "CsvSchema", "CsvSchemaBuilder", "CsvReaderFormat", "ParquetColumnarRowInputFormat",
           "spark_schema_ddl"]

_NUMBER_TYPES = ("BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "BIG_DEC", "BIG_INT")


def spark_schema_ddl(row_type: TypeInformation, what: str) -> str:
    """The Spark DDL schema (``a bigint, b string``) of a named row type.

    Args:
        row_type: A ``Types.ROW_NAMED(...)``.
        what: The format, for messages.

    Returns:
        The DDL string.

    Raises:
        GraphBuildError: ``row_type`` is not a named row of Spark-mappable fields.
    """
    if not isinstance(row_type, FieldsTypeInfo) or row_type.type_name != "ROW":
        raise GraphBuildError(f"{what}: the row type must be Types.ROW_NAMED([...], [...]), "
                              f"got {row_type!r}")
    names = row_type.get_field_names()
    types = row_type.get_field_types()
    return ", ".join(f"`{n}` {spark_ddl_type(t)}" for n, t in zip(names, types))


def _one_char(what: str, name: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise GraphBuildError(f"{what}: {name} must be one character, got {value!r}")
    return value


class StreamFormat:
    """How a FileSource decodes a file into records (PyFlink's ``StreamFormat``). Built by
    ``StreamFormat.text_line_format()``; not constructed directly."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """Each line of a text file is one ``str`` record, without its line terminator.

        Args:
            charset_name: The files' character set; only ``UTF-8`` (Spark's text source).

        Returns:
            The format.

        Raises:
            UnsupportedConnectorError: For another character set.
        """
        require_utf8("StreamFormat.text_line_format", charset_name, "Spark's text source reads UTF-8")
        return StreamFormat("text")

    def __repr__(self) -> str:
        return "StreamFormat.text_line_format()"


class CsvSchema:
    """The columns and dialect of CSV files (PyFlink's ``CsvSchema``); built by
    ``CsvSchema.builder()``.

    Args:
        row_type: The records' ``Types.ROW_NAMED`` type (the columns in file order).
        options: Spark's CSV reader options.
    """

    def __init__(self, row_type: TypeInformation, options: dict[str, str]) -> None:
        if not isinstance(row_type, FieldsTypeInfo):
            raise GraphBuildError(f"CsvSchema: the row type must be Types.ROW_NAMED([...], "
                                  f"[...]), got {row_type!r}")
        self.row_type: FieldsTypeInfo = row_type
        self.options = options

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        """Returns:
        A builder with no columns, comma-separated, quoted by ``"``, no header."""
        return CsvSchemaBuilder()

    def size(self) -> int:
        """Returns:
        The number of columns."""
        return len(self.row_type.get_field_names())

    def __repr__(self) -> str:
        return f"CsvSchema({self.row_type!r}, {self.options})"


class CsvSchemaBuilder:
    """PyFlink's ``CsvSchemaBuilder``: columns in file order, then the dialect."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._types: list[TypeInformation] = []
        # Flink's CSV defaults, as Spark's CSV options
        self._options: dict[str, str] = {"sep": ",", "quote": '"', "header": "false"}

    def _column(self, name: str, type_info: TypeInformation) -> CsvSchemaBuilder:
        nonempty_text("CsvSchemaBuilder", "column name", name)
        if name in self._names:
            raise GraphBuildError(f"CsvSchemaBuilder: column {name!r} is already defined")
        self._names.append(name)
        self._types.append(type_info)
        return self

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        """Args:
            name: The column's name (the record's field).

        Returns:
            This builder.
        """
        return self._column(name, Types.STRING())

    def add_number_column(self, name: str,
                          number_type: Optional[TypeInformation] = None) -> CsvSchemaBuilder:
        """Args:
            name: The column's name.
            number_type: ``Types.INT()``, ``Types.LONG()`` (the default, Flink's BIGINT),
                ``Types.FLOAT()``, ``Types.DOUBLE()`` ...

        Returns:
            This builder.

        Raises:
            GraphBuildError: ``number_type`` is not a numeric ``TypeInformation``.
        """
        number_type = Types.LONG() if number_type is None else number_type
        if not isinstance(number_type, TypeInformation) or number_type.type_name not in _NUMBER_TYPES:
            raise GraphBuildError(f"CsvSchemaBuilder.add_number_column({name!r}): number_type "
                                  f"must be a numeric Types.*(), got {number_type!r}")
        return self._column(name, number_type)

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        """Args:
            name: The column's name.

        Returns:
            This builder.
        """
        return self._column(name, Types.BOOLEAN())

    def add_array_column(self, name: str, separator: str = ";",
                         element_type: Any = None) -> NoReturn:
        """Not supported: Spark's CSV reader has no array columns.

        Args:
            name: The column's name.
            separator: Not used.
            element_type: Not used.

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option("CsvSchemaBuilder", f"add_array_column({name!r})",
                                 "read the column as a string and split it in a map")

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        """Args:
            char: The field separator (Spark's ``sep``).

        Returns:
            This builder.
        """
        self._options["sep"] = _one_char("CsvSchemaBuilder", "column separator", char)
        return self

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        """Args:
            char: The quote character (Spark's ``quote``).

        Returns:
            This builder.
        """
        self._options["quote"] = _one_char("CsvSchemaBuilder", "quote char", char)
        return self

    def disable_quote_char(self) -> CsvSchemaBuilder:
        """Fields are never quoted.

        Returns:
            This builder.
        """
        self._options["quote"] = ""
        return self

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        """Args:
            char: The escape character (Spark's ``escape``).

        Returns:
            This builder.
        """
        self._options["escape"] = _one_char("CsvSchemaBuilder", "escape char", char)
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        """Args:
            null_value: The text that stands for a null field (Spark's ``nullValue``).

        Returns:
            This builder.
        """
        if not isinstance(null_value, str):
            raise GraphBuildError(f"CsvSchemaBuilder: null value must be a str, got {null_value!r}")
        self._options["nullValue"] = null_value
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        """Args:
            allow: Skip lines starting with ``#`` (Spark's ``comment``).

        Returns:
            This builder.
        """
        if allow:
            self._options["comment"] = "#"
        else:
            self._options.pop("comment", None)
        return self

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """Args:
            use: The first line of each file is a header, not a record.

        Returns:
            This builder.
        """
        self._options["header"] = "true" if use else "false"
        return self

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        """Args:
            skip: Skip each file's first line (as a header is skipped).

        Returns:
            This builder.
        """
        return self.set_use_header(skip)

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        """Args:
            separator: The record separator (Spark's ``lineSep``).

        Returns:
            This builder.
        """
        self._options["lineSep"] = nonempty_text("CsvSchemaBuilder", "line separator", separator)
        return self

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        """Add the columns of ``schema`` (after those already added).

        Args:
            schema: A CsvSchema.

        Returns:
            This builder.

        Raises:
            GraphBuildError: not a CsvSchema, or a column already defined.
        """
        if not isinstance(schema, CsvSchema):
            raise GraphBuildError(f"CsvSchemaBuilder.add_columns_from needs a CsvSchema, "
                                  f"got {schema!r}")
        row = schema.row_type
        for name, type_info in zip(row.get_field_names(), row.get_field_types()):
            self._column(name, type_info)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        """Remove every column added so far.

        Returns:
            This builder.
        """
        self._names.clear()
        self._types.clear()
        return self

    def size(self) -> int:
        """The number of columns added so far.

        Returns:
            The count.
        """
        return len(self._names)

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """The separator of array columns' elements; kept, no effect: array columns are
        refused (``add_array_column``).

        Args:
            separator: The separator.

        Returns:
            This builder.
        """
        nonempty_text("CsvSchemaBuilder", "array element separator", separator)
        return self

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        """See :meth:`set_array_element_separator`.

        Returns:
            This builder.
        """
        return self

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        """See :meth:`set_array_element_separator`.

        Args:
            index: The column whose separator to remove.

        Returns:
            This builder.
        """
        return self

    def disable_escape_char(self) -> CsvSchemaBuilder:
        """Forget an escape character given to :meth:`set_escape_char`.

        Returns:
            This builder.
        """
        self._options.pop("escape", None)
        return self

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        """Jackson's property collecting columns beyond the schema's when reading into maps;
        kept, no effect: records are Rows of the schema's columns.

        Args:
            name: The property's name.

        Returns:
            This builder.
        """
        nonempty_text("CsvSchemaBuilder", "any property name", name)
        return self

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """Check each file's header against the columns (Spark's ``enforceSchema=false``,
        with :meth:`set_use_header`).

        Args:
            strict: Check the header (True) or not.

        Returns:
            This builder.
        """
        if strict:
            self._options["enforceSchema"] = "false"
        else:
            self._options.pop("enforceSchema", None)
        return self

    def build(self) -> CsvSchema:
        """Returns:
        The schema: records are ``Types.ROW_NAMED`` of the columns in order.

        Raises:
            GraphBuildError: No column was added.
        """
        if not self._names:
            raise GraphBuildError("CsvSchemaBuilder.build(): add one or more columns first")
        return CsvSchema(Types.ROW_NAMED(list(self._names), list(self._types)),
                         dict(self._options))


class CsvReaderFormat:
    """CSV files as records (PyFlink's ``CsvReaderFormat``), for
    ``FileSource.for_record_stream_format``; built by ``CsvReaderFormat.for_schema``.

    Args:
        schema: The files' ``CsvSchema``.
    """

    def __init__(self, schema: CsvSchema) -> None:
        self.schema = schema

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> Any:
        """PyFlink's inherited ``StreamFormat.text_line_format``: lines of text.

        Args:
            charset_name: ``UTF-8`` only.

        Returns:
            A StreamFormat.
        """
        return StreamFormat.text_line_format(charset_name)

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        """Args:
            schema: The files' ``CsvSchema``.

        Returns:
            The format; each line of a file is a named ``Row`` of the schema's columns (a
            field Spark cannot parse as its type is None).

        Raises:
            GraphBuildError: ``schema`` is not a CsvSchema.
        """
        if not isinstance(schema, CsvSchema):
            raise GraphBuildError(f"CsvReaderFormat.for_schema needs a CsvSchema, got {schema!r}")
        return CsvReaderFormat(schema)

    @property
    def row_type(self) -> TypeInformation:
        """The records' type."""
        return self.schema.row_type

    def read(self, reader: Any, paths: list[str]) -> Any:
        """The DataFrame of the files at ``paths``.

        Args:
            reader: ``spark.read`` or ``spark.readStream`` (with the source's options).
            paths: The paths (one for a streaming read).

        Returns:
            The DataFrame of the format's columns.
        """
        ddl = spark_schema_ddl(self.schema.row_type, "CsvReaderFormat")
        reader = reader.schema(ddl).options(**self.schema.options)
        return reader.csv(paths if len(paths) > 1 else paths[0])

    def __repr__(self) -> str:
        return f"CsvReaderFormat.for_schema({self.schema!r})"


class ParquetColumnarRowInputFormat:
    """Parquet files as named ``Row`` records (PyFlink's ``ParquetColumnarRowInputFormat``),
    for ``FileSource.for_bulk_file_format``; read with Spark's Parquet reader.

    Args:
        row_type: ``Types.ROW_NAMED([...], [...])``: the columns to read, by name.
        hadoop_config: PyFlink's Hadoop settings of the reader: only ``None`` or an empty
            ``Configuration`` (Hadoop settings are the Spark session's ``spark.hadoop.*``).
        batch_size: Rows per read batch (Spark sizes its own batches: checked, no effect).
        is_utc_timestamp: Checked, no effect: Spark reads Parquet timestamps as instants
            and shows them in the session's time zone (``spark.sql.session.timeZone``).
        is_case_sensitive: Checked, no effect: Spark matches column names as the session's
            ``spark.sql.caseSensitive`` says (case-insensitively by default).

    Raises:
        GraphBuildError: An argument is invalid.
    """

    def __init__(self, row_type: TypeInformation, hadoop_config: Any = None,
                 batch_size: int = 2048, is_utc_timestamp: bool = False,
                 is_case_sensitive: bool = True) -> None:
        spark_schema_ddl(row_type, "ParquetColumnarRowInputFormat")
        if hadoop_config is not None and (not hasattr(hadoop_config, "to_dict")
                                          or hadoop_config.to_dict()):
            raise GraphBuildError(
                f"ParquetColumnarRowInputFormat: hadoop_config {hadoop_config!r:.120} is not "
                "supported: Hadoop settings are the Spark session's; set them as "
                "spark.hadoop.<key> in the session's configuration")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise GraphBuildError(f"ParquetColumnarRowInputFormat: batch_size must be a "
                                  f"positive int, got {batch_size!r}")
        for name, flag in (("is_utc_timestamp", is_utc_timestamp),
                           ("is_case_sensitive", is_case_sensitive)):
            if not isinstance(flag, bool):
                raise GraphBuildError(f"ParquetColumnarRowInputFormat: {name} must be a bool, "
                                      f"got {flag!r}")
        self.row_type = row_type
        self.batch_size = batch_size

    def read(self, reader: Any, paths: list[str]) -> Any:
        """The DataFrame of the Parquet files at ``paths``.

        Args:
            reader: ``spark.read`` or ``spark.readStream`` (with the source's options).
            paths: The paths (one for a streaming read).

        Returns:
            The DataFrame of ``row_type``'s columns, read by name.
        """
        ddl = spark_schema_ddl(self.row_type, "ParquetColumnarRowInputFormat")
        return reader.schema(ddl).parquet(*paths)

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self.row_type!r})"
