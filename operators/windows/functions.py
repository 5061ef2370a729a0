"""``ProcessWindowFunction``: what a program implements to turn a fired window into outputs.

User API: the function class and the ``Context`` it gets (the window, clocks, window and
global state, side outputs). The other window function shapes (``WindowFunction``,
``AllWindowFunction``, ...) and their adapters live in ``operators.window_functions``.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from ...state_store.functions import Function
from ..functions import OutputTag

__all__ = ["ProcessWindowFunction"]

#: type parameters of ``ProcessWindowFunction`` (user subclasses may subscript it)
IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class ProcessWindowFunction(Function, ABC, Generic[IN, OUT, KEY, W]):
    """Processes all elements of a fired window (PyFlink's ``ProcessWindowFunction``)."""

    class Context(ABC, Generic[W2]):
        """Context of ``process`` / ``clear``: the window, clocks, state, side outputs."""

        @abstractmethod
        def window(self) -> Any:
            """The window being processed (``start``, ``end``, ``max_timestamp()``).

            Returns:
                The window.
            """

        @abstractmethod
        def current_processing_time(self) -> int:
            """Processing time in ms.

            Returns:
                The processing time in ms.
            """

        @abstractmethod
        def current_watermark(self) -> int:
            """Current event-time watermark.

            Returns:
                The watermark in ms.
            """

        @abstractmethod
        def window_state(self) -> Any:
            """Keyed state scoped to this key and window (``get_state(descriptor)``, ...).

            Returns:
                An object with ``get_state``, ``get_list_state``, ... for this key and window.
            """

        @abstractmethod
        def global_state(self) -> Any:
            """Keyed state of this key across windows.

            Returns:
                An object with ``get_state``, ``get_list_state``, ... for this key.
            """

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to a side output.

            Args:
                output_tag: The side output's ``OutputTag``.
                value: The value.
            """

    @abstractmethod
    def process(self, key: Any, context: ProcessWindowFunction.Context,
                elements: Iterable[Any]) -> Iterable[Any] | None:
        """Yield the outputs for the window's ``elements``.

        Args:
            key: The key of the window.
            context: The window, clocks, window/global state and side outputs.
            elements: All elements of the window (in arrival order).

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        """The window is purged for good (cleanup time); default does nothing.

        Args:
            context: The context of the window being purged (clear its window state here).
        """
