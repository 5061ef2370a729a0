"""PyFlink's serialization schema bases and the two schemas of
``pyflink.common.serialization`` not covered elsewhere: ``ByteArraySchema`` (records as
``bytes``) and ``RowFieldExtractorSchema`` (one field of a Row as bytes). The Kafka
connector reads and writes ``SimpleStringSchema`` and the JSON row schemas; it refuses
others by name where they are passed."""

from __future__ import annotations

from typing import Any

from ..state_store.exceptions import GraphBuildError

__all__ = ["ByteArraySchema", "DeserializationSchema", "RowFieldExtractorSchema",
           "SerializationSchema"]


class SerializationSchema:
    """Base of the schemas that turn records into bytes (PyFlink's ``SerializationSchema``)."""


class DeserializationSchema:
    """Base of the schemas that turn bytes into records (PyFlink's
    ``DeserializationSchema``)."""


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Records as ``bytes``, unchanged both ways."""

    def serialize(self, element: bytes) -> bytes:
        """``element`` itself.

        Args:
            element: bytes.

        Returns:
            The bytes.

        Raises:
            GraphBuildError: not bytes.
        """
        if not isinstance(element, (bytes, bytearray)):
            raise GraphBuildError(f"ByteArraySchema serializes bytes, got {element!r:.60}")
        return bytes(element)

    def deserialize(self, message: bytes) -> bytes:
        """``message`` itself.

        Args:
            message: bytes.

        Returns:
            The bytes.
        """
        return bytes(message)

    def __repr__(self) -> str:
        return "ByteArraySchema()"


class RowFieldExtractorSchema(SerializationSchema):
    """One field of a Row as bytes (a ``str`` field encoded as UTF-8), as Flink writes a
    Kafka key.

    Args:
        field_index: The field's position (>= 0).

    Raises:
        GraphBuildError: not an int >= 0.
    """

    def __init__(self, field_index: int) -> None:
        if isinstance(field_index, bool) or not isinstance(field_index, int) or field_index < 0:
            raise GraphBuildError(
                f"RowFieldExtractorSchema needs a field index >= 0, got {field_index!r}")
        self.field_index = field_index

    def serialize(self, element: Any) -> bytes:
        """The field's bytes.

        Args:
            element: A Row (or tuple).

        Returns:
            The field as bytes.

        Raises:
            GraphBuildError: the field is missing or neither bytes nor str.
        """
        try:
            value = element[self.field_index]
        except (IndexError, TypeError) as exc:
            raise GraphBuildError(f"RowFieldExtractorSchema({self.field_index}): "
                                  f"{element!r:.60} has no such field") from exc
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        raise GraphBuildError(f"RowFieldExtractorSchema({self.field_index}): the field must be "
                              f"bytes or str, got {value!r:.60}")

    def __repr__(self) -> str:
        return f"RowFieldExtractorSchema({self.field_index})"
