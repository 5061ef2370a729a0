"""Joined branches in the one-query mapping: a keyed stage's records (its main output and
side outputs) reaching the keyed stage below along several paths that a union joins.

Spark plans a DataFrame read twice as two copies, so each path would run the keyed stage
above again, with a state of its own. :func:`joined_branches` finds such a diamond
(paths of operators a keying pass runs, from one keyed stage to a union, then on to the
``key_by`` of the stage below); :func:`branch_streams` says what the keying pass that
reads the stage's output once and runs every path (runtime/branches.py) reads and runs.
one_query.py counts the stage above as held once (:func:`merged_uses`).
docs/spark-mapping.md says which graphs run so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple, Optional

from ...plan.graph import (
    ChainNode,
    KeyByNode,
    KeyedNode,
    SideOutputNode,
    Transformation,
    UnionNode,
    is_keyed,
)
from ...runtime.encoding import PICKLED
from ..rows import leading_rows
from ..steps import fused_chain
from ..stream import Stream, StreamTranslator
from .inband import keying_step

__all__ = ["Branches", "branch_streams", "joined_branches", "merged_uses", "read_on_paths_only"]


class Branches(NamedTuple):
    """The paths from one keyed stage to the ``key_by`` of the keyed stage below it."""

    #: the keyed stage the paths leave
    above: Transformation
    #: the union joining them
    union: UnionNode
    #: per input of the union: the side output it starts at (None: the main output) and
    #: its operators, in their order
    paths: tuple[tuple[Optional[SideOutputNode], tuple[ChainNode, ...]], ...]
    #: the operators from the union down to the ``key_by``, in their order
    after: tuple[ChainNode, ...]


def joined_branches(stage: Transformation) -> Optional[Branches]:
    """The paths along which keyed ``stage`` reads one keyed stage above it through a union:
    from the stage above (or one of its side outputs) to the union, and from the union to
    the stage's ``key_by``, only operators a keying pass runs, none assigning a watermark
    strategy.

    Args:
        stage: any operator of the graph.

    Returns:
        The paths, or None for any other shape.
    """
    if not isinstance(stage, KeyedNode) or not isinstance(stage.inputs[0], KeyByNode):
        return None
    after: list[ChainNode] = []
    step = stage.inputs[0].inputs[0]
    while not isinstance(step, UnionNode):
        if is_keyed(step) or not keying_step(step):
            return None
        if isinstance(step, ChainNode):
            after.append(step)
        step = step.inputs[0]
    union, tops = step, set()
    paths: list[tuple[Optional[SideOutputNode], tuple[ChainNode, ...]]] = []
    for step in union.inputs:
        chain: list[ChainNode] = []
        side: Optional[SideOutputNode] = None
        while not is_keyed(step):
            if isinstance(step, SideOutputNode) and is_keyed(step.inputs[0]):
                side, step = step, step.inputs[0]
                break
            if not keying_step(step):
                return None
            if isinstance(step, ChainNode):
                chain.append(step)
            step = step.inputs[0]
        tops.add(step.id)
        paths.append((side, tuple(chain[::-1])))
    if len(tops) != 1 or len(union.inputs) < 2:
        return None
    return Branches(step, union, tuple(paths), tuple(after[::-1]))


def merged_uses(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                part: set[int]) -> dict[int, tuple[int, int]]:
    """The diamonds the query's plan holds the stage above once in: each operator between
    (and the union) read once, by the next one.

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.
        part: the ids of the nodes in the query's plan.

    Returns:
        The stage above's id -> (its union's id, how many paths more than one lead there).
    """
    out: dict[int, tuple[int, int]] = {}
    for stage in nodes:
        branches = joined_branches(stage)
        if branches is None:
            continue
        between = _between(stage)
        if all(len([r for r in consumers.get(n.id, []) if r.id in part]) == 1
               for n in between):
            out[branches.above.id] = (branches.union.id, len(branches.union.inputs) - 1)
    return out


def read_on_paths_only(stage: Transformation, branches: Branches,
                       consumers: dict[int, list[Transformation]], part: set[int]) -> bool:
    """Whether the query's plan reads the stage above only along ``stage``'s joined paths,
    each operator between read once (sinks may read it, or an operator between, apart: the
    stage above is then carried through ``stage``, one_query.carry_plan).

    Args:
        stage: a keyed stage.
        branches: its :func:`joined_branches`.
        consumers: node id -> the nodes reading it.
        part: the ids of the nodes in the query's plan.

    Returns:
        True when no other operator of the plan reads the stage above or its side outputs.
    """
    between = {n.id for n in _between(stage)}
    above = branches.above
    tops = [above, *(r for r in consumers.get(above.id, []) if isinstance(r, SideOutputNode))]
    return all(r.id in between for n in tops for r in consumers.get(n.id, [])
               if r.id in part and not isinstance(r, SideOutputNode)) and all(
        len([r for r in consumers.get(n, []) if r.id in part]) == 1 for n in between)


def _between(stage: Transformation) -> list[Transformation]:
    """The operators from the paths' starts down to ``stage``'s ``key_by`` (the union among
    them)."""
    found: dict[int, Transformation] = {}
    todo = [stage.inputs[0].inputs[0]]
    while todo:
        step = todo.pop()
        if is_keyed(step) or step.id in found:
            continue
        found[step.id] = step
        todo.extend(step.inputs)
    return list(found.values())


def branch_streams(t: StreamTranslator, branches: Branches
                   ) -> tuple[Stream, list[tuple[Optional[str], Stream]], Stream]:
    """What the branched keying pass of the stage below reads and runs
    (``KeyedStages.branched_input`` builds it; runtime/branches.py runs it).

    Args:
        t: the STREAMING translator.
        branches: the stage's :func:`joined_branches`.

    Returns:
        The stage above's whole output (its side outputs among it, under ``_tag``); per
        path, the side-output tag it reads (None: the main output) and its records with
        the path's operators pending; and the union's records (pickled) with the operators
        after it pending.
    """
    above = branches.above
    whole = t.translate(above)
    paths = []
    for side, path in branches.paths:
        if side is None:
            stream = t.input_stream(above)
        else:  # a side output's rows: pickled, Rows made on the way (steps.side_output)
            stream = Stream(whole.df, PICKLED, side.output_type, name=side.name,
                            chain=leading_rows(side.output_type, side.name))
        for node in path:
            stream = fused_chain(stream, node, None)
        paths.append((None if side is None else side.tag_id, stream))
    union = branches.union
    joined = Stream(whole.df, PICKLED, union.output_type, name=union.name,
                    chain=leading_rows(union.output_type, union.name))
    for node in branches.after:
        joined = fused_chain(joined, node, None)
    base = replace(t.input_stream(above), df=whole.df, ordered_from=whole.ordered_from,
                   tagged=whole.tagged)
    return base, paths, joined
