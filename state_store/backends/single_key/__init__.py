"""The single-key backend: only the current key's state (sorted BATCH execution)."""

from __future__ import annotations

from .backend import SingleKeyStateBackend

__all__ = ["SingleKeyStateBackend"]
