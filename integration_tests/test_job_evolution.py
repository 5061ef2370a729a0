"""A scheduled STREAMING job evolves and keeps its state (evolution.py): between two
available-now runs its source gains a column and the program gains stateless steps in front
of its keyed operator; the second run resumes the first one's checkpoint, and the final
totals equal a plain-Python model of all input. Changes Flink would not restore are refused,
typed, when the job is built, with nothing run or written. Real Spark, heap and RocksDB."""

from __future__ import annotations

import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import delta_rows
from pyspark_datastream import (
    CheckpointMismatchError,
    IncompatibleStateError,
    KeyedProcessFunction,
    Types,
    UnclaimedStateError,
    ValueStateDescriptor,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
_mtime = [1_750_000_000]


def _write(folder: str, name: str, rows: list[tuple], with_tag: bool) -> None:
    """A Parquet file of (k, v[, tag]) rows, made visible atomically, later than the last."""
    os.makedirs(folder, exist_ok=True)
    columns = {"k": [r[0] for r in rows], "v": pa.array([r[1] for r in rows], pa.int64())}
    if with_tag:
        columns["tag"] = [r[2] for r in rows]
    tmp = os.path.join(folder, f".{name}.tmp")
    pq.write_table(pa.table(columns), tmp)
    _mtime[0] += 10
    os.utime(tmp, (_mtime[0], _mtime[0]))
    os.replace(tmp, os.path.join(folder, f"{name}.parquet"))


def _v1(env, spark, src):
    """Version 1: totals of v per k (uid ``totals``)."""
    df = spark.readStream.schema("k string, v long").parquet(src)
    return (env.from_dataframe(df).map(lambda r: (r[0], r[1]), output_type=PAIR)
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals"))


def _v2(env, spark, src):
    """Version 2: the source has a ``tag`` column; rows tagged ``skip`` are filtered out and
    v is doubled for rows tagged ``x2``, before the same keyed reduce."""
    df = spark.readStream.schema("k string, v long, tag string").parquet(src)
    return (env.from_dataframe(df).filter(lambda r: r[2] != "skip")
            .map(lambda r: (r[0], r[1] * (2 if r[2] == "x2" else 1)), output_type=PAIR)
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals"))


def _final(rows: list[tuple]) -> dict[str, int]:
    """The last total per key in the sink (totals only grow: the largest)."""
    out: dict[str, int] = {}
    for k, v in rows:
        out[k] = max(out.get(k, v), v)
    return out


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_column_and_stateless_steps_added_between_runs_keep_the_state(
        spark, env_factory, tmp_path, backend):
    rng = random.Random(52 + len(backend))
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    conf = {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
            "state.backend.type": backend, "execution.streaming.trigger": "available-now"}
    keys = [f"k{i}" for i in range(40)]
    model: dict[str, int] = {}
    for f in range(3):  # version 1's input: three files
        rows = [(rng.choice(keys), rng.randint(1, 100)) for _ in range(300)]
        _write(src, f"a{f}", rows, with_tag=False)
        for k, v in rows:
            model[k] = model.get(k, 0) + v
    env = env_factory("STREAMING", conf)
    _v1(env, spark, src).sink_to_delta(out)
    env.execute("evolving-job")
    assert _final(delta_rows(out)) == model

    # the upstream table gains a column (older files lack it: null), the program a filter
    for f in range(3):
        rows = [(rng.choice(keys), rng.randint(1, 100), rng.choice(["skip", "x2", "keep", None]))
                for _ in range(300)]
        _write(src, f"b{f}", rows, with_tag=True)
        for k, v, tag in rows:
            if tag != "skip":
                model[k] = model.get(k, 0) + v * (2 if tag == "x2" else 1)
    env = env_factory("STREAMING", conf)
    _v2(env, spark, src).sink_to_delta(out)
    env.execute("evolving-job")
    assert _final(delta_rows(out)) == model  # the first run's totals carried on

    manifest = json.loads((tmp_path / "ckpt" / "evolving-job" / "_job.json").read_text())
    assert "updated" in manifest and "Filter" in manifest["graph"]["operators"]
    assert set(manifest["evolution"]["stateful"]) == {"totals"}


class Total(KeyedProcessFunction):
    """A running total of v per key in ValueState ``total`` of ``value_type``."""

    def __init__(self, value_type):
        self.value_type = value_type

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", self.value_type))

    def process_element(self, value, ctx):
        total = int(self.total.value() or 0) + value[1]
        self.total.update(total if self.value_type == Types.LONG() else str(total))
        yield value[0], total


def _job(env, spark, src, out, *, value_type=None, key_type=None, extra_stage=False,
         drop_counts=False, count_reader=False):
    """Totals per key (uid ``totals``) into ``out``; a second branch counts records per key
    (uid ``counts``) into ``out-counts``. The keyword arguments are the changes tried."""
    df = spark.readStream.schema("k string, v long").parquet(src)
    stream = env.from_dataframe(df).map(lambda r: (r[0], r[1]), output_type=PAIR)
    totals_in = stream
    if extra_stage:  # a keyed stage inserted in front of totals
        totals_in = (stream.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], max(a[1], b[1])))
                     .uid("inserted"))
    if key_type is None:
        keyed = totals_in.key_by(lambda r: r[0], key_type=Types.STRING())
    else:
        keyed = totals_in.key_by(lambda r: len(r[0]), key_type=key_type)
    totals = keyed.process(Total(value_type or Types.LONG()), output_type=PAIR).uid("totals")
    totals.sink_to_delta(out).uid("totals-out")
    if count_reader:  # a second reader of totals: it would run in a query of its own
        totals.map(lambda r: r, output_type=PAIR).print().uid("peek")
    if not drop_counts:
        (stream.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + 1)).uid("counts")
         .sink_to_delta(out + "-counts").uid("counts-out"))


def test_changes_flink_would_not_restore_are_refused_when_built(spark, env_factory, tmp_path):
    src, out, root = str(tmp_path / "in"), str(tmp_path / "out"), tmp_path / "ckpt"
    # the per-stage mapping's rules (docs/user-guide/streaming-jobs.md); the one query's
    # own: test_one_query_sinks
    conf = {"execution.checkpointing.dir": str(root), "state.backend.type": "rocksdb",
            "execution.streaming.query-mapping": "per-stage"}
    _write(src, "a0", [("a", 1), ("bb", 2), ("a", 3)], with_tag=False)
    env = env_factory("STREAMING", conf)
    _job(env, spark, src, out)
    env.execute("guarded")
    first = delta_rows(out)
    assert first == [("a", 1), ("a", 4), ("bb", 2)]
    before = sorted((p, sorted(f)) for p, _, f in os.walk(root))

    def refused(error, match, **change):
        env = env_factory("STREAMING", conf)
        _job(env, spark, src, out, **change)
        with pytest.raises(error, match=match):
            env.execute("guarded")
        assert sorted((p, sorted(f)) for p, _, f in os.walk(root)) == before  # nothing ran
        assert delta_rows(out) == first

    refused(IncompatibleStateError, r"'totals', state 'total': checkpoint state is "
            r"incompatible with the program: value_serializer", value_type=Types.STRING())
    refused(IncompatibleStateError, r"operator 'totals': the checkpoint's key serializer .*"
            r"incompatible", key_type=Types.LONG())
    refused(UnclaimedStateError, r"'counts' \(counts\).*ignore-unclaimed-state=true",
            drop_counts=True)
    refused(CheckpointMismatchError, r"query of stateful operator 'totals' read source 0 and "
            r"would now read inserted.*input sources", extra_stage=True)
    refused(CheckpointMismatchError, r"'totals' ran in the Spark query of sink-totals-out and "
            r"would now run in that of totals-output", count_reader=True)

    # Flink's --allowNonRestoredState: the gone operator's state is dropped, the rest resumes
    _write(src, "a1", [("a", 10), ("bb", 1)], with_tag=False)
    env = env_factory("STREAMING", dict(conf, **{
        "execution.savepoint.ignore-unclaimed-state": "true"}))
    _job(env, spark, src, out, drop_counts=True)
    env.execute("guarded")
    assert delta_rows(out) == sorted(first + [("a", 14), ("bb", 3)])  # state carried on
