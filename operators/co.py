"""``CoStage``: the non-keyed two-input stage as the plugin names it.

``CoStage(stage, function, name)`` with ``stage`` one of ``co_map``, ``co_flat_map``,
``co_process`` (the graph's ``CoChainNode.stage``) runs the function through
``chain.CoStatelessOperator``; ``process(value, timestamp, side)`` takes the
input index (0 or 1) as ``side``. Given its operator's ``name``, the stage opens its
function with a runtime context of that operator, not of the pass it runs in (whose
name is the last step fused into it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..state_store.exceptions import GraphBuildError
from .base import OperatorConfig, Output
from .chain import CoStatelessOperator
from .functions import CoFlatMapFunction, CoMapFunction, CoProcessFunction

__all__ = ["CO_STAGE_KINDS", "CoStage"]

#: Stage name -> the function class it needs.
CO_STAGE_KINDS: dict[str, type] = {
    "co_map": CoMapFunction,
    "co_flat_map": CoFlatMapFunction,
    "co_process": CoProcessFunction,
}


class CoStage:
    """A non-keyed two-input stage (CoMap / CoFlatMap / CoProcess function)."""

    def __init__(self, stage: str, function: Any, name: str | None = None) -> None:
        expected = CO_STAGE_KINDS.get(stage)
        if expected is None:
            raise GraphBuildError(
                f"unknown two-input stage {stage!r}; expected one of {', '.join(CO_STAGE_KINDS)}"
            )
        if not isinstance(function, expected):
            raise GraphBuildError(
                f"two-input stage {stage!r} needs a {expected.__name__}, got {function!r:.80}"
            )
        self.stage = stage
        self.function = function
        self.name = name
        self._operator = CoStatelessOperator(function, name or stage)

    def open(self, config: OperatorConfig | None = None) -> None:
        """Open the function (with its own operator's name when the stage has one)."""
        if config is not None and self.name is not None:
            config = replace(config, operator_name=self.name, metrics_name="")
        self._operator.open(config)

    def process(self, value: Any, timestamp: int | None = None, side: int = 0) -> list[Output]:
        """Outputs of one record of input ``side`` (0 or 1)."""
        return self._operator.process(value, timestamp, side)

    def advance_watermark(self, watermark: int) -> list[Output]:
        """Record the watermark for ``current_watermark()``."""
        return self._operator.advance_watermark(watermark)

    def close(self) -> None:
        """Close the function."""
        self._operator.close()
