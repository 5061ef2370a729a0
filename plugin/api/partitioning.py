"""PyFlink's physical partitioning calls on a DataStream: which parallel instance of the
next operator each record goes to.

Each call adds a partitioning node to the job graph; the translators turn it into a Spark
repartition into the job's parallelism, each record's partition computed per record
(``translation/physical.py``), so the next non-keyed operator's
``get_index_of_this_subtask()`` is the partition the record was sent to. A KeyedStream
refuses every one of them, as Flink does: its partitioning is the key.
"""

from __future__ import annotations

from typing import Any

from ..operators.functions import as_key_selector, as_partitioner
from ..plan.graph import PartitionNode
from ..state_store.exceptions import GraphBuildError

__all__ = ["Partitioning", "KeyedPartitioning"]


class Partitioning:
    """``forward``, ``shuffle``, ``rebalance``, ``rescale``, ``partition_custom`` for a
    stream handle holding its graph node in ``_node`` and its environment in ``_env``."""

    _node: Any
    _env: Any

    def _stream_of(self, node: Any) -> Any:
        """A DataStream over ``node`` in this stream's environment (the stream class
        provides it)."""
        raise NotImplementedError

    def _partitioned(self, strategy: str, name: str, **fields: Any) -> Any:
        node = PartitionNode(name=name, inputs=[self._node], output_type=self._node.output_type,
                             strategy=strategy, **fields)
        return self._stream_of(node)

    def forward(self) -> Any:
        """Each record goes to the same parallel instance of the next operator (no shuffle).

        Returns:
            The forwarded DataStream. The job refuses (GraphBuildError) to run when the
            operators on either side have different parallelism, as Flink does.
        """
        return self._partitioned("forward", "Forward")

    def shuffle(self) -> Any:
        """Each record goes to a uniformly random parallel instance of the next operator.

        Returns:
            The shuffled DataStream.
        """
        return self._partitioned("shuffle", "Shuffle")

    def rebalance(self) -> Any:
        """Records go round-robin to the parallel instances of the next operator: each
        upstream instance sends its n-th record to instance ``(start + n) % parallelism``,
        from a random ``start`` (in STREAMING, a new one in every micro-batch).

        Returns:
            The rebalanced DataStream.
        """
        return self._partitioned("rebalance", "Rebalance")

    def rescale(self) -> Any:
        """Each upstream instance sends its records to a subset of the next operator's
        instances. Here upstream Spark partition ``i`` sends all its records to instance
        ``i % parallelism`` (Flink's pointwise distribution when the parallelisms are equal).

        Returns:
            The rescaled DataStream.
        """
        return self._partitioned("rescale", "Rescale")

    def partition_custom(self, partitioner: Any, key_selector: Any) -> Any:
        """Each record goes to the instance ``partitioner.partition(key, parallelism)``
        returns for its key.

        Args:
            partitioner: a Partitioner, or a callable ``(key, num_partitions) -> int``.
            key_selector: a KeySelector, or a callable from a record to its key.

        Returns:
            The partitioned DataStream. A partition outside ``[0, parallelism)`` fails the
            job with a JobExecutionError naming the operator, the key and the value (a
            partitioner or key selector that raises: a UserFunctionError).

        Raises:
            GraphBuildError: ``partitioner`` or ``key_selector`` is not a function.

        Example:
            >>> ds.partition_custom(lambda key, n: key % n, lambda r: r[0])  # doctest: +SKIP
        """
        return self._partitioned("custom", "PartitionCustom",
                                 partitioner=as_partitioner(partitioner),
                                 key_selector=as_key_selector(key_selector, "key_selector"))


class KeyedPartitioning(Partitioning):
    """A KeyedStream's partitioning is its key: every partitioning call raises (Flink's
    rule), ``forward()`` included."""

    def _refuse(self, call: str) -> GraphBuildError:
        return GraphBuildError(
            f"{call} on the KeyedStream of {self._node.describe()}: cannot override the "
            "partitioning of a KeyedStream (its records are partitioned by key)")

    def forward(self: Any) -> Any:
        raise self._refuse("forward()")

    def shuffle(self) -> Any:
        raise self._refuse("shuffle()")

    def rebalance(self) -> Any:
        raise self._refuse("rebalance()")

    def rescale(self) -> Any:
        raise self._refuse("rescale()")

    def partition_custom(self, partitioner: Any, key_selector: Any) -> Any:
        raise self._refuse("partition_custom()")
