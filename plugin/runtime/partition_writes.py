"""Sinks that write each partition of a micro-batch from the executor holding it (the
exactly-once Kafka writer, the FileSink's part files): the ``mapInArrow`` function around a
partition writer, which reports how many records it wrote."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Callable, Optional

from .passes import partition_id

__all__ = ["PartitionWrite", "counting_writer", "non_empty"]

#: (the partition's record strings, its Spark partition index) -> records written
PartitionWrite = Callable[[Iterator[Optional[str]], int], int]


def counting_writer(write: PartitionWrite) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function that hands ``write`` the values of a partition's one string
    column and yields one batch with its ``written`` count (schema ``written long``).

    Args:
        write: Writes a partition's records; returns how many it wrote.

    Returns:
        The function.
    """

    def each_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        values = (v for batch in batches for v in batch.column(0).to_pylist())
        written = write(values, partition_id())
        yield pa.RecordBatch.from_pydict({"written": pa.array([written], pa.int64())})

    return each_partition


def non_empty(values: Iterator[Optional[str]]) -> Optional[Iterator[Optional[str]]]:
    """The values of ``values`` (its first one taken and put back), or None when it has none:
    a partition without records writes nothing and opens no connection or file.

    Args:
        values: A partition's record strings.

    Returns:
        An iterator of every value, or None.
    """
    for first in values:
        return itertools.chain((first,), values)
    return None
