"""Which query a sink's write belongs to: the ids both modes' exactly-once sinks (Delta,
Kafka, files) key their commits by, and whether a session is Spark Connect.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from ..spark_io.delta_io import local_path
from ..spark_io.storage_conf import current_storage
from ..state_store.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["is_connect", "scoped", "streaming_query_id"]


def is_connect(spark: SparkSession) -> bool:
    """True for a Spark Connect session (Databricks serverless and shared clusters)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def scoped(query_id: str, scope: str) -> str:
    """``query_id`` told apart per sink in the one-query mapping, whose query may write
    several (``scope``: the sink's name; empty for a per-stage sink's own query, whose ids
    stay what they were).

    Args:
        query_id: the query's id (:func:`streaming_query_id`).
        scope: the sink's name within the job's one query, or "".

    Returns:
        ``<query_id>.<scope>``, or ``query_id`` itself for no scope.
    """
    return f"{query_id}.{scope}" if scope else query_id


def streaming_query_id(spark: SparkSession, checkpoint: str) -> str:
    """The id of the streaming query whose checkpoint is ``checkpoint``, called from inside its
    ``foreachBatch`` function: the same in every run of the query, a new one for a new
    checkpoint (whose batch ids start at 0 again). Read from the micro-batch thread's
    ``sql.streaming.queryId``, else from the checkpoint's metadata file, else (neither
    readable) derived from the checkpoint location.

    Args:
        spark: The session.
        checkpoint: The query's checkpoint location.

    Returns:
        The query id (``checkpoint-<digest>`` when derived).
    """
    query_id = None
    if os.environ.get("PYSPARK_PIN_THREAD", "true").lower() != "false":
        # pinned threads: this call runs in the micro-batch's own JVM thread
        try:
            query_id = spark.sparkContext.getLocalProperty("sql.streaming.queryId")
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            query_id = None
    if not query_id:
        try:
            raw = current_storage(spark).read_bytes(
                Storage.join(local_path(checkpoint), "metadata"))
            query_id = json.loads(raw.decode("utf-8")).get("id")
        except (OSError, ValueError, AttributeError):
            query_id = None
    if query_id:
        return str(query_id)
    digest = hashlib.sha256(checkpoint.rstrip("/").encode("utf-8")).hexdigest()[:32]
    return f"checkpoint-{digest}"
