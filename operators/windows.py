"""Keyed windows: assigners, triggers, window functions and the ``WindowOperator``.

Names and signatures follow PyFlink (``TumblingEventTimeWindows.of(...)``,
``CountTrigger.of(n)``, ``ProcessWindowFunction.process(key, context, elements)``).

How windows run (Flink's ``WindowOperator`` semantics):

* Window contents live in keyed state with the window as namespace:
  ReducingState for ``reduce``, AggregatingState for ``aggregate``, ListState for
  ``process``. Window and trigger timers are ordinary timers of the operator's
  timer queues (namespace = the window), so a window snapshots and restores like
  any other state.
* An element is added to each window the assigner gives it; windows whose
  ``max_timestamp() + allowed_lateness <= watermark`` are late and skipped. An
  element skipped by every window and itself late goes to the late side output
  (when one is set) or is dropped.
* The trigger decides when a window fires (emits its result, timestamped
  ``window.max_timestamp()``) and/or purges. The cleanup timer at
  ``max_timestamp() + allowed_lateness`` (event time) or ``max_timestamp()``
  (processing time) clears the window's contents and trigger state.
* Merging assigners (sessions) keep the key's live windows in a ValueState;
  a new window that overlaps live windows merges them (contents, trigger state
  and timers move to the covering window), including a late "bridge" element
  that joins two sessions.
* BATCH: each key sees watermark MIN while its elements arrive and MAX when
  its timers fire (end of key), so each window fires once with its final
  contents. Processing-time windows follow ``pipeline.processing-time.*``
  (BATCH default FAIL: using one raises ``ProcessingTimeError``).

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..state_store.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from ..state_store.errors import DataStreamError, GraphBuildError, JobExecutionError, StateError
from ..state_store.functions import AggregateFunction, Function
from ..state_store.namespaces import (
    MAX_LONG,
    MIN_LONG,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
)
from ..state_store.serializers import LongSerializer, PickleSerializer
from .base import Output, user_function_error
from .functions import OutputTag, as_reduce_function
from .keyed import AbstractKeyedOperator, _collect

#: PyFlink declares its window classes Generic over these (user subclasses subscript them)
T = TypeVar("T")
W = TypeVar("W")
W2 = TypeVar("W2")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.serializers import TypeSerializer

__all__ = [
    "WINDOW_CONTENTS_STATE",
    "MERGING_WINDOWS_STATE",
    "to_window_millis",
    "TriggerResult",
    "Trigger",
    "TriggerContext",
    "OnMergeContext",
    "EventTimeTrigger",
    "ProcessingTimeTrigger",
    "CountTrigger",
    "PurgingTrigger",
    "NeverTrigger",
    "WindowAssigner",
    "WindowAssignerContext",
    "MergingWindowAssigner",
    "TumblingEventTimeWindows",
    "SlidingEventTimeWindows",
    "EventTimeSessionWindows",
    "DynamicEventTimeSessionWindows",
    "SessionWindowTimeGapExtractor",
    "TumblingProcessingTimeWindows",
    "SlidingProcessingTimeWindows",
    "ProcessingTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "GlobalWindows",
    "EndOfStreamWindows",
    "ProcessWindowFunction",
    "WindowSpec",
    "WindowOperator",
]

#: Internal state holding each window's contents (namespace: the window).
WINDOW_CONTENTS_STATE = "_window_contents"
#: Internal state (void namespace) of merging assigners: the key's live windows.
MERGING_WINDOWS_STATE = "_merging_windows"

_TIME_WINDOW_SERIALIZER = TimeWindowSerializer()
_GLOBAL_WINDOW_SERIALIZER = GlobalWindowSerializer()


def to_window_millis(value: Any, what: str) -> int:
    """Milliseconds of an int or of anything with ``to_milliseconds()`` (``Time``, ``Duration``)."""
    if isinstance(value, bool):
        raise GraphBuildError(f"{what} must be a Time, Duration or int milliseconds, got {value!r}")
    if isinstance(value, int):
        return value
    to_ms = getattr(value, "to_milliseconds", None)
    if callable(to_ms):
        millis = to_ms()
        if isinstance(millis, int) and not isinstance(millis, bool):
            return millis
    raise GraphBuildError(f"{what} must be a Time, Duration or int milliseconds, got {value!r}")


def _positive(value: Any, what: str) -> int:
    millis = to_window_millis(value, what)
    if millis <= 0:
        raise GraphBuildError(f"{what} must be > 0 ms, got {millis}")
    return millis


def _offset(offset: Any, size: int, what: str) -> int:
    if offset is None:
        return 0
    millis = to_window_millis(offset, f"{what} offset")
    if abs(millis) >= size:
        raise GraphBuildError(
            f"{what}: offset must satisfy abs(offset) < size ({size} ms), got {millis} ms"
        )
    return millis


# =========================================================================================
# Triggers
# =========================================================================================


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
        """Called for every element added to ``window``."""

    @abstractmethod
    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        """A processing-time timer of ``window`` fired."""

    @abstractmethod
    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        """An event-time timer of ``window`` fired."""

    def can_merge(self) -> bool:
        """True when the trigger supports merging windows (sessions)."""
        return False

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        """Windows were merged into ``window``; re-register timers / merge state."""
        raise GraphBuildError(f"trigger {self!r} does not support merging windows")

    @abstractmethod
    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        """The window is being purged for good: delete its timers and state."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end (the event-time default)."""

    @staticmethod
    def create() -> EventTimeTrigger:
        """PyFlink's factory."""
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
        """PyFlink's factory."""
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


class NeverTrigger(Trigger):
    """Never fires (the default of ``GlobalWindows``: pair it with e.g. a CountTrigger)."""

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        return None

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        return None


def _add_counts(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger):
    """Fires each time ``count`` elements have entered the window since the last firing."""

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise GraphBuildError(f"CountTrigger.of(count): count must be an int >= 1, got {count!r}")
        self.count = count
        self.state_descriptor = ReducingStateDescriptor(
            "_trigger_count", _add_counts, LongSerializer(), _internal=True
        )

    @staticmethod
    def of(count: int) -> CountTrigger:
        """A trigger firing every ``count`` elements."""
        return CountTrigger(count)

    def __getstate__(self) -> int:
        return self.count

    def __setstate__(self, count: int) -> None:
        self.__init__(count)  # type: ignore[misc]

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        state = ctx.get_partitioned_state(self.state_descriptor)
        state.add(1)
        if state.get() >= self.count:
            state.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: _OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_descriptor)

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        ctx.get_partitioned_state(self.state_descriptor).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self.count})"


class PurgingTrigger(Trigger):
    """Wraps a trigger: every FIRE becomes FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise GraphBuildError(
                f"PurgingTrigger.of(trigger) needs a Trigger, got {nested_trigger!r:.80}"
            )
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        """``nested_trigger`` with purging on every firing."""
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


class _EndOfStreamTrigger(Trigger):
    """Fires the end-of-stream window once, when the watermark reaches MAX (end of input)."""

    def on_element(self, element: Any, timestamp: int | None, window: Any,
                   ctx: _TriggerContext) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: _TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: _TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


# =========================================================================================
# Assigners
# =========================================================================================


class WindowAssignerContext(ABC):
    """What an assigner may use (processing time for processing-time windows)."""

    @abstractmethod
    def get_current_processing_time(self) -> int:
        """Processing time in ms (raises under ``pipeline.processing-time.allow = FAIL``)."""

    @abstractmethod
    def get_runtime_context(self) -> Any:
        """The operator's runtime context: keyed state of the current key (count windows
        keep their element counter there)."""


_WindowAssignerContext = WindowAssignerContext


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns each element to zero or more windows (PyFlink's ``WindowAssigner``)."""

    WindowAssignerContext = WindowAssignerContext

    @abstractmethod
    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> Iterable[Any]:
        """The windows ``element`` belongs to."""

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when ``WindowedStream.trigger(...)`` is not called."""

    @abstractmethod
    def get_window_serializer(self) -> TypeSerializer:
        """Serializer of the windows (the namespace serializer of window state and timers)."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """True when windows are based on event time (lateness applies)."""

    def is_merging(self) -> bool:
        """True for merging assigners (sessions)."""
        return False

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows merge when they overlap (sessions)."""

    def is_merging(self) -> bool:
        return True

    def merge_windows(self, windows: Iterable[TimeWindow]) -> list[tuple[TimeWindow, list[TimeWindow]]]:
        """Groups of overlapping windows: ``[(covering window, [members]), ...]``."""
        return TimeWindow.merge_windows(windows)


def _require_timestamp(timestamp: int | None, assigner: WindowAssigner, element: Any) -> int:
    if timestamp is None:
        raise JobExecutionError(
            f"{type(assigner).__name__}: record {element!r:.60} has no timestamp; event-time "
            f"windows need assign_timestamps_and_watermarks(...) upstream (or use a "
            f"processing-time assigner)"
        )
    return timestamp


class _TimeWindowAssigner(WindowAssigner[T, TimeWindow]):
    def get_window_serializer(self) -> TypeSerializer:
        return _TIME_WINDOW_SERIALIZER


class TumblingEventTimeWindows(_TimeWindowAssigner[T]):
    """Fixed-size, non-overlapping event-time windows aligned to the epoch (+ offset)."""

    def __init__(self, size: int, offset: int = 0) -> None:
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: Any, offset: Any = None) -> TumblingEventTimeWindows:
        """Windows of ``size`` (Time, Duration or int ms), shifted by ``offset``."""
        millis = _positive(size, "TumblingEventTimeWindows.of(size)")
        return TumblingEventTimeWindows(
            millis, _offset(offset, millis, "TumblingEventTimeWindows.of")
        )

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        ts = _require_timestamp(timestamp, self, element)
        start = TimeWindow.get_window_start_with_offset(ts, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


def _sliding(ts: int, size: int, slide: int, offset: int) -> list[TimeWindow]:
    last_start = TimeWindow.get_window_start_with_offset(ts, offset, slide)
    windows = []
    start = last_start
    while start > ts - size:
        windows.append(TimeWindow(start, start + size))
        start -= slide
    return windows


def _check_slide(size: Any, slide: Any, offset: Any, what: str) -> tuple[int, int, int]:
    size_ms = _positive(size, f"{what}(size)")
    slide_ms = _positive(slide, f"{what}(slide)")
    return size_ms, slide_ms, _offset(offset, slide_ms, what)


class SlidingEventTimeWindows(_TimeWindowAssigner[T]):
    """Overlapping event-time windows of ``size`` starting every ``slide``."""

    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        self.size = size
        self.slide = slide
        self.offset = offset

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> SlidingEventTimeWindows:
        """Windows of ``size`` every ``slide`` (Time, Duration or int ms), shifted by ``offset``."""
        return SlidingEventTimeWindows(*_check_slide(size, slide, offset, "SlidingEventTimeWindows.of"))

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        ts = _require_timestamp(timestamp, self, element)
        return _sliding(ts, self.size, self.slide, self.offset)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class SessionWindowTimeGapExtractor(ABC, Generic[T]):
    """Gives each element its own session gap (``with_dynamic_gap``), in ms."""

    @abstractmethod
    def extract(self, element: T) -> int:
        """The session gap of ``element`` in milliseconds (> 0)."""


def _dynamic_gap(assigner: Any, element: Any) -> int:
    gap = assigner.extractor.extract(element)
    if isinstance(gap, bool) or not isinstance(gap, int) or gap <= 0:
        raise JobExecutionError(
            f"{type(assigner).__name__}: {type(assigner.extractor).__name__}.extract() returned "
            f"{gap!r:.40} for record {element!r:.60}; a dynamic session gap must be an int > 0 (ms)"
        )
    return gap


def _gap_extractor(extractor: Any, what: str) -> SessionWindowTimeGapExtractor:
    if isinstance(extractor, SessionWindowTimeGapExtractor):
        return extractor
    raise GraphBuildError(
        f"{what}.with_dynamic_gap() needs a SessionWindowTimeGapExtractor, got "
        f"{type(extractor).__name__} {extractor!r:.60}"
    )


class EventTimeSessionWindows(MergingWindowAssigner[T, TimeWindow]):
    """Event-time sessions: windows ``[ts, ts + gap)`` merged while they overlap."""

    def __init__(self, gap: int) -> None:
        self.gap = gap

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> DynamicEventTimeSessionWindows:
        """Sessions whose gap each element gives (``extractor.extract(element)`` ms)."""
        return DynamicEventTimeSessionWindows(_gap_extractor(extractor, "EventTimeSessionWindows"))

    @staticmethod
    def with_gap(size: Any) -> EventTimeSessionWindows:
        """Sessions closed after ``size`` (Time, Duration or int ms) of inactivity."""
        return EventTimeSessionWindows(_positive(size, "EventTimeSessionWindows.with_gap(size)"))

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        ts = _require_timestamp(timestamp, self, element)
        return [TimeWindow(ts, ts + self.gap)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def get_window_serializer(self) -> TypeSerializer:
        return _TIME_WINDOW_SERIALIZER

    def is_event_time(self) -> bool:
        return True


class TumblingProcessingTimeWindows(_TimeWindowAssigner[T]):
    """Fixed-size windows over the operator's processing time."""

    def __init__(self, size: int, offset: int = 0) -> None:
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: Any, offset: Any = None) -> TumblingProcessingTimeWindows:
        """Windows of ``size`` (Time, Duration or int ms), shifted by ``offset``."""
        millis = _positive(size, "TumblingProcessingTimeWindows.of(size)")
        return TumblingProcessingTimeWindows(
            millis, _offset(offset, millis, "TumblingProcessingTimeWindows.of")
        )

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        start = TimeWindow.get_window_start_with_offset(now, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class SlidingProcessingTimeWindows(_TimeWindowAssigner[T]):
    """Overlapping windows over processing time."""

    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        self.size = size
        self.slide = slide
        self.offset = offset

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> SlidingProcessingTimeWindows:
        """Windows of ``size`` every ``slide``, shifted by ``offset``."""
        return SlidingProcessingTimeWindows(
            *_check_slide(size, slide, offset, "SlidingProcessingTimeWindows.of")
        )

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return _sliding(now, self.size, self.slide, self.offset)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class DynamicEventTimeSessionWindows(EventTimeSessionWindows[T]):
    """Event-time sessions with a gap per element: windows ``[ts, ts + extract(element))``."""

    def __init__(self, extractor: SessionWindowTimeGapExtractor) -> None:
        self.extractor = extractor

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        ts = _require_timestamp(timestamp, self, element)
        return [TimeWindow(ts, ts + _dynamic_gap(self, element))]


class ProcessingTimeSessionWindows(MergingWindowAssigner[T, TimeWindow]):
    """Sessions over processing time."""

    def __init__(self, gap: int) -> None:
        self.gap = gap

    @staticmethod
    def with_dynamic_gap(
            extractor: SessionWindowTimeGapExtractor) -> DynamicProcessingTimeSessionWindows:
        """Processing-time sessions whose gap each element gives."""
        return DynamicProcessingTimeSessionWindows(
            _gap_extractor(extractor, "ProcessingTimeSessionWindows"))

    @staticmethod
    def with_gap(size: Any) -> ProcessingTimeSessionWindows:
        """Sessions closed after ``size`` of processing-time inactivity."""
        return ProcessingTimeSessionWindows(
            _positive(size, "ProcessingTimeSessionWindows.with_gap(size)")
        )

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self.gap)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def get_window_serializer(self) -> TypeSerializer:
        return _TIME_WINDOW_SERIALIZER

    def is_event_time(self) -> bool:
        return False


class DynamicProcessingTimeSessionWindows(ProcessingTimeSessionWindows[T]):
    """Processing-time sessions with a gap per element."""

    def __init__(self, extractor: SessionWindowTimeGapExtractor) -> None:
        self.extractor = extractor

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + _dynamic_gap(self, element))]


class GlobalWindows(WindowAssigner[T, GlobalWindow]):
    """One window per key that never ends; its default trigger never fires."""

    @staticmethod
    def create() -> GlobalWindows:
        """The global-window assigner (use ``trigger(CountTrigger.of(n))`` with it)."""
        return GlobalWindows()

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[GlobalWindow]:
        return [GlobalWindow.get()]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return NeverTrigger()

    def get_window_serializer(self) -> TypeSerializer:
        return _GLOBAL_WINDOW_SERIALIZER

    def is_event_time(self) -> bool:
        return False


class EndOfStreamWindows(_TimeWindowAssigner[T]):
    """One window per key spanning all time, fired once at the end of input (Flink 1.20)."""

    WINDOW = TimeWindow(MIN_LONG, MAX_LONG)

    @staticmethod
    def get() -> EndOfStreamWindows:
        """The end-of-stream assigner."""
        return EndOfStreamWindows()

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        return [self.WINDOW]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return _EndOfStreamTrigger()

    def is_event_time(self) -> bool:
        return True


# =========================================================================================
# Window functions
# =========================================================================================


class ProcessWindowFunction(Function, ABC, Generic[IN, OUT, KEY, W]):
    """Processes all elements of a fired window (PyFlink's ``ProcessWindowFunction``)."""

    class Context(ABC, Generic[W2]):
        """Context of ``process`` / ``clear``: the window, clocks, state, side outputs."""

        @abstractmethod
        def window(self) -> Any:
            """The window being processed (``start``, ``end``, ``max_timestamp()``)."""

        @abstractmethod
        def current_processing_time(self) -> int:
            """Processing time in ms."""

        @abstractmethod
        def current_watermark(self) -> int:
            """Current event-time watermark."""

        @abstractmethod
        def window_state(self) -> Any:
            """Keyed state scoped to this key and window (``get_state(descriptor)``, ...)."""

        @abstractmethod
        def global_state(self) -> Any:
            """Keyed state of this key across windows."""

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to a side output."""

    @abstractmethod
    def process(self, key: Any, context: ProcessWindowFunction.Context,
                elements: Iterable[Any]) -> Iterable[Any] | None:
        """Yield the outputs for the window's ``elements``."""

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        """The window is purged for good (cleanup time); default does nothing."""


class _PassThroughWindowFunction(ProcessWindowFunction):
    """Emits the single pre-aggregated value of a window as it is."""

    def process(self, key: Any, context: ProcessWindowFunction.Context,
                elements: Iterable[Any]) -> Iterable[Any]:
        return elements

    def __repr__(self) -> str:
        return "PassThrough"


# =========================================================================================
# The window definition (what travels in the job graph) and the operator
# =========================================================================================

_KINDS = ("reduce", "aggregate", "process")


class WindowSpec:
    """A keyed window definition: assigner, trigger, lateness, late tag and function.

    ``kind`` is ``reduce`` (``function`` a ReduceFunction or callable), ``aggregate``
    (an AggregateFunction) or ``process`` (a ProcessWindowFunction).
    ``window_function`` (a ProcessWindowFunction) optionally post-processes the
    reduce/aggregate result. ``state_type`` types the stored contents (the
    element type for reduce/process, the accumulator type for aggregate; default
    pickled). Picklable: this is the ``function`` of a ``KeyedNode(op="window")``.
    """

    def __init__(
        self,
        assigner: WindowAssigner,
        kind: str,
        function: Any,
        *,
        trigger: Trigger | None = None,
        allowed_lateness: int = 0,
        late_output_tag: OutputTag | None = None,
        window_function: ProcessWindowFunction | None = None,
        state_type: Any = None,
    ) -> None:
        if not isinstance(assigner, WindowAssigner):
            raise GraphBuildError(f"window(): assigner must be a WindowAssigner, got {assigner!r:.80}")
        if kind not in _KINDS:
            raise GraphBuildError(f"window function kind must be one of {_KINDS}, got {kind!r}")
        if kind == "reduce":
            function = as_reduce_function(function, "reduce_function")
        elif kind == "aggregate":
            if not isinstance(function, AggregateFunction):
                raise GraphBuildError(
                    f"WindowedStream.aggregate() needs an AggregateFunction (create_accumulator, "
                    f"add, get_result, merge), got {type(function).__name__} {function!r:.80}"
                )
        elif not isinstance(function, ProcessWindowFunction):
            raise GraphBuildError(
                f"WindowedStream.process() needs a ProcessWindowFunction, got "
                f"{type(function).__name__} {function!r:.80}"
            )
        if window_function is not None and not isinstance(window_function, ProcessWindowFunction):
            raise GraphBuildError(
                f"window_function must be a ProcessWindowFunction, got {window_function!r:.80}"
            )
        if trigger is None:
            trigger = assigner.get_default_trigger()
        if not isinstance(trigger, Trigger):
            raise GraphBuildError(f"trigger(): needs a Trigger, got {trigger!r:.80}")
        if assigner.is_merging() and not trigger.can_merge():
            raise GraphBuildError(
                f"trigger {trigger!r} cannot merge windows, but {assigner!r} is a merging "
                f"assigner (sessions)"
            )
        if isinstance(allowed_lateness, bool) or not isinstance(allowed_lateness, int) \
                or allowed_lateness < 0:
            raise GraphBuildError(
                f"allowed_lateness must be an int >= 0 (ms), got {allowed_lateness!r}"
            )
        if allowed_lateness and not assigner.is_event_time():
            raise GraphBuildError(
                f"allowed_lateness applies to event-time windows only; {assigner!r} is not "
                f"event time"
            )
        if late_output_tag is not None and not isinstance(late_output_tag, OutputTag):
            raise GraphBuildError(
                f"side_output_late_data(): needs an OutputTag, got {late_output_tag!r:.80}"
            )
        self.assigner = assigner
        self.kind = kind
        self.function = function
        self.trigger = trigger
        self.allowed_lateness = allowed_lateness
        self.late_output_tag = late_output_tag
        self.window_function = window_function
        self.state_type = state_type

    def replace(self, **changes: Any) -> WindowSpec:
        """A copy with some fields changed (validated again)."""
        values = {
            "trigger": self.trigger,
            "allowed_lateness": self.allowed_lateness,
            "late_output_tag": self.late_output_tag,
            "window_function": self.window_function,
            "state_type": self.state_type,
        }
        values.update(changes)
        return WindowSpec(self.assigner, self.kind, self.function, **values)

    def contents_descriptor(self) -> StateDescriptor:
        """The descriptor of the window contents state for this kind."""
        type_info = self.state_type if self.state_type is not None else PickleSerializer.INSTANCE
        if self.kind == "reduce":
            return ReducingStateDescriptor(
                WINDOW_CONTENTS_STATE, self.function, type_info, _internal=True
            )
        if self.kind == "aggregate":
            return AggregatingStateDescriptor(
                WINDOW_CONTENTS_STATE, self.function, type_info, _internal=True
            )
        return ListStateDescriptor(WINDOW_CONTENTS_STATE, type_info, _internal=True)

    def __repr__(self) -> str:
        return (
            f"WindowSpec({self.assigner!r}, {self.kind}, {self.function!r}, trigger="
            f"{self.trigger!r}, allowed_lateness={self.allowed_lateness}, "
            f"late_output_tag={self.late_output_tag!r})"
        )


class _WindowTriggerContext(OnMergeContext):
    """Trigger context bound to the operator; ``window`` is set before each call."""

    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator
        self.window: Any = None
        self.merged_windows: list[Any] = []

    def get_current_processing_time(self) -> int:
        return self.op.clock.current_processing_time()

    def get_current_watermark(self) -> int:
        return self.op.clock.watermark

    def register_processing_time_timer(self, time: int) -> None:
        if self.op.clock.accepts_processing_timer():
            self.op.processing_queue.add(time, self.window)

    def register_event_time_timer(self, time: int) -> None:
        self.op.event_queue.add(time, self.window)

    def delete_processing_time_timer(self, time: int) -> None:
        self.op.processing_queue.delete(time, self.window)

    def delete_event_time_timer(self, time: int) -> None:
        self.op.event_queue.delete(time, self.window)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        state = self.op.backend.get_state(state_descriptor, self.op.window_serializer)
        state.set_current_namespace(self.window)
        return state

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if not self.merged_windows:
            return
        state = self.op.backend.get_state(state_descriptor, self.op.window_serializer)
        if not hasattr(state, "merge_namespaces"):
            raise StateError(
                f"operator {self.op.operator_name!r}: trigger state {state_descriptor.name!r} "
                f"cannot be merged (only list, reducing and aggregating state can)"
            )
        state.set_current_namespace(self.window)
        state.merge_namespaces(self.window, self.merged_windows)


class _WindowStateStore:
    """``context.window_state()``: keyed state scoped to the current window."""

    def __init__(self, operator: WindowOperator, window: Any) -> None:
        self._op = operator
        self._window = window

    def _get(self, descriptor: StateDescriptor) -> Any:
        state = self._op.backend.get_state(descriptor, self._op.window_serializer)
        state.set_current_namespace(self._window)
        return state

    get_state = _get
    get_list_state = _get
    get_map_state = _get
    get_reducing_state = _get
    get_aggregating_state = _get


class _ProcessWindowContext(ProcessWindowFunction.Context):
    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator
        self._window: Any = None
        self._out: list[Output] = []

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self.op.clock.current_processing_time()

    def current_watermark(self) -> int:
        return self.op.clock.watermark

    def window_state(self) -> Any:
        return _WindowStateStore(self.op, self._window)

    def global_state(self) -> Any:
        return self.op.runtime_context

    def output(self, output_tag: OutputTag, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(
                f"operator {self.op.operator_name!r}: context.output() needs an OutputTag, "
                f"got {output_tag!r:.60}"
            )
        self._out.append(Output(output_tag.tag_id, value, self._window.max_timestamp()))


class _AssignerContext(WindowAssignerContext):
    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator

    def get_current_processing_time(self) -> int:
        return self.op.clock.current_processing_time()

    def get_runtime_context(self) -> Any:
        return self.op.runtime_context


def _cleanup_time(window: Any, lateness: int, event_time: bool) -> int:
    """When a window's state is removed for good (MAX_LONG: never)."""
    max_ts = window.max_timestamp()
    if not event_time:
        return max_ts
    cleanup = max_ts + lateness
    return MAX_LONG if cleanup >= MAX_LONG else cleanup


class WindowOperator(AbstractKeyedOperator):
    """Runs a :class:`WindowSpec` on a keyed stream (see the module doc for semantics)."""

    def __init__(self, spec: WindowSpec, name: str | None = None) -> None:
        super().__init__(name)
        if not isinstance(spec, WindowSpec):
            raise GraphBuildError(f"WindowOperator needs a WindowSpec, got {spec!r:.80}")
        self.spec = spec
        self.window_serializer = spec.assigner.get_window_serializer()
        #: window state and timers are namespaced by the window
        self.timer_namespace_serializer = self.window_serializer

    def _definition(self) -> dict[str, Any]:
        return {"spec": self.spec, "name": self.name}

    def __repr__(self) -> str:
        return f"WindowOperator({self.spec!r}, name={self.name!r})"

    # -- lifecycle -----------------------------------------------------------------------

    def open_operator(self) -> None:
        spec = self.spec
        self.assigner = spec.assigner
        self.trigger = spec.trigger
        self.lateness = spec.allowed_lateness
        self.event_time = spec.assigner.is_event_time()
        self.merging = spec.assigner.is_merging()
        self.late_tag = spec.late_output_tag.tag_id if spec.late_output_tag is not None else None
        self.contents = self.backend.get_state(spec.contents_descriptor(), self.window_serializer)
        self.merging_state = None
        if self.merging:
            self.merging_state = self.backend.get_state(
                ValueStateDescriptor(MERGING_WINDOWS_STATE, PickleSerializer.INSTANCE, _internal=True)
            )
        self.window_function = (
            spec.function if spec.kind == "process"
            else spec.window_function or _PassThroughWindowFunction()
        )
        self.trigger_ctx = _WindowTriggerContext(self)
        self.process_ctx = _ProcessWindowContext(self)
        self.assigner_ctx = _AssignerContext(self)
        self.trigger.open(self.runtime_context)
        if spec.kind != "process":
            spec.function.open(self.runtime_context)
        self.window_function.open(self.runtime_context)

    def close_operator(self) -> None:
        for function in (self.window_function, self.spec.function, self.trigger):
            function.close()

    # -- helpers -------------------------------------------------------------------------

    def _is_window_late(self, window: Any) -> bool:
        return self.event_time and _cleanup_time(window, self.lateness, True) <= self.clock.watermark

    def _is_element_late(self, timestamp: int | None) -> bool:
        return (
            self.event_time
            and timestamp is not None
            and timestamp + self.lateness <= self.clock.watermark
        )

    def _register_cleanup(self, window: Any) -> None:
        cleanup = _cleanup_time(window, self.lateness, self.event_time)
        if cleanup == MAX_LONG:
            return  # the window never ends (global): nothing to clean up
        if self.event_time:
            self.event_queue.add(cleanup, window)
        elif self.clock.accepts_processing_timer():
            self.processing_queue.add(cleanup, window)

    def _delete_cleanup(self, window: Any) -> None:
        cleanup = _cleanup_time(window, self.lateness, self.event_time)
        if cleanup == MAX_LONG:
            return
        if self.event_time:
            self.event_queue.delete(cleanup, window)
        else:
            self.processing_queue.delete(cleanup, window)

    def _trigger_call(self, what: str, window: Any, call: Any, *args: Any) -> Any:
        ctx = self.trigger_ctx
        ctx.window = window
        try:
            return call(*args, ctx)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, f"trigger {what}", window, exc
            ) from exc

    def _live_windows(self) -> list[TimeWindow]:
        raw = self.merging_state.value()  # type: ignore[union-attr]
        return [TimeWindow(s, e) for s, e in raw] if raw else []

    def _store_windows(self, windows: list[TimeWindow]) -> None:
        self.merging_state.update(  # type: ignore[union-attr]
            sorted((w.start, w.end) for w in windows) if windows else None
        )

    # -- elements ------------------------------------------------------------------------

    def process_element(
        self, value: Any, timestamp: int | None, input_index: int = 0
    ) -> list[Output]:
        try:
            windows = list(self.assigner.assign_windows(value, timestamp, self.assigner_ctx))
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(self.operator_name, "assign_windows", value, exc) from exc
        out: list[Output] = []
        skipped = True
        for window in windows:
            if self.merging:
                window = self._merge_into_live(window)
            if self._is_window_late(window):
                if self.merging:
                    self._retire(window)
                continue
            skipped = False
            contents = self.contents
            contents.set_current_namespace(window)
            try:
                contents.add(value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(self.operator_name, "window add", value, exc) from exc
            result = self._trigger_call(
                "on_element", window, self.trigger.on_element, value, timestamp, window
            )
            self._apply(result, window, out)
            self._register_cleanup(window)
        if skipped and self._is_element_late(timestamp) and self.late_tag is not None:
            out.append(Output(self.late_tag, value, timestamp))
        return out

    def _merge_into_live(self, new_window: TimeWindow) -> TimeWindow:
        """Add ``new_window`` to the key's live sessions, merging overlaps; the result window."""
        live = self._live_windows()
        merged = new_window
        members: list[TimeWindow] = []
        changed = True
        while changed:
            changed = False
            for window in live:
                if window not in members and window.intersects(merged):
                    members.append(window)
                    merged = merged.cover(window)
                    changed = True
        if not members:
            live.append(new_window)
            self._store_windows(live)
            return new_window
        if members == [merged]:
            return merged  # the new window lies inside a live session
        if self.event_time and _cleanup_time(merged, self.lateness, True) <= self.clock.watermark:
            raise JobExecutionError(
                f"operator {self.operator_name!r}: merging {members} into {merged} would end "
                f"the window before the current watermark {self.clock.watermark}"
            )
        sources = [w for w in members if w != merged]
        ctx = self.trigger_ctx
        ctx.merged_windows = sources
        try:
            self._trigger_call("on_merge", merged, self.trigger.on_merge, merged)
        finally:
            ctx.merged_windows = []
        for window in sources:
            self._trigger_call("clear", window, self.trigger.clear, window)
            self._delete_cleanup(window)
        self.contents.set_current_namespace(merged)  # merge_namespaces restores the current one
        self.contents.merge_namespaces(merged, sources)
        live = [w for w in live if w not in members] + [merged]
        self._store_windows(live)
        return merged

    def _retire(self, window: TimeWindow) -> None:
        live = [w for w in self._live_windows() if w != window]
        self._store_windows(live)

    # -- firing --------------------------------------------------------------------------

    def _apply(self, result: TriggerResult, window: Any, out: list[Output]) -> None:
        if not isinstance(result, TriggerResult):
            raise JobExecutionError(
                f"operator {self.operator_name!r}: trigger {self.trigger!r} returned "
                f"{result!r:.60}, not a TriggerResult"
            )
        if result.is_fire():
            self._emit(window, out)
        if result.is_purge():
            self.contents.set_current_namespace(window)
            self.contents.clear()

    def _emit(self, window: Any, out: list[Output]) -> None:
        contents = self.contents
        contents.set_current_namespace(window)
        value = contents.get()
        if self.spec.kind == "process":
            if not value:
                return
            elements: Any = value
        else:
            if value is None:
                return
            elements = [value]
        ctx = self.process_ctx
        ctx._window = window
        ctx._out = out
        ts = window.max_timestamp()
        try:
            result = self.window_function.process(
                self.backend.get_current_key(), ctx, elements
            )
            if result is not None:
                _collect(result, out, ts)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, "window function process", window, exc
            ) from exc

    def _clear_all(self, window: Any) -> None:
        contents = self.contents
        contents.set_current_namespace(window)
        contents.clear()
        if self.merging:
            self._retire(window)
        self._trigger_call("clear", window, self.trigger.clear, window)
        ctx = self.process_ctx
        ctx._window = window
        try:
            self.window_function.clear(ctx)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, "window function clear", window, exc
            ) from exc

    def _window_is_live(self, window: Any) -> bool:
        return not self.merging or window in self._live_windows()

    def on_event_time(self, timestamp: int, namespace: Any) -> list[Output]:
        window = namespace
        out: list[Output] = []
        if not self._window_is_live(window):
            return out  # merged away: its timers were moved to the covering window
        result = self._trigger_call(
            "on_event_time", window, self.trigger.on_event_time, timestamp, window
        )
        self._apply(result, window, out)
        if self.event_time and timestamp == _cleanup_time(window, self.lateness, True):
            self._clear_all(window)
        return out

    def on_processing_time(self, timestamp: int, namespace: Any) -> list[Output]:
        window = namespace
        out: list[Output] = []
        if not self._window_is_live(window):
            return out
        result = self._trigger_call(
            "on_processing_time", window, self.trigger.on_processing_time, timestamp, window
        )
        self._apply(result, window, out)
        if not self.event_time and timestamp == _cleanup_time(window, self.lateness, False):
            self._clear_all(window)
        return out
