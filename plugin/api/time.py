"""``Duration`` and ``Time`` as in PyFlink; both convert to milliseconds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..state_store.exceptions import GraphBuildError

__all__ = ["Duration", "Time", "to_millis"]


@dataclass(frozen=True, order=True)
class Duration:
    """A span of time with millisecond precision (``Duration.of_seconds(5)``)."""

    millis: int

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(int(millis))

    @staticmethod
    def of_seconds(seconds: float) -> Duration:
        return Duration(int(round(seconds * 1000)))

    @staticmethod
    def of_minutes(minutes: float) -> Duration:
        return Duration(int(round(minutes * 60_000)))

    @staticmethod
    def of_hours(hours: float) -> Duration:
        return Duration(int(round(hours * 3_600_000)))

    @staticmethod
    def of_days(days: float) -> Duration:
        return Duration(int(round(days * 86_400_000)))

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(int(nanos) // 1_000_000)

    @staticmethod
    def zero() -> Duration:
        return Duration(0)

    def to_milliseconds(self) -> int:
        return self.millis


@dataclass(frozen=True, order=True)
class Time:
    """PyFlink's window-size ``Time`` (``Time.seconds(10)``)."""

    millis: int

    @staticmethod
    def milliseconds(value: int) -> Time:
        return Time(int(value))

    @staticmethod
    def seconds(value: float) -> Time:
        return Time(int(round(value * 1000)))

    @staticmethod
    def minutes(value: float) -> Time:
        return Time(int(round(value * 60_000)))

    @staticmethod
    def hours(value: float) -> Time:
        return Time(int(round(value * 3_600_000)))

    @staticmethod
    def days(value: float) -> Time:
        return Time(int(round(value * 86_400_000)))

    def to_milliseconds(self) -> int:
        return self.millis


def to_millis(value: Union[Duration, Time, int], what: str = "duration") -> int:
    """Milliseconds of a ``Duration``, ``Time`` or int; anything else is a GraphBuildError."""
    if isinstance(value, (Duration, Time)):
        return value.millis
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise GraphBuildError(f"{what} must be a Duration, Time or int milliseconds, got {value!r}")
