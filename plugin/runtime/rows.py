"""Records of ``Types.ROW`` / ``ROW_NAMED`` streams are named ``Row``s for every function.

PyFlink hands a function the records of a stream declared ``ROW``/``ROW_NAMED`` as
``Row`` objects (``value.name``, ``value[1]``, ``as_dict()``), whatever the function that
made them returned (a tuple, a Row with its own names). Here records travel between
functions directly (fused in one pass), pickled or as typed Arrow columns, so the Row a
function sees is made where it is needed:

* typed columns of a ROW type decode straight into Rows (``encoding.make_decoder``);
* a :class:`RowShape` stage reshapes the records of a ROW stream before the next function
  in the same pass reads them, and before they are pickled (the translation places these
  stages, ``translation/rows.py``), so pickled records of a ROW stream are Rows already;
* :func:`shaped_reduce` gives a reduce function Rows for its accumulated value too (the
  value it returned last, kept in state as it was returned).

Values written out as typed columns (sinks, savepoints of typed state) are the same
whether a record is a tuple or a Row: ``encoding.fields_of`` reads both.
"""

from __future__ import annotations

from typing import Any, Optional

from ..operators.aggregations import BuiltinAggregation
from ..operators.functions import per_record_call
from ..state_store.functions import Function, ReduceFunction
from ..state_store.row import named_row_class
from ..state_store.typeinfo import TypeInformation
from .encoding import fields_of

__all__ = ["is_row_type", "RowShape", "row_stage", "is_row_stage", "shaped_reduce"]

_new = tuple.__new__


def is_row_type(type_info: Any) -> bool:
    """Whether records of ``type_info`` are Rows (``Types.ROW`` and ``Types.ROW_NAMED``)."""
    return isinstance(type_info, TypeInformation) and type_info.type_name == "ROW"


class RowShape:
    """A record of a ROW type as the named Row its consumers read: a Row with the type's
    field names is returned as is; a tuple or list of as many values, a Row with other names
    (its fields read by name when it has all of the type's, else by position) or a
    ``{name: value}`` dict becomes one; ``None`` stays ``None``. Anything else (a record
    with another number of fields, a scalar) raises ``OutputTypeError`` naming
    ``operator``, the operator that declared the type. Field values are not checked here:
    typed columns check them where they are built (the output_type contract)."""

    __slots__ = ("names", "operator", "_cls")

    def __init__(self, names: tuple[str, ...], operator: str = "") -> None:
        self.names = tuple(names)
        self.operator = operator
        self._cls = named_row_class(self.names)

    @classmethod
    def of(cls, type_info: Any, operator: str = "") -> Optional[RowShape]:
        """The shape of ``type_info``'s records; None when it is not a ROW type."""
        if not is_row_type(type_info):
            return None
        return cls(tuple(type_info.get_field_names()), operator)

    def __call__(self, value: Any) -> Any:
        cls = self._cls
        kind = value.__class__
        if kind is cls or value is None:
            return value
        if kind is tuple and len(value) == len(self.names):
            return _new(cls, value)
        return _new(cls, fields_of(value, self.names, self.operator))

    def __reduce__(self) -> tuple[Any, ...]:
        return RowShape, (self.names, self.operator)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowShape) and (other.names, other.operator) == (
            self.names, self.operator)

    def __hash__(self) -> int:
        return hash((self.names, self.operator))

    def __repr__(self) -> str:
        return f"RowShape({list(self.names)!r}, operator={self.operator!r})"


def row_stage(type_info: Any, operator: str) -> Optional[tuple[str, RowShape]]:
    """The chain stage (a map) that makes ``type_info``'s records Rows; None when they are
    not of a ROW type."""
    shape = RowShape.of(type_info, operator)
    return None if shape is None else ("map", shape)


def is_row_stage(stage: Any) -> bool:
    """Whether a chain stage is one :func:`row_stage` made."""
    return isinstance(stage, tuple) and len(stage) >= 2 and isinstance(stage[1], RowShape)


class _ShapedReduce(ReduceFunction):
    """``function`` reading both values as Rows (see :func:`shaped_reduce`)."""

    def __init__(self, function: Any, shape: RowShape) -> None:
        self.function = function
        self.shape = shape
        self._reduce = per_record_call(function.reduce)

    def reduce(self, value1: Any, value2: Any) -> Any:
        shape = self.shape
        return self._reduce(shape(value1), shape(value2))

    def __getstate__(self) -> dict[str, Any]:
        return {"function": self.function, "shape": self.shape}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.function = state["function"]
        self.shape = state["shape"]
        self._reduce = per_record_call(self.function.reduce)

    def __repr__(self) -> str:
        return f"{self.function!r} (over Rows)"


class _ShapedRichReduce(_ShapedReduce):
    """:class:`_ShapedReduce` of a function with its own open/close (forwarded)."""

    def open(self, runtime_context: Any) -> None:
        self.function.open(runtime_context)

    def close(self) -> None:
        self.function.close()


def shaped_reduce(function: Any, type_info: Any, operator: str) -> Any:
    """``function`` (a ReduceFunction) over records of ``type_info``, reading Rows for both
    arguments when that is a ROW type: the accumulated value is what the function returned
    last (a tuple stays a tuple in state), which PyFlink hands over as a Row. Returns
    ``function`` itself for other types and for the built-in aggregations (they keep a
    record's type). What the function returns is kept and emitted as returned."""
    shape = RowShape.of(type_info, operator)
    if shape is None or isinstance(function, (BuiltinAggregation, _ShapedReduce)):
        return function
    kind = type(function)
    plain = (getattr(kind, "open", Function.open) is Function.open
             and getattr(kind, "close", Function.close) is Function.close)
    return (_ShapedReduce if plain else _ShapedRichReduce)(function, shape)
