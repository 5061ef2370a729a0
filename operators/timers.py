"""Clocks and timer services of an operator instance.

``OperatorClock`` holds an operator's view of time (current watermark,
processing time, whether processing-time timers are quiescing at end of input)
and enforces ``pipeline.processing-time.allow`` (FLIP-134). The timer services
are what ``ctx.timer_service()`` returns: the keyed one stores timers in the
backend's timer queues ``"event"`` and ``"processing"`` (so timers are part of
snapshots); the non-keyed one refuses timers, as Flink does.
"""

from __future__ import annotations

import time
from numbers import Integral
from typing import TYPE_CHECKING, Any

from ..state_store.exceptions import StateError
from .base import MIN_WATERMARK, OperatorConfig
from .exceptions import ProcessingTimeError
from .functions import TimerService

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.timer_queue import TimerQueue

__all__ = [
    "EVENT_TIME_QUEUE",
    "PROCESSING_TIME_QUEUE",
    "OperatorClock",
    "KeyedTimerService",
    "NonKeyedTimerService",
    "wall_clock_millis",
    "check_timestamp",
]

#: Backend timer-queue names (their snapshot state names are ``_timer/<name>``).
EVENT_TIME_QUEUE = "event"
PROCESSING_TIME_QUEUE = "processing"

_ALLOW, _IGNORE, _FAIL = "ALLOW", "IGNORE", "FAIL"


def wall_clock_millis() -> int:
    """Milliseconds since the epoch from the system clock."""
    return time.time_ns() // 1_000_000


def check_timestamp(timestamp: Any, what: str, operator_name: str) -> int:
    """``timestamp`` as an int (ms); anything but an integral number -> StateError."""
    if type(timestamp) is int:
        return timestamp
    if isinstance(timestamp, Integral) and not isinstance(timestamp, bool):
        return int(timestamp)
    raise StateError(
        f"operator {operator_name!r}: {what} needs an int timestamp in milliseconds, "
        f"got {type(timestamp).__name__} {timestamp!r:.60}"
    )


class OperatorClock:
    """An operator instance's watermark and processing time, with FLIP-134's rules."""

    __slots__ = ("operator_name", "allow", "watermark", "processing_time", "quiescing")

    def __init__(self, config: OperatorConfig) -> None:
        self.operator_name = config.operator_name
        self.allow = config.processing_time_allow
        self.watermark = MIN_WATERMARK
        #: Set by the driver (``advance_processing_time``); None = use the system clock.
        self.processing_time: int | None = None
        #: True while processing-time timers fire at end of input: new ones are ignored.
        self.quiescing = False

    def fail_processing_time(self, what: str) -> ProcessingTimeError:
        """The error raised for processing-time use under ``allow = FAIL``."""
        return ProcessingTimeError(
            f"operator {self.operator_name!r}: {what} is not allowed because "
            f"pipeline.processing-time.allow is FAIL (the default in BATCH execution mode, "
            f"where processing time makes results irreproducible); set "
            f"pipeline.processing-time.allow to ALLOW or IGNORE to permit it"
        )

    def current_processing_time(self) -> int:
        """Processing time in ms; raises ProcessingTimeError under FAIL."""
        if self.allow == _FAIL:
            raise self.fail_processing_time("current_processing_time()")
        now = self.processing_time
        return wall_clock_millis() if now is None else now

    def state_ttl_time(self) -> int:
        """Processing time in ms for state TTL: the time the driver (or test harness) set, the
        system clock until then. Never refused: TTL is processing time whatever
        ``pipeline.processing-time.allow`` says (it governs timers and the user's reads)."""
        now = self.processing_time
        return wall_clock_millis() if now is None else now

    def accepts_processing_timer(self) -> bool:
        """Whether a processing-time timer registration should be kept (raises under FAIL)."""
        allow = self.allow
        if allow == _FAIL:
            raise self.fail_processing_time("register_processing_time_timer()")
        return allow == _ALLOW and not self.quiescing


class KeyedTimerService(TimerService):
    """Timer service of keyed process functions: timers of the backend's current key."""

    __slots__ = ("_clock", "_event_queue", "_processing_queue", "_namespace")

    def __init__(
        self,
        clock: OperatorClock,
        event_queue: TimerQueue,
        processing_queue: TimerQueue,
        namespace: Any,
    ) -> None:
        self._clock = clock
        self._event_queue = event_queue
        self._processing_queue = processing_queue
        self._namespace = namespace

    def current_processing_time(self) -> int:
        return self._clock.current_processing_time()

    def current_watermark(self) -> int:
        return self._clock.watermark

    def register_event_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int:
            timestamp = check_timestamp(
                timestamp, "register_event_time_timer()", self._clock.operator_name
            )
        self._event_queue.add(timestamp, self._namespace)

    def register_processing_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int:
            timestamp = check_timestamp(
                timestamp, "register_processing_time_timer()", self._clock.operator_name
            )
        if self._clock.accepts_processing_timer():
            self._processing_queue.add(timestamp, self._namespace)

    def delete_event_time_timer(self, timestamp: int) -> None:
        if type(timestamp) is not int:
            timestamp = check_timestamp(
                timestamp, "delete_event_time_timer()", self._clock.operator_name
            )
        self._event_queue.delete(timestamp, self._namespace)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        clock = self._clock
        if clock.allow == _FAIL:
            raise clock.fail_processing_time("delete_processing_time_timer()")
        if type(timestamp) is not int:
            timestamp = check_timestamp(
                timestamp, "delete_processing_time_timer()", clock.operator_name
            )
        self._processing_queue.delete(timestamp, self._namespace)


class NonKeyedTimerService(TimerService):
    """Timer service of non-keyed functions: clocks only; timers need ``key_by``."""

    __slots__ = ("_clock",)

    def __init__(self, clock: OperatorClock) -> None:
        self._clock = clock

    def current_processing_time(self) -> int:
        return self._clock.current_processing_time()

    def current_watermark(self) -> int:
        return self._clock.watermark

    def _refuse(self, what: str) -> StateError:
        return StateError(
            f"operator {self._clock.operator_name!r}: {what} is only supported on keyed "
            f"streams; timers belong to a key, so apply key_by(...) before process(...)"
        )

    def register_event_time_timer(self, timestamp: int) -> None:
        raise self._refuse("register_event_time_timer()")

    def register_processing_time_timer(self, timestamp: int) -> None:
        if self._clock.allow == _FAIL:
            raise self._clock.fail_processing_time("register_processing_time_timer()")
        raise self._refuse("register_processing_time_timer()")

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise self._refuse("delete_event_time_timer()")

    def delete_processing_time_timer(self, timestamp: int) -> None:
        raise self._refuse("delete_processing_time_timer()")
