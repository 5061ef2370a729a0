"""Savepoints as Delta tables in the unified keyed format: write, read, bootstrap, inspect.

Driver side. Users read a savepoint's state with ``Savepoint`` and bootstrap or rewrite
one with ``SavepointWriter``; the translation layer writes and restores job state through
the functions below, and the CLI inspects savepoints.
"""

from __future__ import annotations

from .core import (
    Savepoint,
    SavepointWriter,
    format_inspection,
    inspect_savepoint,
    load_operator_state,
    read_metadata,
    savepoint_versions,
    write_savepoint,
)

__all__ = [
    "Savepoint",
    "SavepointWriter",
    "format_inspection",
    "inspect_savepoint",
    "load_operator_state",
    "read_metadata",
    "savepoint_versions",
    "write_savepoint",
]
