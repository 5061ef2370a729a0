"""PyFlink's ``RestartStrategies`` onto Spark's task retries.

Flink restarts a failed job from its last checkpoint; Spark retries a failed task (its
partition of a stage or micro-batch) and a STREAMING query resumes from its checkpoint when
run again. Either way state and output stay exactly-once, so a restart strategy decides
only how many failures a job survives. ``env.set_restart_strategy(...)`` maps it onto
``spark.task.maxFailures`` (a task's attempts) of the session the environment starts:

- ``fixed_delay_restart(n, delay)``: ``n + 1`` attempts; Spark retries at once (the delay
  is kept, not applied).
- ``failure_rate_restart(rate, interval, delay)``: ``rate + 1`` attempts per task, counted
  over the whole job rather than per ``interval`` (fails no later than Flink would).
- ``no_restart()``: 1 attempt.
- ``fall_back_restart()``: the session's own setting.

A local master ``local[N]`` takes its attempts as ``local[N,F]``, which the environment
uses. A session already running keeps its setting: a strategy asking for another number
of attempts is refused with a :class:`ConfigurationError` naming both.
"""

from __future__ import annotations

import datetime
import re
from typing import TYPE_CHECKING, Any, Optional

from ..state_store.exceptions import ConfigurationError
from .time import Duration, Time

__all__ = ["RestartStrategies", "RestartStrategyConfiguration", "local_master_with_attempts",
           "task_attempts"]


def _millis(what: str, value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, (Duration, Time)):
        return value.millis
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ConfigurationError(
        f"{what} must be int milliseconds >= 0, a timedelta or a Duration, got {value!r}")


def _count(what: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigurationError(f"{what} must be an int >= {low}, got {value!r}")
    return value


class RestartStrategyConfiguration:
    """A restart strategy; made by :class:`RestartStrategies`.

    Args:
        description: Flink's description of the strategy.
        attempts: ``spark.task.maxFailures`` it maps onto, None for the session's own.
    """

    def __init__(self, description: str, attempts: Optional[int]) -> None:
        self._description = description
        self._attempts = attempts

    def get_description(self) -> str:
        """The strategy in words.

        Returns:
            The description.
        """
        return self._description

    def task_max_failures(self) -> Optional[int]:
        """The ``spark.task.maxFailures`` this strategy maps onto.

        Returns:
            The number of attempts of a task, or None (the session's own setting).
        """
        return self._attempts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RestartStrategyConfiguration) and \
            type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._description))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._description!r})"


class RestartStrategies:
    """The restart strategies (PyFlink's ``RestartStrategies``; see the module docstring)."""

    class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
        """No restart: a task has one attempt."""

        def __init__(self) -> None:
            super().__init__("Restart deactivated.", 1)

    class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        """``restart_attempts`` restarts: a task has ``restart_attempts + 1`` attempts."""

        def __init__(self, restart_attempts: int, delay_between_attempts_interval: int) -> None:
            self.restart_attempts = _count("fixed_delay_restart restart_attempts",
                                           restart_attempts, 0)
            self.delay_between_attempts_interval = _millis(
                "fixed_delay_restart delay_between_attempts", delay_between_attempts_interval)
            super().__init__(
                f"Restart with fixed delay ({self.delay_between_attempts_interval} ms). "
                f"#{self.restart_attempts} restart attempts.", self.restart_attempts + 1)

        def get_restart_attempts(self) -> int:
            """The restarts allowed.

            Returns:
                The number.
            """
            return self.restart_attempts

        def get_delay_between_attempts_interval(self) -> datetime.timedelta:
            """The delay between restarts (kept, not applied).

            Returns:
                The delay.
            """
            return datetime.timedelta(milliseconds=self.delay_between_attempts_interval)

    class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
        """At most ``max_failure_rate`` failures: a task has ``max_failure_rate + 1`` attempts."""

        def __init__(self, max_failure_rate: int, failure_interval: int,
                     delay_between_attempts_interval: int) -> None:
            self.max_failure_rate = _count("failure_rate_restart failure_rate",
                                           max_failure_rate, 1)
            self.failure_interval = _millis("failure_rate_restart failure_interval",
                                            failure_interval)
            self.delay_between_attempts_interval = _millis(
                "failure_rate_restart delay_interval", delay_between_attempts_interval)
            super().__init__(
                f"Failure rate restart with maximum of {self.max_failure_rate} failures within "
                f"interval {self.failure_interval} ms and fixed delay "
                f"{self.delay_between_attempts_interval} ms.", self.max_failure_rate + 1)

        def get_max_failure_rate(self) -> int:
            """The failures allowed.

            Returns:
                The number.
            """
            return self.max_failure_rate

        def get_failure_interval(self) -> datetime.timedelta:
            """Flink's interval the failures are counted in (counted over the job here).

            Returns:
                The interval.
            """
            return datetime.timedelta(milliseconds=self.failure_interval)

        def get_delay_between_attempts_interval(self) -> datetime.timedelta:
            """The delay between restarts (kept, not applied).

            Returns:
                The delay.
            """
            return datetime.timedelta(milliseconds=self.delay_between_attempts_interval)

    class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
        """The cluster's (here: the Spark session's) own setting."""

        def __init__(self) -> None:
            super().__init__("Cluster level default restart strategy", None)

    @staticmethod
    def no_restart() -> RestartStrategyConfiguration:
        """No restart (``spark.task.maxFailures`` 1).

        Returns:
            The strategy.
        """
        return RestartStrategies.NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> RestartStrategyConfiguration:
        """The Spark session's own ``spark.task.maxFailures``.

        Returns:
            The strategy.
        """
        return RestartStrategies.FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(restart_attempts: int, delay_between_attempts: int
                            ) -> RestartStrategyConfiguration:
        """``restart_attempts`` restarts (``spark.task.maxFailures`` ``restart_attempts + 1``).

        Args:
            restart_attempts: an int >= 0.
            delay_between_attempts: int milliseconds, a timedelta or a Duration (kept, not
                applied: Spark retries at once).

        Returns:
            The strategy.

        Raises:
            ConfigurationError: a bad count or delay.
        """
        return RestartStrategies.FixedDelayRestartStrategyConfiguration(
            restart_attempts, delay_between_attempts)

    @staticmethod
    def failure_rate_restart(failure_rate: int, failure_interval: int, delay_interval: int
                             ) -> RestartStrategyConfiguration:
        """At most ``failure_rate`` failures (``spark.task.maxFailures`` ``failure_rate + 1``,
        counted per task over the job).

        Args:
            failure_rate: an int >= 1.
            failure_interval: int milliseconds, a timedelta or a Duration.
            delay_interval: the same (kept, not applied).

        Returns:
            The strategy.

        Raises:
            ConfigurationError: a bad count or interval.
        """
        return RestartStrategies.FailureRateRestartStrategyConfiguration(
            failure_rate, failure_interval, delay_interval)


_LOCAL = re.compile(r"^local\[(\*|\d+)(?:,(\d+))?\]$")


def local_master_with_attempts(master: str, conf: dict[str, str]) -> str:
    """``local[N]`` as ``local[N,F]`` when ``conf`` sets ``spark.task.maxFailures`` F (a local
    master ignores that setting and takes its attempts from its own name).

    Args:
        master: The master URL.
        conf: The settings the session starts with.

    Returns:
        The master URL to use.
    """
    attempts = conf.get("spark.task.maxFailures")
    match = _LOCAL.match(master)
    if attempts is None or match is None:
        return master
    return f"local[{match.group(1)},{attempts}]"


def task_attempts(spark: Any) -> int:
    """The attempts a task of ``spark``'s jobs gets.

    Args:
        spark: A SparkSession.

    Returns:
        ``F`` of a ``local[N,F]`` master (1 for ``local[N]``), else ``spark.task.maxFailures``
        (Spark's default 4).
    """
    master = spark.conf.get("spark.master", "") or ""
    match = _LOCAL.match(master)
    if match is not None:
        return int(match.group(2) or 1)
    return int(spark.conf.get("spark.task.maxFailures", "4") or 4)


class RestartStrategyCalls:
    """``env.set_restart_strategy`` / ``get_restart_strategy`` (PyFlink 1.x's calls)."""

    _restart_strategy: Optional[RestartStrategyConfiguration] = None

    if TYPE_CHECKING:  # provided by SessionResources
        def _running_session(self) -> Any: ...

    def set_restart_strategy(self, restart_strategy_configuration: RestartStrategyConfiguration
                             ) -> None:
        """Set the restart strategy: ``spark.task.maxFailures`` of the session this
        environment starts (see the module docstring).

        Args:
            restart_strategy_configuration: from :class:`RestartStrategies`.

        Raises:
            ConfigurationError: not a strategy, or a session already runs with another
                number of task attempts.
        """
        strategy = restart_strategy_configuration
        if not isinstance(strategy, RestartStrategyConfiguration):
            raise ConfigurationError(
                f"set_restart_strategy needs a RestartStrategies configuration, got "
                f"{strategy!r:.80}")
        attempts = strategy.task_max_failures()
        running = self._running_session()
        if running is not None and attempts is not None:
            have = task_attempts(running)
            if have != attempts:
                raise ConfigurationError(
                    f"set_restart_strategy({strategy!r}) means spark.task.maxFailures="
                    f"{attempts}, but the running Spark session gives each task {have} "
                    f"attempt(s) and takes the setting only when it starts: set "
                    f"spark.task.maxFailures (local[N,{attempts}] for a local master) when "
                    f"building the session")
        self._restart_strategy = strategy

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        """The restart strategy set (default: the session's own).

        Returns:
            The strategy.
        """
        return self._restart_strategy or RestartStrategies.fall_back_restart()

    def _restart_conf(self) -> dict[str, str]:
        """``spark.task.maxFailures`` for a session to start (a running one was checked)."""
        attempts = None if self._restart_strategy is None else \
            self._restart_strategy.task_max_failures()
        if attempts is None or self._running_session() is not None:
            return {}
        return {"spark.task.maxFailures": str(attempts)}
