"""Symbolic tracing of simple lambdas into native Spark expressions.

A plain callable such as ``lambda r: (r[0], 1)`` or ``lambda x: x[0]`` is called
once, at graph-build time, with a *probe* standing for the record. Field
access, constants, tuples and numeric ``+ - *`` are recorded; anything else
(``bool()`` of a probe, comparisons, method calls, string formatting, ...)
aborts the trace and the function runs in Python as usual. Traced functions run
as Spark column expressions with identical results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from ..operators.functions import wrapped_callable
from ..runtime.encoding import Encoding
from ..runtime.spark_types import spark_ddl_type
from ..state_store.typeinfo import FieldsTypeInfo, TypeInformation
from ..state_store.types import Types

__all__ = [
    "Untraceable", "Expr", "trace", "to_column", "struct_type", "ddl_of_field", "field_plan",
]

_NUMERIC = ("LONG", "INT", "SHORT", "BYTE", "DOUBLE", "FLOAT")


class Untraceable(Exception):
    """The function does something the tracer does not model."""


@dataclass(frozen=True)
class Expr:
    """A traced expression: ``op`` is field, const or an arithmetic operator."""

    op: str
    args: tuple[Any, ...]
    type_info: Optional[TypeInformation]


class Probe:
    """Stands for a record (or a part of one) while a function is traced."""

    __slots__ = ("_expr",)
    _expr: Expr

    def __init__(self, expr: Expr) -> None:
        object.__setattr__(self, "_expr", expr)

    def __getitem__(self, item: Any) -> Probe:
        t = self._expr.type_info
        if not isinstance(t, FieldsTypeInfo):
            raise Untraceable("item access on a non-composite value")
        names = list(t.get_field_names())
        types = list(t.get_field_types())
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise Untraceable("unsupported index")
        if isinstance(item, int):
            if not -len(types) <= item < len(types):
                raise Untraceable("index out of range")
            idx = item % len(types)
        else:
            if item not in names:
                raise Untraceable("unknown field")
            idx = names.index(item)
        parent = self._expr
        if parent.op != "input":
            raise Untraceable("nested field access")
        return Probe(Expr("field", (parent.args[0], idx, names[idx]), types[idx]))

    def __getattr__(self, name: str) -> Probe:
        if name.startswith("_"):
            raise AttributeError(name)
        t = self._expr.type_info
        if isinstance(t, FieldsTypeInfo) and t.type_name == "ROW" and name in t.get_field_names():
            return self[name]
        raise Untraceable(f"attribute {name}")

    def _arith(self, op: str, other: Any, reverse: bool = False) -> Probe:
        a = self._expr
        b = _as_expr(other)
        for e in (a, b):
            if e.type_info is None or e.type_info.type_name not in _NUMERIC:
                raise Untraceable("arithmetic on a non-numeric value")
        lhs, rhs = (b, a) if reverse else (a, b)
        floating = any(e.type_info is not None and e.type_info.type_name in ("DOUBLE", "FLOAT")
                       for e in (a, b))
        return Probe(Expr(op, (lhs, rhs), Types.DOUBLE() if floating else Types.LONG()))

    def __add__(self, other: Any) -> Probe:
        return self._arith("+", other)

    def __radd__(self, other: Any) -> Probe:
        return self._arith("+", other, reverse=True)

    def __sub__(self, other: Any) -> Probe:
        return self._arith("-", other)

    def __rsub__(self, other: Any) -> Probe:
        return self._arith("-", other, reverse=True)

    def __mul__(self, other: Any) -> Probe:
        return self._arith("*", other)

    def __rmul__(self, other: Any) -> Probe:
        return self._arith("*", other, reverse=True)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise Untraceable("operation not modelled")

    __bool__ = __len__ = __iter__ = __hash__ = __eq__ = __ne__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __truediv__ = __floordiv__ = __mod__ = _refuse
    __str__ = __repr__ = __format__ = __contains__ = __call__ = __neg__ = _refuse
    __index__ = __int__ = __float__ = __pow__ = __rtruediv__ = _refuse


def _as_expr(value: Any) -> Expr:
    if isinstance(value, Probe):
        expr: Expr = value._expr
        return expr
    if isinstance(value, bool):
        return Expr("const", (value,), Types.BOOLEAN())
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return Expr("const", (value,), Types.LONG())
    if isinstance(value, float):
        return Expr("const", (value,), Types.DOUBLE())
    if isinstance(value, str):
        return Expr("const", (value,), Types.STRING())
    if value is None:
        return Expr("const", (None,), None)
    raise Untraceable(f"constant of type {type(value).__name__}")


Traced = Union[Expr, tuple[Expr, ...]]


def trace(fn: Callable[..., Any], input_types: list[TypeInformation]) -> Optional[Traced]:
    """Trace ``fn`` over inputs of the given types; None when it is not traceable."""
    probes = [Probe(Expr("input", (i,), t)) for i, t in enumerate(input_types)]
    try:
        result = fn(*probes)
        if isinstance(result, tuple) and not isinstance(result, Probe):
            return tuple(_as_expr(r) for r in result)
        return _as_expr(result)
    except Untraceable:
        return None
    except Exception:  # noqa: BLE001 - anything else the function did with a probe
        return None


def to_column(expr: Expr, columns: list[list[str]]) -> Any:
    """Spark Column for ``expr``; ``columns[i]`` are the column names of input ``i``."""
    from pyspark.sql import functions as F

    if expr.op == "field":
        inp, idx, _name = expr.args
        return F.col(f"`{columns[inp][idx]}`")
    if expr.op == "const":
        return F.lit(expr.args[0])
    if expr.op == "input":  # the whole record (``lambda r: r``): a one-column input's column
        names = columns[expr.args[0]]
        if len(names) != 1:
            raise Untraceable("a whole record of several columns")
        return F.col(f"`{names[0]}`")
    a, b = (to_column(e, columns) for e in expr.args)
    if expr.op == "+":
        return a + b
    if expr.op == "-":
        return a - b
    if expr.op == "*":
        return a * b
    raise Untraceable(expr.op)


# -- planning native aggregations from traced reduce functions ---------------------------


def struct_type(enc: Encoding) -> Any:
    """A TUPLE/ROW type describing the columns of a typed encoding (for tracing)."""
    t = enc.type_info
    if enc.shape == "scalar" or t is None:
        return t
    return Types.ROW_NAMED(list(enc.columns), enc.field_types())


def ddl_of_field(t: FieldsTypeInfo, i: int) -> str:
    """Spark DDL type of field ``i`` of the TUPLE/ROW type ``t``."""
    return spark_ddl_type(t.get_field_types()[i])


_ORDERED = _NUMERIC + ("STRING", "SQL_TIMESTAMP", "BOOLEAN")


def field_plan(function: object, in_t: TypeInformation, key_idx: int, types: list[str]
               ) -> Optional[tuple[Any, Any]]:
    """How a reduce function aggregates each field, or None when it is not a field aggregation."""
    if not isinstance(in_t, FieldsTypeInfo):
        return None  # a field aggregation reads the fields of a tuple or row
    agg = getattr(function, "descriptor", None)
    if agg is not None:
        kind, field = agg.kind, agg.field
        names = list(in_t.get_field_names())
        idx = names.index(field) if isinstance(field, str) else field
        if not isinstance(idx, int) or not 0 <= idx < len(types) or idx == key_idx:
            return None
        if kind in ("min_by", "max_by"):
            return (kind, idx) if types[idx] in _ORDERED else None
        if kind == "sum" and types[idx] not in _NUMERIC:
            return None
        if kind in ("min", "max") and types[idx] not in _ORDERED:
            return None
        return ("fields", ["first" if i != idx else kind for i in range(len(types))])
    fn = wrapped_callable(function)
    if fn is None:
        return None
    traced = trace(fn, [in_t, in_t])
    if not isinstance(traced, tuple) or len(traced) != len(types):
        return None
    plan = []
    for i, e in enumerate(traced):
        if e.op == "field" and e.args[1] == i and i == key_idx:
            plan.append("key")
        elif (e.op == "+" and types[i] in _NUMERIC
              and {(x.op, x.args[:2]) for x in e.args} == {("field", (0, i)), ("field", (1, i))}):
            plan.append("sum")
        else:
            return None
    return ("fields", plan)
