"""PyFlink programs as their documentation writes them, ported by changing imports.

* Map, flat_map and filter functions after ``key_by`` read keyed state, as in Flink: a
  function object with its own ``open(runtime_context)`` runs as a keyed operator.
  Flink's "Working with State" ``CountWindowAverage`` over ``(1, 3), (1, 5), (1, 7),
  (1, 4), (1, 2)`` prints ``(1, 4)`` and ``(1, 5)``. Its state hands over from a BATCH
  savepoint to a STREAMING run like any keyed operator's.
* A custom ``WindowAssigner`` written to PyFlink's signatures (``get_default_trigger(env)``,
  ``TimeWindowSerializer``).
* ``ContinuousEventTimeTrigger`` (PyFlink's ``tumbling_time_window_with_continuous_trigger``
  example): a 10 ms window fires at every 5 ms of event time and at its end.
* Flink's scheduling hints (chaining, slot sharing, descriptions, buffer timeout) are
  accepted and change nothing; so is ``forward()``. The other partitioning calls raise a
  GraphBuildError saying what to do instead.

Expected values come from Flink's documentation and semantics or are counted here from the
input, independently of the job.
"""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark_datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    Configuration,
    ConfigurationError,
    ContinuousEventTimeTrigger,
    CoProcessFunction,
    EventTimeTrigger,
    FilterFunction,
    FlatMapFunction,
    GraphBuildError,
    KeySelector,
    MapFunction,
    MapStateDescriptor,
    ProcessWindowFunction,
    ReduceFunction,
    Row,
    RuntimeContext,
    RuntimeExecutionMode,
    StateError,
    StreamExecutionEnvironment,
    Time,
    TimestampAssigner,
    TimeWindow,
    TimeWindowSerializer,
    TumblingEventTimeWindows,
    Types,
    UserFunctionError,
    ValueStateDescriptor,
    WatermarkStrategy,
    WindowAssigner,
)
from pyspark_datastream.plan.graph import ChainNode, KeyedNode


def _conf(tmp_path) -> dict:
    return {"execution.checkpointing.dir": str(tmp_path / "ckpt")}


class CountWindowAverage(FlatMapFunction):
    """Flink's state documentation example: the average of every two values of a key."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.sum = runtime_context.get_state(
            ValueStateDescriptor("average", Types.PICKLED_BYTE_ARRAY()))

    def flat_map(self, value):
        current = self.sum.value() or (0, 0)
        current = (current[0] + 1, current[1] + value[1])
        self.sum.update(current)
        if current[0] >= 2:
            self.sum.clear()
            yield value[0], int(current[1] / current[0])


class RunningCount(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def map(self, value):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        return value[0], n


class EveryThird(FilterFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def filter(self, value) -> bool:
        n = (self.seen.value() or 0) + 1
        self.seen.update(n)
        return n % 3 == 0


class EvenCounts(FlatMapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def flat_map(self, value):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        if n % 2 == 0:
            yield value[0], n


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_flink_docs_count_window_average(env_factory, tmp_path, mode):
    env = env_factory(mode, _conf(tmp_path))
    ds = env.from_collection([(1, 3), (1, 5), (1, 7), (1, 4), (1, 2)])
    averages = ds.key_by(lambda row: row[0]).flat_map(CountWindowAverage())
    with averages.execute_and_collect() as it:
        assert sorted(it) == [(1, 4), (1, 5)]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_keyed_map_filter_flat_map_state_is_per_key(spark, env_factory, tmp_path, mode):
    rng = random.Random(17)
    records = [(f"k{rng.randrange(23)}", rng.randrange(1000)) for _ in range(3000)]
    df = spark.createDataFrame(records, "key string, value bigint").repartition(3)
    per_key = Counter(key for key, _ in records)
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    env = env_factory(mode, _conf(tmp_path))
    keyed = env.from_dataframe(df).key_by(lambda r: r[0])
    counts = keyed.map(RunningCount(), output_type=pair)
    kept = keyed.filter(EveryThird()).map(lambda r: r[0], output_type=Types.STRING())
    evens = keyed.flat_map(EvenCounts(), output_type=pair)
    with counts.execute_and_collect() as it:
        got_counts = sorted(it)
    with kept.execute_and_collect() as it:
        got_kept = Counter(it)
    with evens.execute_and_collect() as it:
        got_evens = sorted(it)
    assert got_counts == sorted((k, i) for k, n in per_key.items() for i in range(1, n + 1))
    assert got_kept == Counter({k: n // 3 for k, n in per_key.items() if n >= 3})
    assert got_evens == sorted((k, i) for k, n in per_key.items() for i in range(2, n + 1, 2))


def test_only_functions_with_open_become_keyed_operators(env_factory):
    """A lambda or a function without ``open`` cannot reach keyed state: it stays a
    stateless step (no shuffle, no sort)."""

    class Plain(MapFunction):
        def map(self, value):
            return value

    keyed = env_factory("BATCH").from_collection([(1, 2)]).key_by(lambda r: r[0])
    assert isinstance(keyed.map(lambda r: r)._node, ChainNode)
    assert isinstance(keyed.map(Plain())._node, ChainNode)
    assert isinstance(keyed.filter(lambda r: True)._node, ChainNode)
    assert isinstance(keyed.map(RunningCount())._node, KeyedNode)
    assert isinstance(keyed.filter(EveryThird())._node, KeyedNode)
    assert isinstance(keyed.flat_map(EvenCounts())._node, KeyedNode)


def test_a_failing_keyed_map_names_the_operator_the_method_and_the_record(env_factory):
    class Exploding(MapFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

        def map(self, value):
            if value[1] == 13:
                raise ValueError("unlucky value")
            return value

    env = env_factory("BATCH")
    ds = env.from_collection([("a", 1), ("a", 13)]).key_by(lambda r: r[0]).map(Exploding())
    with pytest.raises(UserFunctionError) as info:
        with ds.execute_and_collect() as it:
            list(it)
    message = str(info.value)
    assert "operator 'Exploding': map failed on ('a', 13)" in message
    assert 'raise ValueError("unlucky value")' in message  # the user's own frame


class FiveMsWindows(WindowAssigner):
    """A custom assigner written to PyFlink's signatures (``get_default_trigger(env)``)."""

    def assign_windows(self, element, timestamp, context):
        return [TimeWindow(timestamp - timestamp % 5, timestamp - timestamp % 5 + 5)]

    def get_default_trigger(self, env):
        assert env is not None  # PyFlink hands over the execution environment
        return EventTimeTrigger()

    def get_window_serializer(self):
        return TimeWindowSerializer()

    def is_event_time(self) -> bool:
        return True


class SumSecond(ReduceFunction):
    def reduce(self, a, b):
        return a[0], a[1] + b[1], a[2]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_custom_window_assigner_with_pyflink_signatures(env_factory, tmp_path, mode):
    events = [("hi", 1, 1), ("hi", 2, 3), ("hi", 4, 6), ("hi", 8, 9), ("hello", 16, 2)]
    expected = Counter()
    for key, value, ts in events:
        expected[(key, ts - ts % 5)] += value
    env = env_factory(mode, _conf(tmp_path))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        _ThirdField())
    sums = (env.from_collection(events)
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda e: e[0])
            .window(FiveMsWindows())
            .reduce(SumSecond()))
    with sums.execute_and_collect() as it:
        got = Counter({(k, ts - ts % 5): v for k, v, ts in it})
    assert got == expected


class _ThirdField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class CountWithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        yield key, window.start, window.end, len(list(elements))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_pyflink_tumbling_window_with_continuous_event_time_trigger(env_factory, tmp_path, mode):
    """A bounded input's watermark passes every timer at its end: window [0, 10) fires at 5
    and at its end 9, each time with all 7 of its elements; [10, 20) gets its first element
    at 15, so its next interval ends at 20, capped at its end 19: one firing."""
    data = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9),
            ("hi", 15)]
    env = env_factory(mode, _conf(tmp_path))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        _SecondField())
    counts = (env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
              .assign_timestamps_and_watermarks(strategy)
              .key_by(lambda x: x[0], key_type=Types.STRING())
              .window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
              .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(5)))
              .process(CountWithWindow(),
                       Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()])))
    with counts.execute_and_collect() as it:
        assert sorted(it) == [("hi", 0, 10, 7), ("hi", 0, 10, 7), ("hi", 10, 20, 1)]


class _SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return int(value[1])


def test_scheduling_hints_are_accepted_checked_and_change_nothing(env_factory):
    """Flink's chaining, slot-sharing and description hints never change results; Spark
    schedules its own tasks. A wrong argument fails where it is written."""
    env = env_factory("BATCH")
    assert env.set_buffer_timeout(-1) is env and env.get_buffer_timeout() == -1
    doubled = (env.from_collection([1, 2, 3], type_info=Types.LONG())
               .map(lambda x: x * 2, output_type=Types.LONG())
               .set_description("doubles every value")
               .start_new_chain().disable_chaining().slot_sharing_group("heavy"))
    assert doubled._node.description == "doubles every value"
    with doubled.execute_and_collect() as it:
        assert sorted(it) == [2, 4, 6]
    with pytest.raises(GraphBuildError, match=r"slot_sharing_group\(\) needs a non-empty name"):
        doubled.slot_sharing_group("")
    with pytest.raises(GraphBuildError, match=r"set_description\(\) needs a str, got 7"):
        doubled.set_description(7)
    with pytest.raises(ConfigurationError, match="timeout_millis must be an int >= -1, got -2"):
        env.set_buffer_timeout(-2)
    sink = doubled.print()
    assert sink.disable_chaining().set_description("stdout") is sink


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_forward_keeps_the_result_and_a_keyed_stream_refuses_every_partitioning(env_factory,
                                                                                mode):
    """``forward()`` between two non-keyed stages leaves the job's result unchanged (where
    the other partitionings send records: test_partitioning.py), and a KeyedStream refuses
    every partitioning call, as Flink's does."""
    env = env_factory(mode)
    source = env.from_collection([1, 2, 3, 4], type_info=Types.LONG())
    tripled = source.forward().map(lambda x: x * 3, output_type=Types.LONG())
    with tripled.execute_and_collect() as it:
        assert sorted(it) == [3, 6, 9, 12]
    keyed = tripled.key_by(lambda x: x % 2, key_type=Types.LONG())
    for call in ("forward", "shuffle", "rebalance", "rescale", "broadcast"):
        with pytest.raises(GraphBuildError, match=rf"{call}\(\) on the KeyedStream .* cannot "
                                                  "override the partitioning"):
            getattr(keyed, call)()
    with pytest.raises(GraphBuildError, match=r"partition_custom\(\) on the KeyedStream"):
        keyed.partition_custom(lambda key, n: key % n, lambda x: x)


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_keyed_map_hands_its_state_from_batch_to_streaming(spark, tmp_path, backend):
    """BATCH over part A with a savepoint, then STREAMING over part B restored from it: each
    key's running count goes on from where part A left it (counted here from the input)."""
    rng = random.Random(29)
    parts = {name: [(f"k{rng.randrange(31)}", rng.randrange(100)) for _ in range(size)]
             for name, size in (("a", 2400), ("b", 1600))}
    frames = {}
    for name, rows in parts.items():
        folder = tmp_path / name
        folder.mkdir()
        for i in range(3):  # several files, read as several Spark partitions
            chunk = rows[i::3]
            pq.write_table(pa.table({"key": [k for k, _ in chunk], "value": [v for _, v in chunk]}),
                           str(folder / f"part-{i}.parquet"))
        frames[name] = spark.read.parquet(str(folder))
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])

    def run(mode: str, df, out: str, name: str, savepoint: str | None = None,
            **config: str) -> None:
        conf = Configuration()
        for key, value in {"state.backend.type": backend, **config}.items():
            conf.set_string(key, value)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode[mode])
        env.set_parallelism(2)
        (env.from_dataframe(df).key_by(lambda r: r[0], key_type=Types.STRING())
         .map(RunningCount(), output_type=pair).uid("counts").sink_to_delta(out))
        env.execute(name, savepoint_path=savepoint)

    savepoint = str(tmp_path / "savepoint")
    out_a, out_b = str(tmp_path / "out-a"), str(tmp_path / "out-b")
    run("BATCH", frames["a"], out_a, "counts-a", savepoint=savepoint)
    run("STREAMING", frames["b"], out_b, "counts-b",
        **{"execution.savepoint.path": savepoint,
           "execution.checkpointing.dir": str(tmp_path / "ckpt")})
    before = Counter(k for k, _ in parts["a"])
    after = Counter(k for k, _ in parts["b"])

    def rows(out: str) -> list:
        return sorted(tuple(r.values()) for r in DeltaTable(out).to_pyarrow_table().to_pylist())

    assert rows(out_a) == sorted((k, i) for k, n in before.items() for i in range(1, n + 1))
    assert rows(out_b) == sorted((k, before[k] + i) for k, n in after.items()
                                 for i in range(1, n + 1))


# -- PyFlink's test_data_stream.py: keyed connected streams, keyed reduce with state, keys of
# -- any picklable type (the tests' own inputs and expected lists) ------------------------------

class _KeyOfSecond(KeySelector):  # PyFlink's MyKeySelector
    def get_key(self, value):
        return value[1]


class _RichCoFlatMap(CoFlatMapFunction):  # PyFlink's MyRichCoFlatMapFunction
    def open(self, runtime_context: RuntimeContext) -> None:
        self.map_state = runtime_context.get_map_state(
            MapStateDescriptor("map", Types.STRING(), Types.BOOLEAN()))

    def flat_map1(self, value):
        yield str(value[0] + 1)
        yield str(value[0] + 1)

    def flat_map2(self, value):
        if value[0] not in self.map_state:
            self.map_state[value[0]] = True
            yield value[0]


class _AssertKeyCoMap(CoMapFunction):  # PyFlink's test_keyed_co_map
    def open(self, runtime_context: RuntimeContext) -> None:
        self.pre1 = runtime_context.get_state(ValueStateDescriptor("pre1", Types.STRING()))
        self.pre2 = runtime_context.get_state(ValueStateDescriptor("pre2", Types.STRING()))

    def map1(self, value):
        if value[0] == "b":
            assert self.pre1.value() == "a"
        if value[0] == "d":
            assert self.pre1.value() == "c"
        self.pre1.update(value[0])
        return value

    def map2(self, value):
        if value[0] == "b":
            assert self.pre2.value() == "a"
        if value[0] == "d":
            assert self.pre2.value() == "c"
        self.pre2.update(value[0])
        return value


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_pyflink_keyed_co_flat_map_reads_keyed_map_state(env_factory, tmp_path, mode):
    """PyFlink's test_keyed_co_flat_map: after ``connect(...).key_by(k1, k2)`` the
    CoFlatMapFunction's MapState is the key's, so a repeated 'a' is emitted once."""
    env = env_factory(mode, _conf(tmp_path))
    ds1 = env.from_collection([(1, 1), (2, 2), (3, 3)],
                              type_info=Types.ROW([Types.INT(), Types.INT()]))
    ds2 = env.from_collection([("a", "a"), ("b", "b"), ("c", "c"), ("a", "a")],
                              type_info=Types.ROW([Types.STRING(), Types.STRING()]))
    out = (ds1.connect(ds2).key_by(lambda x: 1, lambda x: 1)
           .flat_map(_RichCoFlatMap(), output_type=Types.STRING())
           .filter(lambda x: x != "4"))
    with out.execute_and_collect() as it:
        assert sorted(it) == sorted(["2", "2", "3", "3", "a", "b", "c"])


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_pyflink_keyed_co_map_reads_each_keys_value_state(env_factory, tmp_path, mode):
    """PyFlink's test_keyed_co_map: the CoMapFunction's ValueStates are per key (its
    asserts fail inside the job otherwise), a keyed input is keyed again by the connect."""
    env = env_factory(mode, _conf(tmp_path))
    rows = [("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 2)]
    row_t = Types.ROW([Types.STRING(), Types.INT()])
    ds1 = env.from_collection(rows, type_info=row_t).key_by(_KeyOfSecond(), key_type=Types.INT())
    ds2 = env.from_collection(rows, type_info=row_t)
    out = (ds1.connect(ds2).key_by(_KeyOfSecond(), _KeyOfSecond(), key_type=Types.INT())
           .map(_AssertKeyCoMap()).map(lambda x: (x[0], x[1] + 1)))
    with out.execute_and_collect() as it:
        assert sorted(it) == sorted([("a", 1), ("b", 1), ("c", 2), ("d", 2), ("e", 3)] * 2)


class _ReduceWithState(ReduceFunction):  # PyFlink's MyReduceFunction
    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("test_state", Types.INT()))

    def reduce(self, value1, value2):
        state_value = self.state.value()
        state_value = 2 if state_value is None else state_value + 1
        result_value = Row(value1[0] + value2[0], value1[1])
        if result_value[0] == "ab":
            assert state_value == 2
        if result_value[0] == "cde":
            assert state_value == 3
        self.state.update(state_value)
        return result_value


@pytest.mark.parametrize("key", ["int", "string"])
@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_pyflink_reduce_with_state(env_factory, tmp_path, mode, key):
    """PyFlink's test_reduce_with_state (its input order, its expected lists per mode): the
    ReduceFunction is opened before it reduces, its state is the key's, and the KeyedStream
    refuses ``name()``. Keyed by an INT as PyFlink's test, and by a STRING at parallelism 2."""
    env = env_factory(mode, _conf(tmp_path))
    env.set_parallelism(2)
    ds = env.from_collection([("a", 0), ("c", 1), ("d", 1), ("b", 0), ("e", 1)],
                             type_info=Types.ROW([Types.STRING(), Types.INT()]))
    if key == "int":
        keyed_stream = ds.key_by(_KeyOfSecond(), key_type=Types.INT())
    else:
        keyed_stream = ds.key_by(lambda r: str(r[1]), key_type=Types.STRING())
    with pytest.raises(GraphBuildError, match=r"name\(\) on the KeyedStream"):
        keyed_stream.name("keyed stream")
    with keyed_stream.reduce(_ReduceWithState()).execute_and_collect() as it:
        got = sorted(tuple(r) for r in it)
    if mode == "BATCH":
        assert got == [("ab", 0), ("cde", 1)]
    else:
        assert got == [("a", 0), ("ab", 0), ("c", 1), ("cd", 1), ("cde", 1)]


def test_pyflink_keyed_min_by_and_max_with_a_list_key(env_factory, tmp_path):
    """PyFlink's BATCH test_keyed_min_by_and_max: a key selector returning a list
    (``lambda x: [1]``) keys by the pickled value, as PyFlink does; its expected list."""
    env = env_factory("BATCH", _conf(tmp_path))
    env.set_parallelism(1)
    ds = env.from_collection([(1, "9", 0), (1, "5", 1), (1, "6", 2), (5, "5", 0), (5, "3", 1)],
                             type_info=Types.ROW_NAMED(["v1", "v2", "v3"],
                                                       [Types.INT(), Types.STRING(), Types.INT()]))

    def flat_map_func1(data):
        for i in data:
            yield int(i), 1

    def flat_map_func2(data):
        yield from data

    out = (ds.key_by(lambda x: x[0]).min_by("v2")
           .map(lambda x: (x[0], x[1], x[2]),
                output_type=Types.TUPLE([Types.INT(), Types.STRING(), Types.INT()]))
           .key_by(lambda x: x[2]).max(0)
           .flat_map(flat_map_func1, output_type=Types.TUPLE([Types.INT(), Types.INT()]))
           .key_by(lambda x: [1]).min_by()
           .flat_map(flat_map_func2, output_type=Types.INT())
           .key_by(lambda x: x).max_by())
    with out.execute_and_collect() as it:
        assert sorted(it) == [1]


@pytest.mark.parametrize("shape", ["list", "dict", "set"])
@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_keys_of_any_picklable_type(env_factory, tmp_path, mode, shape):
    """Unhashable keys (a list, a dict, a set) key by their pickled value in both modes:
    each key's running count, counted here from the input."""
    rng = random.Random(5)
    records = [(rng.randrange(7), 1) for _ in range(200)]
    selector = {"list": lambda r: [r[0] % 3, "k"], "dict": lambda r: {"k": r[0] % 3},
                "set": lambda r: {r[0] % 3}}[shape]
    pair = Types.TUPLE([Types.INT(), Types.INT()])
    env = env_factory(mode, _conf(tmp_path))
    counts = (env.from_collection(records, type_info=pair)
              .map(lambda r: (r[0] % 3, r[1]), output_type=pair)
              .key_by(selector).reduce(lambda a, b: (a[0], a[1] + b[1])))
    with counts.execute_and_collect() as it:
        got = sorted(it)
    per_key = Counter(k % 3 for k, _ in records)
    if mode == "BATCH":
        assert got == sorted(per_key.items())
    else:
        assert got == sorted((k, i) for k, n in per_key.items() for i in range(1, n + 1))


class _CountPerKey(CoProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def _next(self, value):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield value[0], n

    def process_element1(self, value, ctx):
        yield from self._next(value)

    def process_element2(self, value, ctx):
        yield from self._next(value)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_co_process_function_on_keyed_connected_streams_counts_per_key(env_factory, tmp_path,
                                                                         mode):
    """As PyFlink (its ConnectedStreams.process runs keyed inputs keyed whatever the function's
    class), a CoProcessFunction after ``connect(...).key_by(k1, k2)`` reads the key's state:
    each key's running count over both inputs, counted here from the input."""
    rng = random.Random(11)
    left = [(f"k{rng.randrange(5)}", i) for i in range(60)]
    right = [(f"k{rng.randrange(5)}", -i) for i in range(40)]
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    env = env_factory(mode, _conf(tmp_path))
    out = (env.from_collection(left, type_info=pair)
           .connect(env.from_collection(right, type_info=pair))
           .key_by(lambda r: r[0], lambda r: r[0])
           .process(_CountPerKey(), output_type=pair))
    with out.execute_and_collect() as it:
        got = sorted(it)
    per_key = Counter(k for k, _ in left + right)
    assert got == sorted((k, i) for k, n in per_key.items() for i in range(1, n + 1))


class _KeyedStateWithoutKey(CoMapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def map1(self, value):
        return value

    def map2(self, value):
        return value


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_non_keyed_co_function_is_opened_under_its_own_operator_name(env_factory, tmp_path,
                                                                        mode):
    """A co-function on non-keyed connected streams is opened with a runtime context of its
    own operator (not of the step fused after it): keyed state there is refused naming it."""
    env = env_factory(mode, _conf(tmp_path))
    a = env.from_collection([1, 2], type_info=Types.LONG())
    b = env.from_collection([3], type_info=Types.LONG())
    out = a.connect(b).map(_KeyedStateWithoutKey()).name("pairs").filter(lambda x: x > 0)
    with pytest.raises(StateError, match=r"operator 'pairs': get_state\(\) is keyed state"):
        with out.execute_and_collect() as it:
            list(it)
