"""``Types``: the factory of type information, with PyFlink's names and signatures
(``pyflink.common.typeinfo.Types``); the types themselves are in :mod:`.typeinfo`."""

from __future__ import annotations

from .typeinfo import (
    BasicArrayTypeInfo,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)

__all__ = ["Types"]


class Types:
    """Factory of ``TypeInformation``, with PyFlink's names and signatures."""

    @staticmethod
    def STRING() -> TypeInformation:
        """``str``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("STRING")

    @staticmethod
    def CHAR() -> TypeInformation:
        """A one-character ``str`` (stored like STRING).

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("CHAR")

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        """``bool``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("BOOLEAN")

    @staticmethod
    def BYTE() -> TypeInformation:
        """8-bit signed ``int``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("BYTE")

    @staticmethod
    def SHORT() -> TypeInformation:
        """16-bit signed ``int``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("SHORT")

    @staticmethod
    def INT() -> TypeInformation:
        """32-bit signed ``int``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("INT")

    @staticmethod
    def LONG() -> TypeInformation:
        """64-bit signed ``int``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("LONG")

    @staticmethod
    def BIG_INT() -> TypeInformation:
        """``int`` of any size.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("BIG_INT")

    @staticmethod
    def FLOAT() -> TypeInformation:
        """32-bit ``float``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("FLOAT")

    @staticmethod
    def DOUBLE() -> TypeInformation:
        """64-bit ``float``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("DOUBLE")

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        """``decimal.Decimal`` (not deterministic: 1.0 and 1.00 differ in bytes).

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("BIG_DEC")

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        """``datetime.date``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("SQL_DATE")

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        """Naive ``datetime.time``.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("SQL_TIME")

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        """``datetime.datetime``; naive values are UTC.

        Returns:
            The ``TypeInformation``.
        """
        return BasicTypeInfo("SQL_TIMESTAMP")

    @staticmethod
    def INSTANT() -> TypeInformation:
        """:class:`Instant` (seconds and nanoseconds since the epoch); records of it travel
        pickled (no Spark column type holds nanoseconds).

        Returns:
            The type information.
        """
        return BasicTypeInfo("INSTANT")

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        """Any picklable object.

        Returns:
            The ``TypeInformation``.
        """
        return PickledBytesTypeInfo()

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """Array of BOOLEAN/BYTE/SHORT/INT/LONG/FLOAT/DOUBLE (BYTE: ``bytes``).

        Args:
            element_type: The element type, one of the primitive types above.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: ``element_type`` is not a primitive type.
        """
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """List of a basic type.

        Args:
            element_type: The element type, a basic type.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: ``element_type`` is not a basic type.
        """
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """List of any type.

        Args:
            element_type: The element type.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: ``element_type`` is not a ``TypeInformation``.
        """
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        """List of any type.

        Args:
            element_type_info: The element type.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: ``element_type_info`` is not a ``TypeInformation``.
        """
        return ListTypeInfo(element_type_info)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        """dict.

        Args:
            key_type_info: The key type.
            value_type_info: The value type.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: a type is not a ``TypeInformation``.
        """
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TypeInformation:
        """tuple of fixed arity.

        Args:
            field_types: The field types, in order.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: ``field_types`` is not a list of ``TypeInformation``.

        Example:
            >>> Types.TUPLE([Types.STRING(), Types.LONG()]).create_serializer().deserialize(
            ...     Types.TUPLE([Types.STRING(), Types.LONG()]).create_serializer().serialize(("a", 1)))
            ('a', 1)
        """
        return TupleTypeInfo(field_types)

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> TypeInformation:
        """``Row`` with fields ``f0, f1, ...``.

        Args:
            field_types: The field types, in the order of ``f0, f1, ...``.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: ``field_types`` is not a list of ``TypeInformation``.
        """
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> TypeInformation:
        """``Row`` with named fields.

        Args:
            field_names: Distinct non-empty names, one per type.
            field_types: The field types, in order.

        Returns:
            The ``TypeInformation``.

        Raises:
            GraphBuildError: the names are not distinct non-empty strings matching the types in
                number, or a type is not a ``TypeInformation``.
        """
        return RowTypeInfo(field_types, field_names)
