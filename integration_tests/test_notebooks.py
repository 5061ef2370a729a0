"""Every notebook runs end to end at its default size, as a user runs it, so none can rot."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

from jvm_options import submit_env

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = sorted(glob.glob(os.path.join(HERE, "..", "notebooks", "[0-9]*.py")))


def test_notebooks_are_in_databricks_source_format():
    assert len(NOTEBOOKS) >= 3
    for path in NOTEBOOKS:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        assert text.startswith("# Databricks notebook source\n"), path
        assert "# COMMAND ----------" in text and "# MAGIC %md" in text, path
        # imported alone into a workspace, a notebook has only the installed package
        assert "sys.path" not in text and "import examples" not in text, path
        assert "from examples" not in text, path


def test_every_notebook_runs_locally(tmp_path):
    # from a directory outside the repository, nothing of it on the path: only the installed
    # package is importable (run_notebooks.py checks that `examples` is not)
    # (the driver JVM gets the suite's short-job options, jvm_options.py: not the
    # notebooks' code or sizes, only how fast their JVM runs on 2 cores)
    env = submit_env(dict(os.environ, PYSPARK_PYTHON=sys.executable, MPLBACKEND="Agg"),
                     checkpoints=True)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "run_notebooks.py"), str(tmp_path), *NOTEBOOKS],
        capture_output=True, text=True, timeout=1200, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-6000:]
    for path in NOTEBOOKS:
        assert f"OK {os.path.basename(path)} " in proc.stdout
    assert glob.glob(os.path.join(str(tmp_path), "*", "*.png")), "notebooks draw their charts"
