"""Physical partitioning (rebalance, shuffle, rescale, broadcast, partition_custom, forward)
seen from the next operator's ``get_index_of_this_subtask()``, in both modes.

One job per mode runs every partitioning side by side (their reports in one union) over the
same records read from several Parquet files (several upstream partitions). Each record is tagged with its upstream
subtask and its position there before the partitioning, and with the subtask that received
it after; the expected assignment is computed here from the partitioner and Flink's
semantics, not from the project's output.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from helpers import add_file
from pyspark_datastream import GraphBuildError, JobExecutionError, MapFunction, Partitioner

PARALLELISM = 3
FILES = 3
PER_FILE = 400


class Upstream(MapFunction):
    """(k, v) -> (v, upstream subtask, position of the record in that subtask)."""

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.seen = 0

    def map(self, value):
        self.seen += 1
        return (value[1], self.index, self.seen - 1)


class Retag(Upstream):
    """(v, up, pos) -> (v, this subtask, position of the record in it)."""

    def map(self, value):
        self.seen += 1
        return (value[0], self.index, self.seen - 1)


class Downstream(MapFunction):
    """(v, up, pos) -> (strategy, v, up, pos, subtask, number of subtasks)."""

    def __init__(self, strategy):
        self.strategy = strategy

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.subtasks = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return (self.strategy, *value, self.index, self.subtasks)


class ModPartitioner(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


def _source(env, spark, tmp_path, mode):
    folder = str(tmp_path / "in")
    values = list(range(FILES * PER_FILE))
    for f in range(FILES):
        add_file(folder, [(f"k{v}", v) for v in values[f::FILES]], f"part-{f}")
    if mode == "STREAMING":  # one available-now micro-batch of every file
        df = spark.readStream.schema("k string, v long").parquet(folder)
    else:
        df = spark.read.parquet(folder)
    return env.from_dataframe(df), values


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_every_partitioning_sends_records_where_flink_would(spark, env_factory, tmp_path, mode):
    config = {"execution.checkpointing.dir": str(tmp_path / "ckpt")} if mode == "STREAMING" else {}
    env = env_factory(mode, config)
    env.set_parallelism(PARALLELISM)
    source, values = _source(env, spark, tmp_path, mode)
    tagged = source.map(Upstream())
    custom = tagged.partition_custom(lambda key, n: key % n, lambda r: r[0])
    branches = {
        "custom": custom,
        "custom_shared": custom,  # one partitioning read by two operators
        "custom_class": tagged.partition_custom(ModPartitioner(), lambda r: r[0] // 7),
        "broadcast": tagged.broadcast(),
        "rebalance": tagged.rebalance(),
        "shuffle": tagged.shuffle(),
        "rescale": tagged.rescale(),
        # forward keeps each record in its subtask: tagged again after a partitioning
        "forward": tagged.rebalance().map(Retag()).forward(),
    }
    reports = [stream.map(Downstream(name)) for name, stream in branches.items()]
    merged = reports[0].union(*reports[1:])
    with merged.execute_and_collect(f"partitioning-{mode}") as it:
        rows = list(it)
    by: dict[str, list] = defaultdict(list)
    for strategy, v, up, pos, sub, n in rows:
        by[strategy].append((v, up, pos, sub, n))
    for strategy in branches:
        got = by[strategy]
        assert {n for *_, n in got} == {PARALLELISM}, strategy
        if strategy == "broadcast":  # every subtask sees every record
            assert Counter((v, sub) for v, _, _, sub, _ in got) == Counter(
                (v, s) for v in values for s in range(PARALLELISM))
            continue
        assert sorted(v for v, *_ in got) == values, strategy  # each record exactly once
        if strategy in ("custom", "custom_shared"):
            assert all(sub == v % PARALLELISM for v, _, _, sub, _ in got)
        elif strategy == "custom_class":
            assert all(sub == (v // 7) % PARALLELISM for v, _, _, sub, _ in got)
        elif strategy == "rebalance":
            # per upstream subtask: round-robin in its order, from some start subtask
            per_up: dict[int, list] = defaultdict(list)
            for _, up, pos, sub, _ in got:
                per_up[up].append((pos, sub))
            assert len(per_up) > 1  # several upstream subtasks
            for up, seq in per_up.items():
                seq.sort()
                start = seq[0][1]
                assert [sub for _, sub in seq] == [
                    (start + i) % PARALLELISM for i in range(len(seq))], up
        elif strategy == "shuffle":  # uniform random: every subtask gets a fair share
            counts = Counter(sub for *_, sub, _ in got)
            assert set(counts) == set(range(PARALLELISM))
            assert min(counts.values()) > len(values) / PARALLELISM / 2
        elif strategy == "rescale":  # upstream subtask i -> i % parallelism
            assert all(sub == up % PARALLELISM for _, up, _, sub, _ in got)
        else:  # forward: the same subtask as the stage before it
            assert all(sub == up for _, up, _, sub, _ in got)
            assert len({sub for *_, sub, _ in got}) == PARALLELISM


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_partition_out_of_range_fails_naming_operator_and_value(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")}
                      if mode == "STREAMING" else {})
    env.set_parallelism(2)
    ds = env.from_collection([1, 2, 5]).partition_custom(lambda key, n: key, lambda r: r)
    with pytest.raises(JobExecutionError, match=r"operator 'PartitionCustom': the partitioner "
                                                r"returned 2 for key 2, expected an int in \[0, 2\)"):
        list(ds.map(lambda x: x).execute_and_collect(f"out-of-range-{mode}"))


def test_forward_between_different_parallelism_is_refused_when_the_job_is_planned(env_factory):
    env = env_factory("BATCH")
    env.set_parallelism(2)
    ds = env.from_collection([1, 2]).forward().map(lambda x: x).set_parallelism(3)
    with pytest.raises(GraphBuildError, match=r"forward\(\) does not allow a change of "
                                              r"parallelism: upstream .* parallelism 2, "
                                              r"downstream operator 'Map'.* parallelism 3"):
        list(ds.execute_and_collect("forward"))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_keyed_operator_after_a_partitioning_sees_every_record_once(env_factory, tmp_path,
                                                                       mode):
    """A rebalance() then key_by().reduce(): the key shuffle follows the partitioning and
    each key's sum is the plain-Python sum of its values."""
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")}
                      if mode == "STREAMING" else {})
    records = [(f"k{i % 7}", i) for i in range(200)]
    sums = (env.from_collection(records).rebalance()
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
    final: dict[str, int] = {}
    for k, total in sums.execute_and_collect(f"rebalance-then-keyed-{mode}"):
        final[k] = max(final.get(k, 0), total)  # running sums grow: the last is the largest
    expected: dict[str, int] = defaultdict(int)
    for k, v in records:
        expected[k] += v
    assert final == expected
