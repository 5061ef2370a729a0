"""The FileSink in both modes: each micro-batch (BATCH: the whole job) written as part files by
the executors (``runtime/part_files.py``), into the bucket of the batch's processing time.

In STREAMING the bucket comes from Spark's batch timestamp, which the query's offset log keeps
for the batch (``<checkpoint>/offsets/<batch id>``), and the files' uid is the query's id: a
batch run again after a failure writes the very same files again, replacing them.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ..operators.exceptions import JobExecutionError
from ..plan.graph import SinkNode
from ..state_store.storage import Storage
from .query_ids import scoped, streaming_query_id
from .steps import write_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["write_part_files", "batch_timestamp_ms", "file_batch_writer", "file_job_writer"]


def write_part_files(df: DataFrame, sink: SinkNode, storage: Storage, bucket: str, uid: str,
                     batch_id: int) -> int:
    """Write the records of ``df`` (one string column) as the batch's part files.

    Args:
        df: The records.
        sink: The ``files`` SinkNode.
        storage: The job's storage layer.
        bucket: The bucket id ("" for the base path).
        uid: The query's (or BATCH run's) id.
        batch_id: The micro-batch id (BATCH: 0).

    Returns:
        The number of records written.
    """
    from ..runtime.part_files import partition_file_writer

    spec = {k: sink.options[k] for k in ("base_path", "prefix", "suffix")}
    return write_partitions(df, partition_file_writer(storage, spec, bucket, uid, batch_id))


def batch_timestamp_ms(storage: Storage, checkpoint: str, batch_id: int) -> int:
    """Spark's processing time of micro-batch ``batch_id``, as its offset log recorded it
    before the batch ran (the same in every run of the batch).

    Args:
        storage: The job's storage layer.
        checkpoint: The sink query's checkpoint.
        batch_id: The micro-batch id.

    Returns:
        Epoch milliseconds.

    Raises:
        JobExecutionError: The offset log entry is missing or has no batch timestamp.
    """
    path = Storage.join(checkpoint, "offsets", str(batch_id))
    try:
        lines = storage.read_bytes(path).decode("utf-8").splitlines()
        return int(json.loads(lines[1])["batchTimestampMs"])
    except (OSError, ValueError, IndexError, KeyError) as exc:
        raise JobExecutionError(f"FileSink: no batch timestamp for micro-batch {batch_id} in "
                                f"{path}: {type(exc).__name__}: {exc}") from exc


def file_batch_writer(sink: SinkNode, total: list[int], storage: Storage,
                      checkpoint: str, scope: str = "") -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of a STREAMING FileSink; written counts add to ``total[0]``.

    Args:
        sink: The ``files`` SinkNode.
        total: A one-element list accumulating the records written.
        storage: The job's storage layer.
        checkpoint: The sink query's checkpoint.
        scope: The sink's name within the job's one query (it joins the files' uid).

    Returns:
        The function.
    """

    def write(batch_df: Any, batch_id: int) -> None:
        # the micro-batch's session: Spark Connect 3.5 cannot pickle one into this function
        uid = scoped(streaming_query_id(batch_df.sparkSession, checkpoint), scope)
        bucket = sink.options["buckets"].bucket(batch_timestamp_ms(storage, checkpoint, batch_id))
        total[0] += write_part_files(batch_df, sink, storage, bucket, uid, batch_id)

    return write


def file_job_writer(df: DataFrame, sink: SinkNode, storage: Storage) -> Callable[[], int]:
    """The action of a BATCH FileSink: the whole job is one batch, under a uid of its own run.

    Args:
        df: The records.
        sink: The ``files`` SinkNode.
        storage: The job's storage layer.

    Returns:
        The action; it returns the records written.
    """

    def write() -> int:
        bucket = sink.options["buckets"].bucket(int(time.time() * 1000))
        return write_part_files(df, sink, storage, bucket, uuid.uuid4().hex, 0)

    return write
