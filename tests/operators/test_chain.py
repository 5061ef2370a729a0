"""StatelessChain, CoStatelessOperator and KeyExtractor."""

from __future__ import annotations

import threading
import zlib

import pytest
from pyspark import cloudpickle
from pyspark_datastream import (
    GraphBuildError,
    JobExecutionError,
    ProcessingTimeError,
    SerializationError,
    StateError,
)
from pyspark_datastream.operators.base import OperatorConfig, Output
from pyspark_datastream.operators.chain import (
    ChainStage,
    CoStatelessOperator,
    KeyExtractor,
    StatelessChain,
)
from pyspark_datastream.operators.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    TimestampAssigner,
)
from pyspark_datastream.state_store.descriptors import ValueStateDescriptor
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.types import Types

LATE = OutputTag("late")
ODD = OutputTag("odd")


class Split(ProcessFunction):
    """Even values go on; odd ones to a side output (both styles of side output)."""

    def process_element(self, value, ctx):
        if value % 2:
            if value > 4:
                yield ODD, value
            else:
                ctx.output(ODD, value)
        else:
            yield value * 10


class Positive(FilterFunction):
    def filter(self, value):
        return value > 0


class ByValue(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value * 1000 + (record_timestamp or 0)


def opened(chain: StatelessChain, mode: str = "STREAMING", **config) -> StatelessChain:
    chain.open(OperatorConfig.for_mode(mode, operator_name="chain-under-test", **config))
    return chain


def test_every_stage_kind_in_one_chain() -> None:
    chain = opened(
        StatelessChain(
            [
                ("map", lambda v: v - 1),
                Positive(),
                ("flat_map", lambda v: [v, v + 1]),
                ("timestamps", ByValue()),
                Split(),
                ("map", lambda v: v + 1, "plus-one"),
            ]
        )
    )
    # 3 -> 2 -> [2, 3]; 2 -> ts 2000+5 -> main 20 -> 21; 3 -> side odd (ts 3005)
    assert chain.process(3, 5) == [Output(None, 21, 2005), Output("odd", 3, 3005)]
    # 0 -> -1 filtered out
    assert chain.process(0, 5) == []
    # 6 -> 5 -> [5, 6]; 5 -> yielded side output; 6 -> 60 -> 61
    assert chain.process(6, None) == [Output("odd", 5, 5000), Output(None, 61, 6000)]


def test_empty_chain_is_identity_and_batch_keeps_order() -> None:
    chain = opened(StatelessChain([]))
    assert chain.process("x", 7) == [Output(None, "x", 7)]
    chain2 = opened(StatelessChain([("filter", lambda v: v != 2), ("map", str)]))
    assert chain2.process_batch([1, 2, 3], [10, 20, 30]) == [
        Output(None, "1", 10),
        Output(None, "3", 30),
    ]
    assert chain2.process_batch([4]) == [Output(None, "4", None)]


def test_timestamps_stage_without_assigner_keeps_timestamps() -> None:
    chain = opened(StatelessChain([("timestamps", None), ("map", str)]))
    assert chain.process(5, 42) == [Output(None, "5", 42)]
    chain.close()


def test_flat_map_may_return_none_or_a_generator() -> None:
    def gen(v):
        yield from range(v)

    chain = opened(StatelessChain([("flat_map", lambda v: None), ("map", str)]))
    assert chain.process(3) == []
    chain = opened(StatelessChain([("flat_map", gen)]))
    assert [o.value for o in chain.process(3)] == [0, 1, 2]


def test_functions_are_opened_and_closed_with_runtime_context() -> None:
    events = []

    class Tracked(MapFunction):
        def open(self, runtime_context):
            events.append(
                (
                    "open",
                    runtime_context.get_task_name(),
                    runtime_context.get_index_of_this_subtask(),
                    runtime_context.get_number_of_parallel_subtasks(),
                    runtime_context.get_job_parameter("p", "default"),
                )
            )

        def close(self):
            events.append(("close",))

        def map(self, value):
            return value

    chain = StatelessChain([Tracked()])
    chain.open(
        OperatorConfig.for_mode(
            "BATCH", operator_name="m", subtask_index=1, parallelism=3, job_parameters={"p": 7}
        )
    )
    chain.close()
    assert events == [("open", "m", 1, 3, 7), ("close",)]


def test_keyed_state_in_a_non_keyed_chain_is_refused() -> None:
    class Stateful(MapFunction):
        def open(self, runtime_context):
            runtime_context.get_state(ValueStateDescriptor("s", Types.LONG()))

        def map(self, value):
            return value

    with pytest.raises(StateError, match="'chain-under-test': get_state\\(\\) is keyed state, which needs key_by"):
        opened(StatelessChain([Stateful()]))


def test_non_keyed_process_function_has_no_timers_but_has_clocks() -> None:
    seen = []

    class Clocks(ProcessFunction):
        def process_element(self, value, ctx):
            seen.append((ctx.timestamp(), ctx.timer_service().current_watermark()))
            if value == "timer":
                ctx.timer_service().register_event_time_timer(5)
            if value == "now":
                yield ctx.timer_service().current_processing_time()

    chain = opened(StatelessChain([Clocks()]))
    chain.advance_watermark(100)
    chain.advance_processing_time(1234)
    assert chain.process("x", 3) == []
    assert chain.process("now") == [Output(None, 1234, None)]
    assert seen[0] == (3, 100)
    with pytest.raises(StateError, match="only supported on keyed streams"):
        chain.process("timer")

    batch = opened(StatelessChain([Clocks()]), "BATCH")
    with pytest.raises(
        ProcessingTimeError,
        match="'chain-under-test': current_processing_time\\(\\) is not allowed because "
        "pipeline.processing-time.allow is FAIL",
    ):
        batch.process("now")


def test_user_errors_are_wrapped_naming_operator_and_stage() -> None:
    chain = opened(StatelessChain([("map", lambda v: 1 // v, "divide")]))
    with pytest.raises(
        JobExecutionError,
        match="operator 'chain-under-test': map stage 'divide' failed on 0: ZeroDivisionError",
    ) as info:
        chain.process(0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    # the chain stays usable after a failure
    assert chain.process(1) == [Output(None, 1, None)]


def test_bad_timestamp_from_assigner_is_reported() -> None:
    chain = opened(StatelessChain([("timestamps", lambda v, ts: "soon")]))
    with pytest.raises(JobExecutionError, match="extract_timestamp must return an int"):
        chain.process(1)


def test_invalid_stage_specs() -> None:
    with pytest.raises(GraphBuildError, match="stage 0 has unknown kind 'reduce'"):
        StatelessChain([("reduce", lambda a, b: a)])
    with pytest.raises(GraphBuildError, match="stage 1 \\('process'\\) needs a ProcessFunction"):
        StatelessChain([("map", str), ("process", lambda v, ctx: v)])
    with pytest.raises(GraphBuildError, match="stage 0 must be a ChainStage"):
        StatelessChain([42])
    with pytest.raises(GraphBuildError, match="argument 'stage 0' must be a MapFunction"):
        StatelessChain([("map", 42)])


def test_process_before_open_is_refused() -> None:
    with pytest.raises(JobExecutionError, match="call open\\(\\) before processing"):
        StatelessChain([("map", str)]).process(1)


def test_chain_pickles_before_and_after_open() -> None:
    offset = 3
    chain = StatelessChain([ChainStage("map", lambda v: v + offset, "add"), Split()])
    opened(chain)
    clone = cloudpickle.loads(cloudpickle.dumps(chain))
    opened(clone)
    assert clone.process(1) == [Output(None, 40, None)]
    assert clone.stages[0].name == "add"


class Tagger(CoMapFunction):
    def map1(self, value):
        return ("left", value)

    def map2(self, value):
        return ("right", value)


class Splitter(CoFlatMapFunction):
    def flat_map1(self, value):
        return [value, value]

    def flat_map2(self, value):
        yield LATE, value


class CoProc(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield (value, ctx.timestamp())

    def process_element2(self, value, ctx):
        ctx.output(LATE, value)


def test_co_stateless_operator_all_function_kinds() -> None:
    op = CoStatelessOperator(Tagger())
    op.open()
    assert op.process(1, 5, 0) == [Output(None, ("left", 1), 5)]
    assert op.process(2, 6, 1) == [Output(None, ("right", 2), 6)]
    op = CoStatelessOperator(Splitter())
    op.open()
    assert op.process(1, None, 0) == [Output(None, 1, None), Output(None, 1, None)]
    assert op.process(2, 9, 1) == [Output("late", 2, 9)]
    op = CoStatelessOperator(CoProc())
    op.open()
    assert op.process("a", 3, 0) == [Output(None, ("a", 3), 3)]
    assert op.process("b", 4, 1) == [Output("late", "b", 4)]
    with pytest.raises(JobExecutionError, match="input_index must be 0 or 1"):
        op.process("c", 4, 2)
    with pytest.raises(GraphBuildError, match="must be a CoMapFunction"):
        CoStatelessOperator(lambda v: v)


def test_key_extractor_key_group_and_bytes() -> None:
    ser = GenericKeySerializer.INSTANCE
    extractor = KeyExtractor(lambda v: v[0], ser, 128, "key_by(user)")
    group, kb = extractor(("alice", 1))
    assert kb == ser.serialize("alice")
    assert group == zlib.crc32(kb) % 128
    assert extractor.extract_with_key(("bob", 2))[2] == "bob"
    groups, keys = extractor.extract_batch([("a", 1), ("b", 2)])
    assert keys == [ser.serialize("a"), ser.serialize("b")]
    assert groups == [zlib.crc32(k) % 128 for k in keys]
    clone = cloudpickle.loads(cloudpickle.dumps(extractor))
    assert clone(("alice", 9)) == (group, kb)


def test_key_extractor_errors_name_the_operator() -> None:
    extractor = KeyExtractor(lambda v: v["k"], GenericKeySerializer.INSTANCE, 16, "key_by(user)")
    with pytest.raises(SerializationError,
                       match="operator 'key_by\\(user\\)': cannot serialize key <unlocked .* of type lock"):
        extractor({"k": threading.Lock()})
    with pytest.raises(JobExecutionError, match="operator 'key_by\\(user\\)': key selector failed"):
        extractor(("no", "dict"))


def test_key_extractor_refuses_non_deterministic_serializer() -> None:
    with pytest.raises(GraphBuildError, match="is not deterministic"):
        KeyExtractor(lambda v: v, Types.PICKLED_BYTE_ARRAY().create_serializer(), 16, "k")
