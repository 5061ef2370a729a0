"""In-band watermarks: a watermark strategy assigned below a keyed stage of the one query.

Spark refuses to redefine a query's watermark after a stateful operator, so a keyed stage
reading such a strategy's records cannot take its watermark from Spark. Instead the keying
pass in front of it, which runs the strategy's timestamp assigner, notes the greatest
timestamp the assigner gave (:class:`ObservedAssigner`) and, after its records, hands every
key group of the stage one watermark row (:func:`with_watermark_rows`): that timestamp less
the strategy's bound, Spark's convention for a watermark. Each key group's call takes the
greatest it has seen as its watermark (:func:`split_watermarks`), as Spark's own
``withWatermark`` would over the same records, and every key group is called when any task
saw records, so timers fire without new data of their own.

A keyed stage below such a stage takes its watermark as Flink forwards it: each key group
of the stage above emits, after its call, one row of its watermark under
:data:`WATERMARK_TAG`; the keying pass in front of the stage below takes those rows out
(:func:`forwarded_marks`) and hands every key group of its stage the greatest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..operators.functions import TimestampAssigner
from .carry import MARK, rows_under, tag_mask
from .encoding import KEY, KG, TAG, TS, VALUE
from .group_frames import SEQ

__all__ = ["WATERMARK_KEY", "WATERMARK_SEQ", "WATERMARK_TAG", "ObservedAssigner",
           "forwarded_marks", "split_watermarks", "with_watermark_rows"]

#: ``_seq`` of a watermark row (a carried record's is -2 and below, never this low)
WATERMARK_SEQ = -(2**63)
#: ``_k`` of a watermark row
WATERMARK_KEY = b"\x1fwatermark"
#: the tag under which a keyed stage hands its watermark to the keyed stage below it (no
#: ``OutputTag`` and no carried record has it)
WATERMARK_TAG = f"{MARK}watermark"

#: the greatest timestamp each observing assigner gave in this task (one task at a time runs
#: in a Python worker), by the token of its stage
_SEEN: dict[str, int] = {}


class ObservedAssigner(TimestampAssigner):
    """A watermark strategy's timestamp assigner that notes the greatest timestamp it gives.

    Args:
        token: the stage it feeds (the key of what it notes).
        inner: the strategy's assigner; None keeps each record's timestamp.
    """

    def __init__(self, token: str, inner: Any = None) -> None:
        self.token = token
        self.inner = inner

    def open(self, runtime_context: Any) -> None:
        if self.inner is not None:
            self.inner.open(runtime_context)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()

    def extract_timestamp(self, value: Any, record_timestamp: Optional[int]) -> Any:
        ts = (record_timestamp if self.inner is None
              else self.inner.extract_timestamp(value, record_timestamp))
        if isinstance(ts, (int, np.integer)) and not isinstance(ts, bool):
            seen = _SEEN.get(self.token)
            if seen is None or ts > seen:
                _SEEN[self.token] = int(ts)
        return ts


def with_watermark_rows(function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                        token: str, delay_ms: int, max_parallelism: int, schema: pa.Schema
                        ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A keying pass (output ``_ts, _kg, _k, _v, _seq``) that, after its records, hands each
    key group a watermark row when its assigner gave any timestamp.

    Args:
        function: the keying pass.
        token: the stage's token (:class:`ObservedAssigner`).
        delay_ms: the strategy's bounded out-of-orderness (0 for monotonous timestamps).
        max_parallelism: the job's key groups.
        schema: the pass's output schema (a task whose records the operators after the
            assigner all dropped outputs no batch, yet moves the watermark).

    Returns:
        The ``mapInArrow`` function.
    """
    return _WatermarkRows(function, token, delay_ms, max_parallelism, schema)


class _WatermarkRows:
    """:func:`with_watermark_rows`' function: a class, so that it reads this module's
    :data:`_SEEN` on the executor (a nested function would be pickled with a copy)."""

    def __init__(self, function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                 token: str, delay_ms: int, max_parallelism: int, schema: pa.Schema) -> None:
        self.function = function
        self.token = token
        self.delay_ms = delay_ms
        self.max_parallelism = max_parallelism
        self.schema = schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        _SEEN.pop(self.token, None)
        schema = self.schema
        for batch in self.function(batches):
            schema = batch.schema
            yield batch
        top = _SEEN.pop(self.token, None)
        if top is None:
            return
        n = self.max_parallelism
        columns = {TS: pa.array(np.full(n, top - self.delay_ms, dtype=np.int64)),
                   KG: pa.array(np.arange(n, dtype=np.int32)),
                   KEY: pa.array([WATERMARK_KEY] * n, pa.binary()),
                   VALUE: pa.array([b""] * n, pa.binary()),
                   SEQ: pa.array(np.full(n, WATERMARK_SEQ, dtype=np.int64))}
        yield pa.RecordBatch.from_arrays(  # any other column (metrics) null
            [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type)
             for f in schema], schema=schema)


def forwarded_marks(function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                    token: str, keep_tags: bool
                    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A keying pass reading the whole output of the keyed stage above (``_tag`` among its
    columns) that takes that stage's watermark rows (:data:`WATERMARK_TAG`) out and notes
    the greatest for :func:`with_watermark_rows` (wrap the result in it, bound 0).

    Args:
        function: the keying pass.
        token: the stage's token (the key :func:`with_watermark_rows` reads).
        keep_tags: the pass carries the stage above's records (runtime/carry.py reads the
            other tagged rows); else it reads the untagged rows only, without ``_tag``.

    Returns:
        The ``mapInArrow`` function.
    """
    return _ForwardedMarks(function, token, keep_tags)


class _ForwardedMarks:
    """:func:`forwarded_marks`' function (a class: see :class:`_WatermarkRows`)."""

    def __init__(self, function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                 token: str, keep_tags: bool) -> None:
        self.function = function
        self.token = token
        self.keep_tags = keep_tags

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return self.function(self._records(batches))

    def _records(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            marks = tag_mask(batch.column(TAG), WATERMARK_TAG)
            if pc.any(marks).as_py():
                top = int(pc.max(batch.column(TS).filter(marks)).as_py())
                seen = _SEEN.get(self.token)
                _SEEN[self.token] = top if seen is None else max(seen, top)
            # the untagged rows hold no watermark row (its tag is not null)
            yield batch.filter(pc.invert(marks)) if self.keep_tags else rows_under(batch, None)


def split_watermarks(frame: Any) -> tuple[Any, Optional[int]]:
    """A key group's input frame without its watermark rows, and the greatest of them.

    Args:
        frame: pandas rows of the stage's input (``_seq`` among its columns).

    Returns:
        The records, and the greatest watermark row's ``_ts`` (None without one).
    """
    marks = frame[SEQ] == WATERMARK_SEQ
    if not marks.any():
        return frame, None
    return frame[~marks], int(frame[TS][marks].max())
