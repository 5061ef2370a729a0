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
    """How event time is assigned and how far watermarks trail it."""

    def __init__(self, out_of_orderness_ms: Optional[int], kind: str) -> None:
        self.out_of_orderness_ms = out_of_orderness_ms
        self.kind = kind
        self.timestamp_assigner: Optional[TimestampAssigner] = None
        self.idleness_ms: Optional[int] = None

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(0, "monotonous")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Union[Duration, Time, int]) -> WatermarkStrategy:
        ms = to_millis(max_out_of_orderness, "max_out_of_orderness")
        if ms < 0:
            raise GraphBuildError(f"max_out_of_orderness must be >= 0 ms, got {ms}")
        return WatermarkStrategy(ms, "bounded")

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(None, "none")

    def with_timestamp_assigner(
        self, timestamp_assigner: Union[TimestampAssigner, Callable[[Any, int], int]]
    ) -> WatermarkStrategy:
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
        return copy

    def with_idleness(self, idle_timeout: Union[Duration, Time, int]) -> WatermarkStrategy:
        copy = WatermarkStrategy(self.out_of_orderness_ms, self.kind)
        copy.timestamp_assigner = self.timestamp_assigner
        copy.idleness_ms = to_millis(idle_timeout, "idle_timeout")
        return copy

    def __repr__(self) -> str:
        return f"WatermarkStrategy({self.kind}, out_of_orderness_ms={self.out_of_orderness_ms})"
