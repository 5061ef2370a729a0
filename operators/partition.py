"""Full-window partition processing (FLIP-380): the runtime pieces, no Spark.

A "partition" is every record of one upstream subtask (one Spark partition),
or, on a keyed stream, every record of one key. ``map_partition`` streams the
records to the user function as a one-pass iterator (nothing is materialised);
``aggregate`` and ``reduce`` emit one result at the end of a non-empty partition
(unlike Flink, nothing for an empty one: Spark's partition count is an
implementation detail); ``sort_partition`` is Spark's spilling
``sortWithinPartitions``, for which this module gives the sort-key extraction
(:func:`sort_key_getter`) and an order-preserving encoding of Python sort keys
(:func:`sort_key_bytes`).
"""

from __future__ import annotations

import itertools
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import Any

from ..state_store.exceptions import DataStreamError, GraphBuildError
from ..state_store.functions import AggregateFunction, Function
from .base import user_function_error
from .exceptions import JobExecutionError
from .functions import CallableFunction, KeySelector, as_reduce_function, per_record_call

__all__ = [
    "Order",
    "MapPartitionFunction",
    "PARTITION_OPS",
    "PartitionOp",
    "as_map_partition_function",
    "sort_key_getter",
    "sort_key_bytes",
    "run_partition",
    "run_keyed_partition",
]

PARTITION_OPS = ("map_partition", "sort_partition", "aggregate", "reduce")


class Order(Enum):
    """Sort order of ``sort_partition`` (Flink's ``Order``)."""

    ASCENDING = "ASCENDING"
    DESCENDING = "DESCENDING"


class MapPartitionFunction(Function, ABC):
    """Processes all records of a partition as one iterator (FLIP-380 ``mapPartition``)."""

    @abstractmethod
    def map_partition(self, values: Iterable[Any]) -> Iterable[Any] | None:
        """Return or yield the outputs for the partition's records (read once, in order).

        Args:
            values: A one-pass iterator over the partition's records.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """


class _CallableMapPartition(CallableFunction, MapPartitionFunction):
    METHOD, KIND = "map_partition", "MapPartitionFunction"

    def map_partition(self, values: Iterable[Any]) -> Iterable[Any] | None:
        outputs: Iterable[Any] | None = self.func(values)
        return outputs


def as_map_partition_function(func: Any) -> MapPartitionFunction:
    """``func`` as a MapPartitionFunction (a callable takes an iterable, returns an iterable)."""
    if isinstance(func, MapPartitionFunction):
        return func
    if isinstance(func, type) or not callable(func):
        raise GraphBuildError(
            f"map_partition() needs a MapPartitionFunction or a callable(iterable) -> iterable, "
            f"got {type(func).__name__} {func!r:.80}"
        )
    return _CallableMapPartition(func)


class PartitionOp:
    """One full-window partition operation: ``op`` in PARTITION_OPS and its arguments.

    Picklable (it travels to the executors inside the Spark plan).
    """

    def __init__(self, op: str, function: Any = None, field: Any = None,
                 order: Order = Order.ASCENDING) -> None:
        if op not in PARTITION_OPS:
            raise GraphBuildError(f"full-window operation must be one of {PARTITION_OPS}, got {op!r}")
        if op == "map_partition":
            function = as_map_partition_function(function)
        elif op == "reduce":
            function = as_reduce_function(function, "reduce_function")
        elif op == "aggregate":
            if not isinstance(function, AggregateFunction):
                raise GraphBuildError(
                    f"PartitionWindowedStream.aggregate() needs an AggregateFunction, got "
                    f"{type(function).__name__} {function!r:.80}"
                )
        else:
            if not isinstance(order, Order):
                raise GraphBuildError(
                    f"sort_partition(): order must be Order.ASCENDING or Order.DESCENDING, "
                    f"got {order!r}"
                )
            sort_key_getter(field)  # validates the field form
        self.op = op
        self.function = function
        self.field = field
        self.order = order

    def __repr__(self) -> str:
        if self.op == "sort_partition":
            return f"PartitionOp(sort_partition, {self.field!r}, {self.order.name})"
        return f"PartitionOp({self.op}, {self.function!r})"


def sort_key_getter(field: Any) -> Callable[[Any], Any]:
    """The function extracting a record's sort key from ``field``.

    ``field`` is a tuple position (int), a field name (Row / namedtuple / dict
    records) or a key selector (KeySelector or callable).
    """
    if isinstance(field, bool):
        raise GraphBuildError(f"sort_partition(): field must be a position, a name or a key "
                              f"selector, got {field!r}")
    if isinstance(field, int):
        if field < 0:
            raise GraphBuildError(f"sort_partition(): field position must be >= 0, got {field}")

        def by_position(value: Any) -> Any:
            return value[field]

        return by_position
    if isinstance(field, str):
        if not field:
            raise GraphBuildError("sort_partition(): field name must not be empty")

        def by_name(value: Any) -> Any:
            if isinstance(value, dict):
                return value[field]
            names = getattr(value, "_fields", None)
            if names is None:
                raise GraphBuildError(
                    f"sort_partition({field!r}): a field name needs Row (named) or namedtuple "
                    f"records, got {type(value).__name__} {value!r:.60}; use a position or a "
                    f"key selector"
                )
            if field not in names:
                raise GraphBuildError(
                    f"sort_partition({field!r}): the record has no field {field!r} "
                    f"(fields: {list(names)})"
                )
            return value[list(names).index(field)]

        return by_name
    if isinstance(field, KeySelector):
        return per_record_call(field.get_key)
    if callable(field) and not isinstance(field, type):
        return field
    raise GraphBuildError(
        f"sort_partition(): field must be a position (int), a field name (str) or a key "
        f"selector, got {type(field).__name__} {field!r:.60}"
    )


_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
_LONG = struct.Struct(">Q")
_DOUBLE = struct.Struct(">d")


def _escaped(data: bytes) -> bytes:
    # 0x00 -> 0x00 0xFF, terminated by 0x00 0x00: prefixes sort first, order is kept.
    return data.replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def sort_key_bytes(value: Any) -> bytes:
    """An order-preserving binary form of a sort key (unsigned byte order = value order).

    Supports None (first), bool, int (64-bit), float, str, bytes and tuples / lists
    of those (compared element-wise, shorter prefix first). Values of different
    kinds order by kind: None < bool < int < float < str < bytes < tuple. Floats order
    as Java's ``Double.compare``, as Flink's double comparator does: -0.0 before 0.0.
    """
    if value is None:
        return b"\x01"
    if isinstance(value, bool):
        return b"\x02\x01" if value else b"\x02\x00"
    if isinstance(value, int):
        if not -_SIGN <= value < _SIGN:
            raise JobExecutionError(
                f"sort_partition: int sort key {value} does not fit in 64 bits"
            )
        return b"\x03" + _LONG.pack((value ^ _SIGN) & _MASK64)
    if isinstance(value, float):
        bits = _LONG.unpack(_DOUBLE.pack(value))[0]
        bits = (~bits & _MASK64) if bits & _SIGN else bits | _SIGN
        return b"\x04" + _LONG.pack(bits)
    if isinstance(value, str):
        return b"\x05" + _escaped(value.encode("utf-8"))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"\x06" + _escaped(bytes(value))
    if isinstance(value, (tuple, list)):
        return b"\x07" + b"".join(sort_key_bytes(v) for v in value) + b"\x00"
    raise JobExecutionError(
        f"sort_partition: cannot order sort key {value!r:.60} of type {type(value).__name__}; "
        f"use a key selector returning None, bool, int, float, str, bytes or tuples of them"
    )


def _stream_partition(op: PartitionOp, values: Iterator[Any], operator_name: str
                      ) -> Iterator[Any]:
    function = op.function
    if op.op == "map_partition":
        try:
            result = function.map_partition(values)
            if result is not None:
                yield from result
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(operator_name, "map_partition", "<partition>", exc) from exc
        return
    if op.op == "reduce":
        reduce = per_record_call(function.reduce)
        first = next(values, _MISSING)
        if first is _MISSING:
            return
        acc = first
        for value in values:
            try:
                acc = reduce(acc, value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(operator_name, "reduce", value, exc) from exc
        yield acc
        return
    if op.op == "aggregate":
        first = next(values, _MISSING)
        if first is _MISSING:
            return
        try:
            acc = function.create_accumulator()
            for value in itertools.chain((first,), values):
                acc = function.add(value, acc)
            result = function.get_result(acc)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(operator_name, "aggregate", "<partition>", exc) from exc
        yield result
        return
    raise JobExecutionError(f"operator {operator_name!r}: {op.op} is not a streaming operation")


_MISSING = object()


def run_partition(op: PartitionOp, values: Iterable[Any], operator_name: str = "operator",
                  runtime_context: Any = None) -> Iterator[Any]:
    """Apply ``op`` (map_partition, aggregate or reduce) to one partition, streaming.

    Opens the user function with ``runtime_context`` (the parallel instance's
    ``RuntimeContext``, as Flink opens it) and closes it around the run.
    """
    function = _opened(op, operator_name, runtime_context)
    try:
        yield from _stream_partition(op, iter(values), operator_name)
    finally:
        function.close()


def run_keyed_partition(op: PartitionOp, rows: Iterable[tuple[bytes, Any]],
                        operator_name: str = "operator", runtime_context: Any = None
                        ) -> Iterator[Any]:
    """Apply ``op`` per key to ``(key_bytes, value)`` rows grouped (sorted) by key, streaming.

    A key's values reach the function as an iterator; values it leaves unread are
    skipped before the next key starts. The function is opened once with
    ``runtime_context`` (the parallel instance's) and closed after the last key.
    """
    function = _opened(op, operator_name, runtime_context)
    try:
        for _key, group in itertools.groupby(rows, key=_first):
            yield from _stream_partition(op, (row[1] for row in group), operator_name)
    finally:
        function.close()


def _opened(op: PartitionOp, operator_name: str, runtime_context: Any) -> Any:
    """``op``'s function, opened with ``runtime_context``; a failing ``open()`` is a
    ``JobExecutionError`` naming the operator."""
    function = op.function
    try:
        function.open(runtime_context)
    except Exception as exc:
        raise JobExecutionError(
            f"operator {operator_name!r}: open() failed: {type(exc).__name__}: {exc}"
        ) from exc
    return function


def _first(row: tuple[bytes, Any]) -> bytes:
    return row[0]
