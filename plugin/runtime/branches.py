"""Joined branches: a keyed stage's records reaching the next keyed stage along several
paths of stateless operators that a union joins, in one keying pass.

In the one-query mapping Spark would plan the keyed stage once per path
(translation/streaming/branches.py). Instead the keying pass in front of the stage below
reads the stage's output once and runs each path (:func:`branched_pass`): per input batch,
each branch's operators over the rows it reads (the main output, or one side output), then
the operators after the union and the key extraction over what the branches emitted, in
one subtask instance each, as Flink runs one instance per operator and subtask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Optional

import pyarrow as pa

from .carry import rows_under
from .group_state import append_seq
from .passes import PassSpec, partition_id, run_pass

__all__ = ["branched_pass"]

#: a ``mapInArrow`` function
ArrowFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def branched_pass(branches: list[tuple[Optional[str], PassSpec]], tagged: bool,
                  joined: PassSpec, parallelism: int) -> ArrowFn:
    """The keying pass over a keyed stage's output whose paths a union joins.

    Args:
        branches: per path, the side-output tag it starts at (None: the main output) and
            the pass running its operators (pickled output).
        tagged: the input has a ``_tag`` column (the stage's side outputs are read).
        joined: the pass running the operators after the union and the key extraction
            over the branches' records (pickled input).
        parallelism: the stage's subtasks.

    Returns:
        The ``mapInArrow`` function (output: ``joined``'s, then ``_seq``).
    """
    return _Branched(branches, tagged, joined, parallelism)


class _Branched:
    """:func:`branched_pass`' function."""

    def __init__(self, branches: list[tuple[Optional[str], PassSpec]], tagged: bool,
                 joined: PassSpec, parallelism: int) -> None:
        self.branches = branches
        self.tagged = tagged
        self.joined = joined
        self.parallelism = parallelism

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        subtask = partition_id() % self.parallelism
        return append_seq(run_pass(self.joined, self._branched(batches, subtask), subtask))

    def _branched(self, batches: Iterator[pa.RecordBatch], subtask: int
                  ) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for tag, spec in self.branches:
                rows = rows_under(batch, tag) if self.tagged else batch
                if rows.num_rows:
                    yield from run_pass(spec, iter([rows]), subtask)

