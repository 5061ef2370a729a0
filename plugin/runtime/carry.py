"""Carried records: a keyed stage's records that travel through the keyed stage below it.

In the one-query mapping a keyed stage read by a sink and by another keyed stage would be
planned twice (translation/one_query_carry.py). Instead, the keying pass in front of the
stage below hands each record it reads on as well, marked by a negative ``_seq``; that
stage's processor emits them untouched as records of a side-output tag of its own, which
the query's sinks read apart. They touch no state and no timer.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from .encoding import KEY, KG, TAG, TS, VALUE, Encoding, make_decoder
from .group_frames import ORDER, ORDER_ROW, SEQ, output_frame, output_schema
from .passes import partition_id

__all__ = ["CARRIED_SEQ", "carrying", "carried_output", "split_carried"]

#: the ``_seq`` of a carried record (a record's own ``_seq`` is never negative)
CARRIED_SEQ = -1


#: a ``mapInArrow`` function
ArrowFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def carrying(function: ArrowFn, input_enc: Encoding, max_parallelism: int) -> ArrowFn:
    """A keying pass that also hands each record it reads on, carried.

    Args:
        function: the keying pass (``mapInArrow`` function, output ``_ts, _kg, _k, _v, _seq``).
        input_enc: the encoding of the records it reads.
        max_parallelism: the key groups the carried records are spread over (from the
            task's partition on).

    Returns:
        The ``mapInArrow`` function: the pass's batches, then after each the carried
        records of the input it read meanwhile (``_k`` null, ``_seq`` :data:`CARRIED_SEQ`).
    """
    decode = None if not input_enc.typed else make_decoder(input_enc)
    dumps = pickle.dumps

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        start = [partition_id()]

        def tee() -> Iterator[pa.RecordBatch]:
            for b in batches:
                if b.num_rows:
                    pending.append(b)
                yield b

        def carried(b: pa.RecordBatch) -> pa.RecordBatch:
            n = b.num_rows
            values = (b.column(VALUE) if decode is None else
                      pa.array([dumps(r, protocol=pickle.HIGHEST_PROTOCOL) for r in decode(b)],
                               pa.binary()))
            kg = (np.arange(start[0], start[0] + n, dtype=np.int64) % max_parallelism)
            start[0] += n
            return pa.RecordBatch.from_arrays(
                [b.column(TS).cast(pa.int64()), pa.array(kg.astype(np.int32)),
                 pa.nulls(n, pa.binary()), values,
                 pa.array(np.full(n, CARRIED_SEQ, dtype=np.int64))],
                names=[TS, KG, KEY, VALUE, SEQ])

        for out in function(tee()):
            yield out
            while pending:
                yield _as(carried(pending.pop(0)), out.schema)
        while pending:
            yield carried(pending.pop(0))

    return fn


def _as(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the columns of ``schema`` (the pass's own output), by name."""
    return pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in schema],
                                      schema=schema)


def split_carried(frame: Any) -> tuple[Any, Any]:
    """A keyed call's input frame as (its records, its carried records).

    Args:
        frame: the pandas frame Spark hands the call (with ``_seq``).

    Returns:
        The frame's rows of the stage's own records, and those carried through it.
    """
    carried = (frame[SEQ] < 0).to_numpy()
    if not carried.any():
        return frame, frame.iloc[:0]
    return frame[~carried], frame[carried]


def carried_output(frames: list[Any], tag: str, direct: bool, ordered: bool) -> Iterator[Any]:
    """The output frames of a keyed call for the records carried through it.

    Args:
        frames: the carried rows (pandas, with ``_ts`` and ``_v``).
        tag: the side-output tag they leave under.
        direct: the stage's outputs leave as arrays (``group_frames.direct_output``).
        ordered: the stage's outputs carry order columns (``emit_order.py``).

    Returns:
        One output frame per non-empty input frame, in the stage's output layout.
    """
    schema = output_schema(None, True, ordered)
    for frame in frames:
        n = len(frame)
        if not n:
            continue
        ts = frame[TS]
        columns: dict[str, pa.Array] = {
            TAG: pa.array([tag] * n, pa.string()),
            TS: pa.array([None if v != v else int(v) for v in ts.tolist()], pa.int64()),
            VALUE: pa.array(frame[VALUE].tolist(), pa.binary()),
        }
        if ordered:
            columns[ORDER] = pa.array(np.zeros(n, dtype=np.int64))
            columns[ORDER_ROW] = pa.array(np.arange(n, dtype=np.int64))
        yield output_frame(pa.RecordBatch.from_arrays([columns[f.name] for f in schema],
                                                      schema=schema), direct)
