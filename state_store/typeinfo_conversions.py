"""PyFlink's ``TypeInformation`` conversion calls (``need_conversion``, ``to_internal_type``,
``from_internal_type``) and its Java accessor, mixed into
:class:`~pyspark_datastream.state_store.typeinfo.TypeInformation`. Records here stay Python
objects, so no value is converted; there is no Java type behind a type."""

from __future__ import annotations

from typing import Any, NoReturn

from .exceptions import GraphBuildError

__all__ = ["TypeConversions"]


class TypeConversions:
    """The calls of the module docstring."""

    def need_conversion(self) -> bool:
        """Whether values convert to an internal form: never here, records stay Python objects.

        Returns:
            False.
        """
        return False

    def to_internal_type(self, obj: Any) -> Any:
        """``obj`` itself (see :meth:`need_conversion`).

        Args:
            obj: a value.

        Returns:
            ``obj``.
        """
        return obj

    def from_internal_type(self, obj: Any) -> Any:
        """``obj`` itself: nothing was converted (see :meth:`need_conversion`).

        Args:
            obj: a value as stored.

        Returns:
            ``obj``.
        """
        return obj

    def get_java_type_info(self) -> NoReturn:
        """Refused: no Java Flink type is behind a type here.

        Raises:
            GraphBuildError: always.
        """
        raise GraphBuildError(f"{self!r}.get_java_type_info(): there is no Java Flink type here")
