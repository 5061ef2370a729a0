"""Keyed outputs of plain types as arrays of their columns (``array_frame``) through
PySpark's own applyInPandasWithState worker code: every value exact, in order, and the
padding rows that make PySpark cut its batches give no record.

The installed pyspark's ``worker.read_udfs`` builds the operator's function and serializers
as a Python worker does (through 4.2 an ``ApplyInPandasWithStateSerializer``; from 4.3 the
same count/data/state batch layout, written inline in ``pyspark/worker.py``), and gets
input batches laid out as the JVM sends them: the data rows, and a trailing state column
with one row per key chunk (``startOffset``, ``numRows``, ``isLastChunk``) padded with nulls.
"""

from __future__ import annotations

import inspect
import io
import json
import math
import random
import struct
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from pyspark import worker
from pyspark.serializers import CloudPickleSerializer, write_int, write_long, write_with_length
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

try:
    from pyspark.util import PythonEvalType
except ImportError:  # pyspark 3.5 keeps it in pyspark.rdd
    from pyspark.rdd import PythonEvalType  # type: ignore[attr-defined,no-redef]
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
#: the return type the translation declares for SCHEMA (translation/streaming/keyed.keyed_call)
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


#: the JVM's input: one data row per record of a key (the key ``k`` and a value ``v``), cut
#: into batches of INPUT_ROWS rows (a key's rows may span two), and the state column
INPUT_ROWS = 4
STATE_INFO = pa.struct([("properties", pa.string()), ("keyRowAsUnsafe", pa.binary()),
                        ("object", pa.binary()), ("startOffset", pa.int32()),
                        ("numRows", pa.int32()), ("isLastChunk", pa.bool_())])
INPUT = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("__state", STATE_INFO)])
#: BasePandasGroupExec's argument offsets: 3 offsets follow, 1 key column (0), value column 1
ARG_OFFSETS = [3, 1, 0, 1]
PROPERTIES = json.dumps({"batchProcessingTimeMs": 0, "eventTimeWatermarkMs": 0,
                         "timeoutConf": "NoTimeout", "hasTimedOut": False,
                         "watermarkPresent": False, "defined": False, "updated": False,
                         "removed": False, "timeoutTimestamp": -1})


def _input_rows(key: int) -> int:
    return key % 3 + 1


def _input_batches(keys: int) -> list[pa.RecordBatch]:
    """Keys ``0 .. keys-1`` (``_input_rows(k)`` rows each) as the JVM's Arrow batches."""
    rows = [k for k in range(keys) for _ in range(_input_rows(k))]
    batches = []
    for start in range(0, len(rows), INPUT_ROWS):
        part = rows[start:start + INPUT_ROWS]
        chunks: list = []
        for offset, key in enumerate(part):
            if offset and part[offset - 1] == key:
                chunks[-1]["numRows"] += 1
            else:
                chunks.append({"properties": PROPERTIES, "keyRowAsUnsafe": b"key%d" % key,
                               "object": None, "startOffset": offset, "numRows": 1})
            chunks[-1]["isLastChunk"] = start + offset + 1 == len(rows) or \
                rows[start + offset + 1] != key
        state = chunks + [None] * (len(part) - len(chunks))
        batches.append(pa.RecordBatch.from_arrays(
            [pa.array(part, pa.int64()), pa.array(part, pa.int64()),
             pa.array(state, STATE_INFO)], schema=INPUT))
    return batches


def _function(frames: list):
    """The user function applyInPandasWithState calls: key ``k`` gets ``frames[k]``."""
    def call(key: tuple, pdfs, state):
        values = pd.concat(list(pdfs))
        assert list(values["v"]) == [key[0]] * _input_rows(key[0])  # its own rows only
        state.update((b"state" * 100,))
        frame = frames[key[0]]
        return iter([] if frame is None else [frame])

    return call


def _conf(conf: dict[str, str]) -> io.BytesIO:
    """A configuration as the JVM writes it to a Python worker."""
    stream = io.BytesIO()
    write_int(len(conf), stream)
    for key, value in conf.items():
        write_with_length(key.encode(), stream)
        write_with_length(value.encode(), stream)
    stream.seek(0)
    return stream


def _command_stream(command: bytes, stream: io.BytesIO, flagged: bool) -> None:
    """One UDF as the JVM writes it to a worker: its argument offsets (``flagged``: each
    followed by a keyword-argument flag, False), one function, no profiler's result id."""
    write_int(1, stream)  # UDFs
    write_int(len(ARG_OFFSETS), stream)
    for offset in ARG_OFFSETS:
        write_int(offset, stream)
        if flagged:
            stream.write(b"\x00")  # positional, not a keyword argument
    write_int(1, stream)  # chained functions
    write_with_length(command, stream)


def _worker(frames: list, batch_rows: int):
    """``(func, deserializer, serializer)`` of the installed pyspark's worker for an
    applyInPandasWithState whose function returns ``frames``, handed its configuration and
    UDF the way that pyspark's worker reads them."""
    conf = {"spark.sql.session.timeZone": "UTC",
            "spark.sql.execution.arrow.maxRecordsPerBatch": str(batch_rows),
            "spark.sql.execution.pandas.convertToArrowArraySafely": "true",
            "spark.sql.legacy.execution.pandas.groupedMap.assignColumnsByName": "false"}
    command = CloudPickleSerializer().dumps((_function(frames), RETURN))
    eval_type = PythonEvalType.SQL_GROUPED_MAP_PANDAS_UDF_WITH_STATE
    params = inspect.signature(worker.read_udfs).parameters
    if "runner_conf" not in params:  # 3.5-4.1: configuration and UDF in the input stream
        stream = _conf(conf)
        stream.seek(0, io.SEEK_END)
        write_with_length(STATE.json().encode(), stream)  # the state's schema
        if "profiler" in inspect.signature(worker.read_single_udf).parameters:  # 4.0, 4.1
            stream.write(b"\x00")  # no profiler
        _command_stream(command, stream, flagged=False)
        stream.seek(0)
        func, _, deserializer, serializer = worker.read_udfs(worker.pickleSer, stream, eval_type)
        return func, deserializer, serializer
    runner_conf = worker.RunnerConf(_conf(conf))
    eval_conf = worker.EvalConf(_conf({"state_value_schema": STATE.json()}))
    udf_info: Any
    if "udf_info_list" in params:  # 4.3+
        from pyspark.worker_message import UDFInfo

        udf_info = [UDFInfo(udfs=[memoryview(command)], args=ARG_OFFSETS, kwargs={},
                            result_id=0)]
    else:  # 4.2: the UDF in the input stream
        udf_info = io.BytesIO()
        _command_stream(command, udf_info, flagged=True)
        write_long(0, udf_info)  # result id
        udf_info.seek(0)
    func, _, deserializer, serializer = worker.read_udfs(
        worker.pickleSer, udf_info, eval_type, runner_conf, eval_conf)
    return func, deserializer, serializer


def _through_pyspark(frames: list, batch_rows: int) -> tuple[list[tuple], int, int]:
    """What the JVM makes of PySpark's worker's output stream for these call outputs (call
    ``k`` is key ``k``'s): the records of every Arrow batch's data rows (the first
    ``dataCount``), exploded as ``inline(arrays_zip(...))`` does (a row of nulls gives
    none); the number of rows of nulls, and of batches. Every key's state comes back too."""
    func, deserializer, serializer = _worker(frames, batch_rows)
    source = io.BytesIO()
    with pa.ipc.new_stream(source, INPUT) as writer:
        for batch in _input_batches(len(frames)):
            writer.write_batch(batch)
    source.seek(0)
    sink = io.BytesIO()
    serializer.dump_stream(func(0, deserializer.load_stream(source)), sink)
    data = sink.getvalue()
    assert struct.unpack("!i", data[:4])[0] == -6  # PySpark's START_ARROW_STREAM
    records: list[tuple] = []
    batches = empty = states = 0
    with pa.ipc.open_stream(data[4:]) as reader:
        for batch in reader:
            batches += 1
            count = batch.column(0).field("dataCount")[0].as_py()
            state_count = batch.column(0).field("stateCount")[0].as_py()
            for state in batch.column(2).slice(0, state_count).to_pylist():
                assert state["keyRowAsUnsafe"] == b"key%d" % states  # in call order
                assert json.loads(state["properties"])["updated"] is True
                states += 1
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
    assert states == len(frames)
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
