"""``runtime_context.get_metrics_group()`` in jobs: what the Python workers report, in their
log lines and in the job's progress rows.

``metrics_job.py`` runs in its own driver process (local[2]), so its stderr holds the lines
the workers log (Spark keeps a worker's stderr in the executor's log). Each line is one
operator instance's metrics, cumulative; the last line of each instance, summed over the
instances of an operator, must equal what the input implies: every record counted once by
each operator, the values' sum, count, min and max, the odd values, the distinct keys. The
progress rows (``JobExecutionResult.get_progress()``) must hold the same totals, combined by
the driver: in BATCH from the stages' observations, in STREAMING from what the instances
published under the job's folder.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest
from jvm_options import submit_env

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r"metrics of operator '([^']+)' subtask (\d+): (\{.*\})$")
N = 300


def _last_reports(stderr: str) -> dict[str, list[dict]]:
    """operator -> the last report of each of its instances."""
    last: dict[tuple[str, int], dict] = {}
    for line in stderr.splitlines():
        m = LINE.search(line)
        if m:
            last[(m.group(1), int(m.group(2)))] = ast.literal_eval(m.group(3))
    out: dict[str, list[dict]] = {}
    for (op, _), values in sorted(last.items()):
        out.setdefault(op, []).append(values)
    return out


@pytest.fixture(scope="module")
def job_run(tmp_path_factory) -> tuple[str, str]:
    """Both modes' jobs in one driver process: its stdout and stderr."""
    env = submit_env(dict(os.environ, PYSPARK_PYTHON=sys.executable,
                          PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]),
                          # every task reports (default: at most every 10 s per instance)
                          PYSPARK_DATASTREAM_METRICS_INTERVAL_S="0"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "metrics_job.py"),
                           str(tmp_path_factory.mktemp("metrics") / "ckpt"), str(N)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    records = [line for line in proc.stdout.splitlines() if line.startswith("PDS-REC ")]
    assert sorted(records) == sorted(f"PDS-REC k{i % 7} {i}" for i in range(N) for _ in "ab")
    return proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def job_reports(job_run) -> dict[str, list[dict]]:
    """What the workers reported in their log lines."""
    return _last_reports(job_run[1])


def _progress_metrics(stdout: str, mode: str) -> dict[str, dict]:
    for line in stdout.splitlines():
        if line.startswith(f"PDS-PROGRESS {mode} "):
            return json.loads(line.split(" ", 2)[2])
    raise AssertionError(f"no progress metrics of the {mode} job in:\n{stdout[-2000:]}")


VALUES = list(range(N))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_workers_report_every_operators_metrics(job_reports, mode):
    reports = job_reports
    keyed = reports.get(f"per-key-{mode}", [])
    mapped = reports.get(f"seen-{mode}", [])  # fused into the key_by pass, under its own name
    assert keyed and mapped, sorted(reports)
    assert sum(r["records"] for r in mapped) == N
    assert sum(r["io.events"]["count"] for r in mapped) == N
    assert sum(r["records"] for r in keyed) == N
    assert sum(r["parity.odd.records"] for r in keyed) == sum(v % 2 for v in VALUES)
    dists = [r["values"] for r in keyed if r["values"]["count"]]
    assert sum(d["count"] for d in dists) == N
    assert sum(d["sum"] for d in dists) == sum(VALUES)
    assert min(d["min"] for d in dists) == 0 and max(d["max"] for d in dists) == N - 1
    assert sum(r["keys"] for r in keyed) == 7  # each key lives in one instance


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_progress_rows_carry_each_operators_metrics(job_run, mode):
    """The job's progress rows hold every operator's metrics combined over its instances
    (counters and meter counts summed, distributions merged, a gauge by subtask): exactly
    what the input implies. The keyed operator keeps its own name although the formatting
    map after it runs in its pass; the map without metrics has no entry."""
    metrics = _progress_metrics(job_run[0], mode)
    assert sorted(metrics) == [f"per-key-{mode}", f"seen-{mode}"]
    seen, keyed = metrics[f"seen-{mode}"], metrics[f"per-key-{mode}"]
    assert seen["records"] == N and seen["io.events"]["count"] == N
    assert seen["io.events"]["rate"] > 0
    assert keyed["records"] == N
    assert keyed["parity.odd.records"] == sum(v % 2 for v in VALUES)
    assert keyed["values"] == {"count": N, "sum": sum(VALUES), "min": 0, "max": N - 1,
                               "mean": sum(VALUES) / N}
    assert sum(keyed["keys"].values()) == 7
