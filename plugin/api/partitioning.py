"""PyFlink's physical partitioning calls on a DataStream, as Spark can honour them.

Flink lets a program choose how records travel to the next operator's parallel instances.
Spark decides that itself: a non-keyed stage runs in its input's partitions (one Spark task
per partition, fused with the stages around it) and a keyed operator shuffles by key. So
``forward()`` (each record stays in its subtask) is what happens anyway and is accepted;
the calls that would move records between subtasks raise a ``GraphBuildError`` that says
what to do instead, where the program calls them, rather than an ``AttributeError``. A
KeyedStream refuses every one of them, as Flink does: its partitioning is the key.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..state_store.exceptions import GraphBuildError

__all__ = ["Partitioning", "KeyedPartitioning"]

_Self = TypeVar("_Self", bound="Partitioning")

_SPREAD = ("Spark decides how records spread over its partitions: a non-keyed operator runs "
           "in its input's partitions and a keyed one shuffles by key. To spread a source's "
           "records over more partitions, repartition its DataFrame before the job reads it, "
           "env.from_dataframe(df.repartition(n))")


class Partitioning:
    """``forward``, ``shuffle``, ``rebalance``, ``rescale``, ``partition_custom`` for a
    stream handle holding its graph node in ``_node``."""

    _node: Any

    def forward(self: _Self) -> _Self:
        """Flink: each record goes to the same subtask of the next operator. Spark runs the
        next non-keyed stage in the same partition: accepted, nothing changes.

        Returns:
            This stream.
        """
        return self

    def shuffle(self) -> Any:
        """Flink: records go to uniformly random subtasks. Not supported (see the module).

        Returns:
            Nothing: it always raises.

        Raises:
            GraphBuildError: Always, saying how to spread records instead.
        """
        raise GraphBuildError(f"shuffle() on {self._node.describe()} is not supported: {_SPREAD}")

    def rebalance(self) -> Any:
        """Flink: records go round-robin to the subtasks. Not supported (see the module).

        Returns:
            Nothing: it always raises.

        Raises:
            GraphBuildError: Always, saying how to spread records instead.
        """
        raise GraphBuildError(
            f"rebalance() on {self._node.describe()} is not supported: {_SPREAD}")

    def rescale(self) -> Any:
        """Flink: records go round-robin to a subset of the subtasks. Not supported.

        Returns:
            Nothing: it always raises.

        Raises:
            GraphBuildError: Always, saying how to spread records instead.
        """
        raise GraphBuildError(f"rescale() on {self._node.describe()} is not supported: {_SPREAD}")

    def partition_custom(self, partitioner: Any, key_selector: Any) -> Any:
        """Flink: ``partitioner.partition(key, n)`` picks each record's subtask. Not
        supported: Spark cannot pin a record to a subtask.

        Args:
            partitioner: Flink's ``Partitioner``.
            key_selector: The key selector.

        Returns:
            Nothing: it always raises.

        Raises:
            GraphBuildError: Always, saying to key the stream instead.
        """
        raise GraphBuildError(
            f"partition_custom() on {self._node.describe()} is not supported: a record cannot "
            "be sent to a chosen subtask here. To bring records with the same key together, "
            "key the stream (key_by) and use a keyed operator")


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
