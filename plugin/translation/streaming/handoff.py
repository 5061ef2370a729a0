"""Which keyed stages of the one query key their records for the next keyed stage in their
own call (runtime/handoff.py), so no Python pass runs between the two stateful operators.

:func:`handoff_plan` finds the pairs the graph allows; :func:`handoff_of` builds a stage's
hand-off when its call is made, where it may still fall back to the next stage's keying pass
(a chain or key selector that is not plain lambdas, side outputs, a field reduce).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Optional, cast

from ...plan.graph import ChainNode, KeyByNode, KeyedNode, Transformation, is_keyed
from ...runtime.encoding import PICKLED
from ...runtime.handoff import HandOff
from ..rows import chain_for_output
from ..steps import fused_chain
from ..stream import Stream
from .inband import inband_strategy
from .one_query import Carry, keying_runs, query_exits

if TYPE_CHECKING:
    from ...runtime.encoding import Encoding

__all__ = ["HandOffPlan", "handoff_of", "handoff_plan"]


class HandOffPlan(NamedTuple):
    """A keyed stage whose only reader is the next keyed stage (:func:`handoff_plan`)."""

    #: the next keyed stage (one input)
    consumer: KeyedNode
    #: its ``key_by``
    key_node: KeyByNode
    #: the stateless operators between, in their order (partitionings left out)
    path: tuple[ChainNode, ...]


def handoff_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                 carriers: dict[int, Carry]) -> dict[int, HandOffPlan]:
    """The keyed stages that may hand their records to the next keyed stage in their call:
    read by nothing else (no sink, side output or other stage), through one-input
    stateless operators and partitionings each read only by the next
    (``one_query.keying_runs``), into the ``key_by`` of a one-input keyed operator that
    carries no records (runtime/carry.py) and takes no watermark in band (inband.py).

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.
        carriers: the one query's carrying stages (``one_query.with_carriers``).

    Returns:
        The upstream stage's id -> its plan.
    """
    exits = {e.id for e in query_exits(nodes)}
    plan: dict[int, HandOffPlan] = {}
    for node in nodes:
        if (not isinstance(node, KeyedNode) or node.id in carriers
                or inband_strategy(node) is not None):
            continue
        key_node = node.inputs[0]
        if not isinstance(key_node, KeyByNode):
            continue
        path: list[ChainNode] = []
        step: Transformation = key_node
        reader: Transformation = node
        while [r.id for r in consumers.get(step.id, [])] == [reader.id] and len(step.inputs) == 1:
            above = step.inputs[0]
            if is_keyed(above):
                if ([r.id for r in consumers.get(above.id, [])] == [step.id]
                        and above.id not in exits and above.id not in carriers):
                    plan[above.id] = HandOffPlan(node, key_node, tuple(path[::-1]))
                break
            if not keying_runs(above) or above.id in exits:
                break
            if isinstance(above, ChainNode):
                path.append(above)
            step, reader = above, step
    return plan


def handoff_of(plan: HandOffPlan, stage: Transformation, records: Encoding,
               max_parallelism: int) -> Optional[HandOff]:
    """The hand-off of keyed ``stage`` along ``plan``, or None: the next stage keys the
    stage's records in a pass of its own.

    Args:
        plan: the stage's :func:`handoff_plan` entry.
        stage: the keyed stage.
        records: the encoding its records would leave in.
        max_parallelism: the job's key groups.

    Returns:
        The hand-off, or None.
    """
    key_node = plan.key_node
    # the chain the next stage's keying pass would run (keying_input, sequenced)
    stream = Stream(cast(Any, None), records, stage.output_type, name=stage.name)
    for step in plan.path:
        stream = fused_chain(stream, step, None)
    chain = chain_for_output(stream, PICKLED, (key_node.key_selector, key_node.key_serializer))
    return HandOff.of(records, chain, key_node.key_selector, key_node.key_serializer,
                      max_parallelism, key_node.name)
