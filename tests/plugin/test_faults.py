"""The named crash points of fault-injection tests (plugin/faults.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

SCRIPT = """
from pyspark_datastream.runtime.faults import kill_point
for i in range(1, 4):
    kill_point("other")
    print("before", i, flush=True)
    kill_point("p")
    print("after", i, flush=True)
"""


def _run(spec):
    env = dict(os.environ)
    env.pop("PYSPARK_DATASTREAM_KILL_AT", None)
    if spec is not None:
        env["PYSPARK_DATASTREAM_KILL_AT"] = spec
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=60)


def test_armed_point_kills_at_its_nth_arrival_and_nowhere_else():
    done = _run("p:2")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split("\n")[:-1] == ["before 1", "after 1", "before 2"]


def test_unarmed_or_malformed_points_do_nothing():
    for spec in (None, "p", "p:0"):
        done = _run(spec)
        assert done.returncode == 0, spec
        assert done.stdout.count("after") == 3
