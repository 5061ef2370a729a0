"""Physical partitioning (``rebalance``, ``shuffle``, ``rescale``, ``broadcast``,
``partition_custom``, ``forward``) in both modes.

A non-keyed operator's subtask index is the Spark partition it runs in
(``runtime/passes.py``). A partitioning node therefore gives each record a target subtask
``p`` in ``[0, parallelism)``, turns it into an int Spark's hash partitioning places on
partition ``p`` (:func:`~pyspark_datastream.savepoint.partition_slots`) and repartitions
into ``parallelism`` partitions by it; the next operator's ``get_index_of_this_subtask()``
is ``p``. Spark keeps a repartition with an explicit number of partitions as it is (no
adaptive coalescing), in BATCH and on a streaming DataFrame alike.

The target of each record:

* ``rebalance``: round-robin per upstream partition, from a random subtask as in Flink:
  its n-th record goes to ``(start + n) % parallelism``. In STREAMING the round starts
  again, from a new random subtask, in every micro-batch.
* ``shuffle``: uniformly random.
* ``rescale``: upstream partition ``i`` sends every record to ``i % parallelism``: Flink's
  pointwise distribution when the upstream has the job's parallelism; a wider upstream
  (more source partitions) shares the subtasks.
* ``broadcast``: every record is copied to every partition.
* ``custom``: ``partitioner.partition(key_selector(record), parallelism)``; a result that
  is not an int in range fails the job with a JobExecutionError naming the operator, the
  key and the value.
* ``forward``: nothing moves (the next stage runs in its input's partitions).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Optional

from ..operators.base import user_function_error
from ..operators.exceptions import JobExecutionError
from ..operators.functions import KeySelector, per_record_call
from ..plan.graph import PartitionNode
from ..runtime.encoding import TS, make_decoder
from ..runtime.passes import partition_id
from ..savepoint import partition_slots
from ..spark_io.columns import col
from .stream import Stream, StreamTranslator

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SLOT", "translate_partitioning", "target_batches"]

#: Column holding each record's partition slot (dropped after the repartition).
SLOT = "_slot"


def translate_partitioning(t: StreamTranslator, node: PartitionNode) -> Stream:
    """The Stream of a partitioning node, in either mode.

    Args:
        t: the BATCH or STREAMING translator.
        node: the partitioning node.

    Returns:
        The input's records (their pending work applied) in ``t.parallelism`` Spark
        partitions, record by record where the partitioning sends them; the input stream
        itself for ``forward``.
    """
    parent = t.input_stream(node.inputs[0])
    if node.strategy == "forward":
        return parent
    n = t.parallelism
    enc = parent.enc if not parent.pending else t.preferred_encoding(parent.type_info)
    df = t.materialize(parent, enc, name=node.name)
    df = df.select(TS, *[col(f"`{c}`") for c in enc.columns])
    slots = partition_slots(n)
    if node.strategy == "broadcast":
        from pyspark.sql import functions as F

        df = df.select("*", F.explode(F.array(*[F.lit(s) for s in slots])).alias(SLOT))
    else:
        decode = make_decoder(enc) if node.strategy == "custom" else None
        fn = target_batches(node.strategy, n, slots, node.name, decode, node.partitioner,
                            node.key_selector)
        ddl = ", ".join([f"{TS} bigint", *enc.spark_fields(), f"{SLOT} int"])
        df = df.mapInArrow(fn, ddl)
    df = df.repartition(n, col(SLOT)).drop(SLOT)
    return Stream(df, enc, parent.type_info, name=node.name, partitioned=True)


def target_batches(strategy: str, n: int, slots: list[int], name: str,
                   decode: Optional[Callable[[pa.RecordBatch], list[Any]]] = None,
                   partitioner: object = None, key_selector: Optional[KeySelector] = None
                  ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function appending each record's slot column.

    Args:
        strategy: ``rebalance``, ``shuffle``, ``rescale`` or ``custom``.
        n: the number of partitions (the next operator's parallelism).
        slots: per partition, the int Spark's hash partitioning places there.
        name: the operator's name, for errors.
        decode: Arrow batch -> records (``custom`` only).
        partitioner: the Partitioner (``custom`` only).
        key_selector: the KeySelector (``custom`` only).

    Returns:
        A function from Arrow batches to the same batches plus the ``_slot`` column.
    """

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        slot_of = np.asarray(slots, dtype=np.int32)
        pid = partition_id()
        rng = np.random.default_rng()
        seen = int(rng.integers(0, n))  # rebalance: Flink starts at a random subtask
        get_key = per_record_call(key_selector.get_key) if key_selector is not None else None
        for batch in batches:
            rows = batch.num_rows
            if strategy == "rebalance":
                target = (seen + np.arange(rows, dtype=np.int64)) % n
            elif strategy == "rescale":
                target = np.full(rows, pid % n, dtype=np.int64)
            elif strategy == "shuffle":
                target = rng.integers(0, n, rows)
            else:
                if decode is None or get_key is None:
                    raise JobExecutionError(f"partitioning {name!r}: a custom partitioning "
                                            "needs the decoder and key selector of its records")
                target = np.asarray([_custom_target(record, partitioner, get_key, n, name)
                                     for record in decode(batch)], dtype=np.int64)
            seen += rows
            column = pa.array(slot_of[target], pa.int32())
            yield pa.RecordBatch.from_arrays([*batch.columns, column],
                                             names=[*batch.schema.names, SLOT])

    return fn


def _custom_target(record: Any, partitioner: Any, get_key: Callable[[Any], Any], n: int,
                   name: str) -> int:
    """The partition ``partitioner`` picks for ``record`` (its key by ``get_key``), checked to
    be in ``[0, n)``."""
    try:
        key = get_key(record)
    except Exception as exc:  # noqa: BLE001 - named and re-raised
        raise user_function_error(name, "key_selector", record, exc) from exc
    try:
        target = partitioner.partition(key, n)
    except Exception as exc:  # noqa: BLE001 - named and re-raised
        raise user_function_error(name, "partitioner.partition", record, exc) from exc
    index = -1 if isinstance(target, bool) or not isinstance(target, numbers.Integral) \
        else int(target)
    if not 0 <= index < n:
        raise JobExecutionError(
            f"operator {name!r}: the partitioner returned {target!r} for key {key!r:.80}, "
            f"expected an int in [0, {n}) (the next operator's parallelism)")
    return index
