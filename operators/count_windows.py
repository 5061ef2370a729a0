"""Count windows (PyFlink's ``count_window(size[, slide])``).

* ``CountTumblingWindowAssigner(size)``: the n-th element of a key (0-based) goes to
  ``CountWindow(n // size)``.
* ``CountSlidingWindowAssigner(size, slide)``: window ``j`` holds elements
  ``j * slide .. j * slide + size - 1``; an element belongs to every such window.

A window fires once it holds ``size`` elements, and its contents are purged then (each
window receives exactly ``size`` elements, so this is the same output as a plain count
trigger and keeps no state behind). A window still short of ``size`` elements when the
input ends never fires, in both modes, as in Flink. The element counter is keyed state of
the operator (``get_runtime_context()``), so it is snapshotted like any state.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..state_store.descriptors import ValueStateDescriptor
from ..state_store.exceptions import GraphBuildError
from ..state_store.namespaces import CountWindow, CountWindowSerializer
from ..state_store.serializers import LongSerializer
from .windows.assigners import WindowAssigner, WindowAssignerContext
from .windows.triggers import CountTrigger, PurgingTrigger, Trigger

__all__ = ["CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "CountWindow"]

T = TypeVar("T")

#: keyed state (void namespace) counting a key's elements; internal to the assigners
TUMBLING_COUNT_STATE = "_count_assigner"
SLIDING_COUNT_STATE = "_slide_count_assigner"
_SERIALIZER = CountWindowSerializer()


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GraphBuildError(f"{what} must be an int >= 1, got {value!r}")
    return value


def _next_index(context: WindowAssignerContext, name: str) -> int:
    """The 0-based position of the current element among its key's elements."""
    state = context.get_runtime_context().get_state(
        ValueStateDescriptor(name, LongSerializer(), _internal=True))
    seen = state.value() or 0
    state.update(seen + 1)
    return int(seen)


class _CountAssigner(WindowAssigner[T, CountWindow]):
    size: int

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return PurgingTrigger.of(CountTrigger.of(self.size))

    def get_window_serializer(self) -> Any:
        return _SERIALIZER

    def is_event_time(self) -> bool:
        return False


class CountTumblingWindowAssigner(_CountAssigner[T]):
    """Non-overlapping windows of ``window_size`` elements per key.

    Args:
        window_size: Elements per window, an int >= 1.

    Raises:
        GraphBuildError: ``window_size`` is not an int >= 1.
    """

    def __init__(self, window_size: int) -> None:
        self.size = _count(window_size, "count_window(size)")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        """Windows of ``window_size`` elements.

        Args:
            window_size: Elements per window, an int >= 1.

        Returns:
            The assigner.

        Raises:
            GraphBuildError: ``window_size`` is not an int >= 1.
        """
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: WindowAssignerContext) -> list[CountWindow]:
        return [CountWindow(_next_index(context, TUMBLING_COUNT_STATE) // self.size)]


class CountSlidingWindowAssigner(_CountAssigner[T]):
    """Windows of ``window_size`` elements starting every ``window_slide`` elements.

    Args:
        window_size: Elements per window, an int >= 1.
        window_slide: Elements between window starts, an int >= 1.

    Raises:
        GraphBuildError: ``window_size`` or ``window_slide`` is not an int >= 1.
    """

    def __init__(self, window_size: int, window_slide: int) -> None:
        self.size = _count(window_size, "count_window(size, slide) size")
        self.slide = _count(window_slide, "count_window(size, slide) slide")

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        """Windows of ``window_size`` elements every ``window_slide`` elements.

        Args:
            window_size: Elements per window, an int >= 1.
            window_slide: Elements between window starts, an int >= 1.

        Returns:
            The assigner.

        Raises:
            GraphBuildError: A count is not an int >= 1.
        """
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: WindowAssignerContext) -> list[CountWindow]:
        n = _next_index(context, SLIDING_COUNT_STATE)
        last = n // self.slide  # the newest window containing element n
        first = max(0, -(-(n - self.size + 1) // self.slide))  # the oldest one
        return [CountWindow(j) for j in range(first, last + 1)]
