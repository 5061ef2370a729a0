"""Whether a STREAMING job runs as one Spark query: its keyed stages chained inside it.

``execution.streaming.query-mapping: one-query`` runs every keyed stage as a
``transformWithStateInPandas`` (runtime/tws_processor.py) in the job's one query, where the
per-stage mapping runs each as an ``applyInPandasWithState`` query staged through files.
Spark hands the watermark from stage to stage inside each micro-batch (docs/spark-mapping.md).
:func:`one_query_mapping` decides it when the job is built (``auto``, the default, where it
helps and the graph allows; ``one-query`` refuses, naming why, a graph the mapping does not
run yet); :func:`query_exits` says where the query's plan ends when it writes several sinks
(one_query_sinks.py); :func:`carry_plan` which keyed stages carry the records of the
stage above them (runtime/carry.py). Where each stage's watermark comes from: inband.py.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Protocol

from ...plan.config import AUTO_MAPPING, ONE_QUERY, PER_STAGE, QUERY_MAPPING, resolve
from ...plan.graph import (
    ChainNode,
    KeyByNode,
    KeyedNode,
    PartitionNode,
    SideOutputNode,
    SinkNode,
    SourceNode,
    Transformation,
    is_keyed,
    upstream,
)
from ...runtime.carry import MARK
from ...runtime.encoding import PICKLED
from ...runtime.tws_processor import state_name
from ...spark_io.exceptions import UnsupportedSparkFeatureError
from ...spark_io.versions import require_feature
from ...state_store.exceptions import GraphBuildError, SavepointFormatError
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
from .inband import (
    assigns_watermarks,
    chained,
    forwarded_from,
    inband_watermark,
    keying_pass_runs,
    strategy_below_keyed,
)
from .keyed import feeds_keyed

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession

    from ...operators.modes import RuntimeMode
    from ...plan.config import Configuration

__all__ = ["QUERY", "Carry", "branch_watermark",
           "CarryPlan", "carry_plan", "carry_tag", "exit_of", "fans_out",
           "from_keyed", "keying_input", "meets_keyed", "one_query_mapping",
           "one_query_placement", "query_exits", "relays", "state_store_conf",
           "with_carriers"]

logger = logging.getLogger(__name__)

#: the name of the job's one query (its checkpoint: <job folder>/<name>/checkpoint), whatever
#: its sinks: a sink added or removed leaves it where it was
QUERY = "query"
#: the operators a sink's tail may hold: one input and no state, so that the one query's
#: foreachBatch function runs them over each micro-batch (one_query_sinks.py)
_TAIL_KINDS = (ChainNode, SideOutputNode, PartitionNode, KeyByNode)


def one_query_mapping(config: Configuration, mode: RuntimeMode, spark: SparkSession,
                      nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                      plan: CarryPlan, recorded: Optional[str] = None) -> bool:
    """Whether the job's keyed stages run in one query (``execution.streaming.query-mapping``).

    ``auto`` (the default) runs one query where the per-stage mapping would run several
    (two keyed stages or more, several sinks, a keyed stage's outputs read apart) and the
    session and graph allow it, and the per-stage mapping otherwise (one keyed stage is one
    query either way, and ``applyInPandasWithState`` measured faster there); a job whose
    checkpoint a mapping wrote keeps that mapping.

    Args:
        config: the job's configuration.
        mode: the runtime mode (the option's default per mode).
        spark: the session (:func:`state_store_conf` says what its queries start with).
        nodes: the job graph.
        consumers: node id -> the nodes reading it.
        plan: the graph's :func:`carry_plan`.
        recorded: the mapping the job's checkpoint was written by
            (``job_identity.recorded_mapping``), None without one.

    Returns:
        True for the one-query mapping.

    Raises:
        UnsupportedSparkFeatureError: ``one-query`` on a Spark line before 4.0, or over a
            Spark Connect session without ``transformWithStateInPandas`` (4.0).
        GraphBuildError: ``one-query`` for a graph it does not run yet, naming the operator.
    """
    setting = str(resolve(config, QUERY_MAPPING, mode))
    if setting == AUTO_MAPPING:
        if recorded is not None and recorded != ONE_QUERY:
            logger.info("%s=%s: the job's checkpoint was written by the %s mapping, which it "
                        "keeps", QUERY_MAPPING, AUTO_MAPPING, recorded)
            return False
        if recorded is None:
            why = _declines(spark, nodes, consumers, plan)
            if why:
                logger.info("%s=%s: the job runs the %s mapping: %s", QUERY_MAPPING,
                            AUTO_MAPPING, PER_STAGE, why)
                return False
    elif setting != ONE_QUERY:
        return False
    _check_session(spark)
    _check_graph(nodes, consumers, plan)
    return True


def _declines(spark: Any, nodes: list[Transformation],
              consumers: dict[int, list[Transformation]], plan: CarryPlan) -> str:
    """Why ``auto`` runs a job without a checkpoint per stage ("" when it runs one query)."""
    if sum(is_keyed(n) for n in nodes) < 2 and not fans_out(nodes, consumers):
        return "it is one query in either mapping"
    try:
        _check_session(spark)
        _check_graph(nodes, consumers, plan)
    except (GraphBuildError, UnsupportedSparkFeatureError) as exc:
        return str(exc)
    return ""


def _check_session(spark: Any) -> None:
    """Refuse a session that cannot run the job as one query."""
    require_feature("one_query", spark.version)
    if not hasattr(spark.range(1).groupBy("id"), "transformWithStateInPandas"):
        raise UnsupportedSparkFeatureError(
            f"{QUERY_MAPPING}={ONE_QUERY} needs transformWithStateInPandas, which this session "
            f"(Spark {spark.version}, {type(spark).__module__}) does not offer: Spark Connect "
            f"has it from 4.1. Use {QUERY_MAPPING}={PER_STAGE} on this session")


def _check_graph(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                 plan: CarryPlan) -> None:
    """Refuse a graph the one-query mapping does not run yet, naming the operator."""
    _check_paths(nodes, consumers, plan)
    for node in nodes:
        strategy = strategy_below_keyed(node) if is_keyed(node) else None
        if strategy is None:
            continue
        if inband_watermark(node) is not strategy:
            _refuse(node, f"its watermark would come from the watermark strategy of "
                    f"{strategy.describe()}, below a keyed stage, through an operator with "
                    "several inputs, a partitioning its keying pass does not run or another "
                    "watermark strategy (a stage takes such a watermark in band only along "
                    "one-input operators from the strategy or from the keyed stage above, "
                    "which forwards it)")
        above = forwarded_from(node)
        if above is not None and node.id in plan.sources:
            _refuse(node, f"its watermark would come from {above.describe()}, whose records "
                    "it reads carried through another keyed stage (a stage takes the "
                    "watermark the stage above forwards only from that stage's own output)")


#: Spark's state store providers: its default, and the one ``transformWithState`` needs
_HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"


def state_store_conf(spark: SparkSession) -> dict[str, str]:
    """The session settings the one query starts with: RocksDB's state store provider, which
    ``transformWithState`` needs, when the session has Spark's default one (a query restarted
    from a checkpoint keeps the provider it began with).

    Args:
        spark: the session.

    Returns:
        ``{setting: value}``; empty when the session's provider is not Spark's default.
    """
    current = spark.conf.get(_PROVIDER, _HDFS) or _HDFS
    if current != _HDFS:
        return {}
    logger.info("the one query starts with %s=%s (Spark's transformWithState needs it)",
                _PROVIDER, _ROCKSDB)
    return {_PROVIDER: _ROCKSDB}


def fans_out(nodes: list[Transformation], consumers: dict[int, list[Transformation]]) -> bool:
    """Whether the one query writes several sinks, or reads a keyed stage's records apart
    (one_query_sinks.py runs it then).

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.

    Returns:
        True for several sinks, or an operator at or below a keyed stage with several readers.
    """
    if sum(isinstance(n, SinkNode) for n in nodes) > 1:
        return True
    return any(len(consumers.get(n.id, [])) > 1 and (is_keyed(n) or chained(n)) for n in nodes)


def exit_of(node: Transformation) -> Transformation:
    """Where the query's own plan ends for a sink reading ``node``: the nearest operator above
    it that is no one-input stateless operator below a keyed stage (the operators between
    run per micro-batch, in the query's foreachBatch function).

    Args:
        node: a sink's input.

    Returns:
        ``node`` itself, or the keyed stage (or several-input operator) above its tail.
    """
    while (isinstance(node, _TAIL_KINDS) and len(node.inputs) == 1
           and (is_keyed(node.inputs[0]) or chained(node.inputs[0]))):
        node = node.inputs[0]
    return node


def query_exits(nodes: list[Transformation]) -> list[Transformation]:
    """The operators whose records the one query's plan computes: each sink's
    :func:`exit_of`, each once; without sinks (collect, ``to_dataframe``) the operators
    nobody reads.

    Args:
        nodes: the job graph.

    Returns:
        The exits, in the order of the sinks.
    """
    sinks = [n for n in nodes if isinstance(n, SinkNode)]
    if sinks:
        ends = [exit_of(s.inputs[0]) for s in sinks]
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
    part = {n.id for e in exits for n in upstream(e, include_self=True)}
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
    if not _held_twice(nodes, consumers, plan):
        return plan
    tree = _tree_plan(nodes, consumers)
    if tree is not None and not _held_twice(nodes, consumers, tree):
        return tree
    return _branched_plan(nodes, consumers, plan)


def _branched_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                   plan: CarryPlan) -> CarryPlan:
    """``plan`` with each keyed stage it holds twice, read by sinks and otherwise only along
    paths a union joins to the keyed stage below, or along one path to a union with records
    from elsewhere in front of it, carried through that stage; the stage below carries
    nothing else, and is read by sinks only or carried on in turn."""
    held = {n.id for n, _ in _held_twice(nodes, consumers, plan)}
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


def _held_twice(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                plan: CarryPlan) -> list[tuple[Transformation, int]]:
    """The keyed stages the query's plan would hold more than once under ``plan``, with the
    number of times."""
    uses, _, _ = _uses(nodes, consumers, frozenset(plan.carried))
    return [(n, uses[n.id]) for n in nodes
            if is_keyed(n) and uses.get(n.id, 0) > 1 and n.id not in plan.carried]


def _tree_plan(nodes: list[Transformation], consumers: dict[int, list[Transformation]]
               ) -> Optional[CarryPlan]:
    """Each tree of keyed stages below a keyed stage read several times (by sinks and keyed
    stages, or by several keyed stages), each reading the stage above it along one-input
    stateless operators a keying pass runs, as one chain in breadth-first order: every
    stage of the chain carries the one before it, whose output its keying pass reads, and
    keys its own parent's records out of it when that is not the one before (runtime/carry.py
    hands every carried stage's records on to the end). None when a tree is not of that
    shape.

    Args:
        nodes: the job graph.
        consumers: node id -> the nodes reading it.

    Returns:
        The plan, or None.
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
        claimed.update(n.id for n in chain)
        carried[root.id] = chain[0]
        for above, stage in zip(chain, chain[1:]):
            carried[above.id] = stage
            if parent[stage.id] is not above:
                sources[stage.id] = (above, parent[stage.id])
    return CarryPlan(carried, sources, {})


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
        union = next(n for n in t.nodes if n.id == carry.union[0])
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
    #: (the union, its input) through which the carried stage's records reach the stage's
    #: keying pass, tagged by the pass in front of the union (branches.union_carries)
    union: Optional[tuple[int, int]] = None

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
            u = plan.unions[b.id]
            carriers[b.id] = Carry(e, True, union=(u.union.id, u.side))
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


def _check_paths(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                 plan: CarryPlan) -> None:
    """Refuse a keyed stage the query's plan would hold more than once: Spark plans a
    DataFrame read twice as two copies, each with its own operator and state."""
    for node, uses in _held_twice(nodes, consumers, plan):
        _refuse(node, f"the query would hold it {uses} times: its records reach "
                "a keyed stage, or an operator with several inputs, along several paths "
                "(each would run the keyed stage again, with a state of its own); the "
                "query writes a keyed stage's outputs apart only through stateless "
                "operators down to sinks, or carried through the keyed stages below it, "
                "each reading the stage above it along one-input stateless operators (a "
                "key_by read as a plain stream and a partitioning other than broadcast or "
                "custom among them) or along such paths a union joins "
                "(docs/spark-mapping.md: which graphs run how)")


def one_query_placement(stages: dict[int, str], nodes: list[Transformation]) -> dict[str, Any]:
    """What the job's manifest records of the mapping (evolution.check_placement): Spark keeps
    each stateful operator's state under its position in the query, so the keyed stages, in
    the order the query holds them, must stay what they were for a checkpoint to resume, and
    so must its sources (Structured Streaming refuses a query whose sources changed); the
    query's name (:data:`QUERY`) tells its checkpoint.

    Args:
        stages: keyed node id -> the stage's identity (``evolution.stage_names``), in graph
            order.
        nodes: the job graph (its sources' kinds, in graph order).

    Returns:
        ``{"mapping": "one-query", "stages": [...], "query": "query", "sources": [...]}``.
    """
    sources = [str(getattr(n, "kind", "")) for n in nodes if isinstance(n, SourceNode)]
    return {"mapping": ONE_QUERY, "stages": list(stages.values()), "query": QUERY,
            "sources": sources}


def tws_state_reader(reader: DataFrameReader, spark: SparkSession, checkpoint: str, stage: str
                    ) -> tuple[Any, Any]:
    """Spark's state reader of a keyed stage of the one query, and its state bytes column.

    Args:
        reader: ``spark.read.format("statestore")`` (with its batch id, if any).
        spark: the session.
        checkpoint: the query's checkpoint.
        stage: the stage's identity (``evolution.stage_names``).

    Returns:
        The reader set to the stage's operator and value state, and the column of the key
        group's state bytes.

    Raises:
        SavepointFormatError: the checkpoint holds no operator with the stage's state.
    """
    import json

    from pyspark.sql import functions as F

    name = state_name(stage)
    for row in spark.read.format("state-metadata").load(checkpoint).collect():
        variables = json.loads(row["operatorProperties"] or "{}").get("stateVariables", [])
        if any(v.get("stateName") == name for v in variables):
            reader = reader.option("operatorId", int(row["operatorId"]))
            return reader.option("stateVarName", name), F.col("value.s")
    raise SavepointFormatError(
        f"stage {stage!r}: the query checkpoint {checkpoint} holds no operator with its state "
        f"{name!r}")


def from_keyed(node: Transformation) -> bool:
    """Whether ``node``'s records come from a keyed stage (it is one, or one lies above it).

    Args:
        node: any operator of the graph.

    Returns:
        True for a keyed stage or an operator below one.
    """
    return is_keyed(node) or chained(node)


def meets_keyed(node: Transformation, readers: dict[int, list[Transformation]]) -> bool:
    """Whether an operator with several inputs (a union, a connect) reads a keyed stage's
    records on one input and records no keyed stage touched on another, and is keyed or
    feeds a keyed stage: in the one query, the latter records then bring their own
    watermark and end of input (Spark's watermark of a query is the least of its sources',
    as Flink's of several inputs is the least of theirs). Where no keyed stage reads them,
    they bring none: it would only hold back the query's watermark.

    Args:
        node: any operator of the graph.
        readers: node id -> the nodes reading it (``plan.graph.consumers``).

    Returns:
        True when its inputs are of both kinds and a keyed stage reads what it emits.
    """
    fed = [from_keyed(i) for i in node.inputs]
    return (any(fed) and not all(fed)) and (is_keyed(node) or feeds_keyed(node, readers))


def branch_watermark(branch: Transformation) -> Any:
    """The watermark strategy of ``branch``'s records: the nearest one at or above it.

    Args:
        branch: any operator of the graph.

    Returns:
        The WatermarkStrategy, or None.
    """
    for n in upstream(branch, include_self=True):
        if assigns_watermarks(n):
            assert isinstance(n, ChainNode)  # the one kind that assigns a strategy
            return n.watermark_strategy
    return None


def _refuse(node: Transformation, why: str) -> None:
    raise GraphBuildError(
        f"{node.describe()}: {QUERY_MAPPING}={ONE_QUERY} does not run this graph yet: {why}. "
        f"Run it with {QUERY_MAPPING}={PER_STAGE}")
