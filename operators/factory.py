"""The keyed operator factory: a keyed node's kind and function -> a fresh operator.

Every place that runs a keyed node (a BATCH pass, the savepoint checks on the driver, the
STREAMING key group runtime) builds its operator here, so a new kind, or a new setting
such as the savepoint watermark, is added once.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from typing import Any

from .base import MIN_WATERMARK
from .broadcast import BroadcastProcessOperator
from .exceptions import JobExecutionError
from .keyed import AbstractKeyedOperator
from .keyed_process import KeyedCoProcessOperator, KeyedProcessOperator
from .keyed_reduce import ReduceOperator
from .windows.operator import WindowOperator

__all__ = ["KEYED_KINDS", "make_keyed_operator"]

#: Operator kinds of keyed nodes, and the operator class of each.
_OPERATORS: dict[str, type[AbstractKeyedOperator]] = {
    "process": KeyedProcessOperator,
    "reduce": ReduceOperator,
    "co_process": KeyedCoProcessOperator,
    "window": WindowOperator,
    "broadcast": BroadcastProcessOperator,
}
#: Operator kinds a keyed node can have.
KEYED_KINDS = tuple(_OPERATORS)


def make_keyed_operator(
    kind: str,
    function: Any,
    *,
    savepoint_write: bool = False,
    savepoint_watermark: int | None = None,
) -> AbstractKeyedOperator:
    """A fresh, unopened keyed operator of ``kind`` around ``function``.

    ``kind`` is ``process`` (a KeyedProcessFunction), ``reduce`` (a ReduceFunction or a
    callable), ``co_process`` (a KeyedCoProcessFunction), ``window`` (a
    ``windows.WindowSpec``) or ``broadcast`` (a ``broadcast.BroadcastSpec``).
    ``savepoint_write`` marks a BATCH run that writes a savepoint: at the end of each key the operator fires only the event timers up to
    ``savepoint_watermark`` (None: ``MIN_WATERMARK``, so none) and no processing
    timers, and the later ones stay in the key's snapshot. Without ``savepoint_write``,
    ``savepoint_watermark`` is not used.
    """
    operator_class = _OPERATORS.get(kind)
    if operator_class is None:
        raise JobExecutionError(f"unknown keyed operator kind {kind!r}; expected one of {KEYED_KINDS}")
    operator = operator_class(function)
    if savepoint_write:
        operator.savepoint_watermark = (
            MIN_WATERMARK if savepoint_watermark is None else savepoint_watermark
        )
    return operator
