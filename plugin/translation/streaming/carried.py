"""Carried records in the one-query mapping: where the query's plan ends (its *exits*), which
keyed stages carry the records of the stages above them through their own output, and what
each carrying stage's keying pass reads.

Spark plans a DataFrame read twice as two copies, each with its own stateful operators, so
a keyed stage read by sinks and by keyed stages below is read once: its records travel
through the stages below (:func:`carry_plan`; runtime/carry.py hands them on,
one_query_sinks.py reads them apart). one_query.py refuses, naming it, a stage the plan
still holds twice. docs/spark-mapping.md says which graphs run how.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple, Optional, Protocol

from ...plan.graph import (
    ChainNode,
    KeyByNode,
    KeyedNode,
    PartitionNode,
    SideOutputNode,
    SinkNode,
    Transformation,
    UnionNode,
    is_keyed,
    upstream,
)
from ...runtime.carry import MARK
from ...runtime.encoding import PICKLED
from ..rows import leading_rows
from ..steps import fused_chain
from ..stream import Stream, StreamTranslator
from .branches import (
    UnionCarry,
    joined_branches,
    merged_uses,
    path_between,
    read_on_paths_only,
    union_carries,
)
from .inband import chained, keying_pass_runs

__all__ = ["Carry", "CarryPlan", "KeyingTranslator", "carry_plan", "carry_tag", "exits_of",
           "held_twice", "keying_input", "plan_part", "query_exits", "relays", "tail_unions",
           "with_carriers"]

#: the operators a sink's tail may hold: one input and no state, so that the one query's
#: foreachBatch function runs them over each micro-batch (one_query_sinks.py)
_TAIL_KINDS = (ChainNode, SideOutputNode, PartitionNode, KeyByNode)


def exits_of(node: Transformation) -> list[Transformation]:
    """Where the query's own plan ends for a sink reading ``node``: the nearest operator above
    it that is no one-input stateless operator below a keyed stage, nor a union of records
    from keyed stages (the operators between run per micro-batch, in the query's
    foreachBatch function, a union among them reading its inputs' exits' rows). A union whose
    inputs end at different exits stays in the query's plan, as the exit, unless those
    exits share a keyed stage above them: the union's plan would hold it twice, while each
    exit's records can leave the query apart, that stage carried through the others
    (:func:`carry_plan`).

    Args:
        node: a sink's input.

    Returns:
        ``[node]`` itself, or the keyed stages (or several-input operators) above its tail,
        each once, in the order of the union's inputs.
    """
    while True:
        if isinstance(node, UnionNode):
            if not all(is_keyed(i) or chained(i) for i in node.inputs):
                return [node]
            ends: dict[int, Transformation] = {}
            for i in node.inputs:
                ends.update((e.id, e) for e in exits_of(i))
            if len(ends) == 1 or _share_a_keyed_stage(list(ends.values())):
                return list(ends.values())
            return [node]
        if not (isinstance(node, _TAIL_KINDS) and len(node.inputs) == 1
                and (is_keyed(node.inputs[0]) or chained(node.inputs[0]))):
            return [node]
        node = node.inputs[0]


def _share_a_keyed_stage(exits: list[Transformation]) -> bool:
    """Whether a keyed stage lies at or above two of ``exits``."""
    seen: set[int] = set()
    for e in exits:
        above = {n.id for n in upstream(e, include_self=True) if is_keyed(n)}
        if above & seen:
            return True
        seen |= above
    return False


def tail_unions(nodes: list[Transformation]) -> list[UnionNode]:
    """The unions the query's plan leaves to sinks' tails (:func:`exits_of`): only the
    fanned-out query (one_query_sinks.py) runs them.

    Args:
        nodes: the job graph.

    Returns:
        The unions above no exit of the query.
    """
    part = plan_part(query_exits(nodes))
    return [n for n in nodes if isinstance(n, UnionNode) and n.id not in part]


def plan_part(exits: list[Transformation]) -> set[int]:
    """The ids of the operators in the one query's own plan: those at or above an exit.

    Args:
        exits: the query's exits (:func:`query_exits`).

    Returns:
        The ids.
    """
    return {n.id for e in exits for n in upstream(e, include_self=True)}


def query_exits(nodes: list[Transformation]) -> list[Transformation]:
    """The operators whose records the one query's plan computes: each sink's
    :func:`exits_of`, each once; without sinks (collect, ``to_dataframe``) the operators
    nobody reads.

    Args:
        nodes: the job graph.

    Returns:
        The exits, in the order of the sinks.
    """
    sinks = [n for n in nodes if isinstance(n, SinkNode)]
    if sinks:
        ends = [e for s in sinks for e in exits_of(s.inputs[0])]
    else:
        read = {i.id for n in nodes for i in n.inputs}
        ends = [n for n in nodes if n.id not in read]
    return list({e.id: e for e in ends}.values())


def _uses(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
          carried: frozenset[int] = frozenset()) -> tuple[dict[int, int], set[int], set[int]]:
    """How many times the query's plan would hold each node (Spark plans a DataFrame read
    twice as two copies), the ids of the nodes in the plan and those of its exits; a
    ``carried`` stage is held once (its readers read it through the stages carrying it),
    and so is a stage whose paths a union joins, counted once (branches.py)."""
    exits = query_exits(nodes)
    exit_ids = {e.id for e in exits}
    part = plan_part(exits)
    merged = merged_uses(nodes, consumers, part)
    uses: dict[int, int] = {}
    for node in sorted(nodes, key=lambda n: n.id, reverse=True):  # readers first
        if node.id not in part:
            continue
        if node.id in carried:
            uses[node.id] = 1
            continue
        readers = {r.id: r for r in consumers.get(node.id, []) if r.id in part}
        uses[node.id] = int(node.id in exit_ids) + sum(
            uses.get(r.id, 0) * sum(i.id == node.id for i in r.inputs) for r in readers.values())
        if node.id in merged:  # the branched keying pass reads it once (branches.py)
            union, more = merged[node.id]
            uses[node.id] -= more * uses.get(union, 0)
    return uses, part, exit_ids


class CarryPlan(NamedTuple):
    """Which keyed stages the query carries through which (:func:`carry_plan`)."""

    #: the carried stage's id -> the keyed stage carrying its records
    carried: dict[int, Transformation]
    #: keyed stage id -> (the relay whose output its keying pass reads, the stage whose
    #: records it keys)
    sources: dict[int, tuple[Transformation, Transformation]]
    #: keyed stage id -> the union through which the stage it carries reaches it
    #: (branches.union_carries)
    unions: dict[int, UnionCarry]


def carry_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]]
               ) -> CarryPlan:
    """Which keyed stages the query carries through which (runtime/carry.py), and which
    keyed stages read their records from another stage's output.

    A keyed stage read by sinks (through stateless operators) and, along one path of
    one-input stateless operators, by one other keyed stage is carried through it; that
    stage is read by sinks only, or is carried on in turn. A keyed stage read by several
    keyed stages (each along such a path) is carried through the first, which is carried
    through the second, which keys the first stage's records carried through it (its keying
    pass reads the first's output: a *relay*), and so on, in graph order; every stage but
    the last is read by sinks only (a stage read by a keyed stage goes last). A stage whose
    side outputs are read, or whose output a keying pass reads whole, reaches that pass
    through one chain of stateless operators (no other ``key_by`` between:
    :func:`keying_input`). Where that leaves a keyed stage held twice (stages read by
    several keyed stages that go on to keyed stages of their own), the tree of keyed
    stages below the topmost such stage runs as one chain instead (:func:`_tree_plan`). A
    keyed stage read by sinks and, along paths a union joins, by the keyed stage below
    (branches.py) is carried through that stage, whose branched keying pass reads its
    whole output anyway, and so is one read by sinks and, along one path, by a union with
    records from elsewhere in front of the keyed stage below: the pass running the path
    hands its records on, tagged, through the union (:func:`_branched_plan`).

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.

    Returns:
        The plan; computed once per job (the translator hands it on).
    """
    plan = _relay_plan(nodes, consumers)
    if not held_twice(nodes, consumers, plan):
        return plan
    plans = [plan]
    tree = _tree_plan(nodes, consumers)
    if tree.carried:  # the trees, then with the stages carried through unions too
        plans += [tree, _branched_plan(nodes, consumers, tree)]
    plans.append(_branched_plan(nodes, consumers, plan))
    # the first holding no stage twice; else the one holding fewest (the job is refused,
    # naming those)
    return min(plans, key=lambda p: len(held_twice(nodes, consumers, p)))


def _branched_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                   plan: CarryPlan) -> CarryPlan:
    """``plan`` with each keyed stage it holds twice, read by sinks and otherwise only along
    paths a union joins to the keyed stage below, or along one path to a union with records
    from elsewhere in front of it, carried through that stage; the stage below carries
    nothing else, and is read by sinks only or carried on in turn."""
    held = {n.id for n, _ in held_twice(nodes, consumers, plan)}
    _, part, exit_ids = _uses(nodes, consumers, frozenset(plan.carried))
    carried, unions = dict(plan.carried), dict(plan.unions)
    for stage in sorted(nodes, key=lambda n: n.id, reverse=True):  # the stages below first
        if stage.id in plan.sources or any(b is stage for b in carried.values()):
            continue  # it keys a relay's records, or carries another stage already
        onward = carried.get(stage.id)
        if any(r.id in part for r in consumers.get(stage.id, [])) and (
                onward is None or not _fused_path(onward, stage)):
            continue  # read on by a keyed stage: it must be carried on
        branches = joined_branches(stage)
        if branches is not None:
            if (branches.above.id in held and branches.above.id in exit_ids
                    and read_on_paths_only(stage, branches, consumers, part, exit_ids)):
                carried[branches.above.id] = stage
            continue
        through = [u for u in union_carries(stage, consumers, part, exit_ids)
                   if u.above.id in held and u.above.id in exit_ids]
        if len(through) == 1:
            carried[through[0].above.id] = stage
            unions[stage.id] = through[0]
    return CarryPlan(carried, plan.sources, unions)


def held_twice(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
               plan: CarryPlan) -> list[tuple[Transformation, int]]:
    """The keyed stages the query's plan would hold more than once under ``plan``, with the
    number of times."""
    uses, _, _ = _uses(nodes, consumers, frozenset(plan.carried))
    return [(n, uses[n.id]) for n in nodes
            if is_keyed(n) and uses.get(n.id, 0) > 1 and n.id not in plan.carried]


def _tree_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]]
               ) -> CarryPlan:
    """Each tree of keyed stages below a keyed stage read several times (by sinks and keyed
    stages, or by several keyed stages), each reading the stage above it along one-input
    stateless operators a keying pass runs, as one chain in breadth-first order: every
    stage of the chain carries the one before it, whose output its keying pass reads, and
    keys its own parent's records out of it when that is not the one before (runtime/carry.py
    hands every carried stage's records on to the end). A tree not of that shape is left
    out (another plan may carry its stages, or the job is refused).

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.

    Returns:
        The plan of the trees of that shape.
    """
    uses, part, exit_ids = _uses(nodes, consumers)
    carried: dict[int, Transformation] = {}
    sources: dict[int, tuple[Transformation, Transformation]] = {}
    claimed: set[int] = set()  # the stages of a tree planned already
    for root in sorted(nodes, key=lambda n: n.id):  # the stages above first
        if not is_keyed(root) or uses.get(root.id, 0) < 2 or root.id in claimed:
            continue
        first = _readers(root, consumers, part, exit_ids, exits_only=False)
        if not first or (len(first) == 1 and root.id not in exit_ids):
            continue  # its one reader holds it once: the tree starts below
        tree = _tree_below(root, consumers, part, exit_ids)
        if tree is None:
            continue  # not of that shape: this tree stays as the other plans leave it
        chain, parent = tree
        claimed.update(n.id for n in chain)
        carried[root.id] = chain[0]
        for above, stage in zip(chain, chain[1:]):
            carried[above.id] = stage
            if parent[stage.id] is not above:
                sources[stage.id] = (above, parent[stage.id])
    return CarryPlan(carried, sources, {})


def _tree_below(root: Transformation, consumers: dict[int, list[Transformation]],
                part: set[int], exit_ids: set[int]
                ) -> Optional[tuple[list[Transformation], dict[int, Transformation]]]:
    """The keyed stages below ``root`` in breadth-first order, and each one's parent, each
    reading its parent along operators a keying pass runs; None when one does not."""
    chain: list[Transformation] = []
    parent: dict[int, Transformation] = {}
    queue = [root]
    while queue:
        node = queue.pop(0)
        below = _readers(node, consumers, part, exit_ids, exits_only=False)
        if below is None or not all(_fused_path(s, node) for s in below):
            return None
        for stage in below:
            parent[stage.id] = node
        chain += below
        queue += below
    return chain, parent


def _relay_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]]
                ) -> CarryPlan:
    """:func:`carry_plan`'s relays (its first paragraph)."""
    uses, part, exit_ids = _uses(nodes, consumers)
    carried: dict[int, Transformation] = {}
    sources: dict[int, tuple[Transformation, Transformation]] = {}

    def read(stage: Transformation) -> bool:  # by an operator of the query's plan
        return any(r.id in part for r in consumers.get(stage.id, []))

    for node in sorted(nodes, key=lambda n: n.id, reverse=True):  # the stages below first
        if not is_keyed(node) or uses.get(node.id, 0) < 2:
            continue
        stages = _readers(node, consumers, part, exit_ids)
        if not stages or (len(stages) == 1 and node.id not in exit_ids):
            continue
        stages.sort(key=lambda s: (read(s), s.id))  # one read on goes last, as it may
        if (any(isinstance(r, SideOutputNode) for r in consumers.get(node.id, []))
                and not _fused_path(stages[0], node)):
            continue  # its side outputs would not travel through the operators between
        if not all(_fused_path(s, node) for s in stages[1:]):
            continue  # each relay's keying pass runs the operators from the stage down
        if any(read(s) or s.id in carried for s in stages[:-1]):
            continue  # a relay goes on to the next stage and to sinks, nowhere else
        if read(stages[-1]):
            onward = carried.get(stages[-1].id)  # read by a keyed stage: carried on
            if onward is None or not _fused_path(onward, stages[-1]):
                continue
        carried[node.id] = stages[0]
        for above, below in zip(stages, stages[1:]):
            carried[above.id] = below
            sources[below.id] = (above, node)
    return CarryPlan(carried, sources, {})


def _readers(node: Transformation, consumers: dict[int, list[Transformation]],
             part: set[int], exit_ids: set[int], exits_only: bool = True
             ) -> Optional[list[Transformation]]:
    """The keyed stages (one input; with ``exits_only``, exits of the query) that ``node``'s
    readers in the query's plan reach, each along one path of one-input stateless operators
    read once, in graph order; None when a reader reaches none."""
    stages = []
    for step in (r for r in consumers.get(node.id, []) if r.id in part):
        while True:
            if len(step.inputs) != 1:
                return None
            if is_keyed(step):
                if not isinstance(step, KeyedNode) or (exits_only and step.id not in exit_ids):
                    return None
                stages.append(step)
                break
            if not keying_pass_runs(step) or step.id in exit_ids:
                return None
            readers = [r for r in consumers.get(step.id, []) if r.id in part]
            if len(readers) != 1:
                return None
            step = readers[0]
    return sorted({s.id: s for s in stages}.values(), key=lambda s: s.id)


def _fused_path(stage: Transformation, node: Transformation) -> bool:
    """Whether only operators a keying pass runs (:func:`~.inband.keying_pass_runs`) lie
    between ``node`` and the ``key_by`` of keyed ``stage`` (:func:`keying_input`)."""
    step = stage.inputs[0].inputs[0]
    while step is not node:
        if not keying_pass_runs(step):
            return False
        step = step.inputs[0]
    return True


def _path(key_node: Transformation, above: Transformation) -> list[ChainNode]:
    """The stateless operators a keying pass runs from keyed stage ``above`` down to
    ``key_node``, in their order: a ``key_by`` between reads as a plain stream and a
    partitioning of :data:`~.inband.KEYED_AWAY` is left out (the ``key_by`` below sends each
    record on by its key)."""
    return path_between(key_node.inputs[0], above)


def keying_input(t: KeyingTranslator, key_node: KeyByNode, carry: Optional[Carry],
                 forwarded: bool = False) -> Stream:
    """The stream the keying pass in front of a keyed stage reads: the main output of the
    ``key_by``'s input; for a stage carrying the records of the stage above it, that
    stage's main output with the operators between pending (:func:`_path`: a partitioning
    between is left out), or, when that stage is tagged (:class:`Carry` ``tagged``), its
    whole output (its own records, those carried through it and its side outputs,
    ``_tag``), the operators between run over that stage's own records only; for a stage
    keying the records carried through a relay (``source``), the relay's whole output with
    the operators from the source stage down pending, which the pass runs over those
    records only (runtime/carry.py hands the rest on); for a stage taking the watermark
    the stage above forwards (``forwarded``), that stage's whole output too, its watermark
    rows among it (runtime/inband.py, ``forwarded_marks``); for a stage carrying records
    through a union (``union``), the union's whole stream (branches.tagged_union).

    Args:
        t: the STREAMING translator.
        key_node: the stage's ``key_by``.
        carry: how the stage carries records (``t.carriers``), None when it does not.
        forwarded: the stage takes the watermark of the keyed stage above
            (``inband.forwarded_from``).

    Returns:
        The stream the keying pass reads.
    """
    if carry is None and not forwarded:
        return t.input_stream(key_node.inputs[0])
    if carry is not None and carry.union is not None:  # branches.tagged_union, whole
        union = carry.union.union
        stream = replace(t.input_stream(union), df=t.translate(union).df)
        for node in path_between(key_node.inputs[0], union):
            stream = fused_chain(stream, node, None)
        return stream
    above = key_node.inputs[0]
    while not is_keyed(above):  # the operators between (_fused_path)
        above = above.inputs[0]
    if carry is not None and carry.source is not None:
        relay = t.translate(next(n for n in t.nodes if n.id == carry.via))
        # the source's records as carried: pickled (runtime/carry.py), Rows made on the way
        stream = Stream(relay.df, PICKLED, above.output_type, name=above.name,
                        chain=leading_rows(above.output_type, above.name),
                        ordered_from=relay.ordered_from)
    elif forwarded or (carry is not None and carry.tagged):
        whole = t.translate(above)
        stream = replace(t.input_stream(above), df=whole.df, ordered_from=whole.ordered_from)
    else:
        stream = t.input_stream(above)
    for node in _path(key_node, above):
        stream = fused_chain(stream, node, None)
    return stream


class KeyingTranslator(StreamTranslator, Protocol):
    """What :func:`keying_input` reads of the STREAMING translator: the job graph too."""

    nodes: list[Transformation]


class Carry(NamedTuple):
    """How a keyed stage carries the records of the stage above it (runtime/carry.py;
    :meth:`for_pass` is ``group_state.seq_pass``'s ``carry``)."""

    #: the keyed stage whose records it carries
    carried: int
    #: the stage above is a carrier too, or its side outputs are read, or it is a relay:
    #: the keying pass reads that stage's records with those carried through it and its
    #: side outputs, each under its tag
    tagged: bool
    #: the stage whose records, carried through the relay :attr:`carried`, the keying pass
    #: keys (None: it keys the carried stage's own records)
    source: Optional[int] = None
    #: those records are handed on too (a stage or sink further down reads them)
    source_on: bool = False
    #: the stage's keying pass runs the paths a union joins from the carried stage down
    #: (branches.py): it reads that stage's whole output, ``_tag`` and all
    branched: bool = False
    #: the union through which the carried stage's records reach the stage's keying pass,
    #: tagged by the pass in front of the union (branches.union_carries)
    union: Optional[UnionCarry] = None

    @property
    def tag(self) -> str:
        """The tag the carried records leave the query under (:func:`carry_tag`)."""
        return carry_tag(self.carried)

    @property
    def via(self) -> Optional[int]:
        """The relay whose whole output the keying pass reads (:func:`carry_plan`), or None."""
        return self.carried if self.source is not None else None

    def for_pass(self) -> tuple[str, bool, Optional[str], bool, bool, bool]:
        """The arguments of ``runtime/carry.carrying`` after the parallelism."""
        source = None if self.source is None else carry_tag(self.source)
        return (self.tag, self.tagged, source, self.source_on, self.branched,
                self.union is not None)


def with_carriers(tags: dict[int, frozenset[str]], nodes: list[Transformation], plan: CarryPlan,
                  fanned_out: bool) -> tuple[dict[int, frozenset[str]], dict[int, Carry]]:
    """The side-output tags of the job's operators with the carried records' tags.

    Args:
        tags: node id -> the side-output tags read from it (``steps.side_output_tags``).
        nodes: the job graph.
        plan: its :func:`carry_plan`.
        fanned_out: the one query writes several sinks (else nothing is carried).

    Returns:
        ``tags`` with the tags of the records carried through each carrying stage added,
        and carrying stage id -> its :class:`Carry`.
    """
    if not fanned_out:
        return tags, {}
    carried, sources = plan.carried, plan.sources
    carrying = {b.id for b in carried.values()}
    relays = {via.id for via, _ in sources.values()}
    exit_ids = {e.id for e in query_exits(nodes)}
    carriers = {}
    for e, b in carried.items():
        if b.id in plan.unions:  # they reach it through a union, tagged on the way
            carriers[b.id] = Carry(e, True, union=plan.unions[b.id])
        elif b.id in sources:  # it keys the records of the stage above the relay e
            source = sources[b.id][1].id
            carriers[b.id] = Carry(e, True, source, source in exit_ids or b.id in relays)
        else:
            carriers[b.id] = Carry(e, e in carrying or bool(tags.get(e)),
                                   branched=joined_branches(b) is not None)
    out = dict(tags)
    for e, b in carried.items():  # each carried stage's tag, on every carrier below it
        node: Optional[Transformation] = b
        while node is not None:
            out[node.id] = out.get(node.id, frozenset()) | {carry_tag(e)}
            node = carried.get(node.id)
    return out, carriers


def relays(carriers: dict[int, Carry], node_id: int) -> bool:
    """Whether a keying pass reads keyed stage ``node_id``'s output for the records carried
    through it (its outputs then keep their arrival order: emit_order.py).

    Args:
        carriers: carrying stage id -> its :class:`Carry` (:func:`with_carriers`).
        node_id: a keyed stage's id.

    Returns:
        True for a relay.
    """
    return any(c.via == node_id for c in carriers.values())


def carry_tag(node_id: int) -> str:
    """The side-output tag under which a carried stage's records leave the stage carrying them.

    Args:
        node_id: the carried keyed stage's id (:func:`carry_plan`).

    Returns:
        A tag no ``OutputTag`` has (it starts with a control character).
    """
    return f"{MARK}carried {node_id}"
