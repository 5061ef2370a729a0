"""emit_order.py: a keyed stage's outputs tagged with their elements' arrival, and sorted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark_datastream.runtime.emit_order import (
    arrival_keys,
    order_partition,
    ordered_first,
    output_order,
)
from pyspark_datastream.runtime.group_frames import ORDER, ORDER_ROW, SEQ, SEQ_ROW

LOW, HIGH = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def test_arrival_keys_follow_the_processing_order_and_never_go_back():
    # two splits of one key group; processing merged them as 0, 2, 1, 3 (say by event time)
    frames = [pd.DataFrame({SEQ: [10, 30], SEQ_ROW: [1, 1]}),
              pd.DataFrame({SEQ: [20, 30], SEQ_ROW: [5, 0]})]
    seq, row = arrival_keys(frames, np.array([0, 2, 1, 3]))
    # keys in processing order: (10,1) (20,5) (30,1) (30,0) -> the last may not go back
    assert seq.tolist() == [10, 20, 30, 30]
    assert row.tolist() == [1, 5, 1, 1]


def test_arrival_keys_without_a_row_column_are_the_seq():
    seq, row = arrival_keys([pd.DataFrame({SEQ: [7, 3, 9]})], None)
    assert seq.tolist() == [7, 7, 9] and row.tolist() == [0, 0, 0]


def test_outputs_take_their_elements_keys_timers_first_and_end_of_input_last():
    arrival = (np.array([5, 8], dtype=np.int64), np.array([0, 2], dtype=np.int64))
    seq, row = output_order(arrival, [-1, 0, 0, 1, 2], 5)
    assert seq.tolist() == [LOW, 5, 5, 8, HIGH]
    assert row.tolist() == [LOW, 0, 0, 2, HIGH]
    # no positions: one output per element (the lean reduce)
    assert output_order(arrival, None, 2)[0].tolist() == [5, 8]
    # no elements (a timer-only call): every output before the micro-batch's elements
    assert output_order(None, [-1, -1], 2)[0].tolist() == [LOW, LOW]


def test_a_partition_is_sorted_stably_by_the_tags_which_are_dropped():
    def batch(values, seq, row):
        return pa.RecordBatch.from_pydict({"v": values, ORDER: pa.array(seq, pa.int64()),
                                           ORDER_ROW: pa.array(row, pa.int64())})

    # key group A's outputs, then key group B's (as the keyed call leaves them)
    batches = [batch(["a1", "a2", "a3"], [1, 4, 4], [0, 0, 0]),
               batch(["b1", "b2"], [2, 4], [0, 0]), batch([], [], [])]
    out = list(order_partition(iter(batches)))
    table = pa.Table.from_batches(out)
    assert table.column_names == ["v"]
    # ties keep the order they arrived in: a3 before b2
    assert table["v"].to_pylist() == ["a1", "b1", "a2", "a3", "b2"]
    assert list(order_partition(iter([]))) == []


def test_a_pass_ordered_first_sees_the_partition_sorted_and_untagged():
    """The next pass, run in the order pass's worker, gets what the order pass would hand it:
    every record of the partition, sorted, without the tags."""
    def batch(values, seq):
        return pa.RecordBatch.from_pydict({"v": values, ORDER: pa.array(seq, pa.int64()),
                                           ORDER_ROW: pa.array([0] * len(seq), pa.int64())})

    seen = []

    def next_pass(batches):
        for b in batches:
            seen.append(b.schema.names)
            yield pa.RecordBatch.from_pydict({"v": [v.upper() for v in b["v"].to_pylist()]})

    run = ordered_first(next_pass)
    out = pa.Table.from_batches(list(run(iter([batch(["c", "a"], [3, 1]), batch(["b"], [2])]))))
    assert out["v"].to_pylist() == ["A", "B", "C"] and seen == [["v"]]
