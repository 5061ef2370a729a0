"""A keyed stage whose records reach the keyed stage below along several paths that a union
joins, in the one-query mapping.

Spark would plan the stage above once per path; the keying pass below reads its output
once and runs each path (translation/streaming/branches.py). A running count per user
emits every count and, to a side output, every third one; three paths (the even counts by
bucket of users, every count by its residue mod 5, the side output by bucket) are joined by
a union, mapped once more and counted per key. Two available-now runs over several files of
out-of-order event times, the second from the first's checkpoint by the next version of the
program, whose sinks read the running counts, the side output, the even counts of the
first path and the union of the three paths too (the stage above is then carried through
the stage below, runtime/carry.py; the union runs in the sinks' tail):
one query each holding each keyed stage once, and every sink's rows equal to a
plain-Python model.
"""

from __future__ import annotations

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
    OutputTag,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS, BUCKETS, SPAN = 23, 4, 10_000
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
THIRDS = OutputTag("thirds", PAIR)


class Running(KeyedProcessFunction):
    """(user, its count so far) per record; every third count to :data:`THIRDS` too."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield value[0], n
        if n % 3 == 0:
            yield THIRDS, (value[0], n)


def bucket(user: str) -> int:
    return int(user[1:]) % BUCKETS


def program(env, records, out: str, apart: bool = False) -> None:
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).key_by(lambda r: r[0])
               .process(Running(), PAIR).uid("running"))
    evens = running.filter(lambda r: r[1] % 2 == 0)
    joined = (evens.map(lambda r: (f"e{bucket(r[0])}", 1), PAIR)
              .union(running.map(lambda r: (f"m{r[1] % 5}", 1), PAIR),
                     running.get_side_output(THIRDS).map(lambda r: (f"t{bucket(r[0])}", 1),
                                                         PAIR)))
    (joined.map(lambda r: (r[0].upper(), r[1]), PAIR).key_by(lambda r: r[0])
     .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("joined").sink_to_delta(f"{out}/joined"))
    if apart:  # sinks read the stage above, its side output, an operator on a path and
        running.sink_to_delta(f"{out}/running")  # the union of the paths
        joined.sink_to_delta(f"{out}/paths")
        running.get_side_output(THIRDS).sink_to_delta(f"{out}/thirds")
        evens.sink_to_delta(f"{out}/evens")


def model(counts: Counter, joined: Counter, records: list[tuple[str, int]],
          running: list[tuple]) -> list[tuple]:
    """The joined counts' rows for ``records`` after ``counts`` and ``joined`` (updated):
    one running sum per record reaching each key, whatever the order; each running count
    appended to ``running``."""
    rows = []
    for user, _ in records:
        counts[user] += 1
        n = counts[user]
        running.append((user, n))
        keys = [f"M{n % 5}"] + ([f"E{bucket(user)}"] if n % 2 == 0 else []) + (
            [f"T{bucket(user)}"] if n % 3 == 0 else [])
        for key in keys:
            joined[key] += 1
            rows.append((key, joined[key]))
    return rows


def test_paths_a_union_joins_read_the_stage_above_once(spark, env_factory, tmp_path):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    src, out, ckpt = str(tmp_path / "in"), str(tmp_path / "out"), str(tmp_path / "ckpt")
    files = out_of_order_files(17, 4, 300, USERS, SPAN)
    counts, joined, expected = Counter(), Counter(), []

    for apart, run in ((False, files[:2]), (True, files[2:])):
        running: list[tuple] = []
        for rows in run:
            add_file(src, rows, f"f{files.index(rows)}")
            expected += model(counts, joined, rows, running)
        env = env_factory("STREAMING", {"execution.checkpointing.dir": ckpt,
                                        "execution.streaming.query-mapping": "one-query"})
        env.set_parallelism(2)
        program(env, env.from_dataframe(spark.readStream.schema(KV_SCHEMA).parquet(src)), out,
                apart)
        with QueryCounter(spark) as queries:
            env.execute("branches")
        assert len(queries.started) == 1, queries.started
        assert delta_rows(f"{out}/joined") == sorted(expected)
    # the second version's sinks: the running counts of its own records, every third apart
    assert delta_rows(f"{out}/running") == sorted(running)
    assert delta_rows(f"{out}/thirds") == sorted(r for r in running if r[1] % 3 == 0)
    assert delta_rows(f"{out}/evens") == sorted(r for r in running if r[1] % 2 == 0)
    paths = [(f"m{n % 5}", 1) for _, n in running] + [
        (f"e{bucket(u)}", 1) for u, n in running if n % 2 == 0] + [
        (f"t{bucket(u)}", 1) for u, n in running if n % 3 == 0]
    assert delta_rows(f"{out}/paths") == sorted(paths)
    assert {k[0] for k, _ in expected} == {"E", "M", "T"}  # every path reached the stage
    # the query holds two stateful operators: the stage above once, and the one below
    meta = spark.read.format("state-metadata").load(f"{ckpt}/branches/query/checkpoint")
    assert sorted(r["operatorId"] for r in meta.select("operatorId").distinct().collect()) \
        == [0, 1]


def merged(env, records, others, out: str, thirds: bool) -> None:
    """The running counts, read by sinks (with every third apart when ``thirds``) and, their
    even ones by bucket, merged with another stream's records by bucket and counted per
    key."""
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).key_by(lambda r: r[0])
               .process(Running(), PAIR).uid("running"))
    running.sink_to_delta(f"{out}/running")
    evens = running.filter(lambda r: r[1] % 2 == 0).map(lambda r: (f"e{bucket(r[0])}", 1), PAIR)
    elsewhere = others.assign_timestamps_and_watermarks(ws).map(
        lambda r: (f"o{bucket(r[0])}", 1), PAIR)
    (elsewhere.union(evens).map(lambda r: (r[0].upper(), r[1]), PAIR).key_by(lambda r: r[0])
     .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("merged").sink_to_delta(f"{out}/merged"))
    if thirds:  # its output is then tagged (pickled): the first run's is typed columns
        running.get_side_output(THIRDS).sink_to_delta(f"{out}/thirds")


def with_another_stream(spark, env_factory, tmp_path, job: str, seeds: tuple[int, int],
                        program, counted, after_run) -> str:
    """Two available-now runs of ``program(env, records, others, out, second)`` over two files
    of each stream per run, the second from the first's checkpoint (the next version of the
    program when ``second`` changes it): one query each, whose sink ``{out}/{job}`` counts
    per key the keys ``counted(user, n)`` names for each record of the first stream (``n``:
    its user's running count) and each other record's ``O`` key by bucket, checked against
    that model after each run (then ``after_run(out)``); the query holds two stateful
    operators. Returns ``out``."""
    src, other, out = str(tmp_path / "in"), str(tmp_path / "other"), str(tmp_path / "out")
    ckpt = str(tmp_path / "ckpt")
    files = out_of_order_files(seeds[0], 4, 300, USERS, SPAN)
    other_files = out_of_order_files(seeds[1], 4, 200, USERS, SPAN)
    counts, keys, expected = Counter(), Counter(), []
    for second, run in ((False, range(2)), (True, range(2, 4))):
        for i in run:
            add_file(src, files[i], f"f{i}")
            add_file(other, other_files[i], f"o{i}")
            named = []
            for user, _ in files[i]:
                counts[user] += 1
                named += counted(user, counts[user])
            for key in named + [f"O{bucket(user)}" for user, _ in other_files[i]]:
                keys[key] += 1
                expected.append((key, keys[key]))
        env = env_factory("STREAMING", {"execution.checkpointing.dir": ckpt,
                                        "execution.streaming.query-mapping": "one-query"})
        env.set_parallelism(2)
        read = spark.readStream.schema(KV_SCHEMA)
        program(env, env.from_dataframe(read.parquet(src)),
                env.from_dataframe(read.parquet(other)), out, second)
        with QueryCounter(spark) as queries:
            env.execute(job)
        assert len(queries.started) == 1, queries.started
        # each key's running count reaches every number once, whatever the order
        assert delta_rows(f"{out}/{job}") == sorted(expected)
        after_run(out)
    meta = spark.read.format("state-metadata").load(f"{ckpt}/{job}/query/checkpoint")
    assert sorted(r["operatorId"] for r in meta.select("operatorId").distinct().collect()) \
        == [0, 1]
    return out


def test_a_stage_read_by_sinks_and_through_a_union_with_another_stream(spark, env_factory,
                                                                       tmp_path):
    """The stage above is carried through the stage below the union: the pass running its
    path hands its records on through the union (branches.tagged_union); the second run,
    the next version of the program, also writes the stage's side output."""
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    running: list[tuple] = []

    def counted(user: str, n: int) -> list[str]:
        running.append((user, n))
        return [f"E{bucket(user)}"] if n % 2 == 0 else []

    def after_run(out: str) -> None:
        assert delta_rows(f"{out}/running") == sorted(running)
        second.append(len(running))

    second: list[int] = []
    out = with_another_stream(spark, env_factory, tmp_path, "merged", (19, 5), merged, counted,
                              after_run)
    assert delta_rows(f"{out}/thirds") == sorted(r for r in running[second[0]:]
                                                 if r[1] % 3 == 0)


def mixed(env, records, others, out: str, second: bool) -> None:
    """The running counts' even ones and every third (its side output), each by bucket,
    merged with another stream's records by bucket and counted per key."""
    ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(ByV())
    running = (records.assign_timestamps_and_watermarks(ws).key_by(lambda r: r[0])
               .process(Running(), PAIR).uid("running"))
    evens = running.filter(lambda r: r[1] % 2 == 0).map(lambda r: (f"e{bucket(r[0])}", 1), PAIR)
    thirds = running.get_side_output(THIRDS).map(lambda r: (f"t{bucket(r[0])}", 1), PAIR)
    elsewhere = others.assign_timestamps_and_watermarks(ws).map(
        lambda r: (f"o{bucket(r[0])}", 1), PAIR)
    (evens.union(elsewhere, thirds).map(lambda r: (r[0].upper(), r[1]), PAIR)
     .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("mixed")
     .sink_to_delta(f"{out}/mixed"))


def test_paths_from_a_stage_into_a_union_with_another_stream(spark, env_factory, tmp_path):
    """Two paths from the stage above (its even counts, its side output) and another stream
    meet in a union in front of the stage below: one pass over the stage's output runs both
    paths (branches.shared_paths), so the query holds it once."""
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    seen: set[str] = set()

    def counted(user: str, n: int) -> list[str]:
        keys = [f"E{bucket(user)}"] * (n % 2 == 0) + [f"T{bucket(user)}"] * (n % 3 == 0)
        seen.update(k[0] for k in keys)
        return keys

    with_another_stream(spark, env_factory, tmp_path, "mixed", (23, 29), mixed, counted,
                        lambda out: None)
    assert seen == {"E", "T"}  # both paths reached the stage
