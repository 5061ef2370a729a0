"""Type information, mirroring PyFlink's ``pyflink.common.typeinfo`` (the ``Types`` factory:
:mod:`.types`).

A ``TypeInformation`` describes the values of a stream, a key or a state. It
creates the serializers (``create_serializer()`` for values,
``lexicographic_serializer()`` for ordered keys), says whether equal values give
equal bytes (``is_deterministic()``) and has a stable JSON description
(``to_json()`` / ``TypeInformation.from_json()``) that savepoint metadata stores.
Every type has a ``type_name`` and its parts as attributes (``element_type``,
``key_type``, ``value_type``, ``field_types``, ``field_names``). The Python value of
each type: the "State and types" page of the API reference.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from .exceptions import GraphBuildError, SerializationError
from .row import Row
from .serializers import (
    BigDecimalSerializer,
    BigIntSerializer,
    BooleanSerializer,
    ByteSerializer,
    BytesSerializer,
    DateSerializer,
    DoubleSerializer,
    FloatSerializer,
    IntSerializer,
    LexicographicalTypeSerializer,
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
)
from .serializers import lexicographic as lex
from .serializers.instant import Instant, InstantSerializer, LexicographicInstantSerializer
from .typeinfo_conversions import TypeConversions

__all__ = [
    "Instant",
    "Row",
    "TypeInformation",
    "BasicTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "BasicArrayTypeInfo",
    "ObjectArrayTypeInfo",
    "ListTypeInfo",
    "ElementTypeInfo",
    "MapTypeInfo",
    "FieldsTypeInfo",
    "TupleTypeInfo",
    "RowTypeInfo",
]


class TypeInformation(TypeConversions, ABC):
    """Description of a value type; creates its serializers."""

    #: Upper-case type name, e.g. ``"LONG"``, ``"ROW"``; stable (stored in savepoints).
    type_name: str

    @abstractmethod
    def create_serializer(self) -> TypeSerializer[Any]:
        """Compact serializer for values of this type (state values, records).

        Returns:
            A new serializer.
        """

    @abstractmethod
    def is_deterministic(self) -> bool:
        """True when equal values always give equal bytes (required for keys).

        Returns:
            Whether the type can key a stream or state.
        """

    def lexicographic_serializer(self) -> LexicographicalTypeSerializer[Any] | None:
        """Order-preserving serializer (FLIP-220), or None when this type has none.

        Returns:
            The serializer, or None.
        """
        return None

    def key_serializer(self) -> TypeSerializer[Any]:
        """Serializer for keys of this type: the lexicographic one if any, else the plain one.

        Returns:
            The key serializer.

        Raises:
            SerializationError: The type is not deterministic (MAP, pickled, ...).
        """
        lex = self.lexicographic_serializer()
        if lex is not None:
            return lex
        if not self.is_deterministic():
            raise SerializationError(
                f"{self!r} cannot be a key type: its serializer is not deterministic "
                f"(equal values may give different bytes); use a basic type, a TUPLE or a ROW"
            )
        return self.create_serializer()

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """Stable JSON-able description; ``TypeInformation.from_json`` is its inverse.

        Returns:
            A dict with at least ``type``.
        """

    @staticmethod
    def from_json(data: dict[str, Any] | str) -> TypeInformation:
        """Rebuild a type from :meth:`to_json` output (a dict, or that dict as a JSON string).

        Args:
            data: The description, as a dict or a JSON string.

        Returns:
            The type.

        Raises:
            SerializationError: ``data`` is not valid JSON or not a known type description.

        Example:
            >>> TypeInformation.from_json(Types.TUPLE([Types.STRING(), Types.LONG()]).to_json())
            Types.TUPLE([Types.STRING(), Types.LONG()])
        """
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise SerializationError(f"type description is not valid JSON: {data!r}") from exc
        return _from_json(data)

    def _key(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Types.{self.type_name}()"


# name -> (plain serializer, lexicographic serializer or None, deterministic)
_BASIC: dict[str, tuple[TypeSerializer[Any], LexicographicalTypeSerializer[Any] | None, bool]] = {
    "STRING": (StringSerializer.INSTANCE, lex.LexicographicStringSerializer.INSTANCE, True),
    "CHAR": (StringSerializer.INSTANCE, lex.LexicographicStringSerializer.INSTANCE, True),
    "BOOLEAN": (BooleanSerializer.INSTANCE, lex.LexicographicBooleanSerializer.INSTANCE, True),
    "BYTE": (ByteSerializer.INSTANCE, lex.LexicographicByteSerializer.INSTANCE, True),
    "SHORT": (ShortSerializer.INSTANCE, lex.LexicographicShortSerializer.INSTANCE, True),
    "INT": (IntSerializer.INSTANCE, lex.LexicographicIntSerializer.INSTANCE, True),
    "LONG": (LongSerializer.INSTANCE, lex.LexicographicLongSerializer.INSTANCE, True),
    "BIG_INT": (BigIntSerializer.INSTANCE, lex.LexicographicBigIntSerializer.INSTANCE, True),
    "FLOAT": (FloatSerializer.INSTANCE, lex.LexicographicFloatSerializer.INSTANCE, True),
    "DOUBLE": (DoubleSerializer.INSTANCE, lex.LexicographicDoubleSerializer.INSTANCE, True),
    "BIG_DEC": (BigDecimalSerializer.INSTANCE, None, False),
    "SQL_DATE": (DateSerializer.INSTANCE, lex.LexicographicDateSerializer.INSTANCE, True),
    "SQL_TIME": (TimeSerializer.INSTANCE, lex.LexicographicTimeSerializer.INSTANCE, True),
    "SQL_TIMESTAMP": (
        TimestampSerializer.INSTANCE,
        lex.LexicographicTimestampSerializer.INSTANCE,
        True,
    ),
    "INSTANT": (InstantSerializer.INSTANCE, LexicographicInstantSerializer.INSTANCE, True),
}


class BasicTypeInfo(TypeInformation):
    """An atomic type: STRING, LONG, DOUBLE, SQL_TIMESTAMP, ... (see ``Types``).

    Plain DOUBLE/FLOAT serializers keep ``-0.0`` distinct from ``0.0`` (exact bits);
    ``key_serializer()`` uses the lexicographic ones, which normalise it.
    """

    def __init__(self, type_name: str) -> None:
        if type_name not in _BASIC:
            raise GraphBuildError(
                f"unknown basic type {type_name!r}; expected one of {sorted(_BASIC)}"
            )
        self.type_name = type_name

    def create_serializer(self) -> TypeSerializer[Any]:
        return _BASIC[self.type_name][0]

    def lexicographic_serializer(self) -> LexicographicalTypeSerializer[Any] | None:
        return _BASIC[self.type_name][1]

    def is_deterministic(self) -> bool:
        return _BASIC[self.type_name][2]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name}


class PickledBytesTypeInfo(TypeInformation):
    """Any picklable Python object (pickle protocol 5); not deterministic, not a key type."""

    type_name = "PICKLED_BYTE_ARRAY"

    def create_serializer(self) -> TypeSerializer[Any]:
        return PickleSerializer.INSTANCE

    def is_deterministic(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name}


def _check_type(what: str, value: Any) -> TypeInformation:
    if not isinstance(value, TypeInformation):
        raise GraphBuildError(
            f"{what} must be a TypeInformation (e.g. Types.LONG()), got {value!r}"
        )
    return value


_PRIMITIVE_ELEMENTS = ("BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE")


class PrimitiveArrayTypeInfo(TypeInformation):
    """Array of a primitive type without nulls; ``PRIMITIVE_ARRAY(BYTE)`` values are ``bytes``."""

    type_name = "PRIMITIVE_ARRAY"

    def __init__(self, element_type: TypeInformation) -> None:
        _check_type("PRIMITIVE_ARRAY element type", element_type)
        if element_type.type_name not in _PRIMITIVE_ELEMENTS:
            raise GraphBuildError(
                f"PRIMITIVE_ARRAY element type must be one of {list(_PRIMITIVE_ELEMENTS)}, "
                f"got {element_type!r}"
            )
        self.element_type = element_type

    def create_serializer(self) -> TypeSerializer[Any]:
        if self.element_type.type_name == "BYTE":
            return BytesSerializer.INSTANCE
        return PrimitiveArraySerializer(self.element_type.type_name)

    def lexicographic_serializer(self) -> LexicographicalTypeSerializer[Any] | None:
        if self.element_type.type_name == "BYTE":
            return lex.LexicographicBytesSerializer.INSTANCE
        return None

    def is_deterministic(self) -> bool:
        # Exact float bits: deterministic in the Java sense (see BasicTypeInfo).
        return True

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name, "element": self.element_type.to_json()}

    def __repr__(self) -> str:
        return f"Types.{self.type_name}({self.element_type!r})"


class ElementTypeInfo(TypeInformation):
    """A list-valued type with nullable elements of one element type (BASIC_ARRAY,
    OBJECT_ARRAY, LIST; PRIMITIVE_ARRAY has an ``element_type`` too, without nulls)."""

    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _check_type(f"{self.type_name} element type", element_type)

    def create_serializer(self) -> TypeSerializer[Any]:
        return ListSerializer(self.element_type.create_serializer())

    def is_deterministic(self) -> bool:
        return self.element_type.is_deterministic()

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name, "element": self.element_type.to_json()}

    def __repr__(self) -> str:
        return f"Types.{self.type_name}({self.element_type!r})"


class BasicArrayTypeInfo(ElementTypeInfo):
    """Array (Python list) of a basic type, None elements allowed."""

    type_name = "BASIC_ARRAY"

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(element_type)
        if not isinstance(element_type, BasicTypeInfo):
            raise GraphBuildError(
                f"BASIC_ARRAY element type must be a basic type (e.g. Types.STRING()), "
                f"got {element_type!r}; use Types.OBJECT_ARRAY or Types.LIST"
            )


class ObjectArrayTypeInfo(ElementTypeInfo):
    """Array (Python list) of any type, None elements allowed."""

    type_name = "OBJECT_ARRAY"


class ListTypeInfo(ElementTypeInfo):
    """Python list of any element type, None elements allowed."""

    type_name = "LIST"


class MapTypeInfo(TypeInformation):
    """Python dict; not deterministic (iteration order is part of the bytes)."""

    type_name = "MAP"

    def __init__(self, key_type: TypeInformation, value_type: TypeInformation) -> None:
        self.key_type = _check_type("MAP key type", key_type)
        self.value_type = _check_type("MAP value type", value_type)

    def create_serializer(self) -> TypeSerializer[Any]:
        return MapSerializer(self.key_type.create_serializer(), self.value_type.create_serializer())

    def is_deterministic(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "key": self.key_type.to_json(),
            "value": self.value_type.to_json(),
        }

    def __repr__(self) -> str:
        return f"Types.MAP({self.key_type!r}, {self.value_type!r})"


class FieldsTypeInfo(TypeInformation):
    """Common part of TUPLE and ROW: fixed arity, typed fields (``isinstance`` tells a type
    with fields from one without)."""

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        if isinstance(field_types, TypeInformation) or not isinstance(field_types, Sequence):
            raise GraphBuildError(
                f"{self.type_name} field types must be a list of TypeInformation, "
                f"got {field_types!r}"
            )
        self.field_types: list[TypeInformation] = [
            _check_type(f"{self.type_name} field {i}", t) for i, t in enumerate(field_types)
        ]

    def get_field_types(self) -> list[TypeInformation]:
        """The field types, in order."""
        return list(self.field_types)

    def get_arity(self) -> int:
        """Number of fields."""
        return len(self.field_types)

    def get_field_names(self) -> list[str]:
        """Field names, in order (``f0, f1, ...`` when not named)."""
        return [f"f{i}" for i in range(len(self.field_types))]

    def get_field_index(self, field_name: str) -> int:
        """Position of ``field_name``; -1 if absent (as PyFlink)."""
        names = self.get_field_names()
        return names.index(field_name) if field_name in names else -1

    def is_deterministic(self) -> bool:
        return all(t.is_deterministic() for t in self.field_types)

    def _lex_parts(self) -> list[LexicographicalTypeSerializer[Any]] | None:
        parts = [t.lexicographic_serializer() for t in self.field_types]
        if any(p is None for p in parts):
            return None
        return [p for p in parts if p is not None]


class TupleTypeInfo(FieldsTypeInfo):
    """Python tuple of fixed arity; field names are ``f0, f1, ...``."""

    type_name = "TUPLE"

    def create_serializer(self) -> TypeSerializer[Any]:
        return TupleSerializer([t.create_serializer() for t in self.field_types])

    def lexicographic_serializer(self) -> LexicographicalTypeSerializer[Any] | None:
        parts = self._lex_parts()
        return LexicographicTupleSerializer(parts) if parts is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name, "fields": [t.to_json() for t in self.field_types]}

    def __repr__(self) -> str:
        return f"Types.TUPLE([{', '.join(repr(t) for t in self.field_types)}])"


class RowTypeInfo(FieldsTypeInfo):
    """``Row`` with named, typed fields (names default to ``f0, f1, ...``)."""

    type_name = "ROW"

    def __init__(
        self, field_types: Sequence[TypeInformation], field_names: Sequence[str] | None = None
    ) -> None:
        super().__init__(field_types)
        if field_names is None:
            names = [f"f{i}" for i in range(len(self.field_types))]
        else:
            if isinstance(field_names, str) or not isinstance(field_names, Sequence):
                raise GraphBuildError(f"ROW field names must be a list of str, got {field_names!r}")
            names = list(field_names)
            bad = [n for n in names if not isinstance(n, str) or not n]
            if bad:
                raise GraphBuildError(f"ROW field names must be non-empty str, got {bad!r}")
            if len(names) != len(self.field_types):
                raise GraphBuildError(
                    f"ROW_NAMED got {len(names)} field names {names!r} for "
                    f"{len(self.field_types)} field types"
                )
            if len(set(names)) != len(names):
                dups = sorted({n for n in names if names.count(n) > 1})
                raise GraphBuildError(f"ROW field names must be unique, duplicated: {dups!r}")
        self.field_names: list[str] = names

    def get_field_names(self) -> list[str]:
        return list(self.field_names)

    def create_serializer(self) -> TypeSerializer[Any]:
        return RowSerializer([t.create_serializer() for t in self.field_types], self.field_names)

    def lexicographic_serializer(self) -> LexicographicalTypeSerializer[Any] | None:
        parts = self._lex_parts()
        if parts is None:
            return None
        return LexicographicTupleSerializer(parts, self.field_names)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "names": list(self.field_names),
            "fields": [t.to_json() for t in self.field_types],
        }

    def _default_names(self) -> bool:
        return self.field_names == [f"f{i}" for i in range(len(self.field_types))]

    def __repr__(self) -> str:
        types = f"[{', '.join(repr(t) for t in self.field_types)}]"
        if self._default_names():
            return f"Types.ROW({types})"
        return f"Types.ROW_NAMED({self.field_names!r}, {types})"


def _from_json(data: Any) -> TypeInformation:
    if not isinstance(data, dict) or "type" not in data:
        raise SerializationError(f"not a type description (expected a dict with 'type'): {data!r}")
    name = data["type"]
    try:
        if name in _BASIC:
            return BasicTypeInfo(name)
        if name == "PICKLED_BYTE_ARRAY":
            return PickledBytesTypeInfo()
        if name == "PRIMITIVE_ARRAY":
            return PrimitiveArrayTypeInfo(_from_json(data["element"]))
        if name == "BASIC_ARRAY":
            return BasicArrayTypeInfo(_from_json(data["element"]))
        if name == "OBJECT_ARRAY":
            return ObjectArrayTypeInfo(_from_json(data["element"]))
        if name == "LIST":
            return ListTypeInfo(_from_json(data["element"]))
        if name == "MAP":
            return MapTypeInfo(_from_json(data["key"]), _from_json(data["value"]))
        if name == "TUPLE":
            return TupleTypeInfo([_from_json(f) for f in data["fields"]])
        if name == "ROW":
            return RowTypeInfo([_from_json(f) for f in data["fields"]], data.get("names"))
    except KeyError as exc:
        raise SerializationError(
            f"type description {data!r} lacks the field {exc.args[0]!r}"
        ) from exc
    except GraphBuildError as exc:
        raise SerializationError(f"invalid type description {data!r}: {exc}") from exc
    raise SerializationError(f"unknown type {name!r} in type description {data!r}")
