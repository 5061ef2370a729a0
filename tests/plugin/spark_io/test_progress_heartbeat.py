"""plugin/progress.py without Spark: heartbeats, stage lines and rows from explicit counts."""

from __future__ import annotations

import logging
import threading
import time

from pyspark_datastream.spark_io.progress import (
    COUNT_KEYS,
    BatchProgress,
    Heartbeat,
    fmt_count,
    observed_metrics,
)

LOGGER = "pyspark_datastream"


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_heartbeat_logs_while_running_and_stops_on_exit(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Heartbeat("writing savepoint /sp", interval=0.05) as hb:
        time.sleep(0.3)
    beats = hb.beats
    time.sleep(0.2)
    lines = [m for m in _messages(caplog) if m.startswith("still writing savepoint /sp: ")]
    assert beats >= 2
    assert len(lines) == hb.beats == beats  # nothing after exit
    assert all(m.endswith(" s elapsed") for m in lines)
    assert not [t for t in threading.enumerate() if t.name == "pyspark-datastream-heartbeat"]


def test_heartbeat_stops_when_the_block_fails(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    try:
        with Heartbeat("failing phase", interval=0.05):
            raise ValueError("boom")
    except ValueError:
        pass
    time.sleep(0.15)
    assert not [t for t in threading.enumerate() if t.name == "pyspark-datastream-heartbeat"]
    assert [m for m in _messages(caplog) if "failing phase" in m] == []


def test_nested_heartbeats_log_the_innermost_phase_once_per_interval(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Heartbeat("running sink 'out'", interval=0.05) as outer:
        with Heartbeat("committing Delta table /t", interval=0.05):
            time.sleep(0.3)
    lines = [m for m in _messages(caplog) if m.startswith("still ")]
    assert len(lines) == outer.beats >= 2
    assert all(m.startswith("still committing Delta table /t: ") for m in lines)


def test_short_phase_logs_no_heartbeat(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Heartbeat("quick phase", interval=5.0) as hb:
        pass
    assert hb.beats == 0
    assert _messages(caplog) == []


def test_fmt_count():
    assert fmt_count(1_000_000) == "1,000,000"
    assert fmt_count(0) == "0"
    assert fmt_count(None) == "?"


def test_observed_metrics_of_nothing_is_none():
    assert observed_metrics(None) is None
    assert observed_metrics(object()) is None


def test_stage_lines_and_rows_from_explicit_counts(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    progress = BatchProgress("job-x")
    sink = progress.add_stage("sink", "Delta sink", ["out"], "Delta table /t, mode append")
    never = progress.add_stage("pass", "pass", ["Map"])
    progress.planned()
    with progress.action("sink 'out'"):
        progress.complete(sink, rows_in=12_345)
    lines = _messages(caplog)
    assert len(lines) == 1
    assert lines[0].startswith("BATCH job 'job-x' stage 1/2 Delta sink 'out' (Delta table /t, "
                               "mode append): 12,345 rows written in ")
    rows = progress.finish()
    assert rows is progress.rows
    assert progress.line(never) == "BATCH job 'job-x' stage 2/2 pass 'Map': not run (no Spark " \
                                   "action read it)"
    assert _messages(caplog)[-1].startswith("BATCH job 'job-x' progress done: 2 stages, "
                                            "1 Spark actions, ")
    assert [r["stage"] for r in rows] == [1, 2]
    assert rows[0]["rows_in"] == 12_345 and rows[0]["action"] == "sink 'out'"
    assert rows[0]["duration_ms"] is not None
    assert rows[1]["action"] is None and rows[1]["duration_ms"] is None
    assert set(COUNT_KEYS) <= set(rows[0])
    assert progress.finish() is rows and len(rows) == 2  # once


def test_stage_lines_wait_until_planning_is_done(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    progress = BatchProgress("job-y")
    staged = progress.add_stage("savepoint", "savepoint", [], "Delta table /sp")
    with progress.action("savepoint staging"):
        progress.complete(staged, entries_out=8)
    assert [m for m in _messages(caplog) if "stage" in m] == []  # total not known yet
    progress.add_stage("sink", "print sink", ["p"])
    progress.planned()
    assert [m.split(":")[0] for m in _messages(caplog)] == [
        "BATCH job 'job-y' stage 1/2 savepoint (Delta table /sp)"]
    assert "8 state entries written in " in _messages(caplog)[0]


def test_failed_action_leaves_stages_unresolved(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    progress = BatchProgress("job-z")
    stage = progress.add_stage("sink", "print sink", ["p"])
    progress.planned()
    try:
        with progress.action("sink 'p'"):
            raise RuntimeError("executor lost")
    except RuntimeError:
        pass
    rows = progress.finish(succeeded=False)
    assert not stage.done and rows[0]["rows_in"] is None
    assert _messages(caplog)[-1].startswith("BATCH job 'job-z' failed: 1 stages, 0 Spark actions")
