"""Joined branches in the one-query mapping: a keyed stage's records (its main output and
side outputs) reaching the keyed stage below along several paths that a union joins.

Spark plans a DataFrame read twice as two copies, so each path would run the keyed stage
above again, with a state of its own. :func:`joined_branches` finds such a diamond
(paths of operators a keying pass runs, from one keyed stage to a union, then on to the
``key_by`` of the stage below); :func:`branch_streams` says what the keying pass that
reads the stage's output once and runs every path (runtime/branches.py) reads and runs.
carried.py counts the stage above as held once (:func:`merged_uses`). A keyed stage
read by sinks and, along one path, by a union with records from elsewhere in front of the
keyed stage below is carried through that stage (:func:`union_carries`,
:func:`tagged_union`). A union reading a keyed stage along several inputs beside records
from elsewhere reads it in one pass running those paths (:func:`shared_paths`).
docs/spark-mapping.md says which graphs run so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple, Optional

from ...plan.graph import (
    ChainNode,
    KeyByNode,
    KeyedNode,
    SideOutputNode,
    Transformation,
    UnionNode,
    is_keyed,
    upstream,
)
from ...runtime.carry import tagging
from ...runtime.encoding import PICKLED, TAG, TS, VALUE
from ...runtime.group_state import stream_pass
from ...spark_io.columns import lit
from ..rows import leading_rows
from ..steps import fused_chain, pass_spec, union_all
from ..stream import Stream, StreamTranslator, arrow_pass
from .inband import keying_step

if TYPE_CHECKING:
    from ...runtime.passes import PassSpec

__all__ = ["Branches", "SharedPaths", "UnionCarry", "branch_streams", "joined_branches",
           "merged_uses", "path_between", "read_on_paths_only", "shared_paths", "tagged_union",
           "union_carries"]


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
    union = step
    found = [_path_up(i) for i in union.inputs]
    paths = [f for f in found if f is not None]
    if len(union.inputs) < 2 or len(paths) != len(found) or len({f.top.id for f in paths}) != 1:
        return None
    return Branches(paths[0].top, union, tuple(f.path for f in paths), tuple(after[::-1]))


class _PathUp(NamedTuple):
    """What :func:`_path_up` finds above one input of a union."""

    #: the keyed stage
    top: Transformation
    #: the side output it starts at (None: the main output) and its chain operators, in
    #: their order (a path of :class:`Branches`)
    path: tuple[Optional[SideOutputNode], tuple[ChainNode, ...]]
    #: every operator from the input up to the stage (the stage left out)
    nodes: tuple[Transformation, ...]


def _path_up(step: Transformation) -> Optional[_PathUp]:
    """The keyed stage ``step`` reads (or one of its side outputs) along operators a keying
    pass runs, none assigning a watermark strategy; None when there is none."""
    chain: list[ChainNode] = []
    nodes: list[Transformation] = []
    side: Optional[SideOutputNode] = None
    while not is_keyed(step):
        nodes.append(step)
        if isinstance(step, SideOutputNode) and is_keyed(step.inputs[0]):
            side, step = step, step.inputs[0]
            break
        if not keying_step(step) or len(step.inputs) != 1:
            return None
        if isinstance(step, ChainNode):
            chain.append(step)
        step = step.inputs[0]
    return _PathUp(step, (side, tuple(chain[::-1])), tuple(nodes))


class SharedPaths(NamedTuple):
    """Inputs of a union reading one keyed stage along several paths (:func:`shared_paths`),
    with records from elsewhere among its other inputs."""

    #: the stage above, the union and the paths (no operators after the union)
    branches: Branches
    #: the union's inputs the paths reach, in the order of ``branches.paths``
    inputs: tuple[int, ...]


def shared_paths(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                 part: set[int]) -> dict[int, list[SharedPaths]]:
    """The keyed stages that a union, no keyed stage's :func:`joined_branches`, reads along
    several of its inputs: along operators a keying pass runs, none assigning a watermark
    strategy, each read once in the query's plan. One pass over the stage's output runs
    those paths (``KeyedStages.shared_input``), so the query holds the stage once.

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.
        part: the ids of the nodes in the query's plan.

    Returns:
        Union id -> one per such stage (unions outside the plan left out).
    """
    diamonds = {b.union.id for n in nodes if (b := joined_branches(n)) is not None}
    out: dict[int, list[SharedPaths]] = {}
    for node in nodes:
        if not isinstance(node, UnionNode) or node.id not in part or node.id in diamonds:
            continue
        groups: dict[int, list[tuple[int, _PathUp]]] = {}
        for i, top in enumerate(node.inputs):
            found = _path_up(top)
            if found is not None and all(
                    len([r for r in consumers.get(n.id, []) if r.id in part]) == 1
                    for n in found.nodes):
                groups.setdefault(found.top.id, []).append((i, found))
        shared = [SharedPaths(Branches(g[0][1].top, node, tuple(f.path for _, f in g), ()),
                              tuple(i for i, _ in g))
                  for g in groups.values() if len(g) > 1]
        if shared:
            out[node.id] = shared
    return out


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
    for union, groups in shared_paths(nodes, consumers, part).items():  # and elsewhere
        for shared in groups:
            out.setdefault(shared.branches.above.id, (union, len(shared.inputs) - 1))
    return out


class UnionCarry(NamedTuple):
    """A keyed stage whose records reach a union, along one path of operators a keying pass
    runs, in front of the keyed stage below (:func:`union_carries`)."""

    #: the keyed stage above
    above: Transformation
    #: the union
    union: UnionNode
    #: the union's input the path reaches
    side: int


def union_carries(stage: Transformation, consumers: dict[int, list[Transformation]],
                  part: set[int], exit_ids: set[int]) -> list[UnionCarry]:
    """The keyed stages whose records reach keyed ``stage`` through a union with records
    from elsewhere: from the union down to ``stage``'s ``key_by``, and up from one of the
    union's inputs to a keyed stage (its main output), only operators a keying pass runs,
    none assigning a watermark strategy, each of them (the union and the keyed stage above
    too) read once in the query's plan and none but the stage above an exit of it, and the
    union's other inputs not reading that stage at all.

    Args:
        stage: any operator of the graph.
        consumers: node id -> the nodes reading it.
        part: the ids of the nodes in the query's plan.
        exit_ids: the ids of the query's exits (carried.query_exits).

    Returns:
        One per such stage above (none for any other shape).
    """
    if (not isinstance(stage, KeyedNode) or not isinstance(stage.inputs[0], KeyByNode)
            or joined_branches(stage) is not None):
        return []

    def once(node: Transformation) -> bool:
        return len([r for r in consumers.get(node.id, []) if r.id in part]) == 1 and (
            is_keyed(node) or node.id not in exit_ids)

    step = stage.inputs[0].inputs[0]
    while not isinstance(step, UnionNode):
        if is_keyed(step) or not keying_step(step) or not once(step):
            return []
        step = step.inputs[0]
    union = step
    tops = [found.top.id for found in map(_path_up, union.inputs) if found is not None]
    if not once(union) or len(tops) != len(set(tops)):
        return []  # a stage read along several of its inputs: shared_paths runs them
    found = []
    for side, top in enumerate(union.inputs):
        step = top
        while not is_keyed(step) and keying_step(step) and once(step):
            step = step.inputs[0]
        if not isinstance(step, KeyedNode) or not once(step):
            continue
        others = {n.id for i, t in enumerate(union.inputs) if i != side
                  for n in upstream(t, include_self=True)}
        if step.id not in others:
            found.append(UnionCarry(step, union, side))
    return found


def path_between(top: Transformation, above: Transformation) -> list[ChainNode]:
    """The stateless operators from keyed stage ``above`` down to ``top`` (``top`` too), in
    their order, the partitionings a keying pass leaves out left out (carried.keying_input).

    Args:
        top: an operator below ``above`` along one-input operators a keying pass runs.
        above: the keyed stage.

    Returns:
        The chain operators between.
    """
    path: list[ChainNode] = []
    step = top
    while step is not above:
        if isinstance(step, ChainNode):
            path.append(step)
        step = step.inputs[0]
    return path[::-1]


def read_on_paths_only(stage: Transformation, branches: Branches,
                       consumers: dict[int, list[Transformation]], part: set[int],
                       exit_ids: set[int]) -> bool:
    """Whether the query's plan reads the stage above only along ``stage``'s joined paths,
    each operator between read once and none an exit (sinks may read the stage, or an
    operator between above the union, apart: the stage above is then carried through
    ``stage``, carried.carry_plan).

    Args:
        stage: a keyed stage.
        branches: its :func:`joined_branches`.
        consumers: node id -> the nodes reading it.
        part: the ids of the nodes in the query's plan.
        exit_ids: the ids of the query's exits (carried.query_exits).

    Returns:
        True when no other operator of the plan reads the stage above or its side outputs.
    """
    between = {n.id for n in _between(stage)}
    above = branches.above
    tops = [above, *(r for r in consumers.get(above.id, []) if isinstance(r, SideOutputNode))]
    return all(r.id in between for n in tops for r in consumers.get(n.id, [])
               if r.id in part and not isinstance(r, SideOutputNode)) and all(
        len([r for r in consumers.get(n, []) if r.id in part]) == 1 and n not in exit_ids
        for n in between)


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


def tagged_union(t: StreamTranslator, carry: UnionCarry, streams: list[Stream], tag: str,
                 long_lived: Callable[[PassSpec], PassSpec]) -> Stream:
    """The union of a :class:`UnionCarry`, its records pickled, with the carried stage's
    records among them under ``_tag`` (the stage's tag, its side outputs' and those of the
    records carried through it): the pass running the operators from the stage down to the
    union reads its whole output once and hands every record on (runtime/carry.py,
    ``tagging``); the keying pass below the union carries them on.

    Args:
        t: the STREAMING translator.
        carry: the union and the path.
        streams: the union's inputs (the path's is read afresh from the stage above).
        tag: the tag the carried stage's records leave under (``carried.carry_tag``).
        long_lived: gives a pass its identity for the run (the translator's).

    Returns:
        The union's stream, tagged.
    """
    above, union = carry.above, carry.union
    whole = t.translate(above)
    base = replace(t.input_stream(above), df=whole.df, ordered_from=whole.ordered_from)
    for node in path_between(union.inputs[carry.side], above):
        base = fused_chain(base, node, None)
    spec = long_lived(pass_spec(t, base, PICKLED, name=union.name))
    fn = tagging(stream_pass(spec, t.parallelism), base.enc, tag, whole.tagged)
    parts = [arrow_pass(base, fn, f"{TAG} string, {TS} bigint, {VALUE} binary")]
    for i, stream in enumerate(streams):
        if i != carry.side:
            df = t.materialize(stream, PICKLED, name=union.name)
            parts.append(df.select(lit(None).cast("string").alias(TAG), TS, VALUE))
    return Stream(union_all(parts), PICKLED, union.output_type, name=union.name, tagged=True)
