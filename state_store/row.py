"""``Row``: the value type of ``Types.ROW`` / ``Types.ROW_NAMED``.

A small, immutable, PyFlink-compatible-enough record: ``Row(1, "a")``,
``Row(name="Alice", age=11)``, index access (``row[0]``), name access
(``row["name"]``, ``row.name``), ``as_dict()`` and pickling. It is a ``tuple``
subclass, so it is hashable, ordered and equal to tuples *by position*; field
names never take part in equality or hashing (``Row(a=1) == Row(b=1) == (1,)``).

Differences from PyFlink's ``pyflink.common.Row``, on purpose:

* immutable (Rows are used as keys, so they must be hashable and stable);
* keyword fields keep the order they were given in (as PySpark's Row does
  since 3.0) instead of being sorted by name;
* no ``RowKind`` (this product has no changelog streams).

Field names that collide with tuple methods (``count``, ``index``) must be read
with ``row["count"]``; ``row.count`` is the tuple method (as in PySpark).

It is defined in its own module so that ``serializers`` can build Rows
without importing ``typeinfo``; ``typeinfo`` re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["Row", "make_row"]


def _make_row(field_names: Sequence[str] | None, values: Iterable[Any]) -> Row:
    """Build a Row from values and optional names (used by pickle and serializers)."""
    row = tuple.__new__(Row, values)
    row._fields = tuple(field_names) if field_names is not None else None
    return row


#: The public name of :func:`_make_row`, for the serializers. The function keeps its
#: private name: every pickled Row refers to it by that name (``Row.__reduce__``), so
#: pickles stay byte-identical and readable by earlier versions.
make_row = _make_row


class Row(tuple):
    """Immutable record of positional values with optional field names."""

    _fields: tuple[str, ...] | None

    def __new__(cls, *args: Any, **kwargs: Any) -> Row:
        if args and kwargs:
            raise TypeError("Row() takes either positional values or keyword fields, not both")
        if kwargs:
            row = tuple.__new__(cls, kwargs.values())
            row._fields = tuple(kwargs)
        else:
            row = tuple.__new__(cls, args)
            row._fields = None
        return row

    @classmethod
    def from_fields(cls, field_names: Sequence[str] | None, values: Iterable[Any]) -> Row:
        """Row with the given field names (None: unnamed) and values, in order."""
        values = tuple(values)
        if field_names is not None and len(field_names) != len(values):
            raise ValueError(
                f"Row has {len(values)} values but {len(field_names)} field names "
                f"{list(field_names)!r}"
            )
        return _make_row(field_names, values)

    def get_field_names(self) -> list[str] | None:
        """Field names, or None for an unnamed Row."""
        return list(self._fields) if self._fields is not None else None

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """``{name: value}``; nested Rows become dicts too when ``recursive``."""
        if self._fields is None:
            raise TypeError(f"cannot convert an unnamed Row to a dict: {self!r}")
        if not recursive:
            return dict(zip(self._fields, self, strict=False))
        return {name: _as_plain(value) for name, value in zip(self._fields, self, strict=False)}

    def __call__(self, *values: Any) -> Row:
        """Use a Row of names as a record factory: ``Person = Row("name", "age")``."""
        if len(values) != len(self):
            raise ValueError(
                f"Row factory {tuple(self)!r} expects {len(self)} values, got {len(values)}"
            )
        return _make_row(tuple(self), values)

    def __getitem__(self, item: Any) -> Any:  # type: ignore[override]
        if isinstance(item, str):
            fields = self._fields
            if fields is None or item not in fields:
                raise KeyError(f"Row has no field {item!r} (fields: {self.get_field_names()})")
            return tuple.__getitem__(self, fields.index(item))
        return tuple.__getitem__(self, item)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        fields = self.__dict__.get("_fields")
        if fields is None or item not in fields:
            raise AttributeError(f"Row has no field {item!r} (fields: {self.get_field_names()})")
        return tuple.__getitem__(self, fields.index(item))

    def __reduce__(self) -> tuple[Any, ...]:
        return _make_row, (self._fields, tuple(self))

    def __repr__(self) -> str:
        if self._fields is None:
            return "Row(" + ", ".join(repr(v) for v in self) + ")"
        return (
            "Row(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=False)) + ")"
        )


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row) and value._fields is not None:
        return value.as_dict(True)
    if isinstance(value, list):
        return [_as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_plain(v) for k, v in value.items()}
    return value
