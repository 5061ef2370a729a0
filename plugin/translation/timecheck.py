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
from typing import Any, Iterator, Optional

from ..operators.broadcast import BroadcastSpec
from ..operators.windows import WindowSpec

__all__ = ["processing_time_use"]

_REGISTER = "register_processing_time_timer"


def processing_time_use(function: Any) -> Optional[str]:
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
