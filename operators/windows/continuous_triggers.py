"""Triggers that fire a window repeatedly, every ``interval`` of one clock, before its end.

``ContinuousEventTimeTrigger`` and ``ContinuousProcessingTimeTrigger`` with Flink's
semantics: the first element of a window schedules a firing at the end of its interval
(intervals are aligned to multiples of ``interval`` since the epoch, capped at the window's
max timestamp); each firing schedules the next one, and the window's own end fires too.
The next firing time is window state (the minimum when windows merge), so it is
snapshotted and restored with the window.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from typing import Any, Optional

from ...state_store.descriptors import ReducingStateDescriptor
from ...state_store.exceptions import GraphBuildError
from ...state_store.serializers import LongSerializer
from .assigners import to_window_millis
from .triggers import OnMergeContext, Trigger, TriggerContext, TriggerResult

__all__ = ["ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger"]


class _ContinuousTrigger(Trigger):
    """The part both clocks share: the interval and the next firing time in state."""

    def __init__(self, interval: Any) -> None:
        name = type(self).__name__
        self.interval = to_window_millis(interval, f"{name}.of(interval)")
        if self.interval <= 0:
            raise GraphBuildError(f"{name}.of(interval): interval must be > 0 ms, "
                                  f"got {self.interval}")
        self.state_descriptor = ReducingStateDescriptor(
            "_trigger_fire_time", min, LongSerializer(), _internal=True)  # merged: earliest

    def __getstate__(self) -> int:
        return self.interval

    def __setstate__(self, interval: int) -> None:
        type(self).__init__(self, interval)  # unpickled: __init__ runs again

    def get_interval(self) -> int:
        """The interval between firings, in milliseconds.

        Returns:
            The interval in ms.
        """
        return self.interval

    def _register(self, ctx: TriggerContext, time: int) -> None:
        raise NotImplementedError

    def _delete(self, ctx: TriggerContext, time: int) -> None:
        raise NotImplementedError

    def _schedule_after(self, time: int, window: Any, ctx: TriggerContext) -> None:
        """Schedule the firing one interval after ``time`` (at most the window's end)."""
        self.register_next_fire_timestamp(
            time, window, ctx, ctx.get_partitioned_state(self.state_descriptor))

    def register_next_fire_timestamp(self, time: int, window: Any, ctx: TriggerContext,
                                     fire_timestamp_state: Any) -> None:
        """Keep and register the next firing: one interval after ``time``, at most the
        window's max timestamp (PyFlink's helper of the same name).

        Args:
            time: The time to count the interval from (ms).
            window: The window.
            ctx: The trigger context (its timer of this trigger's clock is registered).
            fire_timestamp_state: The ReducingState (min) keeping the next firing time.
        """
        fire_at = min(time + self.interval, window.max_timestamp())
        fire_timestamp_state.add(fire_at)
        self._register(ctx, fire_at)

    def _on_timer(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        state = ctx.get_partitioned_state(self.state_descriptor)
        fire_at: Optional[int] = state.get()
        if fire_at is not None and fire_at == time:
            state.clear()
            self._schedule_after(time, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_descriptor)
        fire_at = ctx.get_partitioned_state(self.state_descriptor).get()
        if fire_at is not None:
            self._register(ctx, fire_at)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        state = ctx.get_partitioned_state(self.state_descriptor)
        fire_at = state.get()
        if fire_at is not None:
            self._delete(ctx, fire_at)
        state.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.interval} ms)"


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of event time (by watermark) and at the window's end.

    Args:
        interval: The time between firings: ``Time``, ``Duration`` or int ms, > 0
            (``ContinuousEventTimeTrigger.of(interval)``).

    Raises:
        GraphBuildError: ``interval`` is not a Time, Duration or int ms, or is not > 0.
    """

    @staticmethod
    def of(interval: Any) -> ContinuousEventTimeTrigger:
        """A trigger firing every ``interval`` of event time, and at the window's end.

        Args:
            interval: The firing interval: ``Time``, ``Duration`` or int ms, > 0.

        Returns:
            The trigger.

        Raises:
            GraphBuildError: ``interval`` is not a Time, Duration or int, or is not > 0 ms.
        """
        return ContinuousEventTimeTrigger(interval)

    def _register(self, ctx: TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, ctx: TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # a late element of a window still kept: fire at once
        ctx.register_event_time_timer(window.max_timestamp())
        if ctx.get_partitioned_state(self.state_descriptor).get() is None:
            start = 0 if timestamp is None else timestamp - timestamp % self.interval
            self._schedule_after(start, window, ctx)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, window, ctx)

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of processing time and at the window's end.

    Args:
        interval: The time between firings: ``Time``, ``Duration`` or int ms, > 0
            (``ContinuousProcessingTimeTrigger.of(interval)``).

    Raises:
        GraphBuildError: ``interval`` is not a Time, Duration or int ms, or is not > 0.
    """

    @staticmethod
    def of(interval: Any) -> ContinuousProcessingTimeTrigger:
        """A trigger firing every ``interval`` of processing time.

        Args:
            interval: The firing interval of processing time: ``Time``, ``Duration`` or
                int ms, > 0.

        Returns:
            The trigger.

        Raises:
            GraphBuildError: ``interval`` is not a Time, Duration or int, or is not > 0 ms.
        """
        return ContinuousProcessingTimeTrigger(interval)

    def _register(self, ctx: TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, ctx: TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: TriggerContext) -> TriggerResult:
        if ctx.get_partitioned_state(self.state_descriptor).get() is None:
            now = ctx.get_current_processing_time()
            self._schedule_after(now - now % self.interval, window, ctx)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, window, ctx)

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE
