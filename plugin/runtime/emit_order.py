"""A keyed STREAMING stage's outputs in the order its subtask received their elements.

Spark calls a keyed stage once per key group, so a partition's outputs leave key group by
key group. Flink's subtask processes its elements in arrival order, and the next keyed stage
sees each upstream subtask's outputs in that order (records between two subtasks keep their
order). A stage feeding another keyed stage therefore tags each output with its element's
arrival key (``_seq``, ``_seq_row``: the keyed input's order within its upstream split),
made non-decreasing along the key group's processing order (so an output never moves ahead
of one its key group emitted earlier); timer outputs before the elements sort first, those
at the end of input last. :func:`order_partition`, a pass in the same query, sorts the
partition's outputs by that tag (stably: a key group's own outputs keep their order) and
drops it before the records go on; :func:`ordered_first` runs it in the next pass's own
Python worker instead, where a Python pass reads the stage's records (the next stage's keying).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from .group_frames import ORDER, ORDER_ROW, SEQ, SEQ_ROW

__all__ = ["arrival_keys", "ordered_first", "output_order", "order_partition"]

_FIRST = np.iinfo(np.int64).min
_LAST = np.iinfo(np.int64).max


def arrival_keys(frames: list[Any], order: Optional[Any]) -> tuple[Any, Any]:
    """Each element's arrival key, ``(_seq, _seq_row)`` (0 without ``_seq_row``), in
    processing order, made non-decreasing (each element takes the greatest key up to it).

    Args:
        frames: The key group's input frames (pandas), as the keyed call got them.
        order: The processing order (an index array over the concatenated frames; None:
            as given), from ``group_rows(..., order_out=...)``.

    Returns:
        Two int64 arrays.
    """
    seq = np.concatenate([p[SEQ].to_numpy(dtype=np.int64) for p in frames])
    row = (np.concatenate([p[SEQ_ROW].to_numpy(dtype=np.int64) for p in frames])
           if SEQ_ROW in frames[0].columns else np.zeros(len(seq), dtype=np.int64))
    if order is not None:
        seq, row = seq[order], row[order]
    if len(seq) < 2:
        return seq, row
    ranked = np.lexsort((row, seq))  # ranked[r]: the element of rank r
    rank = np.empty(len(seq), dtype=np.int64)
    rank[ranked] = np.arange(len(seq))
    greatest = ranked[np.maximum.accumulate(rank)]
    return seq[greatest], row[greatest]


def output_order(arrival: Optional[tuple[Any, Any]], positions: Optional[list[int]],
                 outputs: int) -> tuple[Any, Any]:
    """The ``(_oseq, _oseq_row)`` of each output.

    Args:
        arrival: :func:`arrival_keys` of the call's elements (None: it had none).
        positions: ``KeyGroupResult.positions`` (None: one output per element, in order).
        outputs: The number of outputs.

    Returns:
        Two int64 arrays of length ``outputs``.
    """
    n = 0 if arrival is None else len(arrival[0])
    at = np.arange(outputs) if positions is None else np.asarray(positions, dtype=np.int64)
    seq = np.full(outputs, _FIRST, dtype=np.int64)
    row = np.full(outputs, _FIRST, dtype=np.int64)
    after = at >= n
    seq[after] = _LAST
    row[after] = _LAST
    inside = (at >= 0) & ~after
    if arrival is not None and inside.any():
        seq[inside] = arrival[0][at[inside]]
        row[inside] = arrival[1][at[inside]]
    return seq, row


def order_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: the partition's records sorted by ``(_oseq, _oseq_row)``
    (stable), without those columns. The whole partition of the micro-batch is held, as
    Arrow, while it is sorted."""
    import pyarrow.compute as pc

    held = [b for b in batches if b.num_rows]
    if not held:
        return
    table = pa.Table.from_batches(held)
    indices = pc.sort_indices(table, sort_keys=[(ORDER, "ascending"), (ORDER_ROW, "ascending")])
    kept = [name for name in table.column_names if name not in (ORDER, ORDER_ROW)]
    yield from table.take(indices).select(kept).to_batches(max_chunksize=1 << 16)


def ordered_first(function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function: :func:`order_partition`, then ``function`` over its output, in
    one Python worker (one transfer of the partition from Spark and back instead of two).

    Args:
        function: a ``mapInArrow`` function of the ordered records.

    Returns:
        The function of the unordered records (with ``_oseq, _oseq_row``).
    """
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return function(order_partition(batches))
    return run
