"""``Duration`` and ``Time`` as in PyFlink; both convert to milliseconds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..state_store.exceptions import GraphBuildError

__all__ = ["Duration", "Time", "to_millis"]


@dataclass(frozen=True, order=True)
class Duration:
    """A span of time with millisecond precision (``Duration.of_seconds(5)``).

    Args:
        millis: The length in milliseconds (the ``of_*`` factories convert other units).
    """

    millis: int

    @staticmethod
    def of_millis(millis: int) -> Duration:
        """A Duration of ``millis`` milliseconds.

        Args:
            millis: The amount of milliseconds.

        Returns:
            The Duration, held in whole milliseconds.
        """
        return Duration(int(millis))

    @staticmethod
    def of_seconds(seconds: float) -> Duration:
        """A Duration of ``seconds`` seconds (rounded to ms).

        Args:
            seconds: The amount of seconds.

        Returns:
            The Duration, held in whole milliseconds.
        """
        return Duration(int(round(seconds * 1000)))

    @staticmethod
    def of_minutes(minutes: float) -> Duration:
        """A Duration of ``minutes`` minutes (rounded to ms).

        Args:
            minutes: The amount of minutes.

        Returns:
            The Duration, held in whole milliseconds.
        """
        return Duration(int(round(minutes * 60_000)))

    @staticmethod
    def of_hours(hours: float) -> Duration:
        """A Duration of ``hours`` hours (rounded to ms).

        Args:
            hours: The amount of hours.

        Returns:
            The Duration, held in whole milliseconds.
        """
        return Duration(int(round(hours * 3_600_000)))

    @staticmethod
    def of_days(days: float) -> Duration:
        """A Duration of ``days`` days (rounded to ms).

        Args:
            days: The amount of days.

        Returns:
            The Duration, held in whole milliseconds.
        """
        return Duration(int(round(days * 86_400_000)))

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        """A Duration of ``nanos`` nanoseconds (truncated to whole ms).

        Args:
            nanos: The amount of nanoseconds.

        Returns:
            The Duration, held in whole milliseconds.
        """
        return Duration(int(nanos) // 1_000_000)

    @staticmethod
    def zero() -> Duration:
        """The zero Duration.

        Returns:
            ``Duration(0)``.
        """
        return Duration(0)

    def to_milliseconds(self) -> int:
        """The length in milliseconds.

        Returns:
            The milliseconds.
        """
        return self.millis


@dataclass(frozen=True, order=True)
class Time:
    """PyFlink's window-size ``Time`` (``Time.seconds(10)``).

    Args:
        millis: The length in milliseconds (the factories ``seconds``, ``minutes``, ...
            convert other units).
    """

    millis: int

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        """A Time of ``milliseconds`` milliseconds.

        Args:
            milliseconds: The amount of milliseconds.

        Returns:
            The Time, held in whole milliseconds.
        """
        return Time(int(milliseconds))

    @staticmethod
    def seconds(seconds: float) -> Time:
        """A Time of ``seconds`` seconds (rounded to ms).

        Args:
            seconds: The amount of seconds.

        Returns:
            The Time, held in whole milliseconds.
        """
        return Time(int(round(seconds * 1000)))

    @staticmethod
    def minutes(minutes: float) -> Time:
        """A Time of ``minutes`` minutes (rounded to ms).

        Args:
            minutes: The amount of minutes.

        Returns:
            The Time, held in whole milliseconds.
        """
        return Time(int(round(minutes * 60_000)))

    @staticmethod
    def hours(hours: float) -> Time:
        """A Time of ``hours`` hours (rounded to ms).

        Args:
            hours: The amount of hours.

        Returns:
            The Time, held in whole milliseconds.
        """
        return Time(int(round(hours * 3_600_000)))

    @staticmethod
    def days(days: float) -> Time:
        """A Time of ``days`` days (rounded to ms).

        Args:
            days: The amount of days.

        Returns:
            The Time, held in whole milliseconds.
        """
        return Time(int(round(days * 86_400_000)))

    def to_milliseconds(self) -> int:
        """The length in milliseconds.

        Returns:
            The milliseconds.
        """
        return self.millis


def to_millis(value: Union[Duration, Time, int], what: str = "duration") -> int:
    """Milliseconds of a ``Duration``, ``Time`` or int; anything else is a GraphBuildError."""
    if isinstance(value, (Duration, Time)):
        return value.millis
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise GraphBuildError(f"{what} must be a Duration, Time or int milliseconds, got {value!r}")
