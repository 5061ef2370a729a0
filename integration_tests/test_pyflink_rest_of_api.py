"""PyFlink's legacy and runtime names on real Spark (issue 55): a StreamingFileSink written
by ``ds.add_sink`` gives each record one line, as FileSink does; RestartStrategies decide
how many attempts a task gets: a task failing once fails the job on the suite's
``local[2]`` session (one attempt, what ``no_restart()`` means), and succeeds with exact
output in a fresh session started with ``fixed_delay_restart(1, 0)`` (two attempts, the
environment's own ``local[2,2]``). Expected values come from plain Python over the input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from jvm_options import submit_env
from pyspark_datastream import (
    BucketAssigner,
    ConfigurationError,
    Encoder,
    OutputFileConfig,
    RestartStrategies,
    StreamingFileSink,
    Types,
)


def test_a_streaming_file_sink_written_by_add_sink_gives_each_record_one_line(env_factory,
                                                                              tmp_path):
    records = [f"r{i}" for i in range(50)]
    sink = (StreamingFileSink.for_row_format((tmp_path / "out").as_uri(),
                                             Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig("legacy", ".txt"))
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    env = env_factory("BATCH")
    env.from_collection(records, Types.STRING()).map(
        lambda s: s.upper(), output_type=Types.STRING()).add_sink(sink)
    env.execute("streaming-file-sink")
    names = [n for n in os.listdir(tmp_path / "out") if not n.startswith((".", "_"))]
    assert names and all(n.startswith("legacy") and n.endswith(".txt") for n in names)
    lines = [line for n in names
             for line in (tmp_path / "out" / n).read_text(encoding="utf-8").splitlines()]
    assert sorted(lines) == sorted(r.upper() for r in records)


class FailOnce:
    """Raises on its first call in any process (a marker file says it happened)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, value: int) -> int:
        if not os.path.exists(self.marker):
            with open(self.marker, "w", encoding="utf-8"):
                pass
            raise RuntimeError("the first attempt fails")
        return value * 2


def test_one_attempt_on_the_suite_session_fails_the_job(env_factory, tmp_path):
    env = env_factory("BATCH")
    env.set_restart_strategy(RestartStrategies.no_restart())  # what local[2] gives
    with pytest.raises(ConfigurationError, match="spark.task.maxFailures=4.*1 attempt"):
        env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 1000))
    env.from_collection(list(range(10)), Types.INT()).map(
        FailOnce(str(tmp_path / "failed")), output_type=Types.INT()).print()
    with pytest.raises(Exception, match="'no-restart'.*failed") as failed:
        env.execute("no-restart")
    causes, error = [], failed.value
    while error is not None:
        causes.append(str(error))
        error = error.__cause__ or error.__context__
    # the task's only attempt failed: with a second one it succeeds (the next test)
    assert any("the first attempt fails" in c for c in causes), causes


CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[2])
from test_pyflink_rest_of_api import FailOnce
from pyspark_datastream import RestartStrategies, StreamExecutionEnvironment, Types
env = StreamExecutionEnvironment.get_execution_environment()
env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1, 0))
out = env.from_collection(list(range(10)), Types.INT()).map(
    FailOnce(sys.argv[1]), output_type=Types.INT()).execute_and_collect(limit=100)
print(json.dumps({"master": env.spark.sparkContext.master, "out": sorted(out),
                  "failed_once": os.path.exists(sys.argv[1])}))
"""


def test_a_fixed_delay_restart_lets_a_failed_task_run_again(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    child_env = submit_env()
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (here, child_env.get("PYTHONPATH"))
                                              if p)
    child_env.pop("PYSPARK_DATASTREAM_MASTER", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "failed"), here],
                          capture_output=True, text=True, timeout=600, env=child_env,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["master"] == "local[2,2]"
    assert result["failed_once"] is True
    assert result["out"] == [v * 2 for v in range(10)]


def _csv_rows(env, schema, path):
    from pyspark_datastream import CsvReaderFormat, FileSource, WatermarkStrategy

    return sorted(tuple(r) for r in env.from_source(
        FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(path))
        .build(), WatermarkStrategy.no_watermarks(), "CSV").execute_and_collect("csv"))


def test_strict_headers_refuse_a_file_whose_header_is_not_the_schemas(env_factory, tmp_path):
    from pyspark_datastream import CsvSchema

    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (good / "a.csv").write_text("user,amount\nann,3\nbob,4\n", encoding="utf-8")
    (bad / "a.csv").write_text("name,total\nann,3\n", encoding="utf-8")

    def schema(strict: bool):
        return (CsvSchema.builder().add_string_column("user").add_number_column("amount")
                .set_use_header().set_strict_headers(strict).build())

    env = env_factory("BATCH")
    assert _csv_rows(env, schema(True), good) == [("ann", 3), ("bob", 4)]
    assert _csv_rows(env, schema(False), bad) == [("ann", 3)]  # the header is skipped
    with pytest.raises(Exception, match="'csv'.*failed") as failed:
        _csv_rows(env, schema(True), bad)
    causes, error = [], failed.value
    while error is not None:
        causes.append(str(error))
        error = error.__cause__ or error.__context__
    assert any("CSV header does not conform to the schema" in c for c in causes), causes
