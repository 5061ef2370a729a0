"""Built-in rolling aggregations of ``KeyedStream``: sum, min, max, min_by, max_by.

Each is a ReduceFunction (run by ``ReduceOperator``) with PyFlink's semantics:

* ``sum(field)``, ``min(field)``, ``max(field)``: the result is the FIRST record of
  the key with only ``field`` replaced by the running sum / min / max; the other
  fields keep the first record's values.
* ``min_by(field)``, ``max_by(field)``: the whole record holding the min / max of
  ``field``; on ties the first such record is kept.
* ``field`` is a position (int) or a field name (for Row / namedtuple values). When
  the value is not a tuple, Row or list (a plain number), ``field`` must be 0 and the
  value itself is aggregated.

Every aggregation has a ``descriptor`` (``AggregationDescriptor(kind, field)``) so the
plugin can push it down to a native Spark aggregation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..state_store.exceptions import GraphBuildError
from ..state_store.row import Row
from .functions import Forwarding, ReduceFunction

__all__ = [
    "AGGREGATION_KINDS",
    "AggregationDescriptor",
    "BuiltinAggregation",
    "sum",
    "min",
    "max",
    "min_by",
    "max_by",
]

AGGREGATION_KINDS = ("sum", "min", "max", "min_by", "max_by")


class AggregationDescriptor(NamedTuple):
    """What a built-in aggregation computes: ``kind`` in AGGREGATION_KINDS, ``field``."""

    kind: str
    field: int | str


def _replace_field(record: Any, index: int, new_value: Any) -> Any:
    """A copy of ``record`` with position ``index`` replaced (records are never mutated)."""
    if type(record) is tuple:
        return record[:index] + (new_value,) + record[index + 1 :]
    if isinstance(record, Row):
        values = list(record)
        values[index] = new_value
        return Row.from_fields(record.get_field_names(), values)
    if isinstance(record, list):
        copy = list(record)
        copy[index] = new_value
        return copy
    values = list(record)
    values[index] = new_value
    make = getattr(type(record), "_make", None)  # namedtuple
    return make(values) if make is not None else tuple(values)


class BuiltinAggregation(Forwarding, ReduceFunction):
    """A built-in aggregation as a ReduceFunction (see the module doc for semantics)."""

    def __init__(self, kind: str, field: int | str = 0) -> None:
        if kind not in AGGREGATION_KINDS:
            raise GraphBuildError(
                f"aggregation kind must be one of {', '.join(AGGREGATION_KINDS)}, got {kind!r}"
            )
        if isinstance(field, bool) or not isinstance(field, (int, str)):
            raise GraphBuildError(
                f"{kind}(): field must be a position (int) or a field name (str), got {field!r}"
            )
        if isinstance(field, int) and field < 0:
            raise GraphBuildError(f"{kind}(): field position must be >= 0, got {field}")
        if isinstance(field, str) and not field:
            raise GraphBuildError(f"{kind}(): field name must not be empty")
        self.descriptor = AggregationDescriptor(kind, field)
        self.kind = kind
        self.field = field
        self._names: tuple[str, ...] | None = None
        self._name_index = -1
        self._reduce: Callable[[Any, Any], Any] = (
            self._fast_path(kind, field) if type(field) is int else self._reduce_generic)

    def __getstate__(self) -> tuple[str, int | str]:
        return (self.kind, self.field)

    def __setstate__(self, state: tuple[str, int | str]) -> None:
        type(self).__init__(self, *state)  # unpickled: __init__ runs again

    def __repr__(self) -> str:
        return f"{self.kind}({self.field!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BuiltinAggregation) and other.descriptor == self.descriptor

    def __hash__(self) -> int:
        return hash(self.descriptor)

    def _fast_path(self, kind: str, i: int) -> Callable[[Any, Any], Any]:
        """A reduce specialised for plain tuples and a positional field (the hot case)."""
        generic = self._reduce_generic
        j = i + 1

        if kind == "sum":

            def reduce(value1: Any, value2: Any) -> Any:
                if type(value1) is tuple and type(value2) is tuple and j <= len(value1):
                    return value1[:i] + (value1[i] + value2[i],) + value1[j:]
                return generic(value1, value2)

        elif kind == "min_by":

            def reduce(value1: Any, value2: Any) -> Any:
                if type(value1) is tuple and type(value2) is tuple and j <= len(value1):
                    return value2 if value2[i] < value1[i] else value1
                return generic(value1, value2)

        elif kind == "max_by":

            def reduce(value1: Any, value2: Any) -> Any:
                if type(value1) is tuple and type(value2) is tuple and j <= len(value1):
                    return value2 if value2[i] > value1[i] else value1
                return generic(value1, value2)

        else:
            reduce = generic
        return reduce

    def _index(self, record: Any) -> int:
        """Position of the aggregated field in ``record`` (tuple-like); validated."""
        field = self.field
        if type(field) is int:
            if field >= len(record):
                raise GraphBuildError(
                    f"{self.kind}({field}): field position {field} is out of range for a "
                    f"record of {len(record)} fields: {record!r:.80}"
                )
            return field
        names = getattr(record, "_fields", None)
        if names is None:
            raise GraphBuildError(
                f"{self.kind}({field!r}): a field name needs Row values with field names "
                f"(or namedtuples); got {type(record).__name__} {record!r:.80}; use a position"
            )
        if names is not self._names:
            try:
                self._name_index = names.index(field)
            except ValueError:
                raise GraphBuildError(
                    f"{self.kind}({field!r}): the record has no field {field!r} "
                    f"(fields: {list(names)})"
                ) from None
            self._names = names
        return self._name_index

    def reduce(self, value1: Any, value2: Any) -> Any:
        return self._reduce(value1, value2)

    def forwarded(self, method: str) -> Callable[..., Any] | None:
        return self._reduce if method == "reduce" else None

    def _reduce_generic(self, value1: Any, value2: Any) -> Any:
        if isinstance(value1, (tuple, list)):
            index = self._index(value1)
            a = value1[index]
            b = value2[index]
            kind = self.kind
            if kind == "sum":
                return _replace_field(value1, index, a + b)
            if kind == "min_by":
                return value2 if b < a else value1
            if kind == "max_by":
                return value2 if b > a else value1
            if kind == "min":
                return value1 if not b < a else _replace_field(value1, index, b)
            # max
            return value1 if not b > a else _replace_field(value1, index, b)
        if self.field != 0:
            raise GraphBuildError(
                f"{self.kind}({self.field!r}): field {self.field!r} selected on a plain "
                f"{type(value1).__name__} value {value1!r:.60}; a plain value can only be "
                f"aggregated as field 0 (the whole value)"
            )
        kind = self.kind
        if kind == "sum":
            return value1 + value2
        if kind in ("min", "min_by"):
            return value2 if value2 < value1 else value1
        return value2 if value2 > value1 else value1


def sum(field: int | str = 0) -> BuiltinAggregation:  # noqa: A001 - PyFlink's name
    """Rolling sum of ``field``; the other fields are the first record's."""
    return BuiltinAggregation("sum", field)


def min(field: int | str = 0) -> BuiltinAggregation:  # noqa: A001 - PyFlink's name
    """Rolling minimum of ``field``; the other fields are the first record's."""
    return BuiltinAggregation("min", field)


def max(field: int | str = 0) -> BuiltinAggregation:  # noqa: A001 - PyFlink's name
    """Rolling maximum of ``field``; the other fields are the first record's."""
    return BuiltinAggregation("max", field)


def min_by(field: int | str = 0) -> BuiltinAggregation:
    """The record with the smallest ``field`` (the first one on ties)."""
    return BuiltinAggregation("min_by", field)


def max_by(field: int | str = 0) -> BuiltinAggregation:
    """The record with the largest ``field`` (the first one on ties)."""
    return BuiltinAggregation("max_by", field)
