"""Where a keyed stage of the one query takes its watermark from (runtime/inband.py).

Spark hands a query's watermark from one stateful operator to the next and refuses to
redefine it after one, so a keyed stage below another (:func:`chained`) takes the
watermark of the stage above; one reading a watermark strategy assigned below a keyed
stage takes that strategy's watermark in band instead (:func:`inband_strategy`): its
keying pass runs the assigner :func:`observed` and hands every key group the watermark. A
keyed stage below such a stage takes the watermark that stage forwards
(:func:`forwarded_from`). docs/spark-mapping.md says which graphs run so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ...plan.graph import (
    ChainNode,
    KeyByNode,
    KeyedNode,
    PartitionNode,
    Transformation,
    is_keyed,
    upstream,
)
from ...state_store.exceptions import GraphBuildError
from ..stream import Stream

__all__ = ["KEYED_AWAY", "assigns_watermarks", "chained", "forwarded_from", "forwarding",
           "inband_strategy", "inband_watermark", "keying_pass_runs", "keying_step", "observed",
           "strategy_below_keyed"]


def chained(node: Transformation) -> bool:
    """Whether a keyed stage lies above ``node``: for a keyed stage, its watermark then comes
    from that stage (Spark's ``eventTimeColumnName``), not from a watermark of its own.

    Args:
        node: any operator of the graph.

    Returns:
        True when a keyed stage lies above it.
    """
    return any(is_keyed(n) for n in upstream(node))


def strategy_below_keyed(stage: Transformation) -> Optional[Transformation]:
    """The watermark strategy assigned below a keyed stage whose watermark reaches keyed
    ``stage``, as Flink forwards it: the nearest on a path above ``stage``, or the one a
    keyed stage above takes in band.

    Args:
        stage: a keyed stage.

    Returns:
        The operator assigning it, or None when Spark's watermark is the stage's.
    """
    for n in upstream(stage, stop=lambda n: is_keyed(n) or assigns_watermarks(n)):
        if assigns_watermarks(n):
            if chained(n):
                return n
        elif is_keyed(n):
            above = inband_watermark(n)
            if above is not None:
                return above
    return None  # Spark's watermark: what lies above a strategy is not forwarded


def assigns_watermarks(node: Transformation) -> bool:
    """Whether ``node`` assigns a watermark strategy that generates watermarks.

    Args:
        node: any operator of the graph.

    Returns:
        True for a strategy other than ``no_watermarks()``.
    """
    ws = getattr(node, "watermark_strategy", None)
    return ws is not None and ws.kind != "none"


def inband_strategy(node: Transformation) -> Optional[Transformation]:
    """The operator assigning the watermark strategy a keyed stage takes in band
    (runtime/inband.py): the nearest one above its ``key_by``, when a keyed stage lies
    above that one and only one-input operators lie between the three.

    Args:
        node: any operator of the graph.

    Returns:
        That operator (a ``ChainNode`` of stage ``timestamps``), or None.
    """
    if not isinstance(node, KeyedNode):
        return None
    found, step = None, node.inputs[0].inputs[0]
    while not is_keyed(step):
        if found is None and assigns_watermarks(step):
            found = step
        if len(step.inputs) != 1 or (found is None and not (
                isinstance(step, KeyByNode) or (isinstance(step, ChainNode)
                                                 and step.stage in _PASS_STAGES))):
            return None  # the assigner and what follows it run in the keying pass
        step = step.inputs[0]
    return found


#: the operators that run in a keying pass with the assigner above them (none of them
#: starts a pass of its own)
_PASS_STAGES = ("map", "flat_map", "filter", "timestamps")

#: the partitionings a keying pass may leave out in front of a ``key_by``: each only says
#: which subtask of the next operator a record reaches, in an order Flink does not fix,
#: and the ``key_by`` sends every record on by its key whatever subtask it came from
#: (``broadcast`` copies records and ``custom`` runs the user's partitioner: neither is
#: left out)
KEYED_AWAY = ("forward", "rebalance", "shuffle", "rescale")


def keying_pass_runs(step: Transformation) -> bool:
    """Whether the keying pass of a keyed stage below ``step`` runs it, on a path from the
    keyed stage above (carried.keying_input): a one-input stateless operator, a ``key_by``
    whose stream is read as a plain one, or a partitioning of :data:`KEYED_AWAY`.

    Args:
        step: any operator of the graph.

    Returns:
        True when the pass runs it (a partitioning: leaves it out).
    """
    if isinstance(step, PartitionNode):
        return step.strategy in KEYED_AWAY
    return isinstance(step, (ChainNode, KeyByNode)) and len(step.inputs) == 1


def keying_step(step: Transformation) -> bool:
    """Whether ``step`` is an operator a keying pass runs (:func:`keying_pass_runs`) that
    assigns no watermark strategy: one the watermark of the keyed stage above passes
    through, and one a branched keying pass runs (branches.py).

    Args:
        step: any operator of the graph.

    Returns:
        True for such an operator.
    """
    return keying_pass_runs(step) and getattr(step, "watermark_strategy", None) is None


def forwarded_from(stage: Transformation) -> Optional[KeyedNode]:
    """The keyed stage whose in-band watermark keyed ``stage`` takes, as Flink forwards a
    watermark from one operator to the next: the keyed stage above it, when that one takes
    its watermark in band (:func:`inband_watermark`) and only operators its keying pass
    runs, none with a watermark strategy (:func:`keying_step`), lie between. That
    stage hands its watermark on with its records (runtime/inband.py, ``forwarded_marks``).

    Args:
        stage: any operator of the graph.

    Returns:
        The keyed stage above, or None.
    """
    if not isinstance(stage, KeyedNode):
        return None
    step = stage.inputs[0].inputs[0]
    while not is_keyed(step):
        if not keying_step(step):
            return None
        step = step.inputs[0]
    return step if isinstance(step, KeyedNode) and inband_watermark(step) is not None else None


def inband_watermark(stage: Transformation) -> Optional[Transformation]:
    """The operator assigning the watermark strategy whose watermark keyed ``stage`` takes in
    band: its own (:func:`inband_strategy`), or the one the stage above forwards to it
    (:func:`forwarded_from`).

    Args:
        stage: any operator of the graph.

    Returns:
        That operator, or None when the stage's watermark is Spark's.
    """
    own = inband_strategy(stage)
    if own is not None:
        return own
    above = forwarded_from(stage)
    return None if above is None else inband_watermark(above)


def forwarding(nodes: list[Transformation]) -> dict[int, KeyedNode]:
    """The keyed stages that take their watermark from the stage above, and that stage.

    Args:
        nodes: the job graph.

    Returns:
        Keyed stage id -> the keyed stage forwarding it its watermark (:func:`forwarded_from`).
    """
    return {n.id: above for n in nodes if (above := forwarded_from(n)) is not None}


def observed(stream: Stream, strategy: Transformation, token: str
             ) -> tuple[Stream, tuple[str, int]]:
    """The keying pass's input with ``strategy``'s assigner noting the timestamps it gives
    (runtime/inband.py), and the pass's watermark arguments.

    Args:
        stream: what the keying pass of the stage :func:`inband_strategy` names reads.
        strategy: that operator.
        token: the stage's token (its node id).

    Returns:
        The stream, and ``(token, the strategy's bound in ms)``.

    Raises:
        GraphBuildError: the assigner does not run in that pass.
    """
    from ...operators.functions import as_timestamp_assigner
    from ...runtime.inband import ObservedAssigner

    assert isinstance(strategy, ChainNode)
    fn = strategy.function
    chain = list(stream.chain)
    for i in range(len(chain) - 1, -1, -1):
        stage, function, *rest = chain[i]
        if stage == "timestamps" and function is fn:
            inner = None if fn is None else as_timestamp_assigner(fn)
            chain[i] = (stage, ObservedAssigner(token, inner), *rest)
            ws = strategy.watermark_strategy
            assert ws is not None
            return replace(stream, chain=tuple(chain)), (token, int(ws.out_of_orderness_ms or 0))
    raise GraphBuildError(f"{strategy.describe()}: its timestamp assigner does not run in the "
                          "keying pass of the keyed stage below it (inband_strategy)")
