"""``WatermarkStrategy`` as in PyFlink.

In BATCH the strategy is ignored (every key sees a perfect watermark); its
out-of-orderness still defines the *final watermark* (max event time minus the
bound) that a BATCH savepoint reports. In STREAMING it becomes Spark's
``withWatermark(ts, delay)``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from ..operators.functions import TimestampAssigner, as_timestamp_assigner
from ..state_store.exceptions import GraphBuildError
from .time import Duration, Time, to_millis

__all__ = ["WatermarkStrategy", "TimestampAssigner"]


class WatermarkStrategy:
    """How event time is assigned and how far watermarks trail it. Made by
    ``for_monotonous_timestamps()``, ``for_bounded_out_of_orderness(...)`` or
    ``no_watermarks()``; not constructed directly.
    """

    def __init__(self, out_of_orderness_ms: Optional[int], kind: str) -> None:
        self.out_of_orderness_ms = out_of_orderness_ms
        self.kind = kind
        self.timestamp_assigner: Optional[TimestampAssigner] = None
        self.idleness_ms: Optional[int] = None
        #: (group, max drift ms, update interval ms) of with_watermark_alignment, kept only
        self.alignment: Optional[tuple[str, int, int]] = None

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Watermarks for ascending timestamps (an out-of-orderness of 0).

        Returns:
            The strategy.
        """
        return WatermarkStrategy(0, "monotonous")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Union[Duration, Time, int]) -> WatermarkStrategy:
        """Watermarks trailing the largest timestamp seen by ``max_out_of_orderness``.

        Args:
            max_out_of_orderness: How late records may be: ``Duration``, ``Time`` or int ms, >= 0.

        Returns:
            The strategy.

        Raises:
            GraphBuildError: The value is of another type or negative.

        Example:
            >>> strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
            ...             .with_timestamp_assigner(lambda event, ts: event[2]))
        """
        ms = to_millis(max_out_of_orderness, "max_out_of_orderness")
        if ms < 0:
            raise GraphBuildError(f"max_out_of_orderness must be >= 0 ms, got {ms}")
        return WatermarkStrategy(ms, "bounded")

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No watermarks (PyFlink's ``no_watermarks``): no out-of-orderness bound.

        Returns:
            The strategy.
        """
        return WatermarkStrategy(None, "none")

    def with_timestamp_assigner(
        self, timestamp_assigner: Union[TimestampAssigner, Callable[[Any, int], int]]
    ) -> WatermarkStrategy:
        """This strategy with a timestamp assigner.

        Args:
            timestamp_assigner: A ``TimestampAssigner`` or a callable ``(value, record_timestamp)
                -> timestamp ms``.

        Returns:
            A new strategy.

        Raises:
            GraphBuildError: ``timestamp_assigner`` is neither.
        """
        if isinstance(timestamp_assigner, TimestampAssigner) or callable(timestamp_assigner):
            assigner = as_timestamp_assigner(timestamp_assigner)
        else:
            raise GraphBuildError(
                "with_timestamp_assigner needs a TimestampAssigner or a callable "
                f"(value, record_timestamp) -> int, got {timestamp_assigner!r}"
            )
        copy = WatermarkStrategy(self.out_of_orderness_ms, self.kind)
        copy.timestamp_assigner = assigner
        copy.idleness_ms = self.idleness_ms
        copy.alignment = self.alignment
        return copy

    def with_idleness(self, idle_timeout: Union[Duration, Time, int]) -> WatermarkStrategy:
        """This strategy with an idleness timeout, checked and kept; it has no other effect here.

        Args:
            idle_timeout: ``Duration``, ``Time`` or int ms.

        Returns:
            A new strategy.

        Raises:
            GraphBuildError: ``idle_timeout`` is of another type.
        """
        copy = WatermarkStrategy(self.out_of_orderness_ms, self.kind)
        copy.timestamp_assigner = self.timestamp_assigner
        copy.idleness_ms = to_millis(idle_timeout, "idle_timeout")
        copy.alignment = self.alignment
        return copy

    def with_watermark_alignment(self, watermark_group: str,
                                 max_allowed_watermark_drift: Union[Duration, Time, int],
                                 update_interval: Optional[Union[Duration, Time, int]] = None
                                 ) -> WatermarkStrategy:
        """This strategy with Flink's watermark alignment, checked and kept; no other effect.
        Flink pauses a source whose watermark runs ahead of its group's by more than the
        drift, to bound the state the faster source makes others buffer; the combined
        watermark is the slowest input's either way, so no result changes, and a Spark
        query reads each micro-batch's input to its end.

        Args:
            watermark_group: The group's name (non-empty).
            max_allowed_watermark_drift: ``Duration``, ``Time`` or int ms.
            update_interval: How often Flink aligns (default 1 s).

        Returns:
            A new strategy.

        Raises:
            GraphBuildError: an empty group or a drift or interval of another type.
        """
        if not isinstance(watermark_group, str) or not watermark_group:
            raise GraphBuildError(f"with_watermark_alignment needs a non-empty watermark_group, "
                                  f"got {watermark_group!r}")
        copy = WatermarkStrategy(self.out_of_orderness_ms, self.kind)
        copy.timestamp_assigner = self.timestamp_assigner
        copy.idleness_ms = self.idleness_ms
        copy.alignment = (watermark_group,
                          to_millis(max_allowed_watermark_drift, "max_allowed_watermark_drift"),
                          1000 if update_interval is None
                          else to_millis(update_interval, "update_interval"))
        return copy

    def __repr__(self) -> str:
        return f"WatermarkStrategy({self.kind}, out_of_orderness_ms={self.out_of_orderness_ms})"
