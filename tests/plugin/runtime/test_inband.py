"""In-band watermarks: the keying pass's watermark rows and a key group's watermark from
them (runtime/inband.py, runtime/tws_processor.py), without Spark."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyspark.cloudpickle as cloudpickle
import pytest
from pyspark_datastream.operators.functions import as_timestamp_assigner
from pyspark_datastream.runtime.group_state import END_THRESHOLD
from pyspark_datastream.runtime.inband import (
    WATERMARK_KEY,
    WATERMARK_SEQ,
    ObservedAssigner,
    split_watermarks,
    with_watermark_rows,
)
from pyspark_datastream.runtime.tws_processor import _InBandGroupState

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
