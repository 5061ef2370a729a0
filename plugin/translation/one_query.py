"""Whether a STREAMING job runs as one Spark query: its keyed stages chained inside it.

``execution.streaming.query-mapping: one-query`` runs every keyed stage as a
``transformWithStateInPandas`` (runtime/tws_processor.py) in the job's one query, where the
per-stage mapping runs each as an ``applyInPandasWithState`` query staged through files.
Spark hands the watermark from stage to stage inside each micro-batch (docs/spark-mapping.md).
:func:`one_query_mapping` decides it when the job is built and refuses, naming why, a graph
the mapping does not run yet; :func:`chained` tells a stage whose watermark comes from the
keyed stage above it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..plan.config import resolve
from ..plan.graph import Transformation, is_keyed, upstream
from ..runtime.tws_processor import state_name
from ..state_store.exceptions import GraphBuildError, SavepointFormatError

__all__ = ["ONE_QUERY", "PER_STAGE", "chained", "check_sinks", "one_query_mapping",
           "one_query_placement"]

logger = logging.getLogger(__name__)

#: The values of ``execution.streaming.query-mapping``.
PER_STAGE = "per-stage"
ONE_QUERY = "one-query"
_OPTION = "execution.streaming.query-mapping"


def one_query_mapping(config: Any, mode: Any, spark: Any,
                      nodes: list[Transformation], consumers: dict[int, list[Transformation]]
                      ) -> bool:
    """Whether the job's keyed stages run in one query (``execution.streaming.query-mapping``).

    Args:
        config: the job's configuration.
        mode: the runtime mode (the option's default per mode).
        spark: the session (its state store provider becomes RocksDB's, which
            ``transformWithStateInPandas`` needs, when it is Spark's default one).
        nodes: the job graph.
        consumers: node id -> the nodes reading it.

    Returns:
        True for ``one-query``.

    Raises:
        UnsupportedSparkFeatureError: ``one-query`` on a Spark line before 4.0, or over a
            Spark Connect session without ``transformWithStateInPandas`` (4.0).
        GraphBuildError: ``one-query`` for a graph it does not run yet, naming the operator.
    """
    if str(resolve(config, _OPTION, mode)) != ONE_QUERY:
        return False
    from ..spark_io.versions import require_feature

    require_feature("one_query", spark.version)
    if not hasattr(spark.range(1).groupBy("id"), "transformWithStateInPandas"):
        from ..spark_io.exceptions import UnsupportedSparkFeatureError

        raise UnsupportedSparkFeatureError(
            f"{_OPTION}={ONE_QUERY} needs transformWithStateInPandas, which this session "
            f"(Spark {spark.version}, {type(spark).__module__}) does not offer: Spark Connect "
            f"has it from 4.1. Use {_OPTION}={PER_STAGE} (the default) on this session")
    for node in nodes:
        readers = consumers.get(node.id, [])
        if len(readers) > 1 and (is_keyed(node) or chained(node)):
            _refuse(node, f"its output is read by {len(readers)} operators and holds a keyed "
                    "stage's records (each reader would run the keyed stage again)")
    for node in nodes:
        ws = getattr(node, "watermark_strategy", None)
        if ws is not None and ws.kind != "none" and chained(node):
            _refuse(node, "it assigns a watermark strategy below a keyed stage (Spark refuses "
                    "to redefine the watermark after a stateful operator of the query)")
    for node in nodes:
        if is_keyed(node) and len(node.inputs) > 1:
            fed = [chained(i) for i in node.inputs]
            if any(fed) and not all(fed):
                _refuse(node, "one of its inputs comes from a keyed stage and another does not "
                        "(their watermarks would meet after a stateful operator)")
    _rocksdb_state_store(spark)
    return True


#: Spark's state store providers: its default, and the one ``transformWithState`` needs
_HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"


def _rocksdb_state_store(spark: Any) -> None:
    """Make the session's state store provider RocksDB's when it is Spark's default (a query
    restarted from a checkpoint keeps the provider it began with)."""
    current = spark.conf.get(_PROVIDER, _HDFS) or _HDFS
    if current == _HDFS:
        logger.info("execution.streaming.query-mapping=one-query: %s set to %s (Spark's "
                    "transformWithState needs it)", _PROVIDER, _ROCKSDB)
        spark.conf.set(_PROVIDER, _ROCKSDB)


def check_sinks(one_query: bool, sinks: list[Any]) -> None:
    """Refuse several sinks in the one-query mapping (each sink is a query of its own).

    Args:
        one_query: the job runs the one-query mapping.
        sinks: the job's sinks.

    Raises:
        GraphBuildError: more than one sink.
    """
    if one_query and len(sinks) > 1:
        names = ", ".join(getattr(s, "name", "") or type(s).__name__ for s in sinks)
        raise GraphBuildError(
            f"{_OPTION}={ONE_QUERY} does not run this job yet: it has {len(sinks)} sinks "
            f"({names}), and each sink runs as a query of its own. Run it with "
            f"{_OPTION}={PER_STAGE} (the default)")


def one_query_placement(stages: dict[int, str]) -> dict[str, Any]:
    """What the job's manifest records of the mapping (evolution.check_placement): Spark keeps
    each stateful operator's state under its position in the query, so the keyed stages, in
    the order the query holds them, must stay what they were for a checkpoint to resume.

    Args:
        stages: keyed node id -> the stage's identity (``evolution.stage_names``), in graph
            order.

    Returns:
        ``{"mapping": "one-query", "stages": [...]}``.
    """
    return {"mapping": ONE_QUERY, "stages": list(stages.values())}


def tws_state_reader(reader: Any, spark: Any, checkpoint: str, stage: str) -> tuple[Any, Any]:
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


def chained(node: Transformation) -> bool:
    """Whether a keyed stage lies above ``node``: for a keyed stage, its watermark then comes
    from that stage (Spark's ``eventTimeColumnName``), not from a watermark of its own.

    Args:
        node: any operator of the graph.

    Returns:
        True when a keyed stage lies above it.
    """
    return any(is_keyed(n) for n in upstream(node))


def _refuse(node: Transformation, why: str) -> None:
    raise GraphBuildError(
        f"{node.describe()}: {_OPTION}={ONE_QUERY} does not run this graph yet: {why}. Run it with "
        f"{_OPTION}={PER_STAGE} (the default)")
