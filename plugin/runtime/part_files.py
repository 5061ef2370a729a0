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
from typing import Any, Callable, Optional

from ..state_store.exceptions import SerializationError
from ..state_store.storage import Storage
from .partition_writes import counting_writer, non_empty

__all__ = ["part_file_name", "part_file_path", "write_part_file", "partition_file_writer"]


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


def write_part_file(values: Iterator[Optional[str]], storage: Storage, spec: dict[str, Any],
                    bucket: str, uid: str, subtask: int, batch_id: int) -> int:
    """Write ``values`` (subtask ``subtask``'s records of micro-batch ``batch_id``) as its part
    file, each a UTF-8 line; no file when there are none, as in Flink.

    Args:
        values: The records' strings.
        storage: The job's storage layer (how the executors reach the base path).
        spec: The sink's options.
        bucket: The micro-batch's bucket id.
        uid: The query's id.
        subtask: The Spark partition index.
        batch_id: The micro-batch id.

    Returns:
        The records written.

    Raises:
        SerializationError: For a None record (nothing of the file is written).
    """
    records = non_empty(values)
    if records is None:
        return 0
    written = 0
    with storage.open_output(part_file_path(spec, bucket, uid, subtask, batch_id)) as f:
        for value in records:
            if value is None:
                raise SerializationError(f"FileSink({spec['base_path']!r}): a record is None; "
                                         "Encoder.simple_string_encoder() writes str records")
            f.write(value.encode("utf-8") + b"\n")
            written += 1
    return written


def partition_file_writer(storage: Storage, spec: dict[str, Any], bucket: str, uid: str,
                          batch_id: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function writing each partition's records as its part file
    (:func:`~.partition_writes.counting_writer` around :func:`write_part_file`).

    Args:
        storage: The job's storage layer.
        spec: The sink's options.
        bucket: The micro-batch's bucket id.
        uid: The query's id.
        batch_id: The micro-batch id.

    Returns:
        The function.
    """
    return counting_writer(lambda values, subtask: write_part_file(
        values, storage, spec, bucket, uid, subtask, batch_id))
