"""The heap backend (Flink's ``hashmap``): keyed state as Python objects in memory."""

from __future__ import annotations

from .backend import HeapKeyedStateBackend

__all__ = ["HeapKeyedStateBackend"]
