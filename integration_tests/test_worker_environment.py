"""A session whose Python workers cannot import what a job needs fails with an error that
says so: a user's own local SparkSession, built without PYSPARK_PYTHON from a venv's python,
whose workers run the first ``python3`` on the PATH (one without the package)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_JOB = textwrap.dedent("""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    from pyspark_datastream import (RuntimeExecutionMode, StreamExecutionEnvironment, Types,
                                    WorkerEnvironmentError)

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    ds = env.from_collection([("a", 1), ("b", 2), ("a", 3)],
                             type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    totals = ds.key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    try:
        print("RESULT", sorted(totals.execute_and_collect()))
    except WorkerEnvironmentError as exc:
        print("ERROR", exc)
""")


def _bare_python(tmp_path) -> str:
    """A python3 without the package or its dependencies: a venv made without pip."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")],
                   check=True)
    return str(tmp_path / "bare" / "bin")


def test_workers_without_the_package_fail_the_job_naming_module_and_interpreters(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(_JOB)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    env["PATH"] = _bare_python(tmp_path) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600)
    out = [line for line in proc.stdout.splitlines() if line.startswith(("ERROR", "RESULT"))]
    assert proc.returncode == 0 and len(out) == 1, proc.stdout[-2000:] + proc.stderr[-4000:]
    text = out[0]
    assert text.startswith("ERROR Spark's Python workers cannot import '"), text
    assert "PYSPARK_PYTHON is not set, so they run the first python3 on the PATH" in text
    assert f"this driver runs {sys.executable}" in text and "reduce" in text.lower()

