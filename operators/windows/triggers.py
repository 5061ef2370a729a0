"""Window triggers: when a window fires (emits its result) and when it purges its contents.

User API: the built-in triggers, the ``Trigger`` base class a program subclasses, and the
``TriggerContext`` a trigger gets (clocks, timers and state of the current window). Kept
apart from the operator so that building a window definition needs no runtime code.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic, TypeVar

from ...state_store.descriptors import ReducingStateDescriptor, StateDescriptor
from ...state_store.exceptions import GraphBuildError
from ...state_store.functions import Function
from ...state_store.serializers import LongSerializer

__all__ = [
    "TriggerResult",
    "TriggerContext",
    "OnMergeContext",
    "Trigger",
    "EventTimeTrigger",
    "ProcessingTimeTrigger",
    "NeverTrigger",
    "CountTrigger",
    "PurgingTrigger",
]

#: type parameters of ``Trigger`` (user subclasses may subscript it)
T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(Enum):
    """What a trigger decides for a window: ``(fire, purge)``."""

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        """True when the window's result must be emitted."""
        return self.value[0]

    def is_purge(self) -> bool:
        """True when the window's contents must be cleared."""
        return self.value[1]


class TriggerContext(ABC):
    """What a trigger may use: clocks, timers of the current window, window-scoped state."""

    @abstractmethod
    def get_current_processing_time(self) -> int:
        """Processing time in ms (FLIP-134 rules apply)."""

    @abstractmethod
    def get_current_watermark(self) -> int:
        """Current event-time watermark."""

    @abstractmethod
    def register_processing_time_timer(self, time: int) -> None:
        """Call ``on_processing_time`` for this window at ``time``."""

    @abstractmethod
    def register_event_time_timer(self, time: int) -> None:
        """Call ``on_event_time`` for this window once the watermark reaches ``time``."""

    @abstractmethod
    def delete_processing_time_timer(self, time: int) -> None:
        """Remove a processing-time timer of this window."""

    @abstractmethod
    def delete_event_time_timer(self, time: int) -> None:
        """Remove an event-time timer of this window."""

    @abstractmethod
    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        """State of the current key scoped to the current window."""


class OnMergeContext(TriggerContext):
    """Trigger context of ``on_merge``: can merge window-scoped state."""

    @abstractmethod
    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        """Merge the state of the merged windows into the resulting window."""


_TriggerContext = TriggerContext
_OnMergeContext = OnMergeContext


class Trigger(Function, ABC, Generic[T, W]):
    """Decides when a window fires / purges (PyFlink's ``Trigger``)."""

    TriggerContext = TriggerContext
    OnMergeContext = OnMergeContext

    @abstractmethod
    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        """Called for every element added to ``window``.

        Args:
            element: The element.
            timestamp: The element's event timestamp in ms, or None when it has none.
            window: The window the element was added to.
            ctx: Timers, watermark, processing time and per-window trigger state.

        Returns:
            What to do with the window (``CONTINUE``, ``FIRE``, ``PURGE``, ``FIRE_AND_PURGE``).
        """

    @abstractmethod
    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        """A processing-time timer of ``window`` fired.

        Args:
            time: The timer's time in ms.
            window: The window the timer was registered for.
            ctx: Timers, watermark, processing time and per-window trigger state.

        Returns:
            What to do with the window.
        """

    @abstractmethod
    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        """An event-time timer of ``window`` fired.

        Args:
            time: The timer's time in ms (the watermark passed it).
            window: The window the timer was registered for.
            ctx: Timers, watermark, processing time and per-window trigger state.

        Returns:
            What to do with the window.
        """

    def can_merge(self) -> bool:
        """True when the trigger supports merging windows (sessions).

        Returns:
            False here; triggers that implement ``on_merge`` return True.
        """
        return False

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        """Windows were merged into ``window``; re-register timers / merge state.

        Args:
            window: The merged (covering) window.
            ctx: The trigger context, which can also merge partitioned state.

        Raises:
            GraphBuildError: The trigger does not support merging windows (the default).
        """
        raise GraphBuildError(f"trigger {self!r} does not support merging windows")

    @abstractmethod
    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        """The window is being purged for good: delete its timers and state.

        Args:
            window: The window being purged.
            ctx: The trigger context.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end (the event-time default)."""

    @staticmethod
    def create() -> EventTimeTrigger:
        """PyFlink's factory: fires when the watermark passes the window's end.

        Returns:
            A new ``EventTimeTrigger``.
        """
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # late but within allowed lateness: fire at once
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger):
    """Fires when processing time reaches the window's end (the processing-time default)."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        """PyFlink's factory: fires when processing time passes the window's end.

        Returns:
            A new ``ProcessingTimeTrigger``.
        """
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())


class _TimerFree(Trigger):
    """A trigger that registers no timers: either timer's callback continues; mergeable."""

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True


class NeverTrigger(_TimerFree):
    """Never fires (the default of ``GlobalWindows``: pair it with e.g. a CountTrigger)."""

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        return None

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        return None


def _add_counts(a: int, b: int) -> int:
    return a + b


class CountTrigger(_TimerFree):
    """Fires each time ``count`` elements have entered the window since the last firing.

    Args:
        window_size: Elements per firing, an int >= 1 (``CountTrigger.of(window_size)``).

    Raises:
        GraphBuildError: ``window_size`` is not an int >= 1.
    """

    def __init__(self, window_size: int) -> None:
        count = window_size
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise GraphBuildError(f"CountTrigger.of(count): count must be an int >= 1, got {count!r}")
        self.count = count
        self.state_descriptor = ReducingStateDescriptor(
            "_trigger_count", _add_counts, LongSerializer(), _internal=True
        )

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        """A trigger firing every ``window_size`` elements (Flink's ``CountTrigger.of``).

        Args:
            window_size: Elements per firing, an int >= 1.

        Returns:
            The trigger.

        Raises:
            GraphBuildError: ``window_size`` is not an int >= 1.
        """
        return CountTrigger(window_size)

    def __getstate__(self) -> int:
        return self.count

    def __setstate__(self, count: int) -> None:
        type(self).__init__(self, count)  # unpickled: __init__ runs again

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        state = ctx.get_partitioned_state(self.state_descriptor)
        state.add(1)
        if state.get() >= self.count:
            state.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_descriptor)

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        ctx.get_partitioned_state(self.state_descriptor).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self.count})"


class PurgingTrigger(Trigger):
    """Wraps a trigger: every FIRE becomes FIRE_AND_PURGE.

    Args:
        nested_trigger: The trigger wrapped (``PurgingTrigger.of(trigger)``).

    Raises:
        GraphBuildError: ``nested_trigger`` is not a Trigger.
    """

    def __init__(self, nested_trigger: Trigger) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise GraphBuildError(
                f"PurgingTrigger.of(trigger) needs a Trigger, got {nested_trigger!r:.80}"
            )
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        """``nested_trigger`` with purging on every firing (``FIRE`` becomes ``FIRE_AND_PURGE``).

        Args:
            nested_trigger: The trigger deciding when to fire.

        Returns:
            The purging trigger.

        Raises:
            GraphBuildError: ``nested_trigger`` is not a ``Trigger``.
        """
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"
