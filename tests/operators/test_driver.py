"""Drivers: sorted (FLIP-140) vs hash execution give the same results; on_key_end hook."""

from __future__ import annotations

import tempfile
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark_datastream import GraphBuildError, JobExecutionError, SerializationError
from pyspark_datastream.operators import aggregations as agg
from pyspark_datastream.operators.base import MAX_WATERMARK, OperatorConfig, Output
from pyspark_datastream.operators.co import CoStage
from pyspark_datastream.operators.driver import run_hash_keyed, run_sorted_keyed
from pyspark_datastream.operators.functions import (
    CoMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
)
from pyspark_datastream.operators.keyed_process import KeyedCoProcessOperator, KeyedProcessOperator
from pyspark_datastream.operators.keyed_reduce import ReduceOperator
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.types import Types

SER = GenericKeySerializer.INSTANCE
EVENTS = OutputTag("events")


class Totals(KeyedProcessFunction):
    """Order-insensitive in BATCH: sums per key; a timer per element reports the totals."""

    def open(self, rc):
        self.total = rc.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.items = rc.get_list_state(ListStateDescriptor("items", Types.LONG()))
        self.counts = rc.get_map_state(MapStateDescriptor("counts", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        self.total.update((self.total.value() or 0) + value)
        self.items.add(value)
        self.counts.put(value, (self.counts.get(value) or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        yield EVENTS, (ctx.get_current_key(), value)

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            timestamp,
            self.total.value(),
            sorted(self.items.get()),
            sorted(self.counts.items()),
            ctx.timer_service().current_watermark(),
        )


class Pair(KeyedCoProcessFunction):
    def open(self, rc):
        self.left = rc.get_list_state(ListStateDescriptor("left", Types.LONG()))
        self.right = rc.get_list_state(ListStateDescriptor("right", Types.LONG()))

    def process_element1(self, value, ctx):
        self.left.add(value)
        ctx.timer_service().register_event_time_timer(MAX_WATERMARK - 1)

    def process_element2(self, value, ctx):
        self.right.add(value)
        ctx.timer_service().register_event_time_timer(MAX_WATERMARK - 1)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), sorted(self.left.get()), sorted(self.right.get()))


def rows_of(records):
    """records: (key, ts, value, input) -> driver rows with key bytes."""
    return [(SER.serialize(k), ts, v, i) for k, ts, v, i in records]


def sort_rows(rows):
    return sorted(rows, key=lambda r: (r[0], r[1], r[3]))


def run(make_operator, records, path, mode="BATCH"):
    config = OperatorConfig.for_mode(mode, operator_name="op")
    with tempfile.TemporaryDirectory() as directory:
        if path == "sorted-single":
            backend = SingleKeyStateBackend(SER, 128)
        elif path == "rocksdb":
            backend = RocksDBKeyedStateBackend(SER, 128, directory=directory)
        else:
            backend = HeapKeyedStateBackend(SER, 128)
        rows = rows_of(records)
        try:
            if path.startswith("sorted"):
                out = list(run_sorted_keyed(make_operator(), backend, sort_rows(rows), SER, config))
            else:
                out = list(run_hash_keyed(make_operator(), backend, rows, SER, config))
        finally:
            backend.close()
    return out


def canonical(outputs):
    return Counter((o.tag, repr(o.value), o.timestamp) for o in outputs)


records_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", 1, 2, ("t", 1)]),
        st.integers(0, 50),
        st.integers(-5, 5),
        st.integers(0, 1),
    ),
    max_size=25,
)


@settings(max_examples=30, deadline=None)
@given(records=records_strategy)
def test_sorted_and_hash_paths_agree(records) -> None:
    process_records = [(k, ts, v, 0) for k, ts, v, _ in records]
    makers = {
        "process": (lambda: KeyedProcessOperator(Totals()), process_records),
        "reduce": (lambda: ReduceOperator(lambda a, b: a + b), process_records),
        "max_by": (lambda: ReduceOperator(agg.max_by(1)), [(k, ts, (k, v), 0) for k, ts, v, _ in records]),
        "co": (lambda: KeyedCoProcessOperator(Pair()), records),
    }
    for name, (make, recs) in makers.items():
        expected = canonical(run(make, recs, "sorted-single"))
        assert canonical(run(make, recs, "sorted-heap")) == expected, name
        assert canonical(run(make, recs, "hash")) == expected, name
    # one run through rocksdb (slower to open): the process function
    rocks = run(makers["process"][0], process_records, "rocksdb")
    assert canonical(rocks) == canonical(run(makers["process"][0], process_records, "sorted-single"))


def test_batch_results_content() -> None:
    records = [("a", 5, 1, 0), ("b", 1, 10, 0), ("a", 2, 3, 0)]
    out = run(lambda: KeyedProcessOperator(Totals()), records, "sorted-single")
    main = [o for o in out if o.tag is None]
    assert [o.value[:3] for o in main] == [("a", 12, 4), ("a", 15, 4), ("b", 11, 10)]
    assert all(o.value[5] == MAX_WATERMARK for o in main)
    assert sorted(o.value for o in out if o.tag == "events") == [("a", 1), ("a", 3), ("b", 10)]
    finals = run(lambda: ReduceOperator(agg.sum()), [("a", 1, 2, 0), ("a", 2, 3, 0), ("b", 0, 7, 0)], "sorted-single")
    assert finals == [Output(None, 5, MAX_WATERMARK), Output(None, 7, MAX_WATERMARK)]


def test_on_key_end_sees_each_complete_key_before_it_is_dropped() -> None:
    seen = []

    def on_key_end(backend):
        entries = list(backend.snapshot())
        seen.append((backend.get_current_key(), sorted({e.state_name for e in entries})))

    backend = SingleKeyStateBackend(SER, 128)
    config = OperatorConfig.for_mode("BATCH", operator_name="reduce")
    rows = sort_rows(rows_of([("x", 1, 1, 0), ("y", 1, 2, 0), ("x", 2, 3, 0)]))
    out = list(run_sorted_keyed(ReduceOperator(agg.sum()), backend, rows, SER, config, on_key_end))
    assert seen == [("x", ["_reduce"]), ("y", ["_reduce"])]  # timers already fired: no _timer entry
    assert [o.value for o in out] == [4, 2]


def test_streaming_micro_batches_through_the_hash_driver() -> None:
    class Alarm(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            yield (ctx.get_current_key(), timestamp)

    backend = HeapKeyedStateBackend(SER, 128)
    config = OperatorConfig.for_mode("STREAMING", operator_name="alarm")
    op = KeyedProcessOperator(Alarm())
    first = list(run_hash_keyed(op, backend, rows_of([("a", None, 10, 0), ("b", None, 30, 0)]), SER, config,
                                end_of_input=False, watermark=20))
    assert [o.value for o in first] == [("a", 10)]
    assert op.is_open  # not closed between micro-batches
    second = list(run_hash_keyed(op, backend, rows_of([("c", None, 25, 0)]), SER, config,
                                 end_of_input=True, watermark=26))
    assert [o.value for o in second] == [("c", 25), ("b", 30)]
    assert not op.is_open


def test_driver_errors_name_the_operator() -> None:
    config = OperatorConfig.for_mode("BATCH", operator_name="broken")
    backend = HeapKeyedStateBackend(SER, 128)
    with pytest.raises(SerializationError, match="operator 'broken': cannot deserialize key bytes"):
        list(run_sorted_keyed(ReduceOperator(agg.sum()), backend, [(b"\xff\xfe", None, 1, 0)], SER, config))
    with pytest.raises(JobExecutionError, match="operator 'broken': hash keyed run failed: ValueError"):
        list(run_hash_keyed(ReduceOperator(agg.sum()), backend, [(b"x", 1)], SER, config))


class Label(CoMapFunction):
    def map1(self, value):
        return ("first", value)

    def map2(self, value):
        return ("second", value)


def test_co_stage_for_the_plugin() -> None:
    stage = CoStage("co_map", Label())
    stage.open(OperatorConfig.for_mode("BATCH", operator_name="co"))
    assert stage.process(1, 5, 0) == [Output(None, ("first", 1), 5)]
    assert stage.process(2, None, 1) == [Output(None, ("second", 2), None)]
    stage.close()
    with pytest.raises(GraphBuildError, match="two-input stage 'co_flat_map' needs a CoFlatMapFunction"):
        CoStage("co_flat_map", Label())
    with pytest.raises(GraphBuildError, match="unknown two-input stage 'co_reduce'"):
        CoStage("co_reduce", Label())
