"""Kafka sources and sinks (``from_source(KafkaSource)``, ``sink_to(KafkaSink)``) on Spark's
Kafka connector.

A bounded source in BATCH is one batch read up to the latest offsets (``endingOffsets``);
in STREAMING a source is a streaming read whose offsets live in the query's checkpoint, so
a later run continues where the last one stopped. Records are the values decoded as UTF-8
strings, stamped with the Kafka record timestamp. A sink writes each record's string as the
value of a keyless Kafka record: with ``NONE``/``AT_LEAST_ONCE`` through Spark's Kafka sink
(a micro-batch retried after a failure is written again), with ``EXACTLY_ONCE`` in Kafka
transactions, one per partition of each micro-batch, that a rerun of the batch skips
(``runtime/kafka_transactions.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..plan.graph import SinkNode, SourceNode
from ..runtime.encoding import TS, typed_encoding
from ..state_store.exceptions import ConfigurationError, GraphBuildError
from .query_ids import scoped, streaming_query_id
from .steps import string_values, write_partitions
from .stream import Stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["kafka_source", "write_kafka", "write_kafka_transactions", "exactly_once",
           "kafka_batch_writer", "missing_connector"]

#: the column holding the decoded value
_VALUE = "value"


def kafka_source(spark: SparkSession, node: SourceNode, streaming: bool,
                 trigger: tuple[str, Optional[str]] = ("available-now", None)) -> Stream:
    """The records of a KafkaSource node as a typed STRING stream.

    Args:
        spark: The session (it needs Spark's Kafka connector on its class path).
        node: The ``kafka`` SourceNode (its payload: the KafkaSource's spec).
        streaming: A streaming read (STREAMING jobs) rather than a bounded batch read.
        trigger: The STREAMING job's trigger (kind, interval).

    Returns:
        The stream: record timestamps in milliseconds, values as str.

    Raises:
        GraphBuildError: For an unbounded source read in a batch.
        ConfigurationError: For a bounded source under a processing-time trigger.
    """
    from pyspark.sql import functions as F

    options = dict(node.payload["options"])
    reader: Any
    if streaming and node.payload["bounded"] and trigger[0] == "processing-time":
        raise ConfigurationError(
            f"source {node.describe()} is bounded (set_bounded(latest())): in STREAMING it "
            "ends with an available-now or once run, but execution.streaming.trigger is "
            f"processing-time={trigger[1]}")
    if streaming:
        options.pop("endingOffsets", None)  # the run's trigger ends a bounded read
        reader = spark.readStream.format("kafka")
    else:
        if not node.payload["bounded"]:
            raise GraphBuildError(f"source {node.describe()} is unbounded: a batch read needs "
                                  "set_bounded(KafkaOffsetsInitializer.latest())")
        reader = spark.read.format("kafka")
    try:
        df = reader.options(**options).load()
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException through Py4J/Connect
        raise missing_connector(exc, f"source {node.describe()}") from exc
    df = df.select(F.unix_millis(F.col("timestamp")).alias(TS),
                   F.col("value").cast("string").alias(_VALUE))
    return Stream(df, typed_encoding(node.output_type, columns=(_VALUE,)), node.output_type,
                  name=node.name)


def missing_connector(exc: Exception, what: str) -> Exception:
    """``exc``, or a ConfigurationError naming the fix when Spark has no Kafka connector.

    Args:
        exc: What Spark raised reading or writing Kafka.
        what: The source or sink, for the message.

    Returns:
        The error to raise.
    """
    if "Failed to find data source: kafka" not in str(exc):
        return exc
    return ConfigurationError(
        f"{what}: the Spark session has no Kafka connector on its class path; start it with "
        "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:<its Spark version>")


def write_kafka(df: DataFrame, sink: SinkNode) -> int:
    """Write the records of ``df`` (one string column) to the sink's topic.

    Args:
        df: The records.
        sink: The ``kafka`` SinkNode.

    Returns:
        The number of records written.
    """
    from pyspark import StorageLevel

    # counted on the cached rows, then written from them: the input plan (a stateful
    # query's micro-batch too) runs once, every partition of it
    out = string_values(df).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        n = out.count()
        try:
            out.write.format("kafka").options(**sink.options["options"]).save()
        except Exception as exc:  # noqa: BLE001 - see kafka_source
            raise missing_connector(exc, f"sink {sink.describe()}") from exc
    finally:
        out.unpersist()
    return int(n)


def exactly_once(sink: SinkNode) -> bool:
    """Whether ``sink`` writes in Kafka transactions (``DeliveryGuarantee.EXACTLY_ONCE``).

    Args:
        sink: The ``kafka`` SinkNode.

    Returns:
        True for EXACTLY_ONCE.
    """
    return bool(sink.options["guarantee"] == "EXACTLY_ONCE")


def write_kafka_transactions(df: DataFrame, sink: SinkNode, query_id: str, batch_id: int) -> int:
    """Write the records of ``df`` (one string column) to the sink's topic exactly once: each
    partition in one Kafka transaction, skipped when a run of the same query, batch and
    partition committed it before.

    Args:
        df: The records.
        sink: The ``kafka`` SinkNode (EXACTLY_ONCE).
        query_id: The streaming query's id (a BATCH job: its run's id).
        batch_id: The micro-batch id (a BATCH job: 0).

    Returns:
        The number of records written by this run.
    """
    from ..runtime.kafka_transactions import partition_writer

    spec = {k: sink.options[k] for k in ("topic", "transactional_id_prefix", "producer")}
    return write_partitions(df, partition_writer(spec, query_id, batch_id))


def kafka_batch_writer(sink: SinkNode, total: list[int], checkpoint: str,
                       scope: str = "") -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of a STREAMING Kafka sink; written counts add to ``total[0]``.

    Args:
        sink: The ``kafka`` SinkNode.
        total: A one-element list accumulating the records written.
        checkpoint: The sink query's checkpoint (EXACTLY_ONCE: to find the query's id).
        scope: The sink's name within the job's one query (it joins the id).

    Returns:
        The function.
    """

    def write(batch_df: Any, batch_id: int) -> None:
        if exactly_once(sink):
            # the micro-batch's session: Spark Connect 3.5 cannot pickle one into this function
            query_id = scoped(streaming_query_id(batch_df.sparkSession, checkpoint), scope)
            total[0] += write_kafka_transactions(batch_df, sink, query_id, batch_id)
        else:
            total[0] += write_kafka(batch_df, sink)

    return write
