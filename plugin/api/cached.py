"""``CachedDataStream``: what ``DataStream.cache()`` returns (BATCH)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..plan.graph import Transformation
from .datastream import DataStream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["CachedDataStream"]


class CachedDataStream(DataStream):
    """A stream read from a cached Spark DataFrame of another stream's records. Built by
    ``ds.cache()``; not constructed directly.
    """

    def __init__(self, env: Any, node: Transformation, df: DataFrame) -> None:
        super().__init__(env, node)
        self._df = df

    def invalidate(self) -> None:
        """Drop the cached records (``DataFrame.unpersist``); a later job recomputes them."""
        self._df.unpersist()
