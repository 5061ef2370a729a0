"""Progress a user can follow (issue #8): BATCH stage lines and rows, savepoint phase lines.

Counts come from ``DataFrame.observe`` on the real shared session; that they work over
Spark Connect is checked by test_connect.py (connect_jobs.py returns a job's progress rows).
"""

from __future__ import annotations

import logging
import re

import pytest
from pyspark_datastream import (
    Configuration,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint, inspect_savepoint
from pyspark_datastream.spark_io.dataframes import to_arrow  # DataFrame.toArrow: Spark 4.0+

LOGGER = "pyspark_datastream"
OUT_T = Types.ROW_NAMED(["k", "total"], [Types.STRING(), Types.LONG()])
SECONDS = r"\(\d+\.\d s\)"


class Total(KeyedProcessFunction):
    """Sums each key's values; emits (key, total) once, on a timer at end of input."""

    def open(self, ctx):
        self.total = ctx.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        self.total.update((self.total.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(0)

    def on_timer(self, ts, ctx):
        yield (ctx.get_current_key(), self.total.value())


def _data(n: int = 40, keys: int = 4) -> list[tuple[str, int]]:
    return [(f"k{i % keys}", i) for i in range(n)]


def _lines(caplog, job: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and f"job '{job}'" in r.getMessage()]


def _one(lines: list[str], pattern: str) -> str:
    found = [line for line in lines if re.search(pattern, line)]
    assert len(found) == 1, (pattern, lines)
    return found[0]


def test_batch_job_logs_each_stage_with_exact_counts_and_times(env_factory, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    env = env_factory("BATCH")
    out = str(tmp_path / "totals")
    (env.from_collection(_data()).key_by(lambda x: x[0])
     .process(Total(), output_type=OUT_T).name("sessions").sink_to_delta(out))
    result = env.execute("progress-job")

    lines = _lines(caplog, "progress-job")
    _one(lines, r"stage 1/4 source 'Collection Source' \(collection of 40 elements\): "
                rf"40 rows read; ran in sink '.*' {SECONDS}$")
    _one(lines, r"stage 2/4 key_by .*: 40 in -> 40 out; ran in sink")
    _one(lines, r"stage 3/4 sort\+keyed process 'sessions' \(shuffle into 2 partitions by key "
                r"group, sorted by key, timestamp\): 40 in -> 4 out; ran in sink '.*' "
                rf"{SECONDS}$")
    _one(lines, rf"stage 4/4 Delta sink '.*' \(Delta table {re.escape(out)}, mode append\): "
                r"4 rows written in \d+\.\d s$")
    _one(lines, r"progress done: 4 stages, 1 Spark actions")

    rows = result.get_progress()
    assert [(r["stage"], r["stages"], r["kind"]) for r in rows] == [
        (1, 4, "source"), (2, 4, "pass"), (3, 4, "keyed"), (4, 4, "sink")]
    assert [(r["rows_in"], r["rows_out"]) for r in rows] == [(None, 40), (40, 40), (40, 4),
                                                              (4, None)]
    assert rows[2]["name"] == "sort+keyed process 'sessions'"
    assert all(r["duration_ms"] is not None and r["duration_ms"] >= 0 for r in rows)
    assert len({r["action"] for r in rows}) == 1  # everything ran in the one sink action
    assert list(result.sink_counts.values()) == [4]
    assert env.get_last_progress() == rows


@pytest.mark.compat  # the counts come from Observations, whose JVM API differs on Spark 3.5
def test_observations_add_no_spark_job_and_collect_logs_once_fetched(env_factory, spark,
                                                                     caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    env = env_factory("BATCH")
    stream = env.from_collection(_data()).key_by(lambda x: x[0]).process(Total(),
                                                                         output_type=OUT_T)
    tracker = spark.sparkContext.statusTracker()

    spark.sparkContext.setJobGroup("progress-plain", "to_dataframe: no observation")
    plain = sorted(tuple(d.values()) for d in to_arrow(stream.to_dataframe()).to_pylist())
    spark.sparkContext.setJobGroup("progress-observed", "execute_and_collect: observed")
    it = stream.execute_and_collect("progress-collect")
    assert _lines(caplog, "progress-collect") == []  # nothing ran yet
    observed = sorted(it)
    spark.sparkContext.setJobGroup("", "")

    assert observed == plain == [("k0", 180), ("k1", 190), ("k2", 200), ("k3", 210)]
    jobs_plain = len(tracker.getJobIdsForGroup("progress-plain"))
    jobs_observed = len(tracker.getJobIdsForGroup("progress-observed"))
    assert jobs_plain >= 1
    assert jobs_observed == jobs_plain  # observe() adds no Spark job, no second pass
    lines = _lines(caplog, "progress-collect")
    _one(lines, r"stage 3/4 sort\+keyed process .*: 40 in -> 4 out; ran in collect")
    _one(lines, r"stage 4/4 collect .*: 4 rows collected in \d+\.\d s$")
    rows = env.get_last_progress()
    assert [(r["kind"], r["rows_in"], r["rows_out"]) for r in rows] == [
        ("source", None, 40), ("pass", 40, 40), ("keyed", 40, 4), ("collect", 4, None)]


def test_native_aggregation_and_side_output_counts(env_factory, spark, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    env = env_factory("BATCH")
    words = spark.createDataFrame([(f"w{i % 3}",) for i in range(9)], "word string")
    counts = (env.from_dataframe(words)
              .map(lambda r: (r[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
              .key_by(lambda x: x[0]).sum(1))
    assert sorted(counts.execute_and_collect("progress-native")) == [("w0", 3), ("w1", 3),
                                                                     ("w2", 3)]
    lines = _lines(caplog, "progress-native")
    _one(lines, r"source 'DataFrame Source' \(DataFrame\): 9 rows read")
    _one(lines, r"native aggregation 'Sum\(1\)' \(Spark groupBy\(f0\).agg.*\): 9 in -> 3 out")

    odd = OutputTag("odd", Types.LONG())

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 2:
                ctx.output(odd, value)
            else:
                yield value

    main = env.from_collection(list(range(10))).process(Split(), output_type=Types.LONG())
    side = main.get_side_output(odd)
    assert sorted(side.execute_and_collect("progress-side")) == [1, 3, 5, 7, 9]
    _one(_lines(caplog, "progress-side"),
         r"stage 2/3 pass 'Split': 10 in -> 5 out \(\+5 side-output rows\)")


def test_savepoint_write_and_restore_log_their_phases(env_factory, spark, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    sp = str(tmp_path / "sp")
    env = env_factory("BATCH")
    stream = (env.from_collection(_data()).key_by(lambda x: x[0])
              .process(Total(), output_type=OUT_T).uid("totals").name("sessions"))
    stream.sink_to_delta(str(tmp_path / "out"))
    result = env.execute("progress-sp-write", savepoint_path=sp)

    info = inspect_savepoint(sp)
    entries = sum(s["entries"] for op in info["operators"] for s in op["states"])
    assert entries == 8  # per key: its ValueState and its pending event-time timer
    all_lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    lines = _lines(caplog, "progress-sp-write")
    # the keyed pass writes its entries itself while its records go to the sink: its stage
    # runs in the sink's action; the savepoint stage counts the entries the passes wrote
    _one(lines, r"stage 3/5 sort\+keyed process 'sessions' \(.*state saved to the savepoint\): "
                r"40 in -> 0 out; ran in sink 'DeltaSink\(.*\)' " + rf"{SECONDS}$")
    _one(lines, r"stage 5/5 savepoint \(Delta table .*, version 0\): 8 state entries written "
                r"in \d+\.\d s$")
    _one(all_lines, rf"^BATCH savepoint: committing 8 state entries of operators \['totals'\], "
                    rf"written by their keyed passes, to {re.escape(sp)}$")
    _one(all_lines, rf"^savepoint {re.escape(sp)}: 8 entries written in \d+ files, [\d,]+ bytes; "
                    r"committing$")
    _one(all_lines, rf"^BATCH savepoint written to {re.escape(sp)} \(version 0, operators "
                    r"\['totals'\]\) in \d+\.\d s$")
    rows = result.get_progress()
    assert [(r["kind"], r["entries_out"]) for r in rows if r["entries_out"] is not None] == [
        ("keyed", 8), ("savepoint", 8)]

    caplog.clear()
    conf = Configuration()
    conf.set_string("execution.savepoint.path", sp)
    env2 = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    env2.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env2.set_parallelism(2)
    restored = (env2.from_collection(_data()).key_by(lambda x: x[0])
                .process(Total(), output_type=OUT_T).uid("totals").name("sessions"))
    assert sorted(restored.execute_and_collect("progress-sp-restore")) == [
        ("k0", 360), ("k1", 380), ("k2", 400), ("k3", 420)]
    all_lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    _one(all_lines, rf"^restore: savepoint {re.escape(sp)} \(version latest\) metadata "
                    r"read in \d+\.\d\d s: 1 operators, max parallelism 128, written by BATCH "
                    r"job 'progress-sp-write'$")
    _one(all_lines, r"^restore: compatibility checked in \d+\.\d\d s; restoring savepoint "
                    r".* into operators \['totals'\]")
    _one(_lines(caplog, "progress-sp-restore"),
         r"stage 3/4 sort\+keyed process 'sessions' \(.*state restored from savepoint .*\): "
         r"40 in -> 4 out, 8 savepoint state entries restored \(about 4 key groups\)")
    keyed = [r for r in env2.get_last_progress() if r["kind"] == "keyed"]
    assert [(r["rows_in"], r["rows_out"], r["entries_in"]) for r in keyed] == [(40, 4, 8)]

    caplog.clear()
    Savepoint.load(sp, spark)
    _one([r.getMessage() for r in caplog.records if r.name == LOGGER],
         rf"^savepoint {re.escape(sp)} version 0: metadata read in \d+\.\d\d s \(1 operators "
         r"\['totals'\], max parallelism 128, written by BATCH job 'progress-sp-write'\)$")


def test_streaming_result_carries_the_micro_batch_rows(env_factory, tmp_path):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    (env.from_collection(_data()).key_by(lambda x: x[0]).process(Total(), output_type=OUT_T)
     .sink_to_delta(str(tmp_path / "out")))
    result = env.execute("progress-streaming")
    rows = result.get_progress()
    assert result.mode == "STREAMING" and rows
    assert rows == env.get_last_progress()
    assert {"query", "batch", "rows_in", "rows_out", "watermark", "duration_ms"} <= set(rows[0])
    # every record went through some micro-batch (plus the end-of-input sentinel row)
    assert sum(r["rows_in"] or 0 for r in rows) >= 40
    assert all(isinstance(r["batch"], int) and r["duration_ms"] is not None for r in rows)
