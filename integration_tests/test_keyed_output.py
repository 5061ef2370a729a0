"""How a STREAMING keyed stage hands its records to Spark: records of plain column types
(typed, pickled and tagged alike) as arrays Spark explodes, others as Arrow IPC blobs a
Python pass unpacks; the records are those a plain-Python model of the program gives."""

from __future__ import annotations

import datetime
import math
import random

import pytest
from helpers import KV_SCHEMA, add_file
from pyspark_datastream import (
    KeyedProcessFunction,
    OutputTag,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
OUT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN()])
NEG = OutputTag("neg", Types.LONG())
KEYS = ["a", "b", "ü", "", "key-" + "x" * 30] + [f"k{i}" for i in range(40)]
TIMER_DELAY = 10_000


class ByTs(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Tally(KeyedProcessFunction):
    """Per record: the key's running count and sum, their mean (None while the sum is
    negative, NaN while it is 0) and whether the sum is even; a timer 10 s after each record reports its own timestamp.
    Negative values also go to the side output ``neg`` when ``side`` is set."""

    def __init__(self, side: bool = False):
        self.side = side

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        total = (self.total.value() or 0) + value[1]
        self.count.update(count)
        self.total.update(total)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + TIMER_DELAY)
        if self.side and value[1] < 0:
            ctx.output(NEG, value[1])
        yield (value[0], total, _mean(total, count), total % 2 == 0)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp, math.inf, None)


def _mean(total: int, count: int) -> float | None:
    return None if total < 0 else math.nan if total == 0 else total / count


def _data(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    # out of order within the 5 s bound and beyond it (late records are processed too)
    return [(rng.choice(KEYS), rng.randint(-3, 9), rng.randint(0, 120_000)) for _ in range(1500)]


def _model(data: list[tuple], side: bool) -> tuple[dict, dict, list]:
    """Per key: its records' outputs in order, and its timers' outputs (one per distinct
    timestamp); the side output's values."""
    outputs: dict = {}
    timers: dict = {}
    negatives = []
    state: dict = {}
    for key, value, ts in data:
        count, total = state.get(key, (0, 0))
        count, total = count + 1, total + value
        state[key] = (count, total)
        outputs.setdefault(key, []).append(
            (key, total, _mean(total, count), total % 2 == 0))
        timers.setdefault(key, set()).add((key, ts + TIMER_DELAY, math.inf, None))
        if side and value < 0:
            negatives.append(value)
    return outputs, timers, sorted(negatives)


def _comparable(record: tuple) -> tuple:
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in record)


def _split(records: list[tuple]) -> tuple[dict, dict]:
    outputs: dict = {}
    timers: dict = {}
    for r in records:
        if r[2] == math.inf:
            timers.setdefault(r[0], set()).add(r)
        else:
            outputs.setdefault(r[0], []).append(_comparable(r))
    return outputs, timers


def _run(env_factory, tmp_path, data, side: bool, name: str) -> list:
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    ws = (WatermarkStrategy.for_bounded_out_of_orderness(5_000)
          .with_timestamp_assigner(ByTs()))
    keyed = (env.from_collection(data, TRIPLE).assign_timestamps_and_watermarks(ws)
             .key_by(lambda r: r[0]))
    if not side:
        return list(keyed.process(Tally(), output_type=OUT).execute_and_collect(name))
    main = keyed.process(Tally(side=True))  # pickled records, and a side output
    both = main.union(main.get_side_output(NEG).map(lambda v: ("neg", v)))
    return list(both.execute_and_collect(name))


@pytest.mark.compat
def test_typed_outputs_and_timers_equal_the_model(env_factory, tmp_path):
    data = _data(7)
    out = _run(env_factory, tmp_path, data, False, "typed")
    outputs, timers = _split(out)
    expected_outputs, expected_timers, _ = _model(data, False)
    assert outputs == {k: [_comparable(r) for r in v] for k, v in expected_outputs.items()}
    assert timers == expected_timers  # bounded input: every timer fires at end of input
    assert all(type(r[1]) is int and type(r[3]) in (bool, type(None)) for r in out)
    assert any(r[2] is None for r in out) and any(r[2] != r[2] for r in out)  # None and NaN


def test_pickled_outputs_and_a_side_output_equal_the_model(env_factory, tmp_path):
    data = _data(11)
    out = _run(env_factory, tmp_path, data, True, "pickled")
    negatives = sorted(v for tag, v in (r for r in out if r[0] == "neg" and len(r) == 2))
    outputs, timers = _split([r for r in out if len(r) == 4])
    expected_outputs, expected_timers, expected_negatives = _model(data, True)
    assert outputs == {k: [_comparable(r) for r in v] for k, v in expected_outputs.items()}
    assert timers == expected_timers
    assert negatives == expected_negatives


def test_running_reduce_on_columns_continues_from_its_checkpoint(spark, env_factory, tmp_path):
    """The summing reduce's output (computed on columns) leaves as arrays too."""
    src = str(tmp_path / "in")
    add_file(src, [("a", 1), ("b", 10), ("a", 2)], "f1")
    add_file(src, [("a", 3), ("b", 20)], "f2")

    def run():
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
        df = spark.readStream.schema(KV_SCHEMA).parquet(src)
        sums = env.from_dataframe(df).key_by(lambda r: r[0]).reduce(
            lambda x, y: (x[0], x[1] + y[1]))  # summed on the key group's columns
        return sorted(sums.execute_and_collect("running-sum"))

    assert run() == [("a", 1), ("a", 3), ("a", 6), ("b", 10), ("b", 30)]
    add_file(src, [("b", -50), ("a", 100)], "f3")
    assert run() == [("a", 106), ("b", -20)]  # only the new file, on the checkpointed sums


class Dated(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield (value[0], datetime.date(2024, 1, 1) + datetime.timedelta(days=value[1]))


@pytest.mark.parametrize("dated, unpack_pass", [(False, False), (True, True)])
def test_only_records_of_other_types_take_a_python_unpack_pass(
        env_factory, tmp_path, capsys, dated, unpack_pass):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    keyed = env.from_collection(_data(3), TRIPLE).key_by(lambda r: r[0])
    stage = (keyed.process(Dated(), output_type=Types.TUPLE([Types.STRING(), Types.SQL_DATE()]))
             if dated else keyed.process(Tally(), output_type=OUT))
    stage.to_dataframe().explain()
    plan = capsys.readouterr().out
    assert plan.count("FlatMapGroupsInPandasWithState") == 1
    after = plan.split("FlatMapGroupsInPandasWithState")[0]  # printed from the sink down
    assert ("MapInArrow" in after) is unpack_pass
    assert ("Generate" in after) is not unpack_pass
    if dated:
        out = sorted(stage.execute_and_collect("dated"))
        assert out == sorted((k, datetime.date(2024, 1, 1) + datetime.timedelta(days=v))
                             for k, v, _ in _data(3))


class Heavy(KeyedProcessFunction):
    """Counts per key; key ``big`` also keeps 9 MB in state, more than a keyed call lets
    PySpark hold before it pads its output to make PySpark cut a batch (FLUSH_BYTES)."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.ballast = runtime_context.get_state(ValueStateDescriptor("ballast", Types.STRING()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        if value[0] == "big" and self.ballast.value() is None:
            self.ballast.update("x" * 9_000_000)
        yield (value[0], count, value[1] / 2, None)


def test_calls_padded_to_cut_pysparks_batches_lose_and_add_no_record(spark, env_factory,
                                                                      tmp_path):
    src = str(tmp_path / "in")
    rng = random.Random(5)
    files = [[(rng.choice(["big", "a", "b", "c"]), rng.randint(-9, 9)) for _ in range(200)]
             for _ in range(3)]
    for i, rows in enumerate(files):
        add_file(src, rows, f"f{i}")
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    df = spark.readStream.schema(KV_SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    out = list(env.from_dataframe(df).key_by(lambda r: r[0])
               .process(Heavy(), output_type=OUT).execute_and_collect("heavy"))
    expected: dict = {}
    for key, value in (r for rows in files for r in rows):
        expected.setdefault(key, []).append((key, len(expected.get(key, [])) + 1, value / 2, None))
    assert _per_key(out) == expected


def _per_key(records: list[tuple]) -> dict:
    out: dict = {}
    for r in records:
        out.setdefault(r[0], []).append(r)
    return out
