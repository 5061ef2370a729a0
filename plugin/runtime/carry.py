"""Carried records: a keyed stage's records that travel through the keyed stages below it.

In the one-query mapping a keyed stage read by sinks and by another keyed stage would be
planned twice (translation/streaming/carried.py, ``carry_plan``). Instead, the keying
pass in front of the stage below hands each record it reads on as well, marked by ``_seq``
:data:`CARRIED_SEQ`, its tag in ``_k``; that stage's processor emits them untouched under
their tag, as side-output records, which the query's sinks read apart (or, when that stage
is carried on in turn, the next keying pass hands on again). They touch no state or timer.
A carried stage's side outputs travel with its records, under its tag and their own
(:func:`side_tag`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..state_store.keygroups import key_group_range_for_operator
from .encoding import KEY, KG, TAG, TS, VALUE, Encoding, make_decoder
from .group_frames import ORDER, ORDER_ROW, SEQ, output_frame, output_schema
from .passes import partition_id

__all__ = ["CARRIED_SEQ", "MARK", "carried_output", "carrying", "rows_under", "side_tag",
           "split_carried", "tag_mask", "tagging"]

#: the greatest ``_seq`` of a carried record: ``CARRIED_SEQ - n`` for the n-th record its
#: keying pass handed on (a record's own is never negative, a savepoint restore row's is -1)
CARRIED_SEQ = -2
#: the first character of every carried record's tag (no ``OutputTag`` starts with it)
MARK = "\x1f"
#: between a carried stage's tag and one of its side outputs' tags
_SIDE = "\x1e"


def side_tag(carried: str, tag: str) -> str:
    """The tag a carried stage's side-output record travels under.

    Args:
        carried: the stage's own tag (``carried.carry_tag``).
        tag: the side output's tag.

    Returns:
        The two in one tag: no other stage's records or side outputs travel under it.
    """
    return f"{carried}{_SIDE}{tag}"

#: a ``mapInArrow`` function
ArrowFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def carrying(function: ArrowFn, input_enc: Encoding, max_parallelism: int, parallelism: int,
             tag: str, tagged: bool = False, source: Optional[str] = None,
             source_on: bool = False, whole: bool = False, pretagged: bool = False
             ) -> ArrowFn:
    """A keying pass that also hands on each record it reads, carried.

    The records a task hands on go to one key group of its subtask, numbered in the order
    it read them (``_seq``): the stage below emits them in that order, so that a keyed
    stage reading them further down sees them as they left the stage above.

    Args:
        function: the keying pass (``mapInArrow`` function, output ``_ts, _kg, _k, _v, _seq``).
        input_enc: the encoding of the records it reads.
        max_parallelism: the job's key groups.
        parallelism: the stage's subtasks.
        tag: the tag the records it reads (without ``source``: those it keys too) leave
            under.
        tagged: its input has a ``_tag`` column: the rows with one are records carried
            through the stage above, handed on under their own tag, or that stage's side
            outputs, handed on under ``tag`` and theirs (:func:`side_tag`); none reaches
            ``function``.
        source: (``tagged``) the tag of the carried records the pass keys: those, not the
            untagged rows, reach ``function``.
        source_on: those are handed on too (a stage or sink further down reads them).
        whole: (``tagged``, without ``source``) ``function`` reads every row of the input
            with its ``_tag`` (a branched keying pass picks each path's rows itself:
            runtime/branches.py).
        pretagged: (``tagged``, without ``source``) the rows with a ``_tag`` are the carried
            stage's records as :func:`tagging` tagged them, handed on under that tag; the
            untagged rows, records from elsewhere too, reach ``function`` only.

    Returns:
        The ``mapInArrow`` function: the pass's batches, and after each the carried
        records of the input it read meanwhile.
    """
    decode = None if not input_enc.typed else make_decoder(input_enc)
    own_tag = tag.encode("utf-8")

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        kg = key_group_range_for_operator(max_parallelism, parallelism,
                                          partition_id() % parallelism)[0]
        arrived = [0]

        def carried(rows: pa.RecordBatch, tags: pa.Array) -> pa.RecordBatch:
            n = rows.num_rows
            seq = CARRIED_SEQ - np.arange(arrived[0], arrived[0] + n, dtype=np.int64)
            arrived[0] += n
            return pa.RecordBatch.from_arrays(
                [rows.column(TS).cast(pa.int64()), pa.array(np.full(n, kg, dtype=np.int32)),
                 tags, _pickled(rows, decode), pa.array(seq)], names=[TS, KG, KEY, VALUE, SEQ])

        def tee() -> Iterator[pa.RecordBatch]:
            for b in batches:
                if not tagged:
                    if b.num_rows:
                        pending.append(carried(b, pa.array([own_tag] * b.num_rows, pa.binary())))
                    yield b
                    continue
                tags = b.column(TAG)
                keyed, handed = tag_mask(tags, source), b
                if pretagged:
                    handed = b.filter(pc.invert(keyed))
                    on = pc.cast(handed.column(TAG), pa.binary())
                else:
                    on = _handed_on(tags, tag)
                if source is not None and not source_on:
                    handed, on = b.filter(pc.invert(keyed)), on.filter(pc.invert(keyed))
                if handed.num_rows:
                    pending.append(carried(handed, on))
                yield b if whole else b.filter(keyed).drop_columns([TAG])

        for out in function(tee()):
            yield out
            while pending:
                yield _as(pending.pop(0), out.schema)
        while pending:
            yield pending.pop(0)

    return fn


def tagging(function: ArrowFn, input_enc: Encoding, tag: str, tagged: bool) -> ArrowFn:
    """A pass over a keyed stage's output that runs the operators from it down to a union
    (``function``, pickled output) and hands on every record it reads as well, for the
    keying pass below the union to carry (:func:`carrying`'s ``pretagged``).

    Args:
        function: the pass (``mapInArrow`` function, output ``_ts, _v``).
        input_enc: the encoding of the stage's records.
        tag: the tag the stage's records leave under.
        tagged: its input has a ``_tag`` column: the rows with one (the stage's side
            outputs, records carried through it) are handed on only, as :func:`carrying`
            hands them on; the untagged ones reach ``function`` too.

    Returns:
        The ``mapInArrow`` function: ``_tag, _ts, _v``, the pass's rows untagged, and after
        each of its batches the records of the input it read meanwhile, tagged.
    """
    decode = None if not input_enc.typed else make_decoder(input_enc)
    schema = pa.schema([(TAG, pa.string()), (TS, pa.int64()), (VALUE, pa.binary())])

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []

        def tee() -> Iterator[pa.RecordBatch]:
            for b in batches:
                if not b.num_rows:
                    continue
                main, on = b, pa.array([tag] * b.num_rows, pa.string())
                if tagged:
                    on = pc.cast(_handed_on(b.column(TAG), tag), pa.string())
                    main = rows_under(b, None)
                pending.append(pa.RecordBatch.from_arrays(
                    [on, b.column(TS).cast(pa.int64()), _pickled(b, decode)], schema=schema))
                yield main

        for out in function(tee()):
            yield pa.RecordBatch.from_arrays(
                [pa.nulls(out.num_rows, pa.string()), out.column(TS).cast(pa.int64()),
                 out.column(VALUE).cast(pa.binary())], schema=schema)
            while pending:
                yield pending.pop(0)
        while pending:
            yield pending.pop(0)

    return fn


def tag_mask(tags: pa.Array, tag: Optional[str]) -> pa.Array:
    """Which rows of a ``_tag`` column are under ``tag``.

    Args:
        tags: the column.
        tag: a tag; None for the untagged rows (a stage's own records).

    Returns:
        A boolean array without nulls.
    """
    return pc.is_null(tags) if tag is None else pc.fill_null(pc.equal(tags, tag), False)


def rows_under(batch: pa.RecordBatch, tag: Optional[str]) -> pa.RecordBatch:
    """The rows of a batch with a ``_tag`` column that are under ``tag``, without it.

    Args:
        batch: the batch.
        tag: a tag; None for the untagged rows.

    Returns:
        Those rows.
    """
    return batch.filter(tag_mask(batch.column(TAG), tag)).drop_columns([TAG])


def _handed_on(tags: pa.Array, tag: str) -> pa.Array:
    """The tags the rows of a carrier's tagged output travel on under (binary): its own
    records' (no tag) ``tag``, a carried record's its own, a side output's under ``tag``
    too."""
    side = pc.invert(pc.starts_with(tags, MARK))
    under = pc.binary_join_element_wise(side_tag(tag, ""), tags, "")
    own = pa.scalar(tag.encode("utf-8"), pa.binary())
    return pc.if_else(pc.is_null(tags), own, pc.cast(pc.if_else(side, under, tags), pa.binary()))


def _pickled(rows: pa.RecordBatch, decode: Optional[Callable[[pa.RecordBatch], list[Any]]]
             ) -> pa.Array:
    """The records of ``rows`` pickled (``_v``): their own column when already pickled, else
    decoded by ``decode`` from their typed columns."""
    if decode is None:
        return rows.column(VALUE)
    return pa.array([pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL) for r in decode(rows)],
                    pa.binary())


def _as(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the columns of ``schema`` (the pass's own output), by name."""
    return pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in schema],
                                      schema=schema)


def split_carried(frame: Any) -> tuple[Any, Any]:
    """A keyed call's input frame as (its records, the records carried through it).

    Args:
        frame: the pandas frame Spark hands the call (with ``_seq``).

    Returns:
        The frame's rows of the stage's own records (savepoint restore rows included), and
        those carried through it.
    """
    carried = (frame[SEQ] <= CARRIED_SEQ).to_numpy()
    if not carried.any():
        return frame, frame.iloc[:0]
    return frame[~carried], frame[carried]


def carried_output(frames: list[Any], direct: bool, ordered: bool) -> Iterator[Any]:
    """The output frames of a keyed call for the records carried through it.

    Args:
        frames: the carried rows (pandas, with ``_ts``, ``_v``, ``_seq`` and their tag in
            ``_k``).
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
        columns: dict[str, pa.Array] = {
            TAG: pa.array([bytes(t).decode("utf-8") for t in frame[KEY].tolist()], pa.string()),
            TS: pa.array([None if v != v else int(v) for v in frame[TS].tolist()], pa.int64()),
            VALUE: pa.array(frame[VALUE].tolist(), pa.binary()),
        }
        if ordered:  # the order they were handed on in (:func:`carrying`)
            columns[ORDER] = pa.array(CARRIED_SEQ - frame[SEQ].to_numpy(dtype=np.int64))
            columns[ORDER_ROW] = pa.array(np.zeros(n, dtype=np.int64))
        yield output_frame(pa.RecordBatch.from_arrays([columns[f.name] for f in schema],
                                                      schema=schema), direct)
