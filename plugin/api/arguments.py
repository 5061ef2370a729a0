"""Argument checks and operator names shared by the stream classes of the DataStream API."""

from __future__ import annotations

from typing import Any, Optional

from ..state_store.exceptions import GraphBuildError
from ..state_store.functions import Function
from ..state_store.typeinfo import TypeInformation

__all__ = ["check_output_type", "function_name", "opens"]


def opens(function: Any) -> bool:
    """Whether ``function`` (a Function) defines its own ``open(runtime_context)``: the only
    way a map, flat_map, filter, co-map or co-flat-map function reaches keyed state, so the
    only such function after ``key_by`` that must run as a keyed operator.

    Args:
        function: The user function object.

    Returns:
        True when its class overrides ``Function.open``.
    """
    return isinstance(function, Function) and type(function).open is not Function.open


def check_output_type(output_type: Any, where: str) -> Optional[TypeInformation]:
    """``output_type`` when it is None or a ``TypeInformation``.

    Args:
        output_type: What a program passed as ``output_type``.
        where: The call, for the error message.

    Returns:
        ``output_type``.

    Raises:
        GraphBuildError: It is something else.
    """
    if output_type is None or isinstance(output_type, TypeInformation):
        return output_type
    raise GraphBuildError(
        f"output_type of {where} must be a TypeInformation such as Types.TUPLE([...]), "
        f"got {output_type!r}"
    )


def function_name(fn: Any, default: str) -> str:
    """The operator name of a user function: its class or function name.

    Args:
        fn: The function object, class or callable (None gives ``default``).
        default: The name for lambdas, None and anonymous callables.

    Returns:
        The name.
    """
    if fn is None:
        return default
    if isinstance(fn, type):
        return fn.__name__
    name = getattr(fn, "__name__", None)
    if name and name != "<lambda>":
        return name
    cls = type(fn).__name__
    return cls if cls not in ("function", "builtin_function_or_method") else default
