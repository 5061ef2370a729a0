"""Keyed outputs of plain types as arrays of their columns (``array_frame``) through
PySpark's own applyInPandasWithState serializer: every value exact, in order, and the
padding rows that make PySpark cut its batches give no record."""

from __future__ import annotations

import io
import math
import random
import struct

import pyarrow as pa
import pytest
from pyspark.sql.pandas.serializers import ApplyInPandasWithStateSerializer
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)
from pyspark_datastream.runtime.group_frames import (
    array_frame,
    direct_output,
    output_frame,
    output_schema,
)
from pyspark_datastream.runtime.group_state import flushing, frame_bytes

STATE = StructType([StructField("s", BinaryType())])
SCHEMA = pa.schema([("_tag", pa.string()), ("_ts", pa.int64()), ("f0", pa.string()),
                    ("f1", pa.int64()), ("f2", pa.float64()), ("f3", pa.bool_()),
                    ("f4", pa.binary()), ("f5", pa.int32()), ("f6", pa.float32())])
#: the return type the translation declares for SCHEMA (streaming_keyed.keyed_call)
RETURN = StructType([StructField(n, ArrayType(t)) for n, t in [
    ("_tag", StringType()), ("_ts", LongType()), ("f0", StringType()), ("f1", LongType()),
    ("f2", DoubleType()), ("f3", BooleanType()), ("f4", BinaryType()), ("f5", IntegerType()),
    ("f6", FloatType()), ("_nan_f2", IntegerType()), ("_nan_f6", IntegerType())]])
#: the float columns and their NaN positions' columns
NANS = {"f2": "_nan_f2", "f6": "_nan_f6"}
EDGES = [None, 0, -1, 2**63 - 1, -(2**63), 2**53 + 1]
FLOATS = [None, math.nan, -0.0, math.inf, -math.inf, 1e-300, 0.1]


def _record(rng: random.Random) -> tuple:
    return (rng.choice([None, "late", "other"]), rng.choice(EDGES),
            rng.choice([None, "", "w", "ünï\u2603", "a\x00b", "x" * 40]), rng.choice(EDGES),
            rng.choice(FLOATS), rng.choice([None, True, False]),
            rng.choice([None, b"", b"\x00\xff", bytes(range(50))]),
            rng.choice([None, 0, -(2**31), 2**31 - 1]), rng.choice([None, 1.5, math.nan]))


def _batch(records: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*records)) if records else [()] * len(SCHEMA)
    return pa.RecordBatch.from_arrays([pa.array(list(c), f.type) for c, f in zip(columns, SCHEMA)],
                                      schema=SCHEMA)


def _state() -> GroupState:
    state = GroupState(keyAsUnsafe=b"k", valueSchema=STATE, optionalValue=None,
                       batchProcessingTimeMs=0, eventTimeWatermarkMs=0, timeoutConf="NoTimeout",
                       hasTimedOut=False, watermarkPresent=False, defined=False, updated=False,
                       removed=False, timeoutTimestamp=-1)
    state.update((b"state" * 100,))
    return state


def _through_pyspark(frames: list, batch_rows: int) -> tuple[list[tuple], int, int]:
    """What the JVM makes of PySpark's serializer's stream for these call outputs: the
    records of every Arrow batch's data rows (the first ``dataCount``), exploded as
    ``inline(arrays_zip(...))`` does (a row of nulls gives none); the number of rows of
    nulls, and of batches."""
    serializer = ApplyInPandasWithStateSerializer(
        timezone="UTC", safecheck=True, assign_cols_by_name=False, prefer_int_ext_dtype=False,
        state_object_schema=STATE, arrow_max_records_per_batch=batch_rows,
        prefers_large_var_types=False, int_to_decimal_coercion_enabled=False)
    calls = ((((iter([] if f is None else [f]), _state()), RETURN),) for f in frames)
    sink = io.BytesIO()
    serializer.dump_stream(calls, sink)
    data = sink.getvalue()
    assert struct.unpack("!i", data[:4])[0] == -6  # PySpark's START_ARROW_STREAM
    records: list[tuple] = []
    batches = empty = 0
    with pa.ipc.open_stream(data[4:]) as reader:
        for batch in reader:
            batches += 1
            count = batch.column(0).field("dataCount")[0].as_py()
            for row in batch.column(1).slice(0, count).to_pylist():
                arrays = [row[name] for name in SCHEMA.names]
                if not any(arrays):  # padding: empty arrays, which explode into nothing
                    empty += 1
                    continue
                assert len({len(a) for a in arrays}) == 1
                for name, nans in NANS.items():  # what the query does with the positions
                    values = row[name]
                    for i in row[nans] or ():
                        assert values[i] is None  # PySpark made the NaN a null
                        values[i] = math.nan
                records.extend(zip(*arrays))
    return records, empty, batches


def _same(a: tuple, b: tuple) -> bool:
    return all((x is None and y is None) or (isinstance(x, float) and math.isnan(x) and
                                              isinstance(y, float) and math.isnan(y))
               or (x == y and type(x) is type(y) and
                   (not isinstance(x, float) or math.copysign(1, x) == math.copysign(1, y)))
               for x, y in zip(a, b, strict=True))


def test_direct_output_takes_plain_types_only():
    assert direct_output(SCHEMA)
    assert direct_output(output_schema(None, True))  # pickled records, side outputs
    assert not direct_output(pa.schema([("_ts", pa.int64()), ("d", pa.date32())]))
    assert not direct_output(pa.schema([("_ts", pa.int64()), ("l", pa.list_(pa.int64()))]))
    assert not direct_output(pa.schema([("_ts", pa.int64()), ("t", pa.timestamp("us"))]))


@pytest.mark.parametrize("seed", range(4))
def test_every_value_reaches_spark_exact_in_order_and_padding_gives_no_record(
        seed, monkeypatch):
    monkeypatch.setattr("pyspark_datastream.runtime.group_frames.BLOB_ROWS", 32)
    rng = random.Random(seed)
    expected, frames = [], []
    flushed = 0
    for _ in range(rng.randint(5, 30)):
        records = [_record(rng) for _ in range(rng.choice([0, 1, 3, 40, 300]))]
        frame = output_frame(_batch(records), True) if records else None
        if records:  # one row per 32 records at most
            assert len(frame) == -(-len(records) // 32)
            assert frame_bytes(frame) == _batch(records).nbytes
        if rng.random() < 0.3:  # the call's pending bytes reached FLUSH_BYTES
            frame = flushing(frame, 64, SCHEMA)
            flushed += 1
        frames.append(frame)
        expected.extend(records)
    records, empty, batches = _through_pyspark(frames, 64)
    assert len(records) == len(expected)
    bad = [(i, a, b) for i, (a, b) in enumerate(zip(records, expected)) if not _same(a, b)]
    assert not bad, bad[:3]
    assert batches >= flushed  # each padded call made PySpark cut a batch
    assert empty == sum(0 if f is None else sum(len(a) == 0 for a in f["_ts"]) for f in frames)


def test_flushing_pads_a_call_without_output_past_the_batch_limit():
    frame = flushing(None, 10, SCHEMA)
    assert len(frame) == 11 and list(frame.columns) == SCHEMA.names + list(NANS.values())
    records, empty, batches = _through_pyspark([frame, None], 10)
    assert records == [] and empty == 11
    assert batches == 2  # the padded call's batch, then the next call's state
    big = array_frame(_batch([_record(random.Random(1)) for _ in range(20)]))
    assert flushing(big, 0, SCHEMA) is big  # already past the limit: cut without padding
