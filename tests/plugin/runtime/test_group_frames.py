"""group_frames: key-group frames in (column lists, _seq order, typed records) and Arrow
blobs out (the Arrow passes' types and rules), without Spark."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType
from pyspark_datastream import JobExecutionError
from pyspark_datastream.operators.base import Output
from pyspark_datastream.runtime.encoding import PICKLED, typed_encoding
from pyspark_datastream.runtime.group_frames import (
    BLOB,
    ROW_INDEX_BITS,
    SEQ_ROW,
    TypedInput,
    group_rows,
    output_blobs,
    output_schema,
    typed_input,
    typed_output_encoding,
    unpack_blobs,
)
from pyspark_datastream.runtime.passes import gc_paused
from pyspark_datastream.state_store.row import Row
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.types import Types

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


KS = GenericKeySerializer.INSTANCE


def _frame(values, seqs, ts=None, pickled=False, sides=None, flags=None):
    """A key-group frame as Spark hands it over: typed (f0, f1[, _n1]) or ``_k``/``_v``."""
    n = len(values)
    data = {"_ts": np.array([np.nan if t is None else t for t in (ts or [None] * n)], dtype=float),
            "_kg": np.zeros(n, dtype=np.int32)}
    if pickled:
        data["_k"] = [KS.serialize(v[0]) for v in values]
        data["_v"] = [pickle.dumps(v) for v in values]
    else:
        data["f0"] = [v[0] for v in values]
        data["f1"] = np.array([0 if v[1] is None else v[1] for v in values], dtype=np.int64)
        if flags:
            data["_n1"] = np.array([v[1] is None for v in values])
    data["_seq"] = np.array(seqs, dtype=np.int64)
    if sides is not None:
        data["_side"] = np.array(sides, dtype=np.int32)
    return pd.DataFrame(data)


def _unpack(frame):
    batch = pa.RecordBatch.from_arrays([pa.array(frame[BLOB].tolist(), pa.binary())], names=[BLOB])
    return pa.Table.from_batches(list(unpack_blobs(iter([batch]))))


TYPED = TypedInput(typed_encoding(PAIR), key_index=0)


def test_rows_follow_seq_across_frames_and_keep_arrival_order_on_ties():
    f1 = _frame([("a", 1), ("b", 2)], [5, 1], ts=[10, None])
    f2 = _frame([("c", 3), ("d", 4)], [3, 1])
    cols = group_rows([f1, f2], TYPED, False, KS)
    assert list(cols) == [(KS.serialize("b"), None, ("b", 2), 0),
                          (KS.serialize("d"), None, ("d", 4), 0),
                          (KS.serialize("c"), None, ("c", 3), 0),
                          (KS.serialize("a"), 10, ("a", 1), 0)]
    assert all(type(t) is int for t in cols.timestamps if t is not None)
    assert all(type(v[1]) is int for v in cols.values)


def test_file_stream_rows_follow_file_time_then_file_and_row():
    # f_late's file is newer (larger _seq) but reaches the call first; rows of one file keep
    # their row order (_seq_row), files with equal times are told apart by _seq_row too
    late = _frame([("a", 30), ("a", 31)], [200, 200])
    late[SEQ_ROW] = np.array([(7 << 42) | 0, (7 << 42) | 1], dtype=np.int64)
    early = _frame([("a", 10), ("a", 11), ("a", 20)], [100, 100, 100])
    early[SEQ_ROW] = np.array([(9 << 42) | 0, (9 << 42) | 1, (2 << 42) | 5], dtype=np.int64)
    cols = group_rows([late, early], TYPED, False, KS)
    assert [v[1] for v in cols.values] == [20, 10, 11, 30, 31]
    in_order = group_rows([early.iloc[[2, 0, 1]], late], TYPED, False, KS)
    assert [v[1] for v in in_order.values] == [20, 10, 11, 30, 31]


def test_flagged_nulls_come_back_as_none_and_null_keys_are_keys():
    typed = TypedInput(typed_encoding(PAIR), key_index=0, null_flags=(1,))
    f = _frame([("a", None), (None, 2**60 + 1)], [0, 1], flags=True)
    cols = group_rows([f], typed, False, KS)
    assert cols.values == [("a", None), (None, 2**60 + 1)]  # exact beyond 2**53
    assert cols.keys == [KS.serialize("a"), KS.serialize(None)]


def test_key_bytes_that_disagree_with_sparks_key_group_fail_loudly():
    import zlib

    kg = zlib.crc32(KS.serialize("a")) % 128
    group_rows([_frame([("a", 1)], [0])], TYPED, False, KS, (kg, 128))
    with pytest.raises(JobExecutionError, match=r"key 'a': Spark placed it in key group"):
        group_rows([_frame([("a", 1)], [0])], TYPED, False, KS, ((kg + 1) % 128, 128))


def test_pickled_values_rows_shape_and_input_sides():
    f = _frame([("k", {"x": 1}), ("k", [2])], [0, 1], pickled=True, sides=[1, 0])
    assert list(group_rows([f], None, True)) == [
        (KS.serialize("k"), None, ("k", {"x": 1}), 1), (KS.serialize("k"), None, ("k", [2]), 0)]
    row_enc = typed_encoding(Types.ROW_NAMED(["f0", "f1"], [Types.STRING(), Types.LONG()]))
    (value,) = group_rows([_frame([("w", 7)], [0])], TypedInput(row_enc, 0), False, KS).values
    assert isinstance(value, Row) and value.f0 == "w" and value.f1 == 7


def test_typed_input_plan_flags_nullable_numbers_and_refuses_other_types():
    enc = typed_encoding(PAIR)
    exact = StructType([StructField("f0", StringType(), True), StructField("f1", LongType(), False)])
    nullable_long = StructType([StructField("f0", StringType()), StructField("f1", LongType(), True)])
    assert typed_input(enc, exact, 0) == TypedInput(enc, 0, ())
    assert typed_input(enc, nullable_long, 0) == TypedInput(enc, 0, (1,))
    assert typed_input(PICKLED, exact, 0) is None
    stamped = typed_encoding(Types.TUPLE([Types.STRING(), Types.SQL_TIMESTAMP()]))
    assert typed_input(stamped, exact, 0) is None


def test_typed_output_blobs_round_trip_with_arrow_types_and_timestamps():
    enc = typed_output_encoding(Types.TUPLE([Types.STRING(), Types.DOUBLE()]))
    outs = [Output(None, ("a", 1.5), 7), Output(None, ("b", math.nan), None),
            Output(None, Row(f1=2.0, f0="c"), 9), Output(None, None, 1)]
    table = _unpack(output_blobs(outs, frozenset(), enc))
    assert table.schema == output_schema(enc, False)
    assert table.column("_ts").to_pylist() == [7, None, 9, 1]
    assert table.column("f0").to_pylist() == ["a", "b", "c", None]
    f1 = table.column("f1").to_pylist()
    assert f1[0] == 1.5 and math.isnan(f1[1]) and f1[2] == 2.0 and f1[3] is None  # NaN stays NaN


def test_pickled_blobs_drop_unread_side_outputs_and_keep_read_ones():
    outs = [Output(None, {"v": 1}, 1), Output("late", "x", 2), Output("other", "y", 3)]
    plain = _unpack(output_blobs(outs, frozenset(), None))
    assert [pickle.loads(v) for v in plain.column("_v").to_pylist()] == [{"v": 1}]
    tagged = _unpack(output_blobs(outs, frozenset({"late"}), None))
    assert tagged.column("_tag").to_pylist() == [None, "late"]
    assert output_blobs([Output("other", 1, 1)], frozenset(), None) is None


def test_many_outputs_are_split_into_bounded_blobs(monkeypatch):
    import pyspark_datastream.runtime.group_frames as gf

    monkeypatch.setattr(gf, "BLOB_ROWS", 3)
    enc = typed_output_encoding(PAIR)
    frame = output_blobs([Output(None, ("w", i), i) for i in range(7)], frozenset(), enc)
    assert len(frame) == 3
    assert _unpack(frame).column("f1").to_pylist() == list(range(7))
    monkeypatch.setattr(gf, "BLOB_ROWS", 1 << 16)
    monkeypatch.setattr(gf, "BLOB_BYTES", 1000)  # big records: fewer per blob
    frame = output_blobs([Output(None, ("x" * 300, i), i) for i in range(10)], frozenset(), enc)
    assert len(frame) >= 3 and all(len(b) < 4000 for b in frame[BLOB])
    assert _unpack(frame).column("f1").to_pylist() == list(range(10))


def test_output_not_matching_the_declared_type_names_operator_and_type():
    enc = typed_output_encoding(PAIR)
    with pytest.raises(JobExecutionError, match=r"'my-reduce': an output record does not match"):
        output_blobs([Output(None, ("a", "not a number"), 1)], frozenset(), enc, "my-reduce")
    with pytest.raises(JobExecutionError, match="has 3 fields"):
        output_blobs([Output(None, ("a", 1, 2), 1)], frozenset(), enc, "my-reduce")
    assert typed_output_encoding(None) is None
    assert typed_output_encoding(Types.ROW_NAMED(["a"], [Types.LONG()])) is None
    assert typed_output_encoding(Types.LONG()) is None


def test_gc_is_paused_inside_and_restored():
    import gc

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_keys_records_of_two_splits_are_merged_by_event_time():
    # issue #13: a key spanning two files whose later part reaches the call first (Spark
    # reads the larger file first) was processed later-part-first; an order-sensitive
    # function then disagreed with BATCH. Each split keeps its own order.
    p0, p1 = 0 << 40, 1 << 40
    later = _frame([("u", 1870), ("v", 5), ("u", 2216)], [p0, p0 + 1, p0 + 2],
                   ts=[1870, 5, 2216], pickled=True)
    earlier = _frame([("u", 1135), ("w", 1), ("u", 1781)], [p1, p1 + 1, p1 + 2],
                     ts=[1135, 1, 1781], pickled=True)
    cols = group_rows([later, earlier], None, False, KS)
    u = [v[1] for v in cols.values if v[0] == "u"]
    assert u == [1135, 1781, 1870, 2216]
    assert cols.timestamps == [v[1] for v in cols.values]
    # a split out of time order keeps its order (Flink keeps each split's order)
    shuffled = _frame([("u", 30), ("u", 10), ("u", 20)], [p0, p0 + 1, p0 + 2],
                      ts=[30, 10, 20], pickled=True)
    other = _frame([("u", 25)], [p1], ts=[25], pickled=True)
    assert [v[1] for v in group_rows([shuffled, other], None, False, KS).values] == \
        [25, 30, 10, 20]
    # one split: arrival order, whatever the timestamps
    single = _frame([("u", 30), ("u", 10)], [p0, p0 + 1], ts=[30, 10], pickled=True)
    assert [v[1] for v in group_rows([single], None, False, KS).values] == [30, 10]


def test_files_of_a_file_stream_are_merged_by_event_time_per_key():
    late = _frame([("a", 30), ("a", 31)], [100, 100], ts=[30, 31])
    late[SEQ_ROW] = np.array([(7 << 42) | 0, (7 << 42) | 1], dtype=np.int64)
    early = _frame([("a", 10), ("b", 50), ("a", 20)], [200, 200, 200], ts=[10, 50, 20])
    early[SEQ_ROW] = np.array([(9 << 42) | 0, (9 << 42) | 1, (9 << 42) | 2], dtype=np.int64)
    cols = group_rows([late, early], TYPED, False, KS)
    assert [v[1] for v in cols.values if v[0] == "a"] == [10, 20, 30, 31]
    # two inputs of a co-operator are two splits even in the same read partition
    left = _frame([("a", 9)], [0], ts=[9], pickled=True, sides=[0])
    right = _frame([("a", 3)], [0], ts=[3], pickled=True, sides=[1])
    both = group_rows([left, right], None, True, KS)
    assert list(both)[0][3] == 1 and [v[1] for v in both.values] == [3, 9]


@pytest.mark.parametrize("seed", range(6))
def test_file_splits_merge_as_a_running_maximum_per_key_and_file_model(seed):
    # random files of one key group: each file's records arrive in (file time, file, row)
    # order; the model gives each record the running maximum event time of its key within
    # its file and orders stably by it (Flink keeps each split's order, and merges a key's
    # splits by event time as BATCH sees them); timestamps span the whole long range
    rng = np.random.default_rng(seed)
    keys = ["a", "b", "c", "d", None]  # a null key is a key too
    frames, records = [], []
    for file in range(int(rng.integers(2, 6))):
        n = int(rng.integers(1, 40))
        mtime = int(rng.integers(0, 3)) * 1000  # files may share a modification time
        spread = 2**62 if seed % 2 else 50  # ties, or the long range's ends
        ts = [int(t) for t in rng.integers(-spread, spread, size=n)]
        ks = [keys[int(k)] for k in rng.integers(0, len(keys), size=n)]
        ids = [len(records) + i for i in range(n)]
        frame = _frame([(k, i) for k, i in zip(ks, ids)], [mtime] * n, ts=ts)
        frame["_ts"] = np.array(ts, dtype=np.int64)  # no nulls: Spark hands over longs
        frame[SEQ_ROW] = np.array([(file << ROW_INDEX_BITS) | r for r in range(n)], dtype=np.int64)
        frames.append(frame)
        records += [(mtime, file, r, k, t, i) for r, (k, t, i) in enumerate(zip(ks, ts, ids))]
    frames = [frames[int(i)] for i in rng.permutation(len(frames))]  # reached in any order
    arrival = sorted(records, key=lambda r: (r[0], r[1], r[2]))
    running, keyed = {}, []
    for mtime, file, _, key, t, i in arrival:
        running[key, mtime, file] = max(running.get((key, mtime, file), t), t)
        keyed.append((running[key, mtime, file], i))
    expected = [i for _, i in sorted(keyed, key=lambda pair: pair[0])]
    cols = group_rows(frames, TYPED, False, KS)
    assert [v[1] for v in cols.values] == expected
    assert cols.timestamps == [records[i][4] for i in expected]


def test_column_blobs_equal_output_blobs():
    from pyspark_datastream.runtime.group_frames import column_blobs

    enc = typed_encoding(PAIR)
    outs = [Output(None, ("a", 1), 5), Output("late", ("b", 2), 6), Output(None, ("c", 3), None)]
    tags, values, stamps = ([o[0] for o in outs], [o[1] for o in outs], [o[2] for o in outs])
    for wanted in (frozenset(), frozenset({"late"})):
        expected = _unpack(output_blobs(outs, wanted, enc if not wanted else None))
        got = _unpack(column_blobs(tags, values, stamps, wanted, enc if not wanted else None))
        assert got.to_pylist() == expected.to_pylist()
    mains = [o for o in outs if o[0] is None]
    got = _unpack(column_blobs(None, [o[1] for o in mains], [o[2] for o in mains],
                               frozenset({"late"}), None))
    assert got.to_pylist() == _unpack(output_blobs(mains, frozenset({"late"}), None)).to_pylist()
    assert column_blobs(None, [], [], frozenset(), enc) is None


def test_typed_rows_carry_key_values_and_each_distinct_keys_bytes():
    f = _frame([("a", 1), ("b", 2), ("a", 3)], [0, 1, 2])
    cols = group_rows([f], TYPED, False, KS)
    assert cols.key_values == ["a", "b", "a"]
    assert cols.key_bytes == {"a": KS.serialize("a"), "b": KS.serialize("b")}
    assert cols.keys == [KS.serialize(k) for k in "aba"]


def test_float_keys_stay_keyed_by_their_bytes():
    # two NaN objects are unequal dict keys but one key by bytes; the columns keep bytes
    typed = TypedInput(typed_encoding(Types.TUPLE([Types.DOUBLE(), Types.LONG()])), key_index=0)
    frame = pd.DataFrame({"_ts": np.array([np.nan] * 3), "_kg": np.zeros(3, dtype=np.int32),
                          "f0": np.array([float("nan"), float("nan"), 1.5]),
                          "f1": np.array([1, 2, 3], dtype=np.int64),
                          "_seq": np.array([0, 1, 2], dtype=np.int64)})
    cols = group_rows([frame], typed, False, KS)
    assert cols.key_values is None and cols.key_bytes is None
    assert cols.keys[0] == cols.keys[1] != cols.keys[2]
    assert [v[1] for v in cols.values] == [1, 2, 3]


def test_unpack_blobs_releasing_arrow_memory_keeps_every_batch(monkeypatch):
    """Releasing Arrow's unused memory after every input batch frees nothing the batches
    already handed on still read: 30 blobs of random records come back whole, in order."""
    from pyspark_datastream.runtime import group_frames

    monkeypatch.setattr(group_frames, "RELEASE_BYTES", 1)
    enc = typed_output_encoding(Types.TUPLE([Types.STRING(), Types.LONG()]))
    rng = np.random.default_rng(3)
    expected, inputs = [], []
    for i in range(30):
        n = int(rng.integers(1, 2000))
        values = [(f"k{int(v)}", int(v) * 7) for v in rng.integers(0, 10**9, size=n)]
        stamps = [None if v % 5 == 0 else i * 10_000 + j for j, (_, v) in enumerate(values)]
        outputs = [Output(None, v, t) for v, t in zip(values, stamps)]
        frame = output_blobs(outputs, frozenset(), enc, "op")
        inputs.append(pa.RecordBatch.from_pandas(frame, preserve_index=False))
        expected.extend(zip(stamps, [v[0] for v in values], [v[1] for v in values]))
    batches = list(unpack_blobs(iter(inputs)))  # all held while later ones are read
    got = [tuple(r.values()) for b in batches for r in b.to_pylist()]
    assert got == expected


def test_timestamps_come_back_as_python_ints_or_none():
    """``_ts`` as Spark hands it over: int64 without nulls, float64 with some, all null."""
    from pyspark_datastream.runtime.encoding import TS
    from pyspark_datastream.runtime.group_frames import _timestamps

    big = 2**62 + 1  # exact as an int, not as a float
    ints = _timestamps(pd.DataFrame({TS: pd.Series([big, -5, 0], dtype="int64")}))
    assert ints == [big, -5, 0] and all(type(t) is int for t in ints)
    some = _timestamps(pd.DataFrame({TS: pd.Series([1.0, None, 3.0], dtype="float64")}))
    assert some == [1, None, 3] and type(some[0]) is int
    assert _timestamps(pd.DataFrame({TS: pd.Series([None, None], dtype="float64")})) == [None, None]
