"""Whether a STREAMING job runs as one Spark query: its keyed stages chained inside it.

``execution.streaming.query-mapping: one-query`` runs every keyed stage as a
``transformWithStateInPandas`` (runtime/tws_processor.py) in the job's one query, where the
per-stage mapping runs each as an ``applyInPandasWithState`` query staged through files.
Spark hands the watermark from stage to stage inside each micro-batch (docs/spark-mapping.md).
:func:`one_query_mapping` decides it when the job is built (``auto``, the default, where it
helps and the graph allows; ``one-query`` refuses, naming why, a graph the mapping does not
run yet). Where the query's plan ends when it writes several sinks, and which keyed stages
carry the records of the stage above them: carried.py. Where each stage's watermark comes
from: inband.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from ...plan.config import AUTO_MAPPING, ONE_QUERY, PER_STAGE, QUERY_MAPPING, resolve
from ...plan.graph import (
    ChainNode,
    SinkNode,
    SourceNode,
    Transformation,
    is_keyed,
    upstream,
)
from ...runtime.tws_processor import state_name
from ...spark_io.exceptions import UnsupportedSparkFeatureError
from ...spark_io.versions import require_feature
from ...state_store.exceptions import GraphBuildError, SavepointFormatError
from .carried import CarryPlan, held_twice, tail_unions
from .inband import (
    assigns_watermarks,
    chained,
    forwarded_from,
    inband_watermark,
    strategy_below_keyed,
)
from .keyed import feeds_keyed

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession

    from ...operators.modes import RuntimeMode
    from ...plan.config import Configuration

__all__ = ["QUERY", "branch_watermark", "fans_out", "from_keyed", "meets_keyed",
           "one_query_mapping", "one_query_placement", "state_store_conf"]

logger = logging.getLogger(__name__)

#: the name of the job's one query (its checkpoint: <job folder>/<name>/checkpoint), whatever
#: its sinks: a sink added or removed leaves it where it was
QUERY = "query"


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
        plan: the graph's ``carried.carry_plan``.
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
        True for several sinks, an operator at or below a keyed stage with several readers,
        or a union in a sink's tail (carried.exits_of).
    """
    if sum(isinstance(n, SinkNode) for n in nodes) > 1 or tail_unions(nodes):
        return True
    return any(len(consumers.get(n.id, [])) > 1 and (is_keyed(n) or chained(n)) for n in nodes)


def _check_paths(nodes: list[Transformation], consumers: dict[int, list[Transformation]],
                 plan: CarryPlan) -> None:
    """Refuse a keyed stage the query's plan would hold more than once: Spark plans a
    DataFrame read twice as two copies, each with its own operator and state."""
    for node, uses in held_twice(nodes, consumers, plan):
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
