"""The Spark benchmarks' ``--quick`` runs, end to end (``make test-bench``, which ``.ci/run``
runs after ``make test``: they check the benchmarks, not the product, so they stay out of the
suite's time).

Each benchmark compares its variants' results with its baseline's (or with pandas) and
exits non-zero when one differs; here each runs on its small ``--quick`` input and its last
line, JSON, must hold the fields the README's figures are read from and say that every
comparison passed. Speed is not asserted (the figures of a quick run mean nothing; the
driver JVM gets the suite's short-job options, ``jvm_options.py``).

``make bench-quick`` runs each benchmark in its own process; here WordCount (``--batch-only``
first, so its Python workers never ran a STREAMING variant, then on RocksDB with a given
heap, then ``--streaming-only``), Sessionize, the savepoint, async I/O and route benchmarks
run one after the other in one process and one local[2] SparkSession (each ``main`` gets the
session the one before started, as a program gets the active session): one JVM start
instead of seven. The S3 benchmark needs the s3a jars and its server's Hadoop settings when
its JVM starts: it runs in a process of its own. The memory benchmark starts a process per
measurement of the runs above: ``make bench-quick`` runs it, the suite its arithmetic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from jvm_options import submit_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.bench

# (name, module, arguments after --quick --data DIR), in the order they run in one process
SHARED = [
    ("wordcount_batch_only", "wordcount", ["--batch-only", "--driver-memory", "1200m"]),
    ("sessionize", "sessionize", ["--breakdown"]),
    ("savepoint_io", "savepoint_io", []),
    ("wordcount", "wordcount", ["--state-store", "rocksdb", "--driver-memory", "1200m"]),
    ("wordcount_streaming_only", "wordcount", ["--streaming-only", "--floor"]),
    ("async_io", "async_io", []),
    ("routes", "routes", ["--variants", "streaming_one_query", "--no-restart-check",
                          "--files", "2"]),
]


def _json_lines(proc: subprocess.CompletedProcess, what: str) -> list[dict]:
    assert proc.returncode == 0, (
        f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def shared_results(tmp_path_factory) -> dict[str, dict]:
    """Every benchmark of ``SHARED`` run with ``--quick`` in one process: name -> its JSON."""
    data = str(tmp_path_factory.mktemp("bench-data"))
    calls = "\n".join(
        f"import benchmarks.{module}; benchmarks.{module}.main("
        f"{['--quick', '--data', data, *args]!r})"
        for _, module, args in SHARED)
    proc = subprocess.run([sys.executable, "-c", calls], cwd=ROOT, capture_output=True,
                          text=True, timeout=1200, env=submit_env())
    results = _json_lines(proc, "the benchmarks' --quick runs")
    assert len(results) == len(SHARED), proc.stdout[-3000:]
    return {name: result for (name, _, _), result in zip(SHARED, results)}


def _run(module: str, data: str, *args: str, jars: bool = False) -> dict:
    """``jars``: the benchmark puts the suite's connector jars on its driver's class path."""
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", "--quick", "--data", data, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=submit_env(jars=jars))
    return _json_lines(proc, f"benchmarks.{module} --quick")[-1]


@pytest.mark.slow
def test_sessionize_quick(shared_results):
    result = shared_results["sessionize"]
    assert result["benchmark"] == "sessionize" and result["quick"] is True
    for field in ("baseline_s", "batch_s", "streaming_s", "baseline_shuffled_s",
                  "batch_shuffled_s", "batch_ratio", "streaming_ratio", "batch_shuffled_ratio",
                  "peak_rss_mib", "runs", "load"):
        assert field in result, field
    assert result["results_equal"] is True
    assert result["checked_equal_to_baseline"] == [
        "baseline_shuffled", "batch", "batch_shuffled", "streaming"]
    # --breakdown: the job with a function doing nothing and one registering timers only,
    # each checked to emit nothing, each over the baseline
    breakdown = ["batch_nothing", "batch_timers", "streaming_nothing", "streaming_timers"]
    assert result["checked_empty"] == breakdown
    assert sorted(result["breakdown_ratios"]) == breakdown
    for name in breakdown:
        assert result["breakdown_ratios"][name] == pytest.approx(
            result["runs"][name][0] / result["runs"]["baseline"][0], rel=0.05)
    # the comparison had something to compare: sessions, some still open in STREAMING
    assert result["session_ends"] > 1_000
    assert 0 <= result["streaming_sessions_open_at_end"] < result["session_ends"]
    assert set(result["targets_met"]) == {"batch_ratio", "streaming_ratio", "batch_shuffled_ratio"}
    assert set(result["peak_rss_mib"]) == {"driver", "jvm", "python_workers"}
    assert result["peak_rss_mib"]["jvm"] > 0


@pytest.mark.slow
def test_savepoint_io_quick(shared_results):
    result = shared_results["savepoint_io"]
    assert result["benchmark"] == "savepoint_io" and result["quick"] is True
    for field in ("batch_s", "batch_savepoint_s", "streaming_empty_s", "plain_read_savepoint_s",
                  "streaming_restore_s", "batch_savepoint_ratio", "streaming_restore_ratio",
                  "savepoint_entries", "peak_rss_mib", "runs", "load"):
        assert field in result, field
    assert result["results_equal"] is True
    assert result["checked"] == ["batch", "batch_savepoint", "streaming_empty",
                                 "batch_savepoint+streaming_restore"]
    # every user's session count is in the savepoint the STREAMING run restored
    assert result["savepoint_keys"] == result["keys"]
    assert result["savepoint_entries_by_state"]["sessions"] == result["keys"]
    assert set(result["targets_met"]) == {"batch_savepoint_ratio", "streaming_restore_ratio"}


@pytest.mark.slow
def test_wordcount_quick(shared_results):
    """Every variant's counts are checked against pandas inside the benchmark (it exits
    non-zero on a difference); both STREAMING variants, the summing lambda on columns and
    the ReduceFunction called per record, report their figures. Run as ``make bench-scale``
    runs it: on Spark's RocksDB state store provider (here with a given JVM heap as well)."""
    result = shared_results["wordcount"]
    assert result["state_store"] == "rocksdb" and result["driver_memory"] == "1200m"
    for field in ("native_s", "reduce_ratio", "sum_ratio", "streaming_ratio",
                  "streaming_python_ratio", "batch_speedup", "batch_speedup_python",
                  "peak_rss_mib", "runs", "load"):
        assert field in result, field
    assert set(result["runs"]) == {"native", "reduce", "sum", "streaming", "streaming_python"}
    assert result["records"] == 20_000 and result["keys"] == 2_000
    # a variant's Python-worker figure counts the workers that ran in it, not the idle ones
    # Spark keeps from the variants before: native Spark's is below the Python reduce's
    by_variant = result["peak_rss_mib_by_variant"]
    assert by_variant["reduce"]["python_workers"] > 0
    assert by_variant["native"]["python_workers"] < by_variant["reduce"]["python_workers"]


@pytest.mark.slow
def test_wordcount_batch_only_quick(shared_results):
    """``--batch-only``: native and the BATCH variants, their Python workers never ran a
    STREAMING variant, so the reduce's worker figure is BATCH's own; no STREAMING field."""
    result = shared_results["wordcount_batch_only"]
    assert result["batch_only"] is True
    assert set(result["runs"]) == {"native", "reduce", "sum"}
    assert "streaming_ratio" not in result and "batch_speedup" not in result
    assert result["reduce_ratio"] > 0 and result["sum_ratio"] > 0
    assert result["peak_rss_mib_by_variant"]["reduce"]["python_workers"] > 0


@pytest.mark.slow
def test_wordcount_streaming_only_quick(shared_results):
    """``--streaming-only --floor``: native, the STREAMING variants (each checked against
    pandas in the benchmark) and Spark's two floors (the emitting one's sink checked against
    pandas too), no BATCH field; each ratio is the JSON's own seconds divided."""
    result = shared_results["wordcount_streaming_only"]
    assert result["streaming_only"] is True and result["batch_only"] is False
    assert set(result["runs"]) == {"native", "streaming", "streaming_python", "streaming_floor",
                                   "streaming_emit_floor"}
    assert "reduce_ratio" not in result and "batch_speedup" not in result
    assert result["streaming_ratio"] > 0 and result["streaming_python_ratio"] > 0
    # the JSON rounds seconds to the millisecond: a ratio of quick runs' rounded seconds
    # differs from the one of unrounded seconds by up to a few parts in a hundred
    emit_s, native_s = result["streaming_emit_floor_s"], result["native_s"]
    assert result["streaming_emit_floor_ratio"] == pytest.approx(emit_s / native_s, rel=0.03)
    assert result["streaming_over_emit_floor"] == pytest.approx(
        result["streaming_s"] / emit_s, rel=0.03)
    assert result["streaming_python_over_emit_floor"] == pytest.approx(
        result["streaming_python_s"] / emit_s, rel=0.03)
    assert result["streaming_over_floor"] == pytest.approx(
        result["streaming_s"] / result["streaming_floor_s"], rel=0.03)
    assert result["peak_rss_mib_by_variant"]["streaming"]["python_workers"] > 0


@pytest.mark.slow
def test_routes_quick(shared_results):
    """The three-keyed-stage job of the route comparison (and of the memory benchmark's
    second part), BATCH and STREAMING on one query, each checked against pandas inside the
    benchmark. ``make bench-quick`` also runs the Arrow chain prototype's restart after a
    failure (a prototype, not the product: left out here) and the memory benchmark, which
    runs these in processes of their own to sample each one's workers
    (:func:`test_memory_figures` checks its arithmetic)."""
    result = shared_results["routes"]
    assert result["benchmark"] == "routes" and result["quick"] is True
    variants = result["variants"]
    assert set(variants) == {"batch", "streaming_one_query"}
    assert all(v["checked"] is True and v["rows_out"] > 0 for v in variants.values())
    one_query = variants["streaming_one_query"]
    assert one_query["micro_batches"] >= result["files"]  # one file per micro-batch
    assert one_query["ratio_over_batch"] == pytest.approx(
        one_query["seconds"] / variants["batch"]["seconds"], rel=0.01)
    assert "arrow_restart" not in result


def test_memory_figures():
    from benchmarks.memory import figures

    mib = {"batch": 400.0, "streaming": 700.0, "streaming_more_keys": 770.0,
           "three_stages_batch": 300.0, "three_stages_streaming": 813.0}
    assert figures(mib) == {"streaming_over_batch": 1.75, "streaming_keys_growth": 1.1,
                            "three_stages_streaming_over_batch": 2.71}
    assert figures({"batch": 1.0, "streaming": 3.0}) == {"streaming_over_batch": 3.0}


@pytest.mark.slow
def test_wordcount_s3_quick(tmp_path):
    """The STREAMING WordCount with its checkpoint root, sink checkpoint and output on the S3
    server against the same job on local disk: both runs' counts equal pandas' (checked in
    the benchmark) and the job's key group files went to S3."""
    result = _run("wordcount_s3", str(tmp_path), jars=True)
    assert result["benchmark"] == "wordcount_s3" and result["quick"] is True
    for field in ("local_s", "s3_s", "s3_ratio", "target_met", "runs", "load"):
        assert field in result, field
    assert result["results_equal"] is True and result["backend"] == "rocksdb"
    assert set(result["runs"]) == {"local", "s3"}
    # one run (--quick has no warm-up), writing a version file per key group it touched:
    # 2,000 words hash into (nearly) all 128 key groups
    assert result["s3_key_group_files"] >= 64
