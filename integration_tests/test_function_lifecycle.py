"""One user-function instance per parallel instance, opened once, as in Flink.

Flink creates a keyed operator's function once per parallel instance (subtask) and calls
``open()`` once before its first record: attributes the function sets on itself are per
subtask, not per key or key group, and in STREAMING they last across micro-batches.

* PyFlink's own ``test_keyed_co_process``: a function that registers one event timer per
  instance gives 7 records at parallelism 1 (Flink's expected list, copied from that test).
* A function counting its ``open()`` calls: once per subtask and Python worker for a whole
  STREAMING run of several micro-batches; its instance attributes carry over between them.
* A ``KeySelector`` given to ``key_by`` is opened and closed too: PyFlink's ``key_by`` runs
  it inside a ProcessFunction (``AddKey`` in pyflink/datastream/data_stream.py) whose
  ``open(runtime_context)`` and ``close()`` call the selector's.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark_datastream import (
    FilterFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Row,
    RuntimeContext,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)


class SecondColumnTimestampAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[1])


class MyKeyedCoProcessFunction(KeyedCoProcessFunction):
    """PyFlink's test function (pyflink/datastream/tests/test_data_stream.py)."""

    def __init__(self):
        self.count_state = None
        self.timer_registered = False

    def open(self, runtime_context: RuntimeContext):
        self.timer_registered = False
        self.count_state = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element1(self, value, ctx):
        if not self.timer_registered:
            ctx.timer_service().register_event_time_timer(3)
            self.timer_registered = True
        count = self.count_state.value()
        count = 1 if count is None else count + 1
        self.count_state.update(count)
        return [Row(value[0], count)]

    def process_element2(self, value, ctx):
        count = self.count_state.value()
        count = 1 if count is None else count + 1
        self.count_state.update(count)
        return [Row(value[0], count)]

    def on_timer(self, timestamp, ctx):
        yield Row("on_timer", timestamp)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_pyflinks_keyed_co_process_registers_one_timer_per_instance(spark, env_factory, tmp_path,
                                                                    mode):
    """At parallelism 1 there is one instance, whatever the session's shuffle partitions."""
    assert int(spark.conf.get("spark.sql.shuffle.partitions")) > 1
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    env.set_parallelism(1)
    row = Types.ROW([Types.STRING(), Types.INT()])
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        SecondColumnTimestampAssigner())
    ds1 = env.from_collection([("a", 1), ("b", 2), ("c", 3)], type_info=row) \
        .assign_timestamps_and_watermarks(strategy)
    ds2 = env.from_collection([("b", 2), ("c", 3), ("d", 4)], type_info=row) \
        .assign_timestamps_and_watermarks(strategy)
    out = (ds1.connect(ds2).key_by(lambda x: x[0], lambda x: x[0])
           .process(MyKeyedCoProcessFunction())
           .map(lambda x: Row(x[0], x[1] + 1)))
    results = sorted(repr(r) for r in out.execute_and_collect())
    expected = ["<Row('a', 2)>", "<Row('b', 2)>", "<Row('b', 3)>", "<Row('c', 2)>",
                "<Row('c', 3)>", "<Row('d', 2)>", "<Row('on_timer', 4)>"]
    assert results == sorted(expected)


class CountingOpens(KeyedProcessFunction):
    """Writes a file per open() and close() call; emits, per element, how many elements this
    instance has seen (an instance attribute) and its subtask."""

    def __init__(self, folder: str):
        self.folder = folder
        self.seen = 0

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.seen = 0
        self._mark("open")

    def close(self):
        self._mark("close")

    def _mark(self, what):
        path = os.path.join(self.folder, f"{what}-{os.getpid()}-{self.subtask}-{id(self)}")
        with open(path, "a") as f:
            f.write("x")

    def process_element(self, value, ctx):
        self.seen += 1
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield value[0], total, self.subtask, os.getpid(), self.seen


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_open_runs_once_per_subtask_and_worker_and_attributes_last(spark, env_factory,
                                                                   tmp_path, mode):
    src, marks = tmp_path / "src", tmp_path / "marks"
    src.mkdir()
    marks.mkdir()
    files = [[(f"k{(i * 7 + j) % 23}", i * 10 + j) for j in range(40)] for i in range(4)]
    for i, rows in enumerate(files):
        path = src / f"f{i}.parquet"
        pq.write_table(pa.table({"k": [r[0] for r in rows],
                                 "v": pa.array([r[1] for r in rows], pa.int64())}), path)
        os.utime(path, (1_700_000_000 + 10 * i,) * 2)
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    env.set_parallelism(2)
    if mode == "STREAMING":  # one file per micro-batch: four micro-batches
        df = spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1) \
            .parquet(str(src))
    else:
        df = spark.read.schema("k string, v long").parquet(str(src))
    out = list(env.from_dataframe(df).key_by(lambda r: r[0])
               .process(CountingOpens(str(marks)),
                        output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT(),
                                                 Types.LONG(), Types.LONG()]))
               .execute_and_collect())
    # running totals per key, independently
    totals, expected = {}, []
    for rows in files:
        for k, v in rows:
            totals[k] = totals.get(k, 0) + v
            expected.append((k, totals[k]))
    if mode == "STREAMING":  # one file per micro-batch, in file order
        assert sorted((k, t) for k, t, _, _, _ in out) == sorted(expected)
    else:  # BATCH reads the files in no set order: the final totals
        finals: dict[str, int] = {}
        for k, t, _, _, _ in out:
            finals[k] = max(finals.get(k, 0), t)
        assert finals == totals and len(out) == len(expected)
    opens = [name.split("-") for name in os.listdir(marks) if name.startswith("open-")]
    # every instance opened once, and one instance per (worker, subtask)
    assert opens and all((marks / "-".join(o)).read_text() == "x" for o in opens)
    assert len({(pid, sub) for _, pid, sub, _ in opens}) == len(opens)
    # the job's parallelism in both modes
    assert {int(sub) for _, _, sub, _ in opens} <= set(range(2))
    # the instance attribute counted every element of its instance, across micro-batches
    # and key groups: per (worker, subtask), exactly 1..n
    by_instance: dict[tuple[int, int], list[int]] = {}
    for _, _, sub, pid, seen in out:
        by_instance.setdefault((pid, sub), []).append(seen)
    for counts in by_instance.values():
        assert sorted(counts) == list(range(1, len(counts) + 1))


class _Marking:
    """Writes a file per open() and close() call, named by run, worker, subtask and instance."""

    def _mark(self, what):
        path = os.path.join(self.folder, f"{what}-{self.run}-{self.tag}-{os.getpid()}-"
                                         f"{self.subtask}-{id(self)}")
        with open(path, "a") as f:
            f.write("x")

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.n = 0
        self._mark("open")

    def close(self):
        self._mark("close")


def _check_first_run_closed(marks, marked) -> None:
    """Every instance of run 1 on a Python worker that run 2 reached was closed there, once;
    only opened instances were closed. (A worker run 2 did not reach closes its instances
    when it exits: Spark starts a new worker when the idle ones are busy, as on a loaded
    machine, so which workers run 2 reaches is Spark's choice.)"""
    opened = marked("open", 1)
    reached = {o[3] for o in marked("open", 2)}  # name: what-run-tag-pid-subtask-id
    closes = marked("close", 1)
    assert all((marks / "-".join(c)).read_text() == "x" for c in closes)
    assert {tuple(c[2:]) for c in closes} <= {tuple(o[2:]) for o in opened}
    assert {tuple(o[2:]) for o in opened if o[3] in reached} <= {tuple(c[2:]) for c in closes}


class CountingMap(_Marking, MapFunction):
    """Emits, per record, how many records this instance has mapped (an instance attribute)."""

    tag = "map"

    def __init__(self, folder: str, run: int):
        self.folder, self.run = folder, run

    def map(self, value):
        self.n += 1
        return value[0], value[1], self.subtask, os.getpid(), self.n


class CountingFilter(_Marking, FilterFunction):
    """Keeps every record; counts them in an instance attribute, checked by the map after it."""

    tag = "filter"

    def __init__(self, folder: str, run: int):
        self.folder, self.run = folder, run

    def filter(self, value):
        self.n += 1
        return True


class PassThrough(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


@pytest.mark.parametrize("shape", ["alone", "before_key_by"])
@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_non_keyed_steps_open_once_per_subtask_and_worker_for_the_whole_run(
        spark, env_factory, tmp_path, mode, shape):
    """Flink keeps a non-keyed step's function (map, filter, ... before or without key_by)
    once per parallel instance for the life of the job: open() once, attributes set on it
    count every record of the instance across micro-batches, close() at its end; a new
    execute() is a new job with new instances."""
    src, marks = tmp_path / "src", tmp_path / "marks"
    src.mkdir()
    marks.mkdir()

    def add(i: int) -> list[tuple[str, int]]:
        rows = [(f"k{(i * 7 + j) % 23}", i * 100 + j) for j in range(30)]
        path = src / f"f{i}.parquet"
        pq.write_table(pa.table({"k": [r[0] for r in rows],
                                 "v": pa.array([r[1] for r in rows], pa.int64())}), path)
        os.utime(path, (1_700_000_000 + 10 * i,) * 2)
        return rows

    out_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT(), Types.LONG(),
                            Types.LONG()])

    def run(number: int) -> list[tuple]:
        env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
        env.set_parallelism(2)
        if mode == "STREAMING":  # one file per micro-batch
            df = spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1) \
                .parquet(str(src))
        else:
            df = spark.read.schema("k string, v long").parquet(str(src))
        ds = (env.from_dataframe(df).filter(CountingFilter(str(marks), number))
              .map(CountingMap(str(marks), number), output_type=out_type))
        if shape == "before_key_by":
            ds = ds.key_by(lambda r: r[0]).process(PassThrough(), output_type=out_type)
        return list(ds.execute_and_collect("non-keyed-life"))

    def marked(what: str, number: int) -> list[list[str]]:
        return [name.split("-") for name in os.listdir(marks)
                if name.startswith(f"{what}-{number}-")]

    def check(out: list[tuple], expected: list[tuple[str, int]], number: int) -> None:
        if mode == "BATCH" and number == 2:  # BATCH reads every file again
            expected = first + expected
        assert sorted((k, v) for k, v, _, _, _ in out) == sorted(expected)
        opens = marked("open", number)
        # every instance opened once; one instance per (step, worker, subtask)
        assert opens and all((marks / "-".join(o)).read_text() == "x" for o in opens)
        assert len({(tag, pid, sub) for _, _, tag, pid, sub, _ in opens}) == len(opens)
        assert {int(sub) for *_, sub, _ in opens} <= {0, 1}
        # the map's attribute counted every record of its instance, across micro-batches:
        # per (worker, subtask), exactly 1..n (a re-opened or fresh copy starts again at 1)
        by_instance: dict[tuple[int, int], list[int]] = {}
        for _, _, sub, pid, n in out:
            by_instance.setdefault((pid, sub), []).append(n)
        for counts in by_instance.values():
            assert sorted(counts) == list(range(1, len(counts) + 1))

    first = [r for i in range(3) for r in add(i)]
    check(run(1), first, 1)
    if mode == "BATCH":  # the job ended: every instance closed
        assert {tuple(c[2:]) for c in marked("close", 1)} == \
            {tuple(o[2:]) for o in marked("open", 1)}
    second = [r for i in range(3, 5) for r in add(i)]
    check(run(2), second, 2)
    # the first run's instances were closed (STREAMING: by the worker running the second),
    # each once, and only instances that were opened
    _check_first_run_closed(marks, marked)


class OpenedKeySelector(_Marking, KeySelector):
    """Keys by the first field; counts its calls in an attribute that open() sets."""

    tag = "key"

    def __init__(self, folder: str, run: int):
        self.folder, self.run = folder, run

    def get_key(self, value):
        self.n += 1  # set by open(): a selector never opened fails here
        return value[0]


@pytest.mark.parametrize("shape", ["first", "after_filter"])
@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_key_selector_is_opened_once_per_subtask_and_worker_and_closed(
        spark, env_factory, tmp_path, mode, shape):
    """PyFlink opens a KeySelector given to key_by with the runtime context of the parallel
    instance that extracts the keys, once, and closes it at the end of the job; a new
    execute() is a new job with new instances. ``first``: key_by straight on the source (the
    vectorised key extraction); ``after_filter``: behind a FilterFunction class."""
    src, marks = tmp_path / "src", tmp_path / "marks"
    src.mkdir()
    marks.mkdir()

    def add(i: int) -> list[tuple[str, int]]:
        rows = [(f"k{(i * 5 + j) % 17}", i * 100 + j) for j in range(30)]
        path = src / f"f{i}.parquet"
        pq.write_table(pa.table({"k": [r[0] for r in rows],
                                 "v": pa.array([r[1] for r in rows], pa.int64())}), path)
        os.utime(path, (1_700_000_000 + 10 * i,) * 2)
        return rows

    pair = Types.TUPLE([Types.STRING(), Types.LONG()])

    def run(number: int) -> list[tuple]:
        env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
        env.set_parallelism(2)
        if mode == "STREAMING":  # one file per micro-batch
            df = spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1) \
                .parquet(str(src))
        else:
            df = spark.read.schema("k string, v long").parquet(str(src))
        ds = env.from_dataframe(df)
        if shape == "after_filter":
            ds = ds.filter(CountingFilter(str(marks), number))
        ds = ds.key_by(OpenedKeySelector(str(marks), number)).process(PassThrough(),
                                                                       output_type=pair)
        return list(ds.execute_and_collect("key-selector-life"))

    def marked(what: str, number: int) -> list[list[str]]:
        return [name.split("-") for name in os.listdir(marks)
                if name.startswith(f"{what}-{number}-key-")]

    def check(out: list[tuple], expected: list[tuple[str, int]], number: int) -> None:
        if mode == "BATCH" and number == 2:  # BATCH reads every file again
            expected = first + expected
        assert sorted(out) == sorted(expected)
        opens = marked("open", number)
        # opened, each instance once; one instance per (worker, subtask)
        assert opens and all((marks / "-".join(o)).read_text() == "x" for o in opens)
        assert len({(pid, sub) for _, _, _, pid, sub, _ in opens}) == len(opens)
        assert {int(sub) for *_, sub, _ in opens} <= {0, 1}

    first = [r for i in range(3) for r in add(i)]
    check(run(1), first, 1)
    if mode == "BATCH":  # the job ended: every instance closed
        assert {tuple(c[3:]) for c in marked("close", 1)} == \
            {tuple(o[3:]) for o in marked("open", 1)}
    second = [r for i in range(3, 5) for r in add(i)]
    check(run(2), second, 2)
    # the first run's selectors were closed (STREAMING: by the worker running the second),
    # each once, and only selectors that were opened
    _check_first_run_closed(marks, marked)
