"""Which timer kinds a keyed operator's code asks for, read at graph-build time.

Spark's ``applyInPandasWithState`` gives an operator ONE timeout kind
(``EventTimeTimeout`` or ``ProcessingTimeTimeout``), and a key group without new
data is only ever called back through that timeout. A STREAMING operator that
runs on event time therefore cannot have its processing-time timers fire while no
data arrives. The STREAMING translator uses this module to refuse such a program
before any query starts, instead of letting its timers silently wait for data.

The check reads the code: a window's assigner and trigger, or the names a
function's methods (and the functions nested in them) call. A call made through
an indirection the code does not show (``getattr``) is not seen.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Iterator, Optional

from ..operators.broadcast import BroadcastSpec
from ..operators.windows import WindowSpec
from ..plan.graph import Transformation
from ..state_store.exceptions import GraphBuildError

if TYPE_CHECKING:
    from ..plan.graph import WatermarkSpec

__all__ = ["processing_time_use", "processing_timeout_of"]

_REGISTER = "register_processing_time_timer"


def processing_time_use(function: object) -> Optional[str]:
    """What in ``function`` registers processing-time timers (for a message), or None."""
    if isinstance(function, BroadcastSpec):  # the user's (Keyed)BroadcastProcessFunction
        function = function.function
    if isinstance(function, WindowSpec):
        assigner = function.assigner
        if not assigner.is_event_time():
            return f"its window assigner {type(assigner).__name__} runs on processing time"
        trigger = getattr(function, "trigger", None)
        if trigger is not None and _calls(trigger, _REGISTER):
            return f"its trigger {type(trigger).__name__} calls {_REGISTER}()"
        return None
    if function is not None and _calls(function, _REGISTER):
        return f"{_describe(function)} calls {_REGISTER}()"
    return None


def processing_timeout_of(node: Transformation, function: object, ws: Optional[WatermarkSpec],
                          trigger: tuple[str, Optional[str]], bounded: bool) -> bool:
    """Whether a STREAMING keyed operator's GroupState timeout runs on processing time.

    Spark gives an ``applyInPandasWithState`` operator one timeout kind, and a key group
    without new data is only called back through it. Processing time is used when the
    query has a processing-time trigger, the operator has no event time (no watermark
    strategy upstream), its input is unbounded (a bounded input ends through the
    event-time sentinel) and its code registers processing-time timers (Spark then runs
    a batch every trigger interval): those timers fire between data batches. An
    operator on event time whose code registers processing-time timers under a
    processing-time trigger is refused here: those timers could only fire when data
    arrives, which is not Flink's semantics.

    Args:
        node: the keyed operator's node (errors name it).
        function: its function (or window / broadcast spec).
        ws: the nearest upstream watermark strategy, None without event time.
        trigger: the job's ``(kind, interval)`` trigger (``execution.streaming.trigger``).
        bounded: whether every source of the job is bounded.

    Returns:
        True for ``ProcessingTimeTimeout``.

    Raises:
        GraphBuildError: the operator runs on event time and registers processing-time
            timers under a processing-time trigger.
    """
    if trigger[0] != "processing-time" or bounded:
        return False
    use = processing_time_use(function)
    if ws is None:
        # only then: ProcessingTimeTimeout makes Spark run a batch every trigger interval
        return use is not None
    if use is not None:
        raise GraphBuildError(
            f"{node.describe()}: {use}, but the operator runs on event time (a watermark "
            f"strategy is assigned upstream). Spark's applyInPandasWithState gives one "
            f"operator one timeout kind (EventTimeTimeout here), so its processing-time "
            f"timers could not fire while no data arrives under the trigger "
            f"{trigger[1]!r}. Use one kind of timer per operator: event-time timers "
            f"with the watermark, or no watermark strategy and processing-time timers."
        )
    return False


def _describe(function: Any) -> str:
    if isinstance(function, types.FunctionType):
        return f"function {function.__qualname__}"
    return type(function).__name__


def _calls(obj: Any, name: str) -> bool:
    return any(name in code.co_names for code in _codes(obj))


def _codes(obj: Any) -> Iterator[types.CodeType]:
    """Every code object of ``obj``'s functions: its class hierarchy's methods (or the
    function itself), and what is nested in them (lambdas, inner functions)."""
    roots: list[Any] = []
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        roots.append(obj)
    else:
        for klass in type(obj).__mro__:
            if klass is object:
                continue
            for attr in vars(klass).values():
                if isinstance(attr, (staticmethod, classmethod)):
                    attr = attr.__func__
                if isinstance(attr, property):
                    attr = attr.fget
                if isinstance(attr, types.FunctionType):
                    roots.append(attr)
    todo = [getattr(getattr(r, "__func__", r), "__code__", None) for r in roots]
    seen: set[int] = set()
    while todo:
        code = todo.pop()
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        yield code
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
