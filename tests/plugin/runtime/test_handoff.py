"""handoff.py: a keyed stage keys its outputs for the next keyed stage in its own call, with
the same records, in the same order, as the separate pass it replaces (the partition's
outputs sorted by their arrival keys, emit_order.order_partition, then keyed and numbered by
the next stage's keying pass, group_state.seq_pass), and the next stage processes them in
that order (group_frames.processing_order)."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark_datastream import KeySelector, MapFunction, Types
from pyspark_datastream.operators.functions import (
    as_filter_function,
    as_flat_map_function,
    as_map_function,
    as_timestamp_assigner,
)
from pyspark_datastream.runtime.emit_order import order_partition
from pyspark_datastream.runtime.encoding import KEY, KG, PICKLED, TS, VALUE, typed_encoding
from pyspark_datastream.runtime.group_frames import (
    BLOB_BYTES,
    FROM,
    NBYTES,
    SEQ,
    SEQ_ROW,
    SPLIT_SHIFT,
    column_batch,
    lists_frame,
    processing_order,
)
from pyspark_datastream.runtime.handoff import HANDOFF_FIELDS, HandOff
from pyspark_datastream.runtime.passes import PassSpec, run_pass
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KS = GenericKeySerializer.INSTANCE
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LOW, HIGH = np.iinfo(np.int64).min, np.iinfo(np.int64).max
MAXP = 128

# the stages as a chain node holds them (the graph wraps a plain lambda)
CHAIN = [("map", as_map_function(lambda r: (r[0] + "!", r[1] * 3)), "m"),
         ("filter", as_filter_function(lambda r: r[1] % 2 == 0), "f"),
         ("flat_map", as_flat_map_function(
             lambda r: [(r[0], r[1]), (r[0][:2], r[1] + 1)] if r[1] % 4 else []), "fm")]


def _key(r):
    return r[1] % 7


def _calls(rng, calls):
    """Each key group call's outputs, as a stage leaves them: its elements' arrival keys
    non-decreasing along its outputs, timer outputs first and at the end of input last."""
    batches = []
    for _ in range(calls):
        n = rng.randrange(0, 12)
        seq = sorted(rng.randrange(0, 50) for _ in range(n))
        order = ([LOW] * rng.randrange(0, 3)) + seq + ([HIGH] * rng.randrange(0, 2))
        values = [(f"k{rng.randrange(9)}", rng.randrange(100)) for _ in order]
        stamps = [rng.randrange(1000) for _ in order]
        rows = np.array([0 if s in (LOW, HIGH) else rng.randrange(3) for s in order], np.int64)
        # rows of one arrival key in the order the elements came (made non-decreasing)
        for i in range(1, len(order)):
            if order[i] == order[i - 1]:
                rows[i] = max(rows[i], rows[i - 1])
        batch = column_batch(None, values, stamps, frozenset(), typed_encoding(PAIR), "A",
                             (np.array(order, np.int64), rows))
        if batch is not None:
            batches.append(batch)
    return batches


def _rows(columns):
    """The keyed records of a call, as one dict each."""
    assert list(columns) == [name for name, _ in HANDOFF_FIELDS]
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def _separate_pass(batches):
    """The replaced path: the partition's outputs sorted by their arrival keys, then the
    next stage's keying pass over them, in that order."""
    spec = PassSpec(name="keying", input_enc=typed_encoding(PAIR), output_enc=PICKLED,
                    config={"mode": "STREAMING", "parallelism": 1, "max_parallelism": MAXP},
                    chain=list(CHAIN), key_out=(_key, KS), max_parallelism=MAXP)
    out = pa.Table.from_batches(list(run_pass(spec, order_partition(iter(batches)), subtask=0)))
    return [(r[TS], r[KG], r[KEY], pickle.loads(r[VALUE])) for r in out.to_pylist()]


@pytest.mark.parametrize("seed", range(6))
def test_the_call_keys_the_records_the_separate_pass_keys_in_its_order(seed):
    rng = random.Random(seed)
    batches = _calls(rng, 20)
    handoff = HandOff.of(typed_encoding(PAIR), CHAIN, _key, KS, MAXP, "key_by")
    assert handoff is not None
    run = handoff.runner()
    keyed, first = [], 0
    for batch in batches:
        out, n = run(batch, 3, first)
        first += n
        keyed.extend(_rows(out))
        assert len(_rows(out)) == n
    # the partition's records in the order the next stage reads them (group_frames)
    keyed.sort(key=lambda r: (r[FROM] >> SPLIT_SHIFT, r[SEQ], r[SEQ_ROW], r[FROM]))
    got = [(r[TS], r[KG], r[KEY], pickle.loads(r[VALUE])) for r in keyed]
    assert got == _separate_pass(batches)
    assert {r[FROM] >> SPLIT_SHIFT for r in keyed} <= {3}
    assert sorted(r[FROM] & ((1 << SPLIT_SHIFT) - 1) for r in keyed) == list(range(len(keyed)))


def test_each_record_keeps_the_arrival_key_of_the_element_it_came_from():
    enc = typed_encoding(PAIR)
    batch = column_batch(None, [("a", 2), ("b", 3), ("c", 4)], [10, 11, 12], frozenset(), enc,
                         "A", (np.array([LOW, 5, 9], np.int64), np.array([LOW, 1, 2], np.int64)))
    chain = [("flat_map", as_flat_map_function(lambda r: [r] * (r[1] - 2)), "fm")]  # 0-2 copies
    handoff = HandOff.of(enc, chain, lambda r: r[0], KS, MAXP, "key_by")
    out, n = handoff.runner()(batch, 1, 40)
    rows = _rows(out)
    assert n == 3
    assert [(pickle.loads(r[VALUE]), r[TS], r[SEQ], r[SEQ_ROW]) for r in rows] == [
        (("b", 3), 11, 5, 1), (("c", 4), 12, 9, 2), (("c", 4), 12, 9, 2)]
    assert [r[FROM] for r in rows] == [(1 << SPLIT_SHIFT) | i for i in (40, 41, 42)]
    assert [r[KEY] for r in rows] == [KS.serialize("b"), KS.serialize("c"), KS.serialize("c")]
    one, count = handoff.runner()(column_batch(
        None, [("x", 3)], [1], frozenset(), enc, "A",
        (np.array([1], np.int64), np.array([0], np.int64))), 0, 0)
    assert count == 1 and len(_rows(one)) == 1  # one copy of ("x", 3)


def test_the_keyed_records_leave_as_arrays_cut_into_rows():
    columns = {"_ts": list(range(10)), "_k": [b"k%d" % i for i in range(10)]}
    frame = lists_frame(columns, nbytes=BLOB_BYTES * 4)  # about 2.5 records a row
    assert [len(v) for v in frame["_ts"]] == [2, 2, 2, 2, 2]
    assert [x for row in frame["_k"] for x in row] == columns["_k"]
    assert frame.attrs[NBYTES] == BLOB_BYTES * 4
    small = lists_frame(columns, nbytes=100)
    assert len(small) == 1 and list(small["_ts"][0]) == columns["_ts"]


class _Upper(MapFunction):
    def map(self, value):
        return value


class _Selector(KeySelector):
    def get_key(self, value):
        return value[0]


def test_function_classes_and_timestamp_assigners_are_left_to_the_keying_pass():
    enc = typed_encoding(PAIR)
    plain = HandOff.of(enc, [("map", as_map_function(lambda r: r), "m")], lambda r: r[0], KS,
                       MAXP, "k")
    assert plain is not None
    assert HandOff.of(enc, [("map", _Upper(), "m")], lambda r: r[0], KS, MAXP, "k") is None
    assert HandOff.of(enc, [], _Selector(), KS, MAXP, "k") is None
    assigner = [("timestamps", as_timestamp_assigner(lambda r, ts: r[1]), "wm")]
    assert HandOff.of(enc, assigner, lambda r: r[0], KS, MAXP, "k") is None


def test_a_user_error_in_the_chain_names_its_operator():
    enc = typed_encoding(PAIR)
    divide = [("map", as_map_function(lambda r: 1 // r[1]), "Divide")]
    handoff = HandOff.of(enc, divide, lambda r: r, KS, MAXP, "k")
    batch = column_batch(None, [("a", 0)], [1], frozenset(), enc, "A",
                         (np.array([1], np.int64), np.array([0], np.int64)))
    with pytest.raises(Exception, match="Divide"):
        handoff.runner()(batch, 0, 0)


def _frame(seq, row, origin, ts, keys):
    return pd.DataFrame({TS: ts, SEQ: seq, SEQ_ROW: row, FROM: origin, "k": keys})


def test_handed_off_records_are_processed_partition_by_partition_in_arrival_order():
    p0, p1 = 0, 1 << SPLIT_SHIFT
    # one key group's records from two upstream partitions, as the shuffle delivered them
    # (a record without a timestamp: no merge by event time, the arrival order alone)
    frames = [_frame([9, 2, 5], [0, 0, 0], [p1 | 4, p1 | 0, p1 | 2], [30, 10, None], ["x"] * 3),
              _frame([5, 5, LOW], [1, 1, LOW], [p0 | 3, p0 | 2, p0 | 0], [50, 40, 0],
                     ["y"] * 3)]
    keys = ["x", "x", "x", "y", "y", "y"]
    order = processing_order(frames, keys, [30, 10, 0, 50, 40, 0])
    # partition 0: the timer output, then (5,1) numbered 2 before (5,1) numbered 3; then 1's
    assert order.tolist() == [5, 4, 3, 1, 2, 0]
    in_order = [_frame([LOW, 5, 5], [LOW, 1, 1], [p0 | 0, p0 | 2, p0 | 3], [0, 40, 50],
                       ["y"] * 3)]
    assert processing_order(in_order, ["y"] * 3, [0, 40, 50]) is None  # nothing moves


def test_one_keys_records_from_two_partitions_are_merged_by_event_time():
    p0, p1 = 0, 1 << SPLIT_SHIFT
    frames = [_frame([1, 2], [0, 0], [p0 | 0, p0 | 1], [10, 30], ["x", "x"]),
              _frame([1, 2], [0, 0], [p1 | 0, p1 | 1], [20, 40], ["x", "x"])]
    order = processing_order(frames, ["x"] * 4, [10, 30, 20, 40])
    # each partition's own order kept, the two interleaved by event time (as a file stream's
    # splits are): 10, 20, 30, 40
    assert order.tolist() == [0, 2, 1, 3]
