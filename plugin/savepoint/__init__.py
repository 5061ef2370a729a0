"""Savepoints as Delta tables in the unified keyed format: write, read, bootstrap, inspect.

Driver side. Users read a savepoint's state with ``Savepoint`` and bootstrap or rewrite
one with ``SavepointWriter``; the translation layer writes and restores job state through
the functions below, and the CLI inspects savepoints.

Modules: ``format`` (the table layout and metadata, pure Python), ``reader`` (open the
table, read the metadata, load an operator's entries), ``writer`` (write and commit a
version), ``savepoint`` (the ``Savepoint`` reader), ``bootstrap`` (``SavepointWriter``)
and ``inspection`` (``inspect_savepoint``, no Spark).
"""

from __future__ import annotations

from .bootstrap import SavepointWriter
from .inspection import format_inspection, inspect_savepoint
from .reader import (
    load_operator_state,
    read_broadcast_entries,
    read_metadata,
    savepoint_versions,
)
from .savepoint import Savepoint
from .writer import partition_slots, write_savepoint

__all__ = [
    "Savepoint",
    "SavepointWriter",
    "format_inspection",
    "inspect_savepoint",
    "load_operator_state",
    "partition_slots",
    "read_broadcast_entries",
    "read_metadata",
    "savepoint_versions",
    "write_savepoint",
]
