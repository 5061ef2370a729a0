"""Savepoints as Delta tables in the unified keyed format: write, read, bootstrap, inspect.

Driver side. ``Savepoint`` reads a savepoint's state as DataFrames; ``SavepointWriter``
bootstraps or rewrites one; jobs write and restore through the translation layer.
"""

from __future__ import annotations

from .core import Savepoint, SavepointWriter

__all__ = ["Savepoint", "SavepointWriter"]
