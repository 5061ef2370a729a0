"""In-band watermarks: the keying pass's watermark rows, a key group's watermark from them,
and the watermark an in-band stage forwards to the keyed stage below it
(runtime/inband.py, runtime/tws_processor.py), without Spark."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyspark.cloudpickle as cloudpickle
import pytest
from pyspark_datastream.operators.functions import as_timestamp_assigner
from pyspark_datastream.runtime.group_state import END_THRESHOLD, GroupSpec
from pyspark_datastream.runtime.inband import (
    WATERMARK_KEY,
    WATERMARK_SEQ,
    WATERMARK_TAG,
    ObservedAssigner,
    forwarded_marks,
    split_watermarks,
    with_watermark_rows,
)
from pyspark_datastream.runtime.tws_processor import KeyGroupProcessor, TwsCall, _InBandGroupState
from pyspark_datastream.state_store.serializers import GenericKeySerializer

SCHEMA = pa.schema([("_ts", pa.int64()), ("_kg", pa.int32()), ("_k", pa.binary()),
                    ("_v", pa.binary()), ("_seq", pa.int64())])


def _pass(assigner, records):
    """A keying pass that runs ``assigner`` over ``records`` ((value, ts) pairs), one row each."""

    def fn(batches):
        for _ in batches:
            stamps = [assigner.extract_timestamp(v, t) for v, t in records]
            yield pa.RecordBatch.from_arrays(
                [pa.array(stamps, pa.int64()), pa.array([3] * len(stamps), pa.int32()),
                 pa.array([b"k"] * len(stamps)), pa.array([b"v"] * len(stamps)),
                 pa.array(range(len(stamps)), pa.int64())], schema=SCHEMA)

    return fn


@pytest.mark.parametrize("pickled", [False, True])
def test_the_pass_hands_every_key_group_the_greatest_timestamp_less_the_bound(pickled):
    assigner = ObservedAssigner("7", as_timestamp_assigner(lambda v, t: v * 10))
    fn = with_watermark_rows(_pass(assigner, [(5, None), (9, None), (2, None)]), "7", 15, 4,
                             SCHEMA)
    if pickled:  # as Spark ships it: the function must read the executor module's notes
        fn, assigner = cloudpickle.loads(cloudpickle.dumps((fn, assigner)))
        fn.function = _pass(assigner, [(5, None), (9, None), (2, None)])
    batches = list(fn(iter([None])))
    assert batches[0].column("_ts").to_pylist() == [50, 90, 20]
    marks = batches[1].to_pydict()
    assert marks == {"_ts": [75] * 4, "_kg": [0, 1, 2, 3], "_k": [WATERMARK_KEY] * 4,
                     "_v": [b""] * 4, "_seq": [WATERMARK_SEQ] * 4}
    # the next task of the worker starts afresh: no records, no watermark rows
    fn.function = _pass(assigner, [])
    assert [b.num_rows for b in fn(iter([None]))] == [0]


def test_without_an_assigner_records_keep_and_report_their_timestamps():
    assigner = ObservedAssigner("8")
    assert assigner.extract_timestamp("x", 41) == 41
    assert assigner.extract_timestamp("y", None) is None  # no timestamp: nothing noted
    fn = with_watermark_rows(_pass(assigner, [("a", 100), ("b", 130)]), "8", 0, 2, SCHEMA)
    assert [b.to_pydict()["_ts"] for b in fn(iter([None]))] == [[100, 130], [130, 130]]


def test_the_inner_assigner_is_opened_and_closed():
    seen = []

    class Stamp:
        def open(self, ctx):
            seen.append(("open", ctx))

        def close(self):
            seen.append(("close",))

        def extract_timestamp(self, value, ts):
            return value

    assigner = ObservedAssigner("9", Stamp())
    assigner.open("ctx")
    assigner.close()
    assert seen == [("open", "ctx"), ("close",)]


def test_a_key_group_frame_loses_its_watermark_rows():
    frame = pd.DataFrame({"_ts": [5, 700, 3, 650], "_k": [b"a", WATERMARK_KEY, b"b", WATERMARK_KEY],
                          "_seq": [0, WATERMARK_SEQ, 1, WATERMARK_SEQ]})
    records, wm = split_watermarks(frame)
    assert records["_ts"].tolist() == [5, 3] and wm == 700
    records, wm = split_watermarks(frame.iloc[[0, 2]])
    assert len(records) == 2 and wm is None


class _Value:
    def __init__(self, row=None):
        self.row = row

    def exists(self):
        return self.row is not None

    def get(self):
        return self.row

    def update(self, row):
        self.row = row

    def clear(self):
        self.row = None


class _Handle:
    def __init__(self):
        self.timers = []

    def registerTimer(self, t):  # noqa: N802 - Spark's name
        self.timers.append(t)

    def deleteTimer(self, t):  # noqa: N802
        self.timers.remove(t)


class _Timers:
    def __init__(self, spark_watermark):
        self.wm = spark_watermark

    def getCurrentWatermarkInMs(self):  # noqa: N802
        return self.wm

    def getCurrentProcessingTimeInMs(self):  # noqa: N802
        return 0


def test_a_key_group_keeps_the_greatest_watermark_and_waits_for_the_end_of_input():
    value, handle = _Value(), _Handle()
    state = _InBandGroupState(value, handle, _Timers(123_456), None, 500, True)
    assert state.getCurrentWatermarkMs() == 500  # Spark's own watermark is the stage above's
    state.update((b"s",))
    state.setTimeoutTimestamp(900)  # its next timer: Spark calls it back at the end of input
    state.flush()
    assert value.row == (b"s", END_THRESHOLD, 500) and handle.timers == [END_THRESHOLD]

    state = _InBandGroupState(value, handle, _Timers(0), None, 300, True)  # an older row: kept
    assert state.lastWatermarkMs() == 500 and state.getCurrentWatermarkMs() == 500
    state = _InBandGroupState(value, handle, _Timers(0), None, None, True)
    assert state.getCurrentWatermarkMs() == 500

    end = END_THRESHOLD + 7  # Spark's watermark says the input ended
    state = _InBandGroupState(value, handle, _Timers(end), END_THRESHOLD, 600, True)
    assert state.getCurrentWatermarkMs() == end
    state.remove()
    state.flush()  # no state left: the watermark alone, for records still to come
    assert value.row == (None, None, end) and handle.timers == [END_THRESHOLD]


def test_a_key_group_without_state_keeps_its_watermark():
    value, handle = _Value(), _Handle()
    state = _InBandGroupState(value, handle, _Timers(0), None, None, True)
    state.flush()
    assert value.row is None  # no watermark yet: nothing written
    _InBandGroupState(value, handle, _Timers(0), None, 250, True).flush()
    assert value.row == (None, None, 250)
    state = _InBandGroupState(value, handle, _Timers(0), None, 100, True)
    assert not state.exists and state.lastWatermarkMs() == 250


def test_on_an_unbounded_input_a_key_group_holds_no_spark_timer():
    """Spark's watermark, which may not exist, is not read, and nothing waits for an end."""
    value, handle = _Value(), _Handle()
    state = _InBandGroupState(value, handle, _Timers(END_THRESHOLD + 1), None, 80, False)
    assert state.getCurrentWatermarkMs() == 80
    state.update((b"s",))
    state.setTimeoutTimestamp(200)
    state.flush()
    assert value.row == (b"s", None, 80) and handle.timers == []


def test_a_task_whose_records_were_all_dropped_after_the_assigner_moves_the_watermark():
    assigner = ObservedAssigner("10")

    def dropping(batches):  # a filter after the assigner keeps nothing: no batch out
        for _ in batches:
            assigner.extract_timestamp("x", 70)
        return iter(())

    out = list(with_watermark_rows(dropping, "10", 5, 3, SCHEMA)(iter([None])))
    assert [b.schema for b in out] == [SCHEMA]
    assert out[0].to_pydict()["_ts"] == [65, 65, 65]


TAGGED = pa.schema([("_tag", pa.string()), ("_ts", pa.int64()), ("_v", pa.binary())])


def _keying(seen):
    """A keying pass that notes the rows it reads and keys each to group 0."""

    def fn(batches):
        for b in batches:
            seen.append(b.to_pydict())
            n = b.num_rows
            yield pa.RecordBatch.from_arrays(
                [b.column("_ts"), pa.array([0] * n, pa.int32()), pa.array([b"k"] * n),
                 b.column("_v"), pa.array(range(n), pa.int64())], schema=SCHEMA)

    return fn


@pytest.mark.parametrize("keep_tags", [False, True])
def test_the_pass_below_takes_the_forwarded_watermark_rows_out_and_hands_on_the_greatest(
        keep_tags):
    rows = {"_tag": [None, WATERMARK_TAG, "side", WATERMARK_TAG, None],
            "_ts": [5, 90, 7, 120, 6], "_v": [b"a", b"", b"s", b"", b"b"]}
    seen = []
    fn = with_watermark_rows(forwarded_marks(_keying(seen), "11", keep_tags), "11", 0, 3,
                             SCHEMA)
    fn = cloudpickle.loads(cloudpickle.dumps(fn))  # as Spark ships it
    seen = fn.function.function.__closure__[0].cell_contents  # the unpickled pass's list
    out = list(fn(iter([pa.RecordBatch.from_pydict(rows, schema=TAGGED)])))
    if keep_tags:  # the carrying pass reads the other tagged rows (runtime/carry.py)
        assert seen == [{"_tag": [None, "side", None], "_ts": [5, 7, 6],
                         "_v": [b"a", b"s", b"b"]}]
    else:
        assert seen == [{"_ts": [5, 6], "_v": [b"a", b"b"]}]
    assert out[-1].to_pydict()["_ts"] == [120] * 3  # the greatest, to every key group
    assert out[-1].to_pydict()["_seq"] == [WATERMARK_SEQ] * 3
    # a batch without any: nothing noted, no watermark rows
    out = list(fn(iter([pa.RecordBatch.from_pydict(
        {"_tag": [None], "_ts": [1], "_v": [b"c"]}, schema=TAGGED)])))
    assert len(out) == 1 and out[0].num_rows == 1


def test_an_in_band_stage_that_forwards_emits_its_watermark_after_its_records():
    """A key group's call over its records and a watermark row of the pass above: the
    stage's outputs, then one row of the watermark it moved to, under WATERMARK_TAG."""
    spec = GroupSpec("probe", "process", None, GenericKeySerializer.INSTANCE,
                     {"max_parallelism": 8}, True, False, frozenset({WATERMARK_TAG}),
                     direct_output=True, ordered=True)
    processor = KeyGroupProcessor(spec, TwsCall("None", ("_ts", "_v", "_seq"), "kg_probe",
                                                inband=True, forwards=True))
    processor.init(type("H", (), {"getValueState": lambda self, n, s: _Value()})())
    calls = []

    def call(key, frames, state):  # the stage: records what it meets, emits nothing
        calls.append(([f["_ts"].tolist() for f in frames], state.getCurrentWatermarkMs()))
        return iter(())

    processor._fn = call
    frame = pd.DataFrame({"_ts": [5, 300, 7], "_v": [b"a", b"", b"b"],
                          "_seq": [0, WATERMARK_SEQ, 1]})
    out = list(processor.handleInputRows(3, iter([frame]), _Timers(0)))
    assert calls == [([[5, 7]], 300)]
    assert len(out) == 1  # its columns as arrays (group_frames.array_frame)
    assert out[0]["_tag"].tolist() == [[WATERMARK_TAG]] and out[0]["_ts"].tolist() == [[300]]
    # records alone (no watermark row from the pass above): nothing forwarded
    frame = pd.DataFrame({"_ts": [9], "_v": [b"c"], "_seq": [2]})
    assert list(processor.handleInputRows(3, iter([frame]), _Timers(0))) == []
