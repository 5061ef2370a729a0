"""Part of the suite over Spark Connect, in a subprocess (see connect_jobs.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyspark
import pytest
from connect_jobs import FAN_INPUT
from jars import connect_server_jars
from jvm_options import submit_env

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.connect
@pytest.mark.compat
def test_batch_and_streaming_jobs_over_spark_connect(tmp_path):
    # the local Connect server's JVM gets the suite's short-job options (jvm_options.py) through
    # PYSPARK_SUBMIT_ARGS: over Connect a core conf set on the builder is refused
    # SPARK_TESTING: pyspark's local Connect server binds an ephemeral port (SPARK-42272)
    # and its client asks the server which, instead of the fixed 15002 that a second server
    # on this host (another run, an install test) would hold
    env = submit_env(dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=HERE,
                          SPARK_TESTING="1"), checkpoints=True)
    server = connect_server_jars()  # Spark 3.5's pip package has no Connect server
    if server:
        env["PYSPARK_SUBMIT_ARGS"] = f"--jars {','.join(server)} {env['PYSPARK_SUBMIT_ARGS']}"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "connect_jobs.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results["reduce"] == [["a", 4], ["b", 2], ["c", 5]]
    assert results["sum"] == [["w1", 2], ["w2", 1]]
    assert results["process_df"] == [["a", 4], ["b", 2], ["c", 5]]
    assert results["delta"] == [["a", 4], ["b", 2], ["c", 5]]
    # a bootstrap savepoint written, read and restored over Connect
    assert results["bootstrap_read"] == [["a", 100], ["z", 7]]
    assert results["bootstrap_restored"] == [["a", 104], ["b", 2], ["c", 5]]
    # STREAMING: applyInPandasWithState and a memory-sink collect over Connect
    assert results["streaming"] == [["a", 1], ["a", 4], ["b", 2]]
    assert results["streaming_delta"] == [["a", 1], ["a", 4], ["b", 2]]
    line = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
    if line >= (4, 1):  # one query over Connect: stage two counts stage one's records per key
        assert results["one_query"] == [["a", 1], ["a", 2], ["b", 1]]
        assert results["one_query_staged"] == []  # per-stage: ["stage1-0-input"]
        # the running sums (a,1) (b,2) (a,4) stamped 10x: each record meets the watermark
        # before its micro-batch (none); then the stage's watermark is 40 less 1 ms and the
        # timers at or below it fire
        lowest = -(2**63)
        assert results["one_query_inband"] == [
            ["a", 10, lowest], ["a", 15, 39], ["a", 40, lowest], ["b", 20, lowest],
            ["b", 25, 39]]
        _check_fanned_out(results)
    elif line == (4, 0):  # Spark Connect 4.0 has no transformWithStateInPandas: refused
        assert "needs transformWithStateInPandas" in results["one_query"]
        assert "Spark Connect has it from 4.1" in results["one_query"]
    # the sink's counter lives in the server's process: no count rather than a wrong one
    assert results["streaming_counts"] == {}
    line = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
    if line >= (4, 1):
        assert results["progress"] == [["source", None, 4], ["pass", 4, 4], ["keyed", 4, 3],
                                       ["sink", 3, None]]
    elif line == (4, 0):  # Spark Connect 4.0 hands a write the outermost observation only
        # (measured on 4.0.5; a collect gets them all): the keyed stage's output, no other
        assert results["progress"] == [["source", None, None], ["pass", None, None],
                                       ["keyed", None, 3], ["sink", 3, None]]
    else:  # Spark Connect 3.5 hands observed metrics to toPandas only: no count, not a wrong one
        assert results["progress"] == [["source", None, None], ["pass", None, None],
                                       ["keyed", None, None], ["sink", 3, None]]


def _check_fanned_out(results: dict) -> None:
    """Two sinks of one keyed stage (main and side output) in the job's one query over
    Connect, stopped with a savepoint: each record written once, against running totals
    computed here."""
    totals: dict[str, int] = {}
    main: list[tuple[str, int]] = []
    side: list[int] = []
    for i, rows in enumerate(FAN_INPUT):
        for k, v in rows:
            totals[k] = totals.get(k, 0) + v
            main.append((k, totals[k]))
            side += [v] if v % 2 else []
        assert results[f"fan_main_{i}"] == sorted([list(r) for r in main])
        assert results[f"fan_side_{i}"] == sorted(side)
        # the sinks' counters live in the server's process: no count rather than a wrong one
        assert results[f"fan_counts_{i}"] == {}
    assert results["fan_queries"] == ["query"]  # one query, nothing staged between stages
    assert results["fan_savepoint"] == sorted([k, t] for k, t in totals.items())
