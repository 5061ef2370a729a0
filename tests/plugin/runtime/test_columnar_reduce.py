"""The columnar STREAMING reduce: every intermediate result and the state it leaves are the
Python fold's, for random key groups over several frames, restored state and several calls;
it steps aside (to the same errors and results) whenever it cannot vouch for that."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark_datastream import DataStreamError
from pyspark_datastream.operators.aggregations import BuiltinAggregation
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.field_reduce import first_positions, rolling_fields, sums_fit
from pyspark_datastream.operators.functions import as_reduce_function
from pyspark_datastream.operators.keygroup import KeyGroupRuntime, decode_state
from pyspark_datastream.runtime.columnar_reduce import FieldReduce
from pyspark_datastream.runtime.encoding import typed_encoding
from pyspark_datastream.runtime.group_frames import (
    BLOB,
    SEQ_ROW,
    TypedInput,
    typed_output_encoding,
    unpack_blobs,
)
from pyspark_datastream.runtime.group_state import GroupSpec, group_function
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.types import Types
from pyspark_datastream.translation.streaming.pushdown import field_reduce_plan

KS = GenericKeySerializer.INSTANCE
MAXP = 128
TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
TYPED = TypedInput(typed_encoding(TRIPLE), key_index=0, null_flags=(1,))
OUT = typed_output_encoding(TRIPLE)


# -- the numpy core against a plain fold --------------------------------------------------


def _fold(codes, kinds, columns, running, restored):
    """The Python fold over records as tuples: first fields kept, sum fields added."""
    state = {j: tuple(r[j] for r in running) for j in range(len(restored)) if restored[j]}
    out = []
    for i, c in enumerate(codes.tolist()):
        record = tuple(col[i] for col in columns)
        if c in state:
            record = tuple(a if k == "first" else a + b
                           for k, a, b in zip(kinds, state[c], record))
        state[c] = record
        out.append(record)
    return out, state


@pytest.mark.parametrize("seed", range(6))
def test_rolling_fields_equal_a_plain_fold(seed):
    rng = random.Random(seed)
    n, keys = rng.choice([(1, 1), (50, 7), (3000, 400)])
    codes = np.array([rng.randrange(keys) for _ in range(n)], dtype=np.int64)
    present = sorted(set(codes.tolist()))
    codes = np.searchsorted(present, codes)  # codes 0..keys-1, every key has a record
    keys = len(present)
    kinds = ("first", "sum", "first", "sum")
    columns = [np.array([f"k{c}" for c in codes.tolist()], dtype=object),
               np.array([rng.randint(-10**12, 10**12) for _ in range(n)], dtype=np.int64),
               np.array([rng.random() < 0.5 for _ in range(n)]),
               np.array([rng.randint(-1000, 1000) for _ in range(n)], dtype=np.int32)]
    restored = np.array([rng.random() < 0.4 for _ in range(keys)])
    running = [np.array([f"k{j}" for j in range(keys)], dtype=object),
               np.array([rng.randint(-10**15, 10**15) for _ in range(keys)], dtype=np.int64),
               np.array([rng.random() < 0.5 for _ in range(keys)]),
               np.array([rng.randint(-10**6, 10**6) for _ in range(keys)], dtype=np.int64)]
    results, finals = rolling_fields(codes, kinds, columns, running, restored)
    # a first field's result is its key's final value
    assert [r is None for r in results] == [k == "first" for k in kinds]
    results = [f[codes] if r is None else r for r, f in zip(results, finals)]
    expected, state = _fold(codes, kinds, [c.tolist() for c in columns],
                            [r.tolist() for r in running], restored.tolist())
    assert list(zip(*[r.tolist() for r in results])) == expected
    assert list(zip(*[f.tolist() for f in finals])) == [state[j] for j in range(keys)]


def test_first_positions_and_the_sum_bound():
    assert first_positions(np.array([2, 0, 2, 1, 0]), 4).tolist() == [1, 3, 0, -1]
    column = np.array([2**40, -(2**40)], dtype=np.int64)
    assert sums_fit(column, np.array([5]), 2**41 + 10**7)
    assert not sums_fit(column, np.array([5]), 2**41)
    assert not sums_fit(np.array([2**62, 2**62], dtype=np.int64), np.array([]), 2**63 - 1)
    assert sums_fit(np.array([], dtype=np.int64), np.array([]), 1)


# -- one key group through the applyInPandasWithState function ------------------------------


class MemoryGroupState:
    """The part of Spark's GroupState the function uses, in memory."""

    def __init__(self, value=None):
        self.value = value

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return self.value

    def update(self, value):
        self.value = value

    def remove(self):
        self.value = None

    def getCurrentWatermarkMs(self):
        return 0

    def getCurrentProcessingTimeMs(self):
        return 0

    def setTimeoutTimestamp(self, ms):
        raise AssertionError("a reduce sets no timeout")


def _keys_of_group(count, group=7, seed=0):
    rng = random.Random(seed)
    keys = []
    while len(keys) < count:
        k = "".join(rng.choice("abcxyzé€𝄞") for _ in range(rng.randint(1, 6)))
        if k not in keys and assign_key_group(KS.serialize(k), MAXP) == group:
            keys.append(k)
    return keys


def _frames(rng, keys, records, files, nulls=False, big=False, stamped=False):
    """Three frames of a file stream of ``files`` files: each file a (time, path hash) split,
    rows shuffled between frames as Spark's sort hands them over; ``stamped``: timestamps
    rising along the files (so the event-time merge of splits keeps file order)."""
    rows = []
    for f in range(files):
        for r in range(records):
            v1 = None if nulls and rng.random() < 0.05 else (
                rng.choice([2**62, -(2**62)]) if big else rng.randint(-10**9, 10**9))
            rows.append((rng.choice(keys), v1, rng.randint(-5000, 5000),
                         1000 + f * 7 % 3, (f << 42) | r))
    rng.shuffle(rows)
    cut = sorted(rng.sample(range(1, len(rows)), 2))
    frames = []
    for part in (rows[:cut[0]], rows[cut[0]:cut[1]], rows[cut[1]:]):
        frames.append(pd.DataFrame({
            "_ts": (np.array([(r[3] - 1000) * 10**6 + (r[4] & 0xFFFF) for r in part],
                             dtype=np.int64) if stamped
                    else np.full(len(part), np.nan)),
            "_kg": np.full(len(part), 7, dtype=np.int32),
            "f0": pd.Series([r[0] for r in part], dtype=object),
            "f1": np.array([0 if r[1] is None else r[1] for r in part], dtype=np.int64),
            "f2": np.array([r[2] for r in part], dtype=np.int32),
            "_n1": np.array([r[1] is None for r in part]),
            "_seq": np.array([r[3] for r in part], dtype=np.int64),
            SEQ_ROW: np.array([r[4] for r in part], dtype=np.int64)}))
    return frames


def _spec(function, columnar):
    plan = FieldReduce(("first", "sum", "sum"), ("STRING", "LONG", "INT")) if columnar else None
    return GroupSpec("sums", "reduce", as_reduce_function(function), KS,
                     {"max_parallelism": MAXP}, False, False, frozenset(), typed_input=TYPED,
                     output_enc=OUT, field_reduce=plan)


def _call(fn, frames, state):
    out = list(fn((7,), iter(frames), state))
    return _unpack_frames(out) if out else []


def _add(a, b):
    return (a[0], a[1] + b[1], a[2] + b[2])


@pytest.mark.parametrize("seed", range(4))
def test_same_outputs_and_state_as_the_python_fold_over_calls(seed):
    rng = random.Random(seed)
    keys = _keys_of_group(rng.choice([3, 40, 300]), seed=seed)
    columnar, python = group_function(_spec(_add, True)), group_function(_spec(_add, False))
    s_col, s_py = MemoryGroupState(), MemoryGroupState()
    model = {}
    for call in range(3):
        frames = _frames(rng, keys, rng.randint(20, 400), rng.randint(1, 3),
                         stamped=call == 1)
        got = _call(columnar, frames, s_col)
        assert got == _call(python, frames, s_py)
        assert decode_state(s_col.value[0]) == decode_state(s_py.value[0])
        assert s_col.value[0] == s_py.value[0]
        # an independent model: rows in (file time, file and row) order, sums per key
        rows = sorted((r for p in frames for r in zip(
            p["_seq"], p[SEQ_ROW], p["f0"], p["f1"], p["f2"], p["_ts"])),
            key=lambda r: (r[0], r[1]))
        expected = []
        for _, _, k, a, b, ts in rows:
            s1, s2 = model.get(k, (0, 0))
            model[k] = (s1 + int(a), s2 + int(b))
            expected.append({"_ts": None if ts != ts else int(ts), "f0": k,
                             "f1": model[k][0], "f2": model[k][1]})
        assert got == expected


def test_nulls_and_sums_beyond_the_type_take_the_python_path():
    rng = random.Random(5)
    keys = _keys_of_group(20, seed=5)
    frames = _frames(rng, keys, 200, 2, nulls=True)
    with pytest.raises(DataStreamError) as columnar_error:
        _call(group_function(_spec(_add, True)), frames, MemoryGroupState())
    with pytest.raises(DataStreamError) as python_error:
        _call(group_function(_spec(_add, False)), frames, MemoryGroupState())
    assert type(columnar_error.value) is type(python_error.value)
    assert str(columnar_error.value) == str(python_error.value)
    assert "sums" in str(python_error.value)
    # sums of +-2**62 leave the long range for some keys: the fold's own error
    frames = _frames(rng, keys[:2], 50, 1, big=True)
    errors = []
    for columnar in (True, False):
        with pytest.raises(DataStreamError) as error:
            _call(group_function(_spec(_add, columnar)), frames, MemoryGroupState())
        errors.append(str(error.value))
    assert errors[0] == errors[1] and "sums" in errors[0]


def test_a_restored_value_of_another_shape_takes_the_python_path():
    keys = _keys_of_group(5, seed=9)
    # running values whose INT field holds a float (the lean runtime does not check types)
    runtime = KeyGroupRuntime("reduce", as_reduce_function(_add), KS,
                              OperatorConfig.for_mode("STREAMING", operator_name="sums",
                                                      max_parallelism=MAXP))
    odd = runtime.run(None, [(KS.serialize(k), None, (k, 1, 0.5), 0) for k in keys]).state
    later = _frames(random.Random(9), keys, 30, 1)
    errors = []
    for columnar in (True, False):
        with pytest.raises(DataStreamError) as error:
            _call(group_function(_spec(_add, columnar)), later, MemoryGroupState((odd,)))
        errors.append(str(error.value))
    assert errors[0] == errors[1] and "sums" in errors[0]


# -- the plan -------------------------------------------------------------------------------


def test_plan_from_traced_lambdas_and_built_in_sums_only():
    def plan(function, t=TRIPLE, backend="hashmap", key_index=0):
        typed = TypedInput(typed_encoding(t), key_index=key_index)
        return field_reduce_plan("reduce", as_reduce_function(function), typed,
                                 typed_output_encoding(t), backend)

    assert plan(lambda a, b: (a[0], a[1] + b[1], b[2] + a[2])).kinds == ("first", "sum", "sum")
    assert plan(BuiltinAggregation("sum", 1)).kinds == ("first", "sum", "first")
    assert plan(lambda a, b: (a[0], a[1] + b[1], a[2])) is None  # keeps a non-key field
    assert plan(lambda a, b: (a[0], a[1] * b[1], a[2] + b[2])) is None
    assert plan(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]), backend="rocksdb") is None
    doubles = Types.TUPLE([Types.STRING(), Types.DOUBLE()])
    assert plan(lambda a, b: (a[0], a[1] + b[1]), t=doubles) is None
    assert plan(BuiltinAggregation("max", 1)) is None


# -- PySpark's output batches ---------------------------------------------------------------


def test_pending_output_past_the_threshold_makes_the_call_cut_pysparks_batch(monkeypatch):
    """PySpark cuts applyInPandasWithState's Arrow batches by output rows only: once enough
    bytes are pending, a call pads its blobs with nulls past the row limit; the records are
    the same."""
    from dataclasses import replace

    from pyspark_datastream.runtime import group_state

    rng = random.Random(3)
    keys = _keys_of_group(30, seed=3)
    frames = [_frames(rng, keys, 100, 2) for _ in range(3)]
    plain = group_function(_spec(_add, True))
    padded = group_function(replace(_spec(_add, True), arrow_batch_rows=40))
    s_plain, s_padded = MemoryGroupState(), MemoryGroupState()
    sizes = []
    for batch in frames[:2]:  # under the threshold: nothing padded
        out = list(padded((7,), iter(batch), s_padded))
        sizes.append(len(out[0]))
        assert _call(plain, batch, s_plain) == _unpack_frames(out)
    assert sizes == [1, 1]
    monkeypatch.setattr(group_state, "FLUSH_BYTES", 1)
    out = list(padded((7,), iter(frames[2]), s_padded))
    assert len(out[0]) == 41 and out[0][BLOB].iloc[1:].isna().all()
    assert _unpack_frames(out) == _call(plain, frames[2], s_plain)
    assert s_padded.value == s_plain.value
    # a call without output still cuts the batch its state would ride in
    empty = list(padded((7,), iter([]), s_padded))
    assert len(empty[0]) == 41 and empty[0][BLOB].isna().all()
    assert _unpack_frames(empty) == []


def _unpack_frames(out):
    blobs = pa.RecordBatch.from_arrays([pa.array(out[0][BLOB].tolist(), pa.binary())], [BLOB])
    return pa.Table.from_batches(list(unpack_blobs(iter([blobs]))),
                                 schema=None if out[0][BLOB].notna().any() else
                                 pa.schema([])).to_pylist()
