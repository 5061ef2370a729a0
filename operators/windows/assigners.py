"""Window assigners: which windows each element belongs to, and their default triggers.

User API: time windows (tumbling, sliding, sessions) over event or processing time, the
global window and the end-of-stream window, plus ``to_window_millis`` that reads the
size arguments (``Time``, ``Duration`` or int ms). Count windows live in
``operators.count_windows``. Kept apart from the operator so that building a window
definition needs no runtime code.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ...state_store.exceptions import GraphBuildError
from ...state_store.namespaces import (
    MAX_LONG,
    MIN_LONG,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
)
from ..exceptions import JobExecutionError
from .triggers import (
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    Trigger,
    TriggerContext,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ...state_store.serializers import TypeSerializer

__all__ = [
    "to_window_millis",
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
]

#: type parameters of ``WindowAssigner`` (user subclasses may subscript it)
T = TypeVar("T")
W = TypeVar("W")

_TIME_WINDOW_SERIALIZER = TimeWindowSerializer()
_GLOBAL_WINDOW_SERIALIZER = GlobalWindowSerializer()
_TriggerContext = TriggerContext


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
        """The windows ``element`` belongs to.

        Args:
            element: The element.
            timestamp: Its event timestamp in ms, or None when it has none.
            context: Gives the current processing time (processing-time assigners).

        Returns:
            The windows, one or more.

        Raises:
            JobExecutionError: An event-time assigner got an element without a timestamp.
        """

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when ``WindowedStream.trigger(...)`` is not called.

        Args:
            env: The execution environment (unused; PyFlink's signature).

        Returns:
            The default trigger of this assigner.
        """

    @abstractmethod
    def get_window_serializer(self) -> TypeSerializer:
        """Serializer of the windows (the namespace serializer of window state and timers).

        Returns:
            The window serializer.
        """

    @abstractmethod
    def is_event_time(self) -> bool:
        """True when windows are based on event time (lateness applies).

        Returns:
            Whether the assigner uses event time.
        """

    def is_merging(self) -> bool:
        """True for merging assigners (sessions).

        Returns:
            False here; ``MergingWindowAssigner`` returns True.
        """
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

    class MergeCallback(ABC):
        """PyFlink's callback of a merge, given to ``merge_windows`` (which also returns
        the merges, ``[(covering window, [members]), ...]``)."""

        @abstractmethod
        def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
            """Called with the windows merged into ``merge_result``.

            Args:
                to_be_merged: The merged windows.
                merge_result: The window covering them.
            """

    def is_merging(self) -> bool:
        return True

    def merge_windows(self, windows: Iterable[TimeWindow], callback: Any = None
                      ) -> list[tuple[TimeWindow, list[TimeWindow]]]:
        """Groups of overlapping windows: ``[(covering window, [members]), ...]``.

        Args:
            windows: The windows to merge.
            callback: PyFlink's :class:`MergeCallback`: when given, its ``merge(members,
                covering window)`` is called for each group too.

        Returns:
            One ``(covering window, members)`` pair per group of two or more overlapping
            windows.
        """
        return TimeWindow.merge_windows(windows, callback)


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
    """Fixed-size, non-overlapping event-time windows aligned to the epoch (+ offset).

    Args:
        size: The window length in ms, > 0 (use ``of`` to pass a Time or Duration and have it checked).
        offset: The shift of the window starts in ms, ``abs(offset) < size``.
    """

    def __init__(self, size: int, offset: int = 0) -> None:
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: Any, offset: Any = None) -> TumblingEventTimeWindows:
        """Windows of ``size``, shifted by ``offset``.

        Args:
            size: The window length: ``Time``, ``Duration`` or int ms, > 0.
            offset: Shift of the window starts, same types, ``abs(offset) < size``; None is 0.

        Returns:
            The assigner.

        Raises:
            GraphBuildError: A size is not a Time, Duration or int ms, or is not > 0, or
                ``abs(offset)`` is not less than the size.

        Example:
            >>> TumblingEventTimeWindows.of(Time.minutes(1)).size
            60000
        """
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


class _SlidingWindows(_TimeWindowAssigner[T]):
    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        self.size = size
        self.slide = slide
        self.offset = offset


class SlidingEventTimeWindows(_SlidingWindows[T]):
    """Overlapping event-time windows of ``size`` starting every ``slide``.

    Args:
        size: The window length in ms, > 0 (use ``of`` to pass a Time or Duration and have it checked).
        slide: The time between window starts in ms, > 0.
        offset: The shift of the window starts in ms, ``abs(offset) < slide``.
    """

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> SlidingEventTimeWindows:
        """Windows of ``size`` every ``slide``, shifted by ``offset``.

        Args:
            size: The window length: ``Time``, ``Duration`` or int ms, > 0.
            slide: The distance between window starts, same types, > 0.
            offset: Shift of the window starts, same types, ``abs(offset) < slide``; None is 0.

        Returns:
            The assigner.

        Raises:
            GraphBuildError: A size is not a Time, Duration or int ms, or is not > 0, or
                ``abs(offset)`` is not less than the slide.

        Example:
            >>> w = SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5))
            >>> (w.size, w.slide, w.offset)
            (10000, 5000, 0)
        """
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
        """The session gap of ``element`` in milliseconds (> 0).

        Args:
            element: The element.

        Returns:
            The gap in ms, an int > 0.
        """


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
    """Event-time sessions: windows ``[ts, ts + gap)`` merged while they overlap.

    Args:
        session_gap: The session gap in ms, > 0 (``with_gap`` takes a Time or Duration and
            checks it).
    """

    def __init__(self, session_gap: int) -> None:
        self.gap = session_gap

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> DynamicEventTimeSessionWindows:
        """Sessions whose gap each element gives (``extractor.extract(element)`` ms).

        Args:
            extractor: Gives each element's gap in ms; a non-int or gap <= 0 fails the job
                with ``JobExecutionError`` when the element arrives.

        Returns:
            The dynamic-gap session assigner.

        Raises:
            GraphBuildError: ``extractor`` is not a ``SessionWindowTimeGapExtractor``.
        """
        return DynamicEventTimeSessionWindows(_gap_extractor(extractor, "EventTimeSessionWindows"))

    @staticmethod
    def with_gap(size: Any) -> EventTimeSessionWindows:
        """Sessions closed after ``size`` of inactivity.

        Args:
            size: The gap: ``Time``, ``Duration`` or int ms, > 0.

        Returns:
            The session assigner.

        Raises:
            GraphBuildError: ``size`` is not a Time, Duration or int, or is not > 0 ms.

        Example:
            >>> EventTimeSessionWindows.with_gap(Time.minutes(30)).gap
            1800000
        """
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
    """Fixed-size windows over the operator's processing time.

    Args:
        size: The window length of processing time in ms, > 0 (use ``of`` to pass a Time or Duration and have it checked).
        offset: The shift of the window starts in ms, ``abs(offset) < size``.
    """

    def __init__(self, size: int, offset: int = 0) -> None:
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: Any, offset: Any = None) -> TumblingProcessingTimeWindows:
        """Windows of ``size`` of processing time, shifted by ``offset``.

        Args:
            size: The window length of processing time: ``Time``, ``Duration`` or int ms, > 0.
            offset: Shift of the window starts, same types, ``abs(offset) < size``; None is 0.

        Returns:
            The assigner.

        Raises:
            GraphBuildError: The size is not a Time, Duration or int ms > 0, or
                ``abs(offset)`` is not less than the size.
        """
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


class SlidingProcessingTimeWindows(_SlidingWindows[T]):
    """Overlapping windows over processing time.

    Args:
        size: The window length of processing time in ms, > 0 (use ``of`` to pass a Time or Duration and have it checked).
        slide: The time between window starts in ms, > 0.
        offset: The shift of the window starts in ms, ``abs(offset) < slide``.
    """

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> SlidingProcessingTimeWindows:
        """Windows of ``size`` every ``slide`` of processing time, shifted by ``offset``.

        Args:
            size: The window length of processing time: ``Time``, ``Duration`` or int ms, > 0.
            slide: The distance between window starts, same types, > 0.
            offset: Shift of the window starts, same types, ``abs(offset) < slide``; None is 0.

        Returns:
            The assigner.

        Raises:
            GraphBuildError: A size is not a Time, Duration or int ms > 0, or
                ``abs(offset)`` is not less than the slide.
        """
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
    """Event-time sessions with a gap per element: windows ``[ts, ts + extract(element))``.

    Args:
        session_window_time_gap_extractor: Gives each element's gap in ms
            (``extractor.extract(element)``); usually
            passed to ``EventTimeSessionWindows.with_dynamic_gap``.
    """

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        self.extractor = session_window_time_gap_extractor

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        ts = _require_timestamp(timestamp, self, element)
        return [TimeWindow(ts, ts + _dynamic_gap(self, element))]


class ProcessingTimeSessionWindows(MergingWindowAssigner[T, TimeWindow]):
    """Sessions over processing time.

    Args:
        session_gap: The processing-time gap in ms, > 0 (``with_gap`` takes a Time or Duration and
            checks it).
    """

    def __init__(self, session_gap: int) -> None:
        self.gap = session_gap

    @staticmethod
    def with_dynamic_gap(
            extractor: SessionWindowTimeGapExtractor) -> DynamicProcessingTimeSessionWindows:
        """Processing-time sessions whose gap each element gives.

        Args:
            extractor: Gives each element's processing-time gap in ms; a non-int or gap <= 0 fails the job
                with ``JobExecutionError`` when the element arrives.

        Returns:
            The dynamic-gap session assigner.

        Raises:
            GraphBuildError: ``extractor`` is not a ``SessionWindowTimeGapExtractor``.
        """
        return DynamicProcessingTimeSessionWindows(
            _gap_extractor(extractor, "ProcessingTimeSessionWindows"))

    @staticmethod
    def with_gap(size: Any) -> ProcessingTimeSessionWindows:
        """Sessions closed after ``size`` of processing-time inactivity.

        Args:
            size: The processing-time gap: ``Time``, ``Duration`` or int ms, > 0.

        Returns:
            The session assigner.

        Raises:
            GraphBuildError: ``size`` is not a Time, Duration or int, or is not > 0 ms.
        """
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
    """Processing-time sessions with a gap per element.

    Args:
        session_window_time_gap_extractor: Gives each element's gap in ms
            (``extractor.extract(element)``); usually
            passed to ``ProcessingTimeSessionWindows.with_dynamic_gap``.
    """

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        self.extractor = session_window_time_gap_extractor

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + _dynamic_gap(self, element))]


class GlobalWindows(WindowAssigner[T, GlobalWindow]):
    """One window per key that never ends; its default trigger never fires."""

    @staticmethod
    def create() -> GlobalWindows:
        """The global-window assigner (use ``trigger(CountTrigger.of(n))`` with it).

        Returns:
            A new ``GlobalWindows``.
        """
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



class _EndOfStreamTrigger(EventTimeTrigger):
    """Fires the end-of-stream window once, when the watermark reaches MAX (end of input):
    the event-time trigger, whose window ends at the end of time."""


class EndOfStreamWindows(_TimeWindowAssigner[T]):
    """One window per key spanning all time, fired once at the end of input (Flink 1.20)."""

    WINDOW = TimeWindow(MIN_LONG, MAX_LONG)

    @staticmethod
    def get() -> EndOfStreamWindows:
        """The end-of-stream assigner.

        Returns:
            A new ``EndOfStreamWindows``.
        """
        return EndOfStreamWindows()

    def assign_windows(self, element: Any, timestamp: int | None,
                       context: _WindowAssignerContext) -> list[TimeWindow]:
        return [self.WINDOW]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return _EndOfStreamTrigger()

    def is_event_time(self) -> bool:
        return True
