"""PyFlink's other window functions, and how each runs as a ``ProcessWindowFunction``.

* ``WindowFunction.apply(key, window, inputs)`` (``WindowedStream.apply``, or the
  ``window_function`` of ``reduce``/``aggregate``);
* ``AllWindowFunction.apply(window, inputs)`` and
  ``ProcessAllWindowFunction.process(context, elements)`` for ``window_all``.

The window operator calls only ``ProcessWindowFunction``s: :func:`as_process_window_function`
wraps the others in small adapters that forward ``open``/``close``/``clear`` and drop the
key for the non-keyed forms (``window_all`` keys every record by one constant).

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from ..state_store.exceptions import GraphBuildError
from ..state_store.functions import Function
from .windows.functions import ProcessWindowFunction

__all__ = [
    "WindowFunction",
    "AllWindowFunction",
    "ProcessAllWindowFunction",
    "as_process_window_function",
]

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class WindowFunction(Function, ABC, Generic[IN, OUT, KEY, W]):
    """Evaluates a fired window of a keyed stream (PyFlink's ``WindowFunction``)."""

    @abstractmethod
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[OUT]:
        """Yield the outputs for the window's ``inputs``.

        Args:
            key: The key of the window.
            window: The fired window.
            inputs: All elements of the window.

        Returns:
            The outputs (a generator or iterable).
        """


class AllWindowFunction(Function, ABC, Generic[IN, OUT, W]):
    """Evaluates a fired window of a non-keyed stream (``window_all``)."""

    @abstractmethod
    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[OUT]:
        """Yield the outputs for the window's ``inputs``.

        Args:
            window: The fired window.
            inputs: All elements of the window.

        Returns:
            The outputs (a generator or iterable).
        """


class ProcessAllWindowFunction(Function, ABC, Generic[IN, OUT, W]):
    """Processes a fired window of a non-keyed stream, with a context (``window_all``)."""

    class Context(ABC, Generic[W2]):
        """The window, clocks and state of the window being processed."""

        @abstractmethod
        def window(self) -> W2:
            """The window being processed.

            Returns:
                The window.
            """

        @abstractmethod
        def window_state(self) -> Any:
            """State scoped to this window.

            Returns:
                An object with ``get_state``, ``get_list_state``, ... for this window.
            """

        @abstractmethod
        def global_state(self) -> Any:
            """State across windows.

            Returns:
                An object with ``get_state``, ``get_list_state``, ... across windows.
            """

    @abstractmethod
    def process(self, context: ProcessAllWindowFunction.Context,
                elements: Iterable[IN]) -> Iterable[OUT]:
        """Yield the outputs for the window's ``elements``.

        Args:
            context: The window, clocks, window/global state and side outputs.
            elements: All elements of the window.

        Returns:
            The outputs (a generator or iterable).
        """

    def clear(self, context: ProcessAllWindowFunction.Context) -> None:
        """The window is purged for good; default does nothing.

        Args:
            context: The context of the window being purged.
        """


class _Adapter(ProcessWindowFunction):
    """Runs a wrapped function as a ProcessWindowFunction (lifecycle forwarded)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def open(self, runtime_context: Any) -> None:
        self.wrapped.open(runtime_context)

    def close(self) -> None:
        self.wrapped.close()

    def __repr__(self) -> str:
        return repr(self.wrapped)


class _KeyedApply(_Adapter):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return self.wrapped.apply(key, context.window(), elements)


class _AllApply(_Adapter):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return self.wrapped.apply(context.window(), elements)


class _AllProcess(_Adapter):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return self.wrapped.process(context, elements)

    def clear(self, context: Any) -> None:
        self.wrapped.clear(context)


def as_process_window_function(function: Any, what: str, keyed: bool = True) -> ProcessWindowFunction:
    """``function`` as the ProcessWindowFunction the window operator runs.

    Keyed streams take a ``ProcessWindowFunction`` or ``WindowFunction``; ``window_all``
    (``keyed=False``) takes a ``ProcessAllWindowFunction`` or ``AllWindowFunction``."""
    if keyed:
        if isinstance(function, ProcessWindowFunction):
            return function
        if isinstance(function, WindowFunction):
            return _KeyedApply(function)
        accepted = "a ProcessWindowFunction or a WindowFunction"
    else:
        if isinstance(function, ProcessAllWindowFunction):
            return _AllProcess(function)
        if isinstance(function, AllWindowFunction):
            return _AllApply(function)
        accepted = "a ProcessAllWindowFunction or an AllWindowFunction"
    raise GraphBuildError(f"{what} needs {accepted}, got {type(function).__name__} {function!r:.80}")
