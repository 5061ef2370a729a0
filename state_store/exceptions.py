"""The exception root of the whole product, and the errors of the state layer.

:class:`DataStreamError` is the root of every error pyspark-datastream raises. Each layer
defines the errors it raises in its own ``exceptions`` module (this one,
``operators.exceptions``, ``savepoint.exceptions``, ``translation.exceptions``), and the
package root re-exports them all. The classes here are raised by the state layer itself
(serializers, state, backends, storage, the savepoint entry format) and by every layer
above it. Foreign errors are wrapped ``from exc`` so the cause stays visible.
"""

from __future__ import annotations

__all__ = [
    "DataStreamError",
    "SerializationError",
    "StateError",
    "StateDescriptorError",
    "StateBackendError",
    "StorageError",
    "KeyGroupError",
    "GraphBuildError",
    "ConfigurationError",
    "SavepointError",
    "SavepointFormatError",
    "IncompatibleStateError",
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


class GraphBuildError(DataStreamError, ValueError):
    """The job graph is invalid; raised while the program is being defined (by the type
    information of the state layer as much as by the API)."""


class ConfigurationError(DataStreamError, ValueError):
    """A configuration key has an invalid value (the state layer checks storage URIs,
    backend names and TTL settings; the plan checks the rest)."""


class SavepointError(DataStreamError):
    """Root of savepoint errors."""


class SavepointFormatError(SavepointError, ValueError):
    """Savepoint metadata or rows are unreadable or of an unknown format version."""


class IncompatibleStateError(SavepointError, ValueError):
    """A stored state's serializer snapshot does not match the program's."""
