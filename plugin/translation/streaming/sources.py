"""The STREAMING translator's sources: a bounded source (a collection, a batch DataFrame) is
staged once as Parquet files in the job folder and read back as a file stream, so that
every run of the job reads the same records; a streaming DataFrame and Kafka are read as
they are."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Optional, Protocol

from ...plan.graph import SourceNode
from ...runtime.encoding import PICKLED, TS, VALUE
from ...state_store.storage import Storage
from ..steps import dataframe_source
from ..stream import Stream
from .queries import write_df_once, write_table_once

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SourceOwner", "collection_source", "dataframe_stream_source", "kafka_stream_source"]


class SourceOwner(Protocol):
    """What a source reads of the STREAMING translator."""

    spark: SparkSession
    storage: Storage
    #: ``(kind, interval)``: plan/config.py's ``streaming_trigger``
    trigger: tuple[str, Optional[str]]
    #: source node id -> its number among the job's sources
    source_ordinals: dict[int, int]

    def job_folder(self) -> str: ...


def _bounded_source_folder(t: SourceOwner, node: SourceNode) -> str:
    """Where a bounded source is staged once, in the job folder (a streaming one is not)."""
    return t.storage.join(t.job_folder(), "sources", str(t.source_ordinals.get(node.id, 0)))


def collection_source(t: SourceOwner, node: SourceNode) -> Stream:
    """``from_collection``: its records, pickled, staged once and read as a file stream.

    Args:
        t: the STREAMING translator.
        node: the source.

    Returns:
        Its stream.
    """
    folder = _bounded_source_folder(t, node)
    ddl = f"{TS} bigint, {VALUE} binary"
    if not t.storage.exists(t.storage.join(folder, "part-0.parquet")):
        import pyarrow as pa

        table = pa.table({
            TS: pa.array([None] * len(node.payload), type=pa.int64()),
            VALUE: pa.array([pickle.dumps(v, pickle.HIGHEST_PROTOCOL) for v in node.payload],
                            type=pa.binary()),
        })
        write_table_once(t.storage, folder, "part-0.parquet", table)
    df = t.spark.readStream.schema(ddl).parquet(folder)
    return Stream(df, PICKLED, node.output_type, name=node.name)


def dataframe_stream_source(t: SourceOwner, node: SourceNode) -> Stream:
    """``from_dataframe``: a streaming DataFrame as it is, a batch one staged once.

    Args:
        t: the STREAMING translator.
        node: the source.

    Returns:
        Its stream.
    """
    df = node.payload
    if not df.isStreaming:
        folder = _bounded_source_folder(t, node)
        write_df_once(t.storage, folder, df)
        df = t.spark.readStream.schema(df.schema).parquet(folder)
    return dataframe_source(df, node)


def kafka_stream_source(t: SourceOwner, node: SourceNode) -> Stream:
    """A Kafka source read as a stream, under the job's trigger.

    Args:
        t: the STREAMING translator.
        node: the source.

    Returns:
        Its stream.
    """
    from ..kafka import kafka_source

    return kafka_source(t.spark, node, streaming=True, trigger=t.trigger)
