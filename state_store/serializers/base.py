"""The serializer interface: ``TypeSerializer`` and its order-preserving refinement.

Every serializer of the package (and the window namespace serializers of other
layers) derives from one of these two classes; the contract they state is
described in the package docstring. Kept apart so that the concrete families
depend on one small module instead of on each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..exceptions import SerializationError
from .encoding import read_varint, varint

__all__ = ["TypeSerializer", "LexicographicalTypeSerializer"]

T = TypeVar("T")


class TypeSerializer(ABC, Generic[T]):
    """Turns values of one type into bytes and back."""

    #: Equal values give equal bytes (needed for keys). Pickle is not.
    is_deterministic: bool = True

    @abstractmethod
    def serialize(self, value: T) -> bytes:
        """Serialize ``value``.

        Args:
            value: The value.

        Returns:
            Its bytes.

        Raises:
            SerializationError: ``value`` does not fit the serializer (the error names it).
        """

    @abstractmethod
    def deserialize(self, data: bytes) -> T:
        """Inverse of :meth:`serialize`.

        Args:
            data: Bytes written by ``serialize``.

        Returns:
            The value.

        Raises:
            SerializationError: ``data`` is not a valid encoding.
        """

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """Stable JSON-able description ``{"name": ..., "params": {...}}``.

        Returns:
            The description stored with state in savepoints.
        """

    def is_compatible_with(self, snapshot: dict[str, Any]) -> bool:
        """True when bytes written by a serializer with ``snapshot`` are readable by this one.

        Args:
            snapshot: A ``snapshot()`` of the writing serializer.

        Returns:
            Whether the bytes are readable; by default, whether the snapshots are equal.
        """
        return self.snapshot() == snapshot

    def serialize_nested(self, value: T) -> bytes:
        """Self-delimiting form used inside composites (default: varint length + bytes).

        Args:
            value: The value.

        Returns:
            Its self-delimiting bytes.
        """
        data = self.serialize(value)
        return varint(len(data)) + data

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[T, int]:
        """Read one :meth:`serialize_nested` value at ``pos``.

        Args:
            data: The bytes.
            pos: The offset of the value in ``data``.

        Returns:
            The value and the offset after it.

        Raises:
            SerializationError: ``data`` is truncated or invalid.
        """
        n, pos = read_varint(data, pos)
        end = pos + n
        if end > len(data):
            raise SerializationError(
                f"{type(self).__name__}: truncated data, need {n} bytes at offset {pos}, "
                f"only {len(data) - pos} left"
            )
        return self.deserialize(data[pos:end]), end

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeSerializer) and self.snapshot() == other.snapshot()

    def __hash__(self) -> int:
        return hash(repr(self.snapshot()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.snapshot()['params']!r})"


class LexicographicalTypeSerializer(TypeSerializer[T]):
    """Serializer whose byte order equals value order (FLIP-220)."""

    def find_comparator(self) -> Callable[[T, T], int] | None:
        """Optional fast comparator on deserialized values (``-1/0/1``); None if absent.

        Returns:
            A comparator agreeing with the byte order, or None.
        """
        return None

    def serialize_nested(self, value: T) -> bytes:
        """Prefix-free already: the nested form is the plain form (keeps byte order).

        Args:
            value: The value.

        Returns:
            ``serialize(value)``.
        """
        return self.serialize(value)

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[T, int]:
        """Subclasses that are used inside tuples must find their own end; see concrete ones.

        Args:
            data: The bytes.
            pos: The offset of the value in ``data``.

        Returns:
            The value and the offset after it (in subclasses that implement it).

        Raises:
            SerializationError: This serializer does not implement it, so it cannot be a part
                of a ``LexicographicTupleSerializer``.
        """
        raise SerializationError(
            f"{type(self).__name__} does not implement deserialize_nested(), so it cannot "
            f"be a part of a LexicographicTupleSerializer"
        )
