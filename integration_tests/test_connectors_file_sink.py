"""``FileSink.for_row_format(base_path, Encoder.simple_string_encoder())`` through
``ds.sink_to`` as a PyFlink program uses it, in both modes: every record one line of a part
file named as Flink names them, in Flink's bucket folders; a STREAMING micro-batch Spark runs
again rewrites the same files (no line twice). Expected lines come from plain Python over the
input rows."""

from __future__ import annotations

import os
import random
import re
import time
from collections import Counter

import pytest
from helpers import add_file, drop_last_commit, env_for, last_commit
from pyspark_datastream import (
    BucketAssigner,
    Encoder,
    FileSink,
    GraphBuildError,
    KeyedProcessFunction,
    OutputFileConfig,
    RollingPolicy,
    Types,
    UnsupportedConnectorError,
    ValueStateDescriptor,
)


def _files(base) -> dict[str, str]:
    """Every file under ``base`` (relative path -> text), hidden ones included."""
    out = {}
    for folder, _, names in os.walk(base):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                out[os.path.relpath(path, base)] = f.read()
    return out


def _lines(files: dict[str, str]) -> list[str]:
    return [line for text in files.values() for line in text.splitlines()]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_each_record_is_one_line_of_a_part_file_named_as_configured(env_factory, tmp_path, mode):
    rng = random.Random(mode)
    records = [f"{rng.choice('abcdef')}:{rng.randint(0, 10**6)}" for _ in range(500)]
    base = tmp_path / "out"
    sink = (FileSink.for_row_format(base.as_uri(), Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("events")
                                     .with_part_suffix(".txt").build())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
            .build())
    env = env_for(env_factory, tmp_path, mode, f"sink-{mode}")
    env.from_collection(records, Types.STRING()).map(
        lambda s: s.upper(), output_type=Types.STRING()).sink_to(sink)
    env.execute(f"file-sink-{mode}")
    files = _files(base)
    assert Counter(_lines(files)) == Counter(r.upper() for r in records)
    assert all(text.endswith("\n") for text in files.values())  # each record and "\n"
    # Flink's <prefix>-<uid>-<subtask>-<counter><suffix>, directly in the base path, no
    # empty files, nothing hidden left behind
    pattern = re.compile(r"events-[0-9a-f-]{32,36}-\d+-\d+\.txt")
    assert files and all(pattern.fullmatch(name) for name in files), sorted(files)
    assert len({name.split("-")[1] for name in files}) == 1  # one uid per run


def test_default_buckets_are_hourly_folders_of_the_write_time(env_factory, tmp_path):
    base = tmp_path / "hourly"
    before = time.time()
    env = env_for(env_factory, tmp_path, "BATCH", "hourly")
    env.from_collection(["x", "y", "z"], Types.STRING()).sink_to(
        FileSink.for_row_format(str(base), Encoder.simple_string_encoder()).build())
    env.execute("file-sink-hourly")
    after = time.time()
    files = _files(base)
    assert sorted(_lines(files)) == ["x", "y", "z"]
    # Flink's default DateTimeBucketAssigner: yyyy-MM-dd--HH in the local zone
    hours = {time.strftime("%Y-%m-%d--%H", time.localtime(t)) for t in (before, after)}
    assert {os.path.dirname(name) for name in files} <= hours
    assert all(re.fullmatch(r"part-[0-9a-f-]+-\d+-0", os.path.basename(n)) for n in files)


class RunningSum(KeyedProcessFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield f"{value[0]},{total}"


def test_streaming_batch_run_again_rewrites_the_same_files(spark, env_factory, tmp_path):
    rng = random.Random(5)
    src, base = str(tmp_path / "in"), tmp_path / "out"
    rows = [[(rng.choice("pqrs"), rng.randint(1, 50)) for _ in range(30)] for _ in range(2)]
    for i, part in enumerate(rows):
        add_file(src, part, f"f{i}")
    # a bucket per second: a rerun at another time would land in another folder
    sink = (FileSink.for_row_format(str(base), Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.date_time_bucket_assigner(
                "yyyy-MM-dd'T'HH-mm-ss", "UTC")).build())
    config = {"execution.checkpointing.dir": str(tmp_path / "ckpt")}

    def run() -> None:
        env = env_factory("STREAMING", config)
        df = spark.readStream.schema("k string, v long").parquet(src)
        (env.from_dataframe(df).key_by(lambda r: r[0])
            .process(RunningSum(), output_type=Types.STRING()).sink_to(sink))
        env.execute("file-sink-replay")

    run()
    first = _files(base)
    totals: dict[str, int] = {}
    expected = []
    for k, v in (r for part in rows for r in part):
        totals[k] = totals.get(k, 0) + v
        expected.append(f"{k},{totals[k]}")
    assert Counter(_lines(first)) == Counter(expected)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d", os.path.dirname(n)) for n in first)
    replayed = drop_last_commit(tmp_path / "ckpt")
    assert any(name.endswith(f"-{replayed}") for name in first)  # the batch wrote files
    time.sleep(1.1)  # the rerun's own clock is in another second
    run()
    assert last_commit(tmp_path / "ckpt") == replayed  # Spark ran the batch again
    # the same files with the same lines (in any order within a file): none twice
    assert {n: Counter(t.splitlines()) for n, t in _files(base).items()} == {
        n: Counter(t.splitlines()) for n, t in first.items()}


def test_refusals_name_the_sink_and_the_setting(env_factory, tmp_path):
    env = env_for(env_factory, tmp_path, "BATCH", "refuse")
    numbers = env.from_collection([1, 2], Types.INT())
    sink = FileSink.for_row_format(str(tmp_path / "o"), Encoder.simple_string_encoder()).build()
    with pytest.raises(GraphBuildError, match="simple_string_encoder.*str records.*INT"):
        numbers.sink_to(sink)
    with pytest.raises(UnsupportedConnectorError, match="for_bulk_format.*sink_to_delta"):
        FileSink.for_bulk_format(str(tmp_path), object())
    with pytest.raises(UnsupportedConnectorError, match="letter 'E'"):
        BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd EEE")
    with pytest.raises(GraphBuildError, match="unknown time zone 'Mars/Base'"):
        BucketAssigner.date_time_bucket_assigner(timezone_id="Mars/Base")
    with pytest.raises(GraphBuildError, match="part_prefix must be a str without '/'"):
        OutputFileConfig("a/b")
    with pytest.raises(GraphBuildError, match="part_size must be a positive int"):
        RollingPolicy.default_rolling_policy(part_size=0)
    with pytest.raises(UnsupportedConnectorError, match="charset 'UTF-16'"):
        Encoder.simple_string_encoder("UTF-16")
