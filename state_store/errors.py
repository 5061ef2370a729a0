"""One exception root for the whole product, with precise subclasses.

Every layer (state_store, operators, plugin) raises these; foreign errors are
wrapped ``from exc`` so the cause stays visible.
"""

from __future__ import annotations

__all__ = [
    "DataStreamError",
    "SerializationError",
    "OutputTypeError",
    "StateError",
    "StateDescriptorError",
    "StateBackendError",
    "StorageError",
    "KeyGroupError",
    "BroadcastStateError",
    "GraphBuildError",
    "ConfigurationError",
    "CheckpointRootError",
    "CheckpointMismatchError",
    "JobExecutionError",
    "UserFunctionError",
    "SourceSchemaError",
    "ProcessingTimeError",
    "SavepointError",
    "SavepointNotFoundError",
    "SavepointFormatError",
    "IncompatibleStateError",
    "UnclaimedStateError",
    "SavepointConflictError",
]


class DataStreamError(Exception):
    """Root of every error raised by pyspark-datastream."""


class SerializationError(DataStreamError, ValueError):
    """A value cannot be (de)serialized by the serializer it was given to."""


class StateError(DataStreamError):
    """Misuse of keyed state at run time (no current key, wrong state kind, ...)."""


class StateDescriptorError(StateError, ValueError):
    """A state descriptor is invalid (bad name, missing serializer, ...)."""


class StateBackendError(StateError):
    """A state backend failed (storage error, closed backend, ...)."""


class StorageError(DataStreamError, OSError):
    """Reading or writing a file or object failed (storage unreachable, refused, ...): names
    the operation and the path or URI, the storage's own error as the cause. A missing file
    stays a ``FileNotFoundError``."""


class KeyGroupError(StateError, ValueError):
    """A key group or max-parallelism value is out of range."""


class BroadcastStateError(StateError):
    """Misuse of broadcast state at run time: a write through the read-only view that
    ``process_element`` gets (only ``process_broadcast_element`` may write it)."""


class GraphBuildError(DataStreamError, ValueError):
    """The job graph is invalid; raised while the program is being defined."""


class ConfigurationError(DataStreamError, ValueError):
    """A configuration key has an invalid value."""


class CheckpointRootError(ConfigurationError):
    """A STREAMING job would keep durable state but no checkpoint root is configured
    (``execution.checkpointing.dir`` or Spark's ``spark.sql.streaming.checkpointLocation``)."""


class CheckpointMismatchError(GraphBuildError):
    """A STREAMING job's graph differs from the graph that wrote the checkpoint it would
    resume (another job under the same name and checkpoint root)."""


class JobExecutionError(DataStreamError, RuntimeError):
    """A job failed while running on Spark."""


class OutputTypeError(JobExecutionError, SerializationError):
    """A record does not fit the ``output_type`` its operator declared (a value of another
    type, a wrong number of fields, an integer out of range): raised where the record's
    column is built, naming the operator, the field, the value and the declared type."""


class SourceSchemaError(JobExecutionError):
    """A source's data no longer has the schema the program reads it with (a column's type
    changed in a newer file): names the column, both types and the file."""


class UserFunctionError(JobExecutionError):
    """A user function raised: the message names the operator, the call and the record,
    then the user function's own traceback frames."""


class ProcessingTimeError(DataStreamError, RuntimeError):
    """Processing time was used where ``pipeline.processing-time.allow`` is FAIL."""


class SavepointError(DataStreamError):
    """Root of savepoint errors."""


class SavepointNotFoundError(SavepointError, FileNotFoundError):
    """The path does not hold a savepoint."""


class SavepointFormatError(SavepointError, ValueError):
    """Savepoint metadata or rows are unreadable or of an unknown format version."""


class IncompatibleStateError(SavepointError, ValueError):
    """A stored state's serializer snapshot does not match the program's."""


class UnclaimedStateError(SavepointError, ValueError):
    """Savepoint state has no matching operator and ignore-unclaimed-state is off."""


class SavepointConflictError(SavepointError, RuntimeError):
    """Another writer committed to the savepoint table concurrently."""
