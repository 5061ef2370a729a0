"""Errors about the Spark the package runs on: a pyspark it does not support, a feature the
session's Spark line lacks."""

from __future__ import annotations

from ..state_store.exceptions import ConfigurationError, GraphBuildError

__all__ = [
    "SparkVersionError",
    "UnsupportedSparkFeatureError",
]


class SparkVersionError(ConfigurationError, ImportError):
    """No pyspark is importable, or its Spark line is not one the package supports; raised
    when ``pyspark_datastream`` is imported. Names the version found, the supported lines
    and how to install."""


class UnsupportedSparkFeatureError(GraphBuildError):
    """A job uses a feature that the session's Spark line lacks; raised when the job is
    built, naming the feature, the line and the lines that have it."""
