"""Errors the operators raise while a job runs (and that the driver layers re-raise)."""

from __future__ import annotations

from ..state_store.exceptions import DataStreamError, SerializationError, StateError

__all__ = [
    "JobExecutionError",
    "OutputTypeError",
    "UserFunctionError",
    "ProcessingTimeError",
    "BroadcastStateError",
]


class JobExecutionError(DataStreamError, RuntimeError):
    """A job failed while running on Spark."""


class OutputTypeError(JobExecutionError, SerializationError):
    """A record does not fit the ``output_type`` its operator declared (a value of another
    type, a wrong number of fields, an integer out of range): raised where the record's
    column is built, naming the operator, the field, the value and the declared type."""


class UserFunctionError(JobExecutionError):
    """A user function raised: the message names the operator, the call and the record,
    then the user function's own traceback frames."""


class ProcessingTimeError(DataStreamError, RuntimeError):
    """Processing time was used where ``pipeline.processing-time.allow`` is FAIL."""


class BroadcastStateError(StateError):
    """Misuse of broadcast state at run time: a write through the read-only view that
    ``process_element`` gets (only ``process_broadcast_element`` may write it)."""
