"""Errors of reading, restoring and committing savepoints (the format's own errors,
:class:`SavepointFormatError` and :class:`IncompatibleStateError`, live with the state
layer that decodes the entries)."""

from __future__ import annotations

from ..state_store.exceptions import SavepointError

__all__ = [
    "SavepointNotFoundError",
    "UnclaimedStateError",
    "SavepointConflictError",
]


class SavepointNotFoundError(SavepointError, FileNotFoundError):
    """The path does not hold a savepoint."""


class UnclaimedStateError(SavepointError, ValueError):
    """Savepoint state has no matching operator and ignore-unclaimed-state is off."""


class SavepointConflictError(SavepointError, RuntimeError):
    """Another writer committed to the savepoint table concurrently."""
