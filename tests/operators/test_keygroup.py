"""KeyGroupRuntime: one key group, one STREAMING micro-batch at a time, state only as bytes."""

from __future__ import annotations

import pytest
from pyspark_datastream import JobExecutionError, SavepointFormatError
from pyspark_datastream.operators.base import MIN_WATERMARK, OperatorConfig
from pyspark_datastream.operators.functions import KeyedProcessFunction
from pyspark_datastream.operators.keygroup import (
    KeyGroupRuntime,
    decode_state,
    encode_state,
)
from pyspark_datastream.state_store.descriptors import ValueStateDescriptor
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.types import Types

KS = GenericKeySerializer.INSTANCE


def _cfg(**kw):
    kw.setdefault("operator_name", "kg-op")
    return OperatorConfig.for_mode("STREAMING", **kw)


def _rows(*items):
    """(key, ts, value) -> runtime rows with serialized keys."""
    return [(KS.serialize(k), ts, v, 0) for k, ts, v in items]


class CountThenFire(KeyedProcessFunction):
    """Counts per key; a timer at ts+10 emits (key, count, timer ts)."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        yield ("seen", ctx.get_current_key(), value, ctx.timer_service().current_watermark())

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), self.count.value(), timestamp)


def _values(result):
    return [o.value for o in result.outputs]


def test_reduce_keeps_running_value_across_micro_batches_through_bytes_only():
    rt = KeyGroupRuntime("reduce", lambda a, b: a + b, KS, _cfg())
    r1 = rt.run(None, _rows(("a", 1, 1), ("b", 2, 10), ("a", 3, 2)))
    assert _values(r1) == [1, 10, 3]
    assert isinstance(r1.state, bytes) and r1.elements == 3
    r2 = rt.run(r1.state, _rows(("a", 4, 5), ("b", 5, 1)))
    assert _values(r2) == [8, 11]
    assert [o.timestamp for o in r2.outputs] == [4, 5]
    assert r2.next_event_timer is None


def test_timers_fire_before_the_batch_elements_and_report_next_timer():
    rt = KeyGroupRuntime("process", CountThenFire(), KS, _cfg())
    r1 = rt.run(None, _rows(("a", 100, "x"), ("b", 105, "y")))
    assert _values(r1) == [("seen", "a", "x", MIN_WATERMARK), ("seen", "b", "y", MIN_WATERMARK)]
    assert r1.next_event_timer == 110
    # watermark 111: a's timer (110) fires, then the new element is processed
    r2 = rt.run(r1.state, _rows(("b", 106, "z")), watermark=111)
    assert _values(r2) == [("timer", "a", 1, 110), ("seen", "b", "z", 111)]
    assert r2.next_event_timer == 115
    # no data for the key group: only the due timers fire
    r3 = rt.run(r2.state, [], watermark=200)
    assert _values(r3) == [("timer", "b", 2, 115), ("timer", "b", 2, 116)]
    assert r3.next_event_timer is None


def test_late_element_is_processed_and_its_past_timer_fires_on_next_watermark():
    rt = KeyGroupRuntime("process", CountThenFire(), KS, _cfg())
    r1 = rt.run(None, _rows(("a", 500, "on-time")), watermark=400)
    r2 = rt.run(r1.state, _rows(("c", 50, "late")), watermark=450)
    assert _values(r2) == [("seen", "c", "late", 450)]
    assert r2.next_event_timer == 60  # in the past: the plugin clamps the timeout to the watermark
    r3 = rt.run(r2.state, [], watermark=451)
    assert _values(r3) == [("timer", "c", 1, 60)]


def test_end_of_input_fires_every_timer():
    rt = KeyGroupRuntime("process", CountThenFire(), KS, _cfg())
    r1 = rt.run(None, _rows(("a", 1, "x"), ("b", 2_000_000, "y")))
    r2 = rt.run(r1.state, [], watermark=5, end_of_input=True)
    assert _values(r2) == [("timer", "a", 1, 11), ("timer", "b", 1, 2_000_010)]
    assert r2.next_event_timer is None
    assert r2.state is not None and r2.state_entries == 2  # two counts remain, no timers


def test_state_bytes_round_trip_and_foreign_bytes_are_refused():
    rt = KeyGroupRuntime("reduce", lambda a, b: a + b, KS, _cfg())
    r = rt.run(None, _rows(("k", 1, 7)))
    metas, entries = decode_state(r.state)
    assert [m.name for m in metas if not m.name.startswith("_timer")] == ["_reduce"]
    assert decode_state(encode_state(metas, entries)) == (metas, entries)
    with pytest.raises(SavepointFormatError, match="key group state"):
        decode_state(b"not a state")
    import pickle

    with pytest.raises(SavepointFormatError, match="has format 'other'"):
        decode_state(pickle.dumps(("other", [], [])))


def test_user_error_names_the_operator_and_batch_config_is_refused():
    def boom(a, b):
        raise ValueError("bad reduce")

    rt = KeyGroupRuntime("reduce", boom, KS, _cfg(operator_name="my-reduce"))
    r = rt.run(None, _rows(("k", 1, 1)))
    with pytest.raises(JobExecutionError, match="my-reduce"):
        rt.run(r.state, _rows(("k", 2, 2)))
    with pytest.raises(JobExecutionError, match="BATCH OperatorConfig"):
        KeyGroupRuntime("reduce", boom, KS, OperatorConfig.for_mode("BATCH"))
    with pytest.raises(JobExecutionError, match="unknown keyed operator kind 'sideways'"):
        KeyGroupRuntime("sideways", boom, KS, _cfg())


def test_timers_kept_as_columns_decode_to_canonical_entries_and_v1_bytes_still_restore():
    import pickle
    import random

    from pyspark_datastream.state_store.entries import decode_timestamp, sort_canonical
    from pyspark_datastream.state_store.keygroups import assign_key_group

    rnd = random.Random(5)
    rt = KeyGroupRuntime("process", CountThenFire(), KS, _cfg(max_parallelism=32))
    items = [(rnd.choice("abcdefgh"), rnd.randrange(1_000), i) for i in range(400)]
    r1 = rt.run(None, _rows(*items))
    metas, entries = decode_state(r1.state)
    assert entries == sort_canonical(entries)
    timers = [e for e in entries if e.state_name == "_timer/event"]
    # one timer per distinct (key, ts + 10), each in its key's key group
    assert sorted((KS.deserialize(e.key), decode_timestamp(e.user_key)) for e in timers) == \
        sorted({(k, ts + 10) for k, ts, _ in items})
    assert all(e.key_group == assign_key_group(e.key, 32) for e in timers)
    assert r1.state_entries == len(entries)
    # the same state as version-1 bytes (timers as entries) gives the same next batch
    v1 = pickle.dumps(("pyspark-datastream/keygroup-state/v1", [m.to_dict() for m in metas],
                       [tuple(e) for e in entries]))
    more = _rows(*[(rnd.choice("abcdefgh"), rnd.randrange(400, 1_400), i) for i in range(50)])
    from_v2 = rt.run(r1.state, more, watermark=700)
    from_v1 = rt.run(v1, more, watermark=700)
    assert _values(from_v2) == _values(from_v1) and len(_values(from_v2)) > 50
    assert decode_state(from_v2.state) == decode_state(from_v1.state)


class Lifecycle(KeyedProcessFunction):
    """Records its open/close calls and counts elements in an instance attribute."""

    def __init__(self):
        self.log = []
        self.seen = 0

    def open(self, runtime_context):
        self.log.append(("open", runtime_context.get_index_of_this_subtask(),
                         runtime_context.get_number_of_parallel_subtasks()))
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def close(self):
        self.log.append(("close",))

    def process_element(self, value, ctx):
        self.seen += 1
        self.count.update((self.count.value() or 0) + 1)
        yield ctx.get_current_key(), self.count.value(), self.seen


def test_one_function_instance_per_subtask_opened_once_across_key_groups_and_batches():
    """Flink: one instance per parallel instance, open() once; its states (taken in open())
    follow the key group of each call; close() when the run ends."""
    template = Lifecycle()
    rt = KeyGroupRuntime("process", template, KS, _cfg(parallelism=2, max_parallelism=4))
    states = {}
    for batch in range(3):
        for kg, key in ((0, "a"), (1, "b"), (2, "c"), (3, "d")):
            result = rt.run(states.get(kg), _rows((key, batch, batch)), key_group=kg)
            states[kg] = result.state
            assert _values(result)[0][:2] == (key, batch + 1)
    assert template.log == [] and template.seen == 0  # the shipped function is a template
    assert sorted(rt.instances) == [0, 1]
    subtask0, subtask1 = rt.instances[0].function, rt.instances[1].function
    assert subtask0.log == [("open", 0, 2)] and subtask1.log == [("open", 1, 2)]
    assert subtask0.seen == 6 and subtask1.seen == 6  # two key groups, three batches each
    rt.close_instances()
    assert subtask0.log[-1] == ("close",) and subtask1.log[-1] == ("close",)


def test_a_later_run_closes_the_earlier_runs_instances():
    from pyspark_datastream.operators.instances import end_run, run_instances

    first = run_instances("job#1/q", "run-1")
    rt = KeyGroupRuntime("process", Lifecycle(), KS, _cfg(), instances=first)
    rt.run(None, _rows(("a", 1, 1)), key_group=5)
    instance = first[0].function
    assert run_instances("job#1/q", "run-1") is first  # the same run: kept
    second = run_instances("job#1/q", "run-2")
    assert second is not first and second == {}
    assert instance.log == [("open", 0, 1), ("close",)]
    end_run("job#1/q")


def test_elements_before_a_later_watermark_run_first_then_its_timers_fire():
    """``watermark_after``: elements that left the stage above before the watermark moved on
    are processed at the earlier watermark (a timer they register at or before the later one
    fires in the same call, after them, as in Flink), then the later watermark fires timers;
    the same elements processed at the later watermark leave such a timer for the next."""
    rt = KeyGroupRuntime("process", CountThenFire(), KS, _cfg())
    first = rt.run(None, _rows(("a", 100, "x")), 50)
    # element at 200 (timer 210) between watermarks 150 and 300: Flink fires the timer at
    # 110 (watermark 150), processes the element, then moves to 300 and fires 210
    moved = rt.run(first.state, _rows(("a", 200, "y")), 150, watermark_after=300)
    assert _values(moved) == [("timer", "a", 1, 110), ("seen", "a", "y", 150),
                              ("timer", "a", 2, 210)]
    assert moved.next_event_timer is None
    # at 300 from the start: timer 110 fires before the element, 210 waits for a later one
    late = rt.run(first.state, _rows(("a", 200, "y")), 300)
    assert _values(late) == [("timer", "a", 1, 110), ("seen", "a", "y", 300)]
    assert late.next_event_timer == 210
    # not later: nothing more fires
    same = rt.run(first.state, _rows(("a", 105, "z")), 150, watermark_after=150)
    assert _values(same) == [("timer", "a", 1, 110), ("seen", "a", "z", 150)]
    assert same.next_event_timer == 115
