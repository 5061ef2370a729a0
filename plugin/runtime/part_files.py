"""The FileSink's part files, written by the executor holding each partition of a micro-batch
(the whole job in BATCH): one file per partition with records, each record a UTF-8 line.

A file's name is fixed by what it holds: ``<prefix>-<uid>-<subtask>-<batch><suffix>`` in the
batch's bucket folder, where ``uid`` is the streaming query's id (a BATCH job: its run's).
A micro-batch Spark runs again after a failure (same rows, same bucket: the bucket comes from
Spark's batch timestamp) writes the same files again, replacing them whole through the
storage layer (a local file is renamed into place, an object uploaded once), so no record is
written twice and none is lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

from ..state_store.exceptions import SerializationError
from ..state_store.storage import Storage

__all__ = ["part_file_name", "part_file_path", "partition_file_writer"]


def part_file_name(prefix: str, uid: str, subtask: int, batch_id: int, suffix: str) -> str:
    """The name of subtask ``subtask``'s part file of micro-batch ``batch_id``.

    Args:
        prefix: OutputFileConfig's prefix.
        uid: The query's (or BATCH run's) id.
        subtask: The Spark partition index.
        batch_id: The micro-batch id (BATCH: 0).
        suffix: OutputFileConfig's suffix.

    Returns:
        ``<prefix>-<uid>-<subtask>-<batch><suffix>``, Flink's ``<prefix>-<uid>-<subtask>-<n>``
        with the batch id as the counter.
    """
    return f"{prefix}-{uid}-{subtask}-{batch_id}{suffix}"


def part_file_path(spec: dict[str, Any], bucket: str, uid: str, subtask: int, batch_id: int) -> str:
    """Where a part file goes: the base path, the bucket folder (if any), the file name.

    Args:
        spec: The sink's options (``base_path``, ``prefix``, ``suffix``).
        bucket: The bucket id ("" for the base path).
        uid: The query's id.
        subtask: The Spark partition index.
        batch_id: The micro-batch id.

    Returns:
        The path or URI.
    """
    folder = Storage.join(spec["base_path"], bucket) if bucket else spec["base_path"]
    return Storage.join(folder, part_file_name(spec["prefix"], uid, subtask, batch_id,
                                               spec["suffix"]))


def _lines(batches: Iterator[Any], sink: str) -> Iterator[bytes]:
    for batch in batches:
        for value in batch.column(0).to_pylist():
            if value is None:
                raise SerializationError(f"{sink}: a record is None; "
                                         "Encoder.simple_string_encoder() writes str records")
            yield value.encode("utf-8") + b"\n"


def partition_file_writer(storage: Storage, spec: dict[str, Any], bucket: str, uid: str,
                          batch_id: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function writing each partition's records (one string column) as its
    part file; it yields one batch with the partition's ``written`` count.

    Args:
        storage: The job's storage layer (how the executors reach the base path).
        spec: The sink's options.
        bucket: The micro-batch's bucket id.
        uid: The query's id.
        batch_id: The micro-batch id.

    Returns:
        The function.
    """
    sink = f"FileSink({spec['base_path']!r})"

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        subtask = context.partitionId() if context is not None else 0
        lines = _lines(batches, sink)
        first = next(lines, None)
        written = 0
        if first is not None:  # no empty files, as in Flink
            with storage.open_output(part_file_path(spec, bucket, uid, subtask, batch_id)) as f:
                f.write(first)
                written = 1
                for line in lines:
                    f.write(line)
                    written += 1
        yield pa.RecordBatch.from_pydict({"written": pa.array([written], pa.int64())})

    return write
