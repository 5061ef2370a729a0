"""Errors raised when a job's Spark queries are planned, started or resumed."""

from __future__ import annotations

from ..operators.exceptions import JobExecutionError
from ..state_store.exceptions import ConfigurationError, GraphBuildError

__all__ = [
    "CheckpointRootError",
    "CheckpointMismatchError",
    "SourceSchemaError",
    "WorkerEnvironmentError",
]


class CheckpointRootError(ConfigurationError):
    """A STREAMING job would keep durable state but no checkpoint root is configured
    (``execution.checkpointing.dir`` or Spark's ``spark.sql.streaming.checkpointLocation``)."""


class CheckpointMismatchError(GraphBuildError):
    """A STREAMING job's graph differs from the graph that wrote the checkpoint it would
    resume (another job under the same name and checkpoint root)."""


class SourceSchemaError(JobExecutionError):
    """A source's data no longer has the schema the program reads it with (a column's type
    changed in a newer file): names the column, both types and the file."""


class WorkerEnvironmentError(JobExecutionError):
    """Spark's Python workers could not import a module the job needs (they run another
    interpreter than the driver, or one without the package's dependencies)."""
