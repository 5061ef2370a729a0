"""Errors raised where a program declares its sources and sinks."""

from __future__ import annotations

from ..state_store.exceptions import GraphBuildError

__all__ = ["UnsupportedConnectorError"]


class UnsupportedConnectorError(GraphBuildError):
    """A connector, connector option or value this project does not support (named with
    what is supported instead)."""
