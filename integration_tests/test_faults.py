"""The named crash points of the fault-injection tests (integration_tests/faults.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import faults

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = """
import faults
faults.install()
for i in range(1, 4):
    faults.kill_point("delta.before-write")
    print("before", i, flush=True)
    faults.kill_point("delta.after-write")
    print("after", i, flush=True)
"""


def _run(spec):
    env = dict(os.environ)
    env.pop(faults.KILL_AT_ENV, None)
    if spec is not None:
        env[faults.KILL_AT_ENV] = spec
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)


def test_armed_point_kills_at_its_nth_arrival_and_nowhere_else():
    done = _run("delta.after-write:2")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.split("\n")[:-1] == ["before 1", "after 1", "before 2"]


def test_unarmed_or_malformed_points_do_nothing():
    for spec in (None, "delta.after-write", "delta.after-write:0"):
        done = _run(spec)
        assert done.returncode == 0, (spec, done.stderr)
        assert done.stdout.count("after") == 3


def test_an_unknown_point_is_refused():
    done = _run("delta.elsewhere:1")
    assert done.returncode == 1 and "unknown crash point 'delta.elsewhere'" in done.stderr
