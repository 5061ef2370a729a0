"""A keyed stage's records handed to the next keyed stage of the one query, keyed in its call.

In the one-query mapping a keyed stage read only by the next keyed stage, through plain
lambdas (map, filter, flat_map) and its ``key_by``, runs that stage's keying pass inside
its own call: each call's outputs leave as the next stage's keyed input (``_ts, _kg, _k,
_v``), no Python pass between the two stateful operators. Each record keeps its place in
its subtask's arrival order (emit_order.py) in three columns: ``_seq`` and ``_seq_row``,
the arrival key of the element it came from, and ``_seq_from``, the call's Spark partition
and the record's number among that partition's outputs (group_frames.processing_order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..operators.functions import as_key_selector, wrapped_callable
from .encoding import KEY, KG, TS, VALUE, Encoding, make_decoder, pickled_records
from .fastpath import FastKeyedOutput, compile_chain
from .group_frames import FROM, ORDER, ORDER_ROW, SEQ, SEQ_ROW, SPLIT_SHIFT

__all__ = ["HANDOFF_FIELDS", "HandOff", "handoff_schema"]

#: The columns of a handed-off record, ``(name, Spark DDL type)``: the next stage's keyed
#: input with its arrival key and origin
HANDOFF_FIELDS = [(TS, "bigint"), (KG, "int"), (KEY, "binary"), (VALUE, "binary"),
                  (SEQ, "bigint"), (SEQ_ROW, "bigint"), (FROM, "bigint")]
_POSITION_MASK = (1 << SPLIT_SHIFT) - 1


def handoff_schema() -> pa.Schema:
    """The Arrow schema of :data:`HANDOFF_FIELDS`."""
    types = {"bigint": pa.int64(), "int": pa.int32(), "binary": pa.binary()}
    return pa.schema([pa.field(name, types[kind]) for name, kind in HANDOFF_FIELDS])


@dataclass(frozen=True)
class HandOff:
    """The keying of the next keyed stage, run over a stage's outputs in its call.

    Built on the driver (:meth:`of`), pickled to the executors with the stage's spec.
    """

    #: the stage's output encoding (its records' columns; pickled ``_v`` when not typed)
    records: Encoding
    #: the plain-lambda chain between the two stages (``(kind, function[, name])``)
    chain: tuple[tuple[Any, ...], ...]
    #: the ``key_by``'s key selector and key serializer
    key_selector: Any
    key_serializer: Any
    max_parallelism: int
    #: the ``key_by``'s name, for errors
    name: str

    @classmethod
    def of(cls, records: Encoding, chain: list[tuple[Any, ...]], key_selector: Any,
           key_serializer: Any, max_parallelism: int, name: str) -> Optional[HandOff]:
        """The hand-off, or None when the chain or the key selector is not plain lambdas
        (a function class may hold per-subtask state the keying pass's own instance keeps).

        Args:
            records: the stage's output encoding.
            chain: the operators between the stages, as a pass runs them.
            key_selector: the ``key_by``'s key selector.
            key_serializer: its key serializer.
            max_parallelism: the job's key groups.
            name: the ``key_by``'s name.

        Returns:
            The hand-off, or None.
        """
        if any(kind == "timestamps" and function is not None for kind, function, *_ in chain):
            return None  # a timestamp assigner between: the stage below reads its watermark
        if compile_chain(list(chain), name) is None:
            return None
        if wrapped_callable(as_key_selector(key_selector)) is None:
            return None
        return cls(records, tuple(chain), key_selector, key_serializer, max_parallelism, name)

    def runner(self) -> Callable[[pa.RecordBatch, int, int], tuple[dict[str, list[Any]], int]]:
        """The function keying one call's output batch, built once per executor process.

        Returns:
            ``(batch, partition, first) -> (columns, outputs)``: ``batch`` in
            ``group_frames.output_schema`` with its order columns, ``first`` the number of
            the partition's first output of this call; ``columns`` the keyed records'
            :data:`HANDOFF_FIELDS` as lists (they leave the call as arrays:
            ``group_frames.lists_frame``).
        """
        chain = compile_chain(list(self.chain), self.name)
        assert chain is not None  # of() checked it
        decode = make_decoder(self.records)
        keyed = FastKeyedOutput(as_key_selector(self.key_selector), self.key_serializer,
                                self.max_parallelism, None, self.name)
        def run(batch: pa.RecordBatch, partition: int, first: int
                ) -> tuple[dict[str, list[Any]], int]:
            stamps = batch.column(TS).to_pylist()
            # the chain hands each record's position on beside it (no stage here reads it:
            # of() left out timestamp assigners), so each output finds its element's order
            values, at = chain(decode(batch), list(range(batch.num_rows)))
            rows = list(keyed.rows(values, at))
            n = len(rows)
            if n == 0:
                return {name: [] for name, _ in HANDOFF_FIELDS}, 0
            records, taken, groups, keys = (list(c) for c in zip(*rows))
            at_element = np.asarray(taken, dtype=np.int64)
            seq = batch.column(ORDER).to_numpy(zero_copy_only=False)[at_element]
            seq_row = batch.column(ORDER_ROW).to_numpy(zero_copy_only=False)[at_element]
            origin = (np.int64(partition) << SPLIT_SHIFT) | (
                np.arange(first, first + n, dtype=np.int64) & _POSITION_MASK)
            return {TS: list(map(stamps.__getitem__, taken)), KG: groups, KEY: keys,
                    VALUE: pickled_records(records), SEQ: seq.tolist(), SEQ_ROW: seq_row.tolist(),
                    FROM: origin.tolist()}, n

        return run
