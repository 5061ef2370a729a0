"""PyFlink's JSON row formats (``pyflink.datastream.formats.json``) for the Kafka connector:
``JsonRowDeserializationSchema`` turns each Kafka value into a ``Row`` of its type,
``JsonRowSerializationSchema`` each Row into a JSON value. The conversions:
``state_store/json_rows.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn, Optional

from ..state_store.exceptions import GraphBuildError, SerializationError
from ..state_store.json_rows import json_row_reader, json_row_writer, json_type_problems
from ..state_store.row import Row
from ..state_store.typeinfo import TypeInformation
from .exceptions import UnsupportedConnectorError
from .serialization import DeserializationSchema, SerializationSchema

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]


def _row_type(what: str, type_info: Any) -> TypeInformation:
    if not isinstance(type_info, TypeInformation) or type_info.type_name != "ROW":
        raise GraphBuildError(f"{what}: type_info must be Types.ROW_NAMED([...], [...]) (or "
                              f"Types.ROW), got {type_info!r}")
    problems = json_type_problems(type_info)
    if problems:
        raise UnsupportedConnectorError(f"{what}: no JSON mapping for {'; '.join(problems)}")
    return type_info


class JsonRowDeserializationSchema(DeserializationSchema):
    """Kafka values as JSON objects read into Rows of a ROW type, members matched to fields by
    name (others ignored; a missing one is None unless ``fail_on_missing_field``). A value
    that is not such an object fails the job with a :class:`SerializationError`, or, with
    ``ignore_parse_errors``, is skipped, as in Flink. Built by
    ``JsonRowDeserializationSchema.builder()``; not constructed directly.

    Example:
        >>> from pyspark_datastream import Types
        >>> schema = (JsonRowDeserializationSchema.builder()
        ...           .type_info(Types.ROW_NAMED(["id"], [Types.LONG()])).build())
        >>> schema.type_info
        Types.ROW_NAMED(['id'], [Types.LONG()])
    """

    def __init__(self, type_info: TypeInformation, fail_on_missing_field: bool,
                 ignore_parse_errors: bool) -> None:
        self.type_info = type_info
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        """A builder of a JsonRowDeserializationSchema.

        Returns:
            A new builder.
        """
        return JsonRowDeserializationSchema.Builder()

    def parser(self) -> _JsonRowParse:
        """The function a source's string records go through (a ``flat_map``).

        Returns:
            A picklable function from JSON text to zero or one Row.
        """
        return _JsonRowParse(self.type_info, self.fail_on_missing_field, self.ignore_parse_errors)

    def __repr__(self) -> str:
        return f"JsonRowDeserializationSchema({self.type_info!r})"

    class Builder:
        """PyFlink's ``JsonRowDeserializationSchema.Builder``."""

        _WHAT = "JsonRowDeserializationSchema"

        def __init__(self) -> None:
            self._type_info: Optional[TypeInformation] = None
            self._fail_on_missing = False
            self._ignore_errors = False

        def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchema.Builder:
            """The Rows' type.

            Args:
                type_info: ``Types.ROW_NAMED(...)`` (or ``Types.ROW``) of JSON-mappable fields.

            Returns:
                This builder.

            Raises:
                GraphBuildError: For a type that is not a ROW.
                UnsupportedConnectorError: For a field type with no JSON mapping.
            """
            self._type_info = _row_type(self._WHAT, type_info)
            return self

        def json_schema(self, json_schema: str) -> NoReturn:
            """Not supported: give the Rows' type with :meth:`type_info`.

            Args:
                json_schema: A JSON Schema (not used).

            Raises:
                UnsupportedConnectorError: Always.
            """
            raise UnsupportedConnectorError(
                f"{self._WHAT}: json_schema(...) is not supported; give the Rows' type with "
                "type_info(Types.ROW_NAMED([...], [...]))")

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            """A field missing from a JSON object fails the job instead of being None.

            Returns:
                This builder.
            """
            self._fail_on_missing = True
            return self

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            """A value that cannot be read as a Row of the type is skipped instead of failing.

            Returns:
                This builder.
            """
            self._ignore_errors = True
            return self

        def build(self) -> JsonRowDeserializationSchema:
            """The schema.

            Returns:
                The JsonRowDeserializationSchema.

            Raises:
                GraphBuildError: Without a type_info, or with both fail_on_missing_field and
                    ignore_parse_errors (Flink refuses the pair too).
            """
            if self._type_info is None:
                raise GraphBuildError(f"{self._WHAT}.builder().build(): call type_info first")
            if self._fail_on_missing and self._ignore_errors:
                raise GraphBuildError(f"{self._WHAT}: fail_on_missing_field and "
                                      "ignore_parse_errors cannot both be set")
            return JsonRowDeserializationSchema(self._type_info, self._fail_on_missing,
                                                self._ignore_errors)


class JsonRowSerializationSchema(SerializationSchema):
    """Rows of a ROW type written as JSON objects, field names as member names and None as
    ``null`` (the Kafka value). Built by ``JsonRowSerializationSchema.builder()``; not
    constructed directly.

    Example:
        >>> from pyspark_datastream import Types
        >>> schema = (JsonRowSerializationSchema.builder()
        ...           .with_type_info(Types.ROW_NAMED(["id"], [Types.LONG()])).build())
        >>> schema.formatter()(Row(id=7))
        '{"id":7}'
    """

    def __init__(self, type_info: TypeInformation) -> None:
        self.type_info = type_info

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        """A builder of a JsonRowSerializationSchema.

        Returns:
            A new builder.
        """
        return JsonRowSerializationSchema.Builder()

    def formatter(self) -> _JsonRowFormat:
        """The function a sink's Rows go through (a ``map`` to ``Types.STRING()``).

        Returns:
            A picklable function from a Row to its JSON text.
        """
        return _JsonRowFormat(self.type_info)

    def __repr__(self) -> str:
        return f"JsonRowSerializationSchema({self.type_info!r})"

    class Builder:
        """PyFlink's ``JsonRowSerializationSchema.Builder``."""

        _WHAT = "JsonRowSerializationSchema"

        def __init__(self) -> None:
            self._type_info: Optional[TypeInformation] = None

        def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchema.Builder:
            """The type of the Rows to write.

            Args:
                type_info: ``Types.ROW_NAMED(...)`` (or ``Types.ROW``): each field's type must
                    map to JSON.

            Returns:
                This builder.

            Raises:
                GraphBuildError: ``type_info`` is not a ROW.
                UnsupportedConnectorError: A field's type has no JSON mapping.
            """
            self._type_info = _row_type(self._WHAT, type_info)
            return self

        def build(self) -> JsonRowSerializationSchema:
            """The schema.

            Returns:
                The JsonRowSerializationSchema.

            Raises:
                GraphBuildError: Without a type_info.
            """
            if self._type_info is None:
                raise GraphBuildError(f"{self._WHAT}.builder().build(): call with_type_info first")
            return JsonRowSerializationSchema(self._type_info)


class _JsonRowParse:
    """JSON text -> zero or one Row (``flat_map``); the reader is built once per worker."""

    def __init__(self, type_info: TypeInformation, fail_on_missing: bool, ignore: bool) -> None:
        self.type_info, self.fail_on_missing, self.ignore = type_info, fail_on_missing, ignore
        self._read: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_read": None}

    def __call__(self, text: str) -> Iterator[Row]:
        if self._read is None:
            self._read = json_row_reader(self.type_info, self.fail_on_missing)
        try:
            row = self._read(text)
        except SerializationError as exc:
            if self.ignore:
                return
            raise SerializationError(f"JsonRowDeserializationSchema: {exc}") from None
        yield row


class _JsonRowFormat:
    """A Row -> its JSON text (``map``); the writer is built once per worker."""

    def __init__(self, type_info: TypeInformation) -> None:
        self.type_info = type_info
        self._write: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_write": None}

    def __call__(self, row: Any) -> str:
        if self._write is None:
            self._write = json_row_writer(self.type_info)
        try:
            return self._write(row)
        except SerializationError as exc:
            raise SerializationError(f"JsonRowSerializationSchema: {exc}") from None
