"""``StateTtlConfig``: state time-to-live settings with PyFlink's names and defaults.

A program builds one with ``StateTtlConfig.new_builder(Time.seconds(10))...build()`` and
passes it to ``descriptor.enable_time_to_live(config)``. The builder, the nested enums
(``UpdateType``, ``StateVisibility``, ``TtlTimeCharacteristic``) and the cleanup strategies
(``CleanupStrategies`` with its ``IncrementalCleanupStrategy`` and
``RocksdbCompactFilterCleanupStrategy``) are those of ``pyflink.datastream.state``.

Values are checked where they are given: a TTL that is not a ``Time``/``Duration`` (an
``int`` such as ``new_builder(5)``), a TTL of zero or less, an enum of the wrong type or
a cleanup size below one raises :class:`~.exceptions.ConfigurationError` naming the method
and the value. The configuration only describes behaviour; how the state backends apply
it lives in :mod:`.ttl`.
"""

from __future__ import annotations

import datetime
from enum import Enum
from typing import Any, Optional

from .exceptions import ConfigurationError

__all__ = ["StateTtlConfig", "ttl_millis"]


def ttl_millis(value: Any, where: str, *, allow_zero: bool = False) -> int:
    """Milliseconds of a ``Time``/``Duration`` (anything with ``to_milliseconds()``) or a
    ``datetime.timedelta``; ``ConfigurationError`` naming ``where`` for anything else, and for
    a negative span (or zero, unless ``allow_zero``)."""
    millis: Any
    if isinstance(value, datetime.timedelta):
        millis = value // datetime.timedelta(milliseconds=1)
    else:
        convert = getattr(value, "to_milliseconds", None)
        if isinstance(value, (int, float, str, bytes)) or not callable(convert):
            raise ConfigurationError(
                f"{where} needs a Time or Duration (e.g. Time.seconds(10), "
                f"Duration.of_minutes(5)), got {type(value).__name__} {value!r:.60}"
            )
        millis = convert()
    if not isinstance(millis, int) or isinstance(millis, bool):
        raise ConfigurationError(
            f"{where}: {value!r:.60}.to_milliseconds() gave {millis!r:.40}, not an int"
        )
    if millis < 0 or (millis == 0 and not allow_zero):
        raise ConfigurationError(
            f"{where} must be {'zero or more' if allow_zero else 'positive'}, got {value!r:.60} "
            f"({millis} ms)"
        )
    return millis


def _check_enum(value: Any, enum: type[Enum], where: str) -> Any:
    if not isinstance(value, enum):
        raise ConfigurationError(
            f"{where} needs a StateTtlConfig.{enum.__name__} "
            f"({', '.join(m.name for m in enum)}), got {type(value).__name__} {value!r:.60}"
        )
    return value


class StateTtlConfig:
    """Configuration of state time-to-live (processing time). Built by
    ``StateTtlConfig.new_builder(ttl)...build()``; not constructed directly.
    """

    class UpdateType(Enum):
        """When the last-access timestamp (which prolongs the TTL) is updated."""

        #: TTL is disabled: state does not expire.
        Disabled = 0
        #: Set when the value is created and on every write.
        OnCreateAndWrite = 1
        #: As OnCreateAndWrite, and also on every read.
        OnReadAndWrite = 2

    class StateVisibility(Enum):
        """Whether an expired value that is not cleaned up yet may be returned."""

        #: Return an expired value while it is still stored (a read cleans it up).
        ReturnExpiredIfNotCleanedUp = 0
        #: Never return an expired value.
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(Enum):
        """The time scale of the TTL (only processing time, as in Flink)."""

        ProcessingTime = 0

    class CleanupStrategies:
        """When expired state is removed besides on read: in full snapshots, incrementally,
        or by the RocksDB compaction filter; background cleanup is on by default."""

        class Strategies(Enum):
            """The strategy slots of :class:`CleanupStrategies`."""

            FULL_STATE_SCAN_SNAPSHOT = 0
            INCREMENTAL_CLEANUP = 1
            ROCKSDB_COMPACTION_FILTER = 2

        class CleanupStrategy:
            """Base of the cleanup strategy settings."""

            def __eq__(self, other: object) -> bool:
                return type(other) is type(self) and vars(other) == vars(self)

            def __hash__(self) -> int:
                return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

            def __repr__(self) -> str:
                fields = ", ".join(f"{k.lstrip('_')}={v!r}" for k, v in vars(self).items())
                return f"{type(self).__name__}({fields})"

        class EmptyCleanupStrategy(CleanupStrategy):
            """A strategy without settings (full-snapshot cleanup)."""

        class IncrementalCleanupStrategy(CleanupStrategy):
            """Check ``cleanup_size`` keys of the state on each access of it (and, with
            ``run_cleanup_for_every_record``, for each record)."""

            def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> None:
                where = "StateTtlConfig cleanup_incrementally(cleanup_size, ...)"
                if not isinstance(cleanup_size, int) or isinstance(cleanup_size, bool):
                    raise ConfigurationError(
                        f"{where} needs an int, got {type(cleanup_size).__name__} "
                        f"{cleanup_size!r:.40}")
                if cleanup_size <= 0:
                    raise ConfigurationError(
                        f"{where}: the number of keys checked per cleanup must be positive, "
                        f"got {cleanup_size}")
                if not isinstance(run_cleanup_for_every_record, bool):
                    raise ConfigurationError(
                        "StateTtlConfig cleanup_incrementally(..., run_cleanup_for_every_record) "
                        f"needs a bool, got {type(run_cleanup_for_every_record).__name__} "
                        f"{run_cleanup_for_every_record!r:.40}")
                self._cleanup_size = cleanup_size
                self._run_cleanup_for_every_record = run_cleanup_for_every_record

            def get_cleanup_size(self) -> int:
                """Keys checked per cleanup.

                Returns:
                    The number of keys.
                """
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                """Whether a cleanup also runs for every record.

                Returns:
                    The flag.
                """
                return self._run_cleanup_for_every_record

        class RocksdbCompactFilterCleanupStrategy(CleanupStrategy):
            """RocksDB compaction filter settings: query the time every
            ``query_time_after_num_entries`` entries; periodic compaction interval."""

            def __init__(self, query_time_after_num_entries: int,
                         periodic_compaction_time: Any = None) -> None:
                where = "StateTtlConfig cleanup_in_rocksdb_compact_filter"
                if (not isinstance(query_time_after_num_entries, int)
                        or isinstance(query_time_after_num_entries, bool)
                        or query_time_after_num_entries < 0):
                    raise ConfigurationError(
                        f"{where}(query_time_after_num_entries, ...) needs an int >= 0, got "
                        f"{type(query_time_after_num_entries).__name__} "
                        f"{query_time_after_num_entries!r:.40}")
                if periodic_compaction_time is None:
                    periodic_compaction_time = datetime.timedelta(days=30)
                else:
                    ttl_millis(periodic_compaction_time,
                               f"{where}(..., periodic_compaction_time)", allow_zero=True)
                self._query_time_after_num_entries = query_time_after_num_entries
                self._periodic_compaction_time = periodic_compaction_time

            def get_query_time_after_num_entries(self) -> int:
                """Entries the compaction filter processes between queries of the current time.

                Returns:
                    The number of entries.
                """
                return self._query_time_after_num_entries

            def get_periodic_compaction_time(self) -> Any:
                """The periodic compaction interval as given (default: 30 days).

                Returns:
                    The interval, or the 30-day default.
                """
                return self._periodic_compaction_time

        EMPTY_STRATEGY: EmptyCleanupStrategy

        def __init__(self, strategies: dict[Any, Any], is_cleanup_in_background: bool) -> None:
            self._strategies = dict(strategies)
            self._is_cleanup_in_background = bool(is_cleanup_in_background)

        def is_cleanup_in_background(self) -> bool:
            """Whether background cleanup is on (the default).

            Returns:
                True unless ``disable_cleanup_in_background()`` was called.
            """
            return self._is_cleanup_in_background

        def in_full_snapshot(self) -> bool:
            """True when expired entries are left out of full snapshots.

            Returns:
                Whether full-snapshot cleanup is configured.
            """
            return self.Strategies.FULL_STATE_SCAN_SNAPSHOT in self._strategies

        def get_incremental_cleanup_strategy(self) -> Optional[Any]:
            """The configured incremental strategy; with background cleanup (the default)
            and none configured, ``IncrementalCleanupStrategy(5, False)``; else None.

            Returns:
                The strategy, or None.
            """
            default = (self.IncrementalCleanupStrategy(5, False)
                       if self._is_cleanup_in_background else None)
            return self._strategies.get(self.Strategies.INCREMENTAL_CLEANUP, default)

        def get_rocksdb_compact_filter_cleanup_strategy(self) -> Optional[Any]:
            """The configured compaction filter strategy; with background cleanup (the
            default) and none configured, ``RocksdbCompactFilterCleanupStrategy(1000)``.

            Returns:
                The strategy, or None.
            """
            default = (self.RocksdbCompactFilterCleanupStrategy(1000)
                       if self._is_cleanup_in_background else None)
            return self._strategies.get(self.Strategies.ROCKSDB_COMPACTION_FILTER, default)

        def __eq__(self, other: object) -> bool:
            return (isinstance(other, StateTtlConfig.CleanupStrategies)
                    and other._strategies == self._strategies
                    and other._is_cleanup_in_background == self._is_cleanup_in_background)

        def __hash__(self) -> int:
            return hash((self._is_cleanup_in_background, frozenset(self._strategies)))

        def __repr__(self) -> str:
            names = sorted(s.name for s in self._strategies)
            return (f"CleanupStrategies(strategies={names}, "
                    f"is_cleanup_in_background={self._is_cleanup_in_background})")

    def __init__(self, update_type: UpdateType, state_visibility: StateVisibility,
                 ttl_time_characteristic: TtlTimeCharacteristic, ttl: Any,
                 cleanup_strategies: CleanupStrategies) -> None:
        self._update_type = _check_enum(update_type, StateTtlConfig.UpdateType,
                                        "StateTtlConfig(update_type)")
        self._state_visibility = _check_enum(state_visibility, StateTtlConfig.StateVisibility,
                                             "StateTtlConfig(state_visibility)")
        self._ttl_time_characteristic = _check_enum(
            ttl_time_characteristic, StateTtlConfig.TtlTimeCharacteristic,
            "StateTtlConfig(ttl_time_characteristic)")
        self._ttl_ms = ttl_millis(ttl, "StateTtlConfig ttl")
        self._ttl = ttl
        if not isinstance(cleanup_strategies, StateTtlConfig.CleanupStrategies):
            raise ConfigurationError(
                "StateTtlConfig(cleanup_strategies) needs StateTtlConfig.CleanupStrategies, got "
                f"{type(cleanup_strategies).__name__}")
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: Any) -> StateTtlConfig.Builder:
        """A builder with time-to-live ``ttl`` (a ``Time`` or ``Duration``, positive).

        Args:
            ttl: The time-to-live.

        Returns:
            A ``StateTtlConfig.Builder``.

        Raises:
            ConfigurationError: ``ttl`` is not a positive Time, Duration or timedelta.

        Example:
            >>> ttl = StateTtlConfig.new_builder(Time.minutes(10)).build()
            >>> ttl.get_ttl_millis()
            600000
        """
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        """When the last-access timestamp is updated.

        Returns:
            The ``UpdateType``.
        """
        return self._update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        """Whether expired values that are not yet cleaned up can be read.

        Returns:
            The ``StateVisibility``.
        """
        return self._state_visibility

    def get_ttl(self) -> Any:
        """The time-to-live as given to the builder (a ``Time`` or ``Duration``).

        Returns:
            The ``Time`` or ``Duration``.
        """
        return self._ttl

    def get_ttl_millis(self) -> int:
        """The time-to-live in milliseconds.

        Returns:
            The milliseconds.
        """
        return self._ttl_ms

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        """The clock TTL is measured on (processing time, as in Flink).

        Returns:
            The ``TtlTimeCharacteristic``.
        """
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        """False for ``UpdateType.Disabled``: such a descriptor behaves as one without TTL.

        Returns:
            Whether TTL applies.
        """
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> StateTtlConfig.CleanupStrategies:
        """The cleanup strategies set on the builder.

        Returns:
            The ``CleanupStrategies``.
        """
        return self._cleanup_strategies

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StateTtlConfig)
                and (other._update_type, other._state_visibility, other._ttl_time_characteristic,
                     other._ttl_ms, other._cleanup_strategies)
                == (self._update_type, self._state_visibility, self._ttl_time_characteristic,
                    self._ttl_ms, self._cleanup_strategies))

    def __hash__(self) -> int:
        return hash((self._update_type, self._state_visibility, self._ttl_ms))

    def __repr__(self) -> str:
        return (f"StateTtlConfig<update_type={self._update_type}, "
                f"state_visibility={self._state_visibility}, "
                f"ttl_time_characteristic={self._ttl_time_characteristic}, ttl={self._ttl!r}, "
                f"cleanup_strategies={self._cleanup_strategies!r}>")

    class Builder:
        """Builder of :class:`StateTtlConfig`; every setter returns the builder."""

        def __init__(self, ttl: Any) -> None:
            ttl_millis(ttl, "StateTtlConfig.new_builder(ttl)")
            self._ttl = ttl
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._state_visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._ttl_time_characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._is_cleanup_in_background = True
            self._strategies: dict[Any, Any] = {}

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            """When the last-access timestamp is updated (default ``OnCreateAndWrite``).

            Args:
                update_type: A ``StateTtlConfig.UpdateType``.

            Returns:
                This builder.

            Raises:
                ConfigurationError: The value is not a member of the enum.
            """
            self._update_type = _check_enum(update_type, StateTtlConfig.UpdateType,
                                            "StateTtlConfig.Builder.set_update_type()")
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            """Update the last-access timestamp on create and write (``OnCreateAndWrite``).

            Returns:
                This builder.
            """
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            """Update the last-access timestamp on read and write too (``OnReadAndWrite``).

            Returns:
                This builder.
            """
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, state_visibility: StateTtlConfig.StateVisibility
        ) -> StateTtlConfig.Builder:
            """Whether expired values may be returned (default ``NeverReturnExpired``).

            Args:
                state_visibility: A ``StateTtlConfig.StateVisibility``.

            Returns:
                This builder.

            Raises:
                ConfigurationError: The value is not a member of the enum.
            """
            self._state_visibility = _check_enum(
                state_visibility, StateTtlConfig.StateVisibility,
                "StateTtlConfig.Builder.set_state_visibility()")
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            """Return expired values that are not cleaned up yet (``ReturnExpiredIfNotCleanedUp``).

            Returns:
                This builder.
            """
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            """Never return expired values (``NeverReturnExpired``, the default).

            Returns:
                This builder.
            """
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            """The time scale (only ``ProcessingTime`` exists).

            Args:
                ttl_time_characteristic: ``StateTtlConfig.TtlTimeCharacteristic.ProcessingTime``.

            Returns:
                This builder.

            Raises:
                ConfigurationError: The value is not a member of the enum.
            """
            self._ttl_time_characteristic = _check_enum(
                ttl_time_characteristic, StateTtlConfig.TtlTimeCharacteristic,
                "StateTtlConfig.Builder.set_ttl_time_characteristic()")
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            """Measure TTL in processing time (the only time scale).

            Returns:
                This builder.
            """
            return self.set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            """Leave expired entries out of full snapshots (savepoints; the heap backend's
            STREAMING commits).

            Returns:
                This builder.
            """
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.FULL_STATE_SCAN_SNAPSHOT] = (
                strategies.EMPTY_STRATEGY)
            return self

        def cleanup_incrementally(self, cleanup_size: int,
                                  run_cleanup_for_every_record: bool) -> StateTtlConfig.Builder:
            """Check ``cleanup_size`` keys for expiry on each access of the state (and for
            every record with ``run_cleanup_for_every_record``); heap backend.

            Args:
                cleanup_size: Keys checked per cleanup, an int > 0.
                run_cleanup_for_every_record: Also clean up for every record (a bool).

            Returns:
                This builder.

            Raises:
                ConfigurationError: An argument has the wrong type or ``cleanup_size`` <= 0.
            """
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.INCREMENTAL_CLEANUP] = (
                strategies.IncrementalCleanupStrategy(cleanup_size, run_cleanup_for_every_record))
            return self

        def cleanup_in_rocksdb_compact_filter(
            self, query_time_after_num_entries: int, periodic_compaction_time: Any = None
        ) -> StateTtlConfig.Builder:
            """RocksDB background cleanup (periodic compaction default: 30 days).

            Args:
                query_time_after_num_entries: Entries between queries of the current time, an int
                    >= 0.
                periodic_compaction_time: The periodic compaction interval (Time or Duration), or
                    None for the default.

            Returns:
                This builder.

            Raises:
                ConfigurationError: An argument has the wrong type or is negative.
            """
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.ROCKSDB_COMPACTION_FILTER] = (
                strategies.RocksdbCompactFilterCleanupStrategy(
                    query_time_after_num_entries, periodic_compaction_time))
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """No default background cleanup; explicitly configured strategies stay.

            Returns:
                This builder.
            """
            self._is_cleanup_in_background = False
            return self

        def set_ttl(self, ttl: Any) -> StateTtlConfig.Builder:
            """Replace the time-to-live (a ``Time`` or ``Duration``, positive).

            Args:
                ttl: The time-to-live.

            Returns:
                This builder.

            Raises:
                ConfigurationError: ``ttl`` is not a positive Time, Duration or timedelta.
            """
            ttl_millis(ttl, "StateTtlConfig.Builder.set_ttl(ttl)")
            self._ttl = ttl
            return self

        def build(self) -> StateTtlConfig:
            """The ``StateTtlConfig`` of the settings made.

            Returns:
                The config, for ``StateDescriptor.enable_time_to_live``.
            """
            return StateTtlConfig(
                self._update_type, self._state_visibility, self._ttl_time_characteristic,
                self._ttl,
                StateTtlConfig.CleanupStrategies(self._strategies, self._is_cleanup_in_background),
            )


StateTtlConfig.CleanupStrategies.EMPTY_STRATEGY = StateTtlConfig.CleanupStrategies.EmptyCleanupStrategy()
