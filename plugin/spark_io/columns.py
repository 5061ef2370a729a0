"""Spark column helpers for modules that import ``pyspark.sql`` lazily (driver side)."""

from __future__ import annotations

from typing import Any

__all__ = ["col", "lit", "count_all"]


def col(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col(name)


def lit(value: Any) -> Any:
    from pyspark.sql import functions as F

    return F.lit(value)


def count_all() -> Any:
    """``count(1)``: the rows of a group."""
    from pyspark.sql import functions as F

    return F.count(F.lit(1))
