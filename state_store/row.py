"""``Row``: the value type of ``Types.ROW`` / ``Types.ROW_NAMED``.

A small record used as PyFlink's ``pyflink.common.Row`` is: ``Row(1, "a")``,
``Row(name="Alice", age=11)``, ``row[0]``, ``row["name"]``, ``row.name``, ``as_dict()``,
``set_field_names()``, the ``Row("name", "age")`` factory, pickling; mutable in place by
index, slice and name but not by attribute; PyFlink's ``repr``. It is a ``tuple`` subclass
and, unlike PyFlink's, equals the tuple of its values by position (names never take part
in equality or hashing), has a fixed length, keeps keyword fields in the order given and
carries its ``RowKind`` as metadata outside equality. Named Rows are instances of one
cached subclass per tuple of field names, so a Row costs what a tuple costs; pickles refer
only to :func:`_make_row`.
Differences from PyFlink's Row: the "Porting from PyFlink" page.
"""

from __future__ import annotations

import ctypes
import enum
import gc
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Optional

__all__ = ["Row", "RowKind", "make_row", "named_row_class", "take_emitted"]


class RowKind(enum.Enum):
    """The kind of change a Row stands for in a changelog (PyFlink's ``RowKind``)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        """Flink's short form: ``+I``, ``-U``, ``+U`` or ``-D``.

        Returns:
            The short string.
        """
        return ("+I", "-U", "+U", "-D")[self.value]

_new = tuple.__new__
_tuple_item = tuple.__getitem__
try:  # the C accessor namedtuple's fields use: reads the item, not through __getitem__
    from _collections import _tuplegetter as _field_reader
except ImportError:  # pragma: no cover - other Python implementations

    def _field_reader(index: int, doc: str) -> Any:
        return property(lambda row: _tuple_item(row, index), doc=doc)


# In-place item writes (PyFlink's Row is mutable; this one is a tuple for speed). A tuple's
# items are an array of object pointers right after its fixed header (``__basicsize__``);
# from CPython 3.14 that header ends with a cached hash, reset after a write.
_ITEMS = tuple.__basicsize__
_PTR = ctypes.sizeof(ctypes.c_void_p)
_HASH_CACHE = _ITEMS - _PTR if sys.version_info >= (3, 14) else None
_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_decref = ctypes.pythonapi.Py_DecRef
_decref.argtypes = [ctypes.c_void_p]
_gc_track = ctypes.pythonapi.PyObject_GC_Track
_gc_track.argtypes = [ctypes.py_object]


def _write_item(row: tuple, index: int, value: Any) -> None:
    """Replace item ``index`` (already checked in range) of ``row`` in place."""
    slot = ctypes.c_void_p.from_address(id(row) + _ITEMS + index * _PTR)
    old = slot.value
    _incref(value)
    slot.value = id(value)
    if old:
        _decref(old)
    if _HASH_CACHE is not None:
        ctypes.c_ssize_t.from_address(id(row) + _HASH_CACHE).value = -1
    if not gc.is_tracked(row) and gc.is_tracked(value):
        # CPython untracks tuples of atomic values; one now holding a container is tracked
        # again so that cycles through it are still collected
        _gc_track(row)


class _BothForms(TypeError, ValueError):
    """Positional and keyword values given together (PyFlink raises ValueError there)."""


class _NoField(KeyError, ValueError):
    """``row["x"]`` of a Row without field ``x`` (PyFlink raises ValueError there)."""


class Row(tuple):
    """Record of positional values with optional field names, changeable by index and name."""

    __slots__ = ()
    #: the field names (None: an unnamed Row); a class attribute of the named subclasses
    _fields: Optional[tuple[str, ...]] = None
    #: the row kind; a class attribute too (a Row of another kind has a subclass for it)
    _kind: RowKind = RowKind.INSERT

    def __new__(cls, *args: Any, **kwargs: Any) -> Row:
        if kwargs:  # PyFlink's common form, one per emitted record: the class lookup inlined
            if args:
                raise _BothForms(
                    "Row() takes either positional values or keyword fields, not both")
            names = tuple(kwargs)
            named = _CLASSES.get(names)
            return _new(named if named is not None else named_row_class(names),
                        tuple(kwargs.values()))
        fields = cls._fields
        if fields is not None and len(args) != len(fields):  # a named class called directly
            raise ValueError(f"Row{fields!r} expects {len(fields)} values, got {len(args)}")
        return _new(cls, args)

    @classmethod
    def from_fields(cls, field_names: Sequence[str] | None, values: Iterable[Any]) -> Row:
        """Row with the given field names (None: unnamed) and values, in order.

        Args:
            field_names: The names, or None.
            values: The values.

        Returns:
            The Row.

        Raises:
            ValueError: The numbers of names and values differ.
        """
        values = tuple(values)
        if field_names is not None and len(field_names) != len(values):
            raise ValueError(
                f"Row has {len(values)} values but {len(field_names)} field names "
                f"{list(field_names)!r}"
            )
        return _make_row(field_names, values)

    def get_field_names(self) -> list[str] | None:
        """Field names, or None for an unnamed Row.

        Returns:
            A new list of the names, or None.
        """
        fields = self._fields
        return list(fields) if fields is not None else None

    def set_field_names(self, field_names: Sequence[str] | None) -> None:
        """Name (or rename, or with None unname) the fields of this Row in place; the values
        and so equality and hash stay as they are.

        Args:
            field_names: One name per field, or None.

        Raises:
            ValueError: The number of names differs from the number of fields.
        """
        if field_names is None:
            object.__setattr__(self, "__class__", _kind_class(None, self._kind))
            return
        names = tuple(field_names)
        if len(names) != len(self):
            raise ValueError(
                f"Row has {len(self)} values but {len(names)} field names {list(names)!r}")
        object.__setattr__(self, "__class__", _kind_class(names, self._kind))

    def get_fields_by_names(self, names: Sequence[str]) -> list[Any]:
        """The values of the fields ``names``, in that order.

        Args:
            names: Field names.

        Returns:
            A new list of the values.

        Raises:
            ValueError: The Row is unnamed, or a name is not one of its fields.
        """
        fields = self._fields
        if fields is None:
            raise ValueError("Row.get_fields_by_names: the Row's fields have no names")
        unknown = [n for n in names if n not in fields]
        if unknown:
            raise ValueError(f"Row.get_fields_by_names: no field {unknown!r} in {list(fields)!r}")
        return [tuple.__getitem__(self, fields.index(n)) for n in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """A Row of the given kind (``Row(*args, **kwargs)`` with ``set_row_kind``).

        Args:
            row_kind: a :class:`RowKind`.
            *args: positional values.
            **kwargs: named fields.

        Returns:
            The Row.

        Raises:
            TypeError: ``row_kind`` is not a RowKind.
        """
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    def get_row_kind(self) -> RowKind:
        """The kind of change this Row stands for (INSERT unless set).

        Returns:
            A :class:`RowKind`.
        """
        return self._kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        """Set the kind of change this Row stands for, in place.

        Args:
            row_kind: a :class:`RowKind`.

        Raises:
            TypeError: not a RowKind.
        """
        if not isinstance(row_kind, RowKind):
            raise TypeError(f"set_row_kind needs a RowKind, got {row_kind!r}")
        object.__setattr__(self, "__class__", _kind_class(self._fields, row_kind))

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """``{name: value}``; nested Rows become dicts too when ``recursive``.

        Args:
            recursive: Also convert nested Rows.

        Returns:
            The dict.

        Raises:
            TypeError: The Row is unnamed.

        Example:
            >>> Row(name="Alice", age=11).as_dict()
            {'name': 'Alice', 'age': 11}
        """
        fields = self._fields
        if fields is None:
            raise TypeError(f"cannot convert an unnamed Row to a dict: {self!r}")
        if not recursive:
            return dict(zip(fields, self, strict=False))
        return {name: _as_plain(value) for name, value in zip(fields, self, strict=False)}

    def __call__(self, *values: Any) -> Row:
        """Use a Row of names as a record factory: ``Person = Row("name", "age")``."""
        if len(values) != len(self):
            raise ValueError(
                f"Row factory {tuple(self)!r} expects {len(self)} values, got {len(values)}"
            )
        return _make_row(tuple(self), values)

    def __getitem__(self, item: Any) -> Any:
        if type(item) is not str:
            try:  # an index or a slice: the tuple's own lookup (no cost unless it fails)
                return _tuple_item(self, item)
            except TypeError:
                if not isinstance(item, str):  # e.g. numpy's str_ goes on as a name
                    raise
        # a name, checked first: letting the tuple refuse it costs an exception per access
        fields = self._fields
        if fields is not None:
            try:
                return _tuple_item(self, fields.index(item))
            except ValueError:
                pass
        raise _NoField(f"Row has no field {item!r} (fields: {self.get_field_names()})")

    def __getattr__(self, item: str) -> Any:
        # only called for names the class does not define: a named Row's fields are
        # attributes of its class, so this is an unknown name (or a private one)
        if item.startswith("_"):
            raise AttributeError(item)
        fields = self._fields
        if fields is not None and item in fields:
            return tuple.__getitem__(self, fields.index(item))
        raise AttributeError(f"Row has no field {item!r} (fields: {self.get_field_names()})")

    def __setitem__(self, item: Any, value: Any) -> None:
        """``row[1] = v``, ``row["name"] = v``, ``row[0:2] = (a, b)`` (same length), in place."""
        n = tuple.__len__(self)
        if isinstance(item, slice):
            indices = range(*item.indices(n))
            values = list(value)
            if len(values) != len(indices):
                raise ValueError(
                    f"Row has a fixed length of {n}: cannot assign {len(values)} values to a "
                    f"slice of {len(indices)}")
            for i, v in zip(indices, values, strict=True):
                _write_item(self, i, v)
            return
        if isinstance(item, str):
            fields = self._fields
            if fields is None or item not in fields:
                raise _NoField(f"Row has no field {item!r} (fields: {self.get_field_names()})")
            _write_item(self, fields.index(item), value)
            return
        try:
            i = item.__index__()
        except AttributeError:
            raise TypeError(
                f"Row indices must be integers, slices or field names, not "
                f"{type(item).__name__}") from None
        if not -n <= i < n:
            raise IndexError(f"Row index {i} out of range (the Row has {n} fields)")
        _write_item(self, i % n if n else i, value)

    def __setattr__(self, name: str, value: Any) -> None:
        # PyFlink's Row refuses attribute assignment too (set a field with row["name"] = v)
        raise AttributeError(
            f"cannot set attribute {name!r} of a Row: set a field with row[{name!r}] = value")

    def __reduce__(self) -> tuple[Any, ...]:
        if self._kind is not RowKind.INSERT:
            return _make_kind_row, (self._fields, tuple(self), self._kind.value)
        return _make_row, (self._fields, tuple(self))

    def __repr__(self) -> str:
        fields = self._fields
        if fields is None:
            return "<Row(" + ", ".join(repr(v) for v in self) + ")>"
        return "Row(" + ", ".join(f"{k}={v!r}" for k, v in zip(fields, self, strict=False)) + ")"


#: names a field attribute must not hide: Row's own API and the object protocol
_RESERVED = frozenset(name for name in dir(Row) if name not in dir(tuple)) | frozenset(
    name for name in dir(tuple) if name.startswith("__"))
#: field names -> the Row subclass holding them (see the module doc)
_CLASSES: dict[tuple[str, ...], type[Row]] = {}
#: more distinct field-name tuples than this (names made up per record) restart the cache
_MAX_CLASSES = 10_000


def named_row_class(field_names: tuple[str, ...]) -> type[Row]:
    """The Row subclass of Rows named ``field_names`` (a tuple): ``tuple.__new__(cls,
    values)`` builds one of its Rows as fast as a tuple is built."""
    cls = _CLASSES.get(field_names)
    if cls is not None:
        return cls
    namespace: dict[str, Any] = {"__slots__": (), "_fields": field_names,
                                 "__module__": __name__, "__qualname__": "Row"}
    for i, name in enumerate(field_names):
        if not isinstance(name, str):
            raise TypeError(f"Row field names must be str, got {name!r}")
        if name.isidentifier() and not name.startswith("_") and name not in _RESERVED \
                and name not in namespace and field_names.index(name) == i:
            namespace[name] = _field_reader(i, f"field {i} ({name!r})")
    cls = type("Row", (Row,), namespace)
    if len(_CLASSES) >= _MAX_CLASSES:
        _CLASSES.clear()
    _CLASSES[field_names] = cls
    return cls


#: (field names, kind) -> the Row subclass of Rows of that kind (INSERT: the plain class)
_KIND_CLASSES: dict[tuple[Optional[tuple[str, ...]], RowKind], type[Row]] = {}


def _kind_class(field_names: Optional[tuple[str, ...]], kind: RowKind) -> type[Row]:
    base = Row if field_names is None else named_row_class(field_names)
    if kind is RowKind.INSERT:
        return base
    cls = _KIND_CLASSES.get((field_names, kind))
    if cls is None or cls.__bases__[0] is not base:
        cls = type("Row", (base,), {"__slots__": (), "_kind": kind, "__module__": __name__,
                                    "__qualname__": "Row"})
        if len(_KIND_CLASSES) >= _MAX_CLASSES:
            _KIND_CLASSES.clear()
        _KIND_CLASSES[(field_names, kind)] = cls
    return cls


def _make_kind_row(field_names: Sequence[str] | None, values: Iterable[Any], kind: int) -> Row:
    """Build a Row of a kind other than INSERT (used by pickle)."""
    names = None if field_names is None else tuple(field_names)
    return _new(_kind_class(names, RowKind(kind)), values)


def _make_row(field_names: Sequence[str] | None, values: Iterable[Any]) -> Row:
    """Build a Row from values and optional names (used by pickle and serializers)."""
    if field_names is None:
        return _new(Row, values)
    names = field_names if type(field_names) is tuple else tuple(field_names)
    cls = _CLASSES.get(names)
    return _new(cls if cls is not None else named_row_class(names), values)


#: The public name of :func:`_make_row`, for the serializers. The function keeps its
#: private name: every pickled Row refers to it by that name (``Row.__reduce__``), so
#: pickles stay byte-identical and readable by earlier versions.
make_row = _make_row


def take_emitted(value: Any) -> Any:
    """The record an operator keeps when a user function emits ``value``.

    PyFlink encodes a record (or hands it to the next chained operator) when it is
    yielded, so changing a Row after emitting it does not change what was emitted. A Row
    is therefore copied here (a shallow copy of the same class, so field names are kept);
    nested mutable values inside it, and every other value, are kept as they are.

    Args:
        value: the emitted value.
    Returns:
        A new Row equal to ``value`` if it is a Row, else ``value`` itself.
    """
    if isinstance(value, Row):
        return _new(type(value), value)
    return value


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row) and value._fields is not None:
        return value.as_dict(True)
    if isinstance(value, list):
        return [_as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_plain(v) for k, v in value.items()}
    return value
