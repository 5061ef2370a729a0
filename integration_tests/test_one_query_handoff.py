"""Keyed stages of the one query that key their records for the next keyed stage in their own
call (runtime/handoff.py): no Python pass runs between the two stateful operators.

* Three keyed stages with maps, filters and flat_maps between them, at parallelism 1, whose
  states fold every record in the order received: Flink's result is then fully determined
  by the input order and computed by a plain-Python model (records keep their order from
  one stage to the next, across several files and micro-batches).
* Two event-time window stages below a keyed stage, at parallelism 2, over out-of-order
  files in two available-now runs into Delta (the second from the first's checkpoint): the
  watermark reaches each window stage through the hand-off, and the windows equal a
  plain-Python model's.

Both check the query's plan: between two stateful operators, no ``mapInArrow`` pass.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from helpers import (
    KV_SCHEMA,
    ByV,
    QueryCounter,
    add_file,
    delta_rows,
    out_of_order_files,
    spark_line,
)
from pyspark_datastream import (
    KeyedProcessFunction,
    Time,
    TumblingEventTimeWindows,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

M = 1_000_003
TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
LONGS = Types.TUPLE([Types.LONG(), Types.LONG()])


@pytest.fixture(autouse=True)
def _spark_4(spark):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")


def _no_pass_between_stages(env_factory, tmp_path, build, stages: int) -> None:
    """The plan of the stream ``build(env)`` returns (an env of its own, the job not run)
    holds ``stages`` stateful operators and no Python map pass between any two of them."""
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "plan"),
                                    "execution.streaming.query-mapping": "one-query"})
    plan = build(env).to_dataframe()._jdf.queryExecution().analyzed().toString()
    found = re.findall(r"TransformWithState\w*|MapInArrow|MapInPandas", plan)
    tws = [i for i, f in enumerate(found) if f.startswith("TransformWithState")]
    assert len(tws) == stages, found
    assert found[tws[0]:tws[-1] + 1] == [found[i] for i in tws], found


class Fold(KeyedProcessFunction):
    """A running hash of every value the key received, in the order received."""

    def open(self, runtime_context):
        self.h = runtime_context.get_state(ValueStateDescriptor("h", Types.LONG()))

    def process_element(self, value, ctx):
        h = ((self.h.value() or 7) * 31 + value[2]) % M
        self.h.update(h)
        yield value[0], value[1], h


def _between(i: int):
    """The operators between stage ``i`` and the next, as plain-Python functions."""
    if i == 0:  # a map and a filter
        return lambda r: [(r[0], r[1] + 1, r[2])] if (r[1] + r[2]) % 7 else []
    # a flat_map giving two records of some, none of others
    return lambda r: [] if r[1] % 5 == 0 else (
        [(r[0], r[1], r[2]), (r[0] + "'", r[1] + 2, r[2] % 11)] if r[2] % 2 else [r])


KEYS = [lambda r: r[0], lambda r: r[1] % 5, lambda r: r[2] % 3]


def _fold_model(records):
    """Flink at parallelism 1: each operator processes its input in arrival order."""
    stream = [(k, v, v) for k, v in records]
    for i, key_of in enumerate(KEYS):
        state: dict = {}
        out = []
        for r in stream:
            key = key_of(r)
            state[key] = (state.get(key, 7) * 31 + r[2]) % M
            out.append((r[0], r[1], state[key]))
        stream = out if i == 2 else [x for r in out for x in _between(i)(r)]
    return stream


def test_three_stages_with_operators_between_keep_flinks_order(spark, env_factory, tmp_path):
    files = out_of_order_files(5, 4, 150, 40, 1000)
    src = str(tmp_path / "in")
    for i, rows in enumerate(files):
        add_file(src, rows, f"f{i}")

    def build(env):
        env.set_parallelism(1)
        df = spark.readStream.schema(KV_SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
        ds = env.from_dataframe(df).map(lambda r: (r[0], r[1], r[1]), output_type=TRIPLE)
        ds = ds.key_by(KEYS[0]).process(Fold(), output_type=TRIPLE)
        ds = (ds.map(lambda r: (r[0], r[1] + 1, r[2]), output_type=TRIPLE)
              .filter(lambda r: (r[1] - 1 + r[2]) % 7 != 0))
        ds = ds.key_by(KEYS[1]).process(Fold(), output_type=TRIPLE)
        ds = ds.flat_map(_between(1), output_type=TRIPLE)
        return ds.key_by(KEYS[2]).process(Fold(), output_type=TRIPLE)

    _no_pass_between_stages(env_factory, tmp_path, build, 3)
    ds = build(env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                         "execution.streaming.query-mapping": "one-query",
                                         "state.backend.type": "rocksdb"}))
    with ds.execute_and_collect() as it:
        got = sorted(it)
    assert got == sorted(_fold_model([r for rows in files for r in rows]))


class CountPerKey(KeyedProcessFunction):
    """Each record with the number of records its key received so far."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield value[0], value[1], self.count.value()


SPAN, USERS, WIDTH = 10_000, 30, 5_000


def _bucket(user: str) -> int:
    return int(user[1:]) % 4



def program(env, records):
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    counted = (records.assign_timestamps_and_watermarks(ws)
               .key_by(lambda r: r[0]).process(CountPerKey(), output_type=TRIPLE).uid("count"))
    per_bucket = (counted.filter(lambda r: r[1] % 3 != 0)
                  .flat_map(lambda r: [(_bucket(r[0]), 1)] * (1 + r[1] % 2), output_type=LONGS)
                  .key_by(lambda r: r[0], key_type=Types.LONG())
                  .window(TumblingEventTimeWindows.of(Time.milliseconds(WIDTH)))
                  .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("per-bucket"))
    return (per_bucket.map(lambda r: (r[0] % 2, r[1]), output_type=LONGS)
            .key_by(lambda r: r[0], key_type=Types.LONG())
            .window(TumblingEventTimeWindows.of(Time.milliseconds(WIDTH)))
            .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("per-parity"))


def window_model(records: list[tuple[str, int]]) -> Counter:
    """The per-parity windows Flink fires: each record counts 0, 1 or 2 times in its bucket's
    window, whose result (at the window's last millisecond) counts in its parity's window
    of the same span; a window fires once the watermark (the greatest event time less the
    bound and 1 ms) reaches its last millisecond, and not at all while the input runs on."""
    watermark = max(ts for _, ts in records) - SPAN - 1
    parities: Counter = Counter()
    for user, ts in records:
        if ts % 3:
            parities[(_bucket(user) % 2, ts // WIDTH)] += 1 + ts % 2
    return Counter((parity, total) for (parity, window), total in parities.items()
                   if (window + 1) * WIDTH - 1 <= watermark)


def test_window_stages_take_the_watermark_through_the_hand_off(spark, env_factory, tmp_path):
    src, ckpt, out = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "out")
    # each file's event times within one 10 s span, later than the file before, out of order
    files = out_of_order_files(23, 4, 300, USERS, SPAN)
    add_file(src, files[0], "f0")
    _no_pass_between_stages(env_factory, tmp_path, lambda env: program(
        env, env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src))), 3)
    for first, last in ((0, 2), (2, 4)):
        for i in range(first, last):
            add_file(src, files[i], f"f{i}")
        env = env_factory("STREAMING", {"execution.checkpointing.dir": ckpt,
                                        "execution.streaming.query-mapping": "one-query"})
        env.set_parallelism(2)
        program(env, env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src))
                ).sink_to_delta(out)
        with QueryCounter(spark) as queries:
            env.execute("handoff-windows")
        assert len(queries.started) == 1, queries.started
    want = window_model([r for rows in files for r in rows])
    assert len(want) >= 8 and Counter(delta_rows(out)) == want
