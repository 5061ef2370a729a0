"""The built wheel installs as its users install it, and runs jobs there.

* On a Databricks-Runtime-like Python: pyspark importable from ``PYTHONPATH`` only (no pip
  metadata) and numpy/pandas/pyarrow preinstalled at Databricks Runtime 15.4 LTS's versions:
  ``pip install`` brings no pyspark and no delta-spark and replaces none of them, and a BATCH
  and a STREAMING job run.
* With databricks-connect 16.1: installing the wheel brings no pyspark (it would replace
  databricks-connect's own ``pyspark`` module) and leaves ``pip check`` clean; the same jobs
  run over ``DatabricksSession`` against a local Apache Spark Connect server. Against Spark
  3.5.0's own Connect server the client connects and a job builds, but cannot run (see
  :func:`test_databricks_connect_against_spark_35_connect_server`).
* ``pip install '<wheel>[spark]'`` brings pip's pyspark, and the demo runs.

Each venv is made without pip (this interpreter's pip installs into it through ``--python``)
and installs from the wheelhouse ``make install-setup`` filled (``wheelhouse.py``), with no
index: nothing is downloaded here. Marked ``install``: ``make test-compat`` runs them once,
``make test`` does not.
"""

from __future__ import annotations

import glob
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any, Iterator

import pytest
import wheelhouse
from jvm_options import JVM_OPTS, submit_env

pytestmark = pytest.mark.install

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
#: never installed by the wheel alone: a runtime brings its own (delta-spark needs pyspark)
SPARK_DISTRIBUTIONS = {"pyspark", "py4j", "delta-spark"}


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip_env() -> dict[str, str]:
    """pip and the build frontend reach the wheelhouse only: no index, no user config."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=wheelhouse.WHEELHOUSE,
               PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _pip(python: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Run this interpreter's pip against the venv of ``python``; its stdout."""
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", python, *args],
                          capture_output=True, text=True, timeout=600, env=env or _pip_env())
    assert proc.returncode == 0, (f"pip {' '.join(args)}:\n"
                                  f"{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    return proc.stdout


def _venv(path: str) -> str:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True,
                   timeout=300)
    return os.path.join(path, "bin", "python")


def _installed(python: str, env: dict[str, str] | None = None) -> dict[str, str]:
    return {_name(p["name"]): p["version"]
            for p in json.loads(_pip(python, "list", "--format", "json", env=env))}


def _would_install(python: str, tmp: str, *requirements: str,
                   env: dict[str, str] | None = None) -> dict[str, str]:
    """What ``pip install REQUIREMENTS`` would install into the venv (``--dry-run --report``)."""
    report = os.path.join(tmp, f"report-{time.monotonic_ns()}.json")
    _pip(python, "install", "-q", "--dry-run", "--report", report, *requirements, env=env)
    with open(report) as f:
        return {_name(i["metadata"]["name"]): i["metadata"]["version"]
                for i in json.load(f)["install"]}


def _remove(folder: str) -> None:
    """Delete a venv in the background, without holding up the run: venvs are large
    (pyspark's jars alone are 450 MB), not worth keeping for pytest's last three runs."""
    subprocess.Popen(["rm", "-rf", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _run(python: str, args: list[str], env: dict[str, str], cwd: str,
         timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-5000:]
    return proc


def _job_env(python: str, pythonpath: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV", "PYSPARK_DATASTREAM_MASTER")}
    env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python, SPARK_LOCAL_IP="127.0.0.1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return submit_env(env)


# -- what the jobs must produce, computed here -------------------------------------------------

def _records() -> list[tuple[str, int]]:
    rng = random.Random(51)
    return [(f"k{rng.randrange(6)}", rng.randrange(1, 1000)) for _ in range(60)]


def _expected(records: list[tuple[str, int]]) -> dict[str, list[list[Any]]]:
    """BATCH: one total per key; STREAMING: every running total (one file, read in order)."""
    totals: dict[str, int] = defaultdict(int)
    running = []
    for key, value in records:
        totals[key] += value
        running.append([key, totals[key]])
    return {"batch": sorted([k, v] for k, v in totals.items()), "streaming": sorted(running)}


def _run_jobs(python: str, tmp: str, env: dict[str, str], *extra: str) -> dict[str, Any]:
    data = os.path.join(tmp, "records.json")
    with open(data, "w") as f:
        json.dump(_records(), f)
    work = os.path.join(tmp, "work")
    os.makedirs(work, exist_ok=True)
    proc = _run(python, [os.path.join(HERE, "install_jobs.py"), data, work, *extra], env, tmp)
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def filled() -> dict[str, object]:
    """The wheelhouse's stamp, which must match the current requirements."""
    found = wheelhouse.stamp()
    if not found:
        pytest.fail(f"{wheelhouse.WHEELHOUSE} is empty: run `make install-setup`")
    current = wheelhouse._inputs(str(found["spark_extra_pyspark"]))
    if found != current or not os.path.isdir(wheelhouse.runtime_path()):
        pytest.fail(f"{wheelhouse.WHEELHOUSE} was filled for other requirements: run "
                    "`make install-setup`")
    return found


@pytest.fixture(scope="module")
def wheel(filled, tmp_path_factory) -> str:
    """The package's wheel, built once (``python -m build``, its isolated build environment
    installed from the wheelhouse)."""
    out = str(tmp_path_factory.mktemp("dist"))
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", out, ROOT],
                          capture_output=True, text=True, timeout=600, env=_pip_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = glob.glob(os.path.join(out, "*.whl"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def runtime_venv(wheel, tmp_path_factory) -> Iterator[str]:
    """A venv shaped like Databricks Runtime 15.4 LTS's Python: its numpy, pandas and pyarrow
    installed, pyspark 3.5.0 on ``PYTHONPATH`` only; then the wheel ``pip install``-ed."""
    base = str(tmp_path_factory.mktemp("runtime"))
    python = _venv(os.path.join(base, "venv"))
    _pip(python, "install", "-q", *wheelhouse.RUNTIME_PINS)
    # pip runs as on the runtime: pyspark importable from PYTHONPATH, no metadata for it
    env = dict(_pip_env(), PYTHONPATH=wheelhouse.runtime_path())
    before = _installed(python, env)
    would = _would_install(python, base, wheel, env=env)
    assert "pyspark-datastream" in would
    assert not SPARK_DISTRIBUTIONS & set(would), would
    # the floors are what the runtime ships: nothing it has installed is replaced
    assert not set(before) & set(would), would
    _pip(python, "install", "-q", wheel, env=env)
    after = _installed(python, env)
    assert not SPARK_DISTRIBUTIONS & set(after), after
    assert {k: after[k] for k in before} == before
    assert "No broken requirements found" in _pip(python, "check", env=env)
    yield python
    _remove(base)


@pytest.fixture(scope="module")
def spark_extra_venv(wheel, filled, tmp_path_factory) -> Iterator[str]:
    """A clean venv with ``pip install '<wheel>[spark]'``."""
    base = str(tmp_path_factory.mktemp("spark-extra"))
    python = _venv(os.path.join(base, "venv"))
    would = _would_install(python, base, f"{wheel}[spark]")
    assert would.get("pyspark") == filled["spark_extra_pyspark"], would
    assert "delta-spark" not in would
    _pip(python, "install", "-q", f"{wheel}[spark]")
    assert _installed(python)["pyspark"] == filled["spark_extra_pyspark"]
    assert "No broken requirements found" in _pip(python, "check")
    yield python
    _remove(base)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connect_server(spark_home: str, python: str, pythonpath: str | None, log: str,
                    extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """Spark's Connect server (``local[2]``) from ``spark_home``, its Python workers running
    ``python``; returns it and its ``sc://`` URL once it accepts connections."""
    port = _free_port()
    env = _job_env(python, pythonpath)
    env.pop("PYSPARK_SUBMIT_ARGS")
    env["SPARK_HOME"] = spark_home
    cmd = [os.path.join(spark_home, "bin", "spark-submit"), "--class",
           "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
           "--driver-java-options", JVM_OPTS, "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.ui.enabled=false",
           *extra, "spark-internal"]
    with open(log, "wb") as out:
        server = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"Connect server exited {server.returncode}: "
                                 + open(log).read()[-3000:])
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return server, f"sc://127.0.0.1:{port}"
        time.sleep(0.5)
    server.kill()
    raise AssertionError("Connect server not listening after 180 s: " + open(log).read()[-3000:])


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s (nothing of its state is kept)."""
    server.terminate()
    try:
        server.wait(5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(30)


@pytest.fixture(scope="module")
def connect_server(spark_extra_venv, tmp_path_factory):
    """An Apache Spark Connect server from the ``[spark]`` venv's pyspark (which ships the
    server), bound to loopback, its Python workers in that venv (which has the wheel)."""
    home = glob.glob(os.path.join(os.path.dirname(os.path.dirname(spark_extra_venv)), "lib",
                                  "python*", "site-packages", "pyspark"))[0]
    log = str(tmp_path_factory.mktemp("connect") / "server.log")
    server, url = _connect_server(home, spark_extra_venv, None, log,
                                  ["--conf", "spark.connect.grpc.binding.address=127.0.0.1"])
    yield url
    _stop(server)


@pytest.fixture(scope="module")
def dbconnect_venv(wheel, tmp_path_factory) -> Iterator[str]:
    """databricks-connect 16.1 installed, then the wheel."""
    base = str(tmp_path_factory.mktemp("dbconnect"))
    python = _venv(os.path.join(base, "venv"))
    _pip(python, "install", "-q", f"databricks-connect=={wheelhouse.DATABRICKS_CONNECT}",
         *wheelhouse.DATABRICKS_CONNECT_PINS)
    before = _installed(python)
    assert before["databricks-connect"] == wheelhouse.DATABRICKS_CONNECT
    assert "pyspark" not in before  # its pyspark module belongs to databricks-connect
    would = _would_install(python, base, wheel)
    assert "pyspark-datastream" in would
    # no pyspark over databricks-connect's, and nothing it brought replaced
    assert not SPARK_DISTRIBUTIONS & set(would), would
    assert not set(before) & set(would), would
    _pip(python, "install", "-q", wheel)
    after = _installed(python)
    # (py4j is databricks-connect's own requirement)
    assert not {"pyspark", "delta-spark"} & set(after), after
    assert {k: after[k] for k in before} == before
    assert "No broken requirements found" in _pip(python, "check")
    yield python
    _remove(base)


# -- tests -----------------------------------------------------------------------------------

def test_runtime_pyspark_on_pythonpath_runs_batch_and_streaming(runtime_venv, tmp_path):
    runtime = wheelhouse.runtime_path()
    got = _run_jobs(runtime_venv, str(tmp_path), _job_env(runtime_venv, runtime))
    assert got["pyspark_version"] == wheelhouse.RUNTIME_PYSPARK
    assert got["pyspark_file"].startswith(runtime + os.sep)
    assert got["pyspark_distribution"] is None  # importable, unknown to pip
    assert got["package_file"].startswith(os.path.dirname(os.path.dirname(runtime_venv)))
    expected = _expected(_records())
    assert got["batch"] == expected["batch"]
    assert got["streaming"] == expected["streaming"]


def test_databricks_connect_runs_batch_and_streaming_over_connect(dbconnect_venv,
                                                                  connect_server, tmp_path):
    got = _run_jobs(dbconnect_venv, str(tmp_path), _job_env(dbconnect_venv),
                    "--remote", connect_server)
    # databricks-connect 16.1's own pyspark module says 3.5.2 (a Spark 3.5 Connect client)
    assert got["pyspark_version"] == "3.5.2"
    assert got["pyspark_file"].startswith(os.path.dirname(os.path.dirname(dbconnect_venv)))
    assert got["pyspark_distribution"] == ["databricks-connect"]
    assert got["session"] == "pyspark.sql.connect.session"
    expected = _expected(_records())
    assert got["batch"] == expected["batch"]
    assert got["streaming"] == expected["streaming"]


def test_databricks_connect_against_spark_35_connect_server(dbconnect_venv, runtime_venv,
                                                            tmp_path):
    """databricks-connect 16.1 reaches Apache Spark 3.5.0's Connect server and a job builds
    there; it cannot run one: the client speaks a newer protocol than Apache Spark 3.5's
    server (Databricks clusters serve the client's own). Its ``createDataFrame`` asks for
    settings Spark 3.5 lacks (``[SQL_CONF_NOT_FOUND] The SQL config
    "spark.sql.execution.pandas.inferPandasDictAsMap" cannot be found``, then
    ``spark.sql.pyspark.legacy.inferMapTypeFromFirstPair.enabled``: both set on the server
    below), every ``spark.sql(...)`` reaches the server empty (``[PARSE_SYNTAX_ERROR] Syntax
    error at or near end of input``; ``spark.table`` works), and observed metrics come back
    unnamed (``observed_metric_0``, ...), which a BATCH job's stage counts read."""
    runtime = wheelhouse.runtime_path()
    server, url = _connect_server(
        os.path.join(runtime, "pyspark"), runtime_venv, runtime, str(tmp_path / "server.log"),
        ["--jars", ",".join(wheelhouse.connect_jars()),
         "--conf", "spark.sql.execution.pandas.inferPandasDictAsMap=false",
         "--conf", "spark.sql.pyspark.legacy.inferMapTypeFromFirstPair.enabled=false"])
    try:
        got = _run_jobs(dbconnect_venv, str(tmp_path), _job_env(dbconnect_venv),
                        "--remote", url, "--build-only")
    finally:
        _stop(server)
    assert got["spark_version"] == wheelhouse.RUNTIME_PYSPARK
    assert got["pyspark_version"] == "3.5.2"
    kinds = [node["pact"] for node in got["plan"]["nodes"]]
    assert kinds.count("Data Source") == 1 and kinds.count("Data Sink") == 1, got["plan"]
    assert any("Reduce" in node["contents"] for node in got["plan"]["nodes"]), got["plan"]


def _sessions(clicks: list[tuple[str, str, int]], gap_ms: int) -> list[tuple[str, int, int, int]]:
    """(user, start, end, clicks) of each session: a user's clicks split where the next one
    comes more than ``gap_ms`` after the last."""
    by_user: dict[str, list[int]] = defaultdict(list)
    for user, _page, ts in clicks:
        by_user[user].append(ts)
    out = []
    for user, times in by_user.items():
        times.sort()
        start = last = times[0]
        count = 1
        for ts in times[1:]:
            if ts - last > gap_ms:
                out.append((user, start, last, count))
                start, count = ts, 0
            last = ts
            count += 1
        out.append((user, start, last, count))
    return out


def test_spark_extra_installs_pyspark_and_runs_the_demo(spark_extra_venv, tmp_path):
    # the demo's input generator is deterministic; its sessions are computed here
    from pyspark_datastream.demo import SESSION_GAP_MS, generate_clicks

    users, per_user = 60, 25
    sessions = _sessions(generate_clicks(users, per_user), SESSION_GAP_MS)
    out = str(tmp_path / "demo")
    proc = _run(spark_extra_venv, ["-m", "pyspark_datastream", "demo", "--out", out,
                                   "--users", str(users), "--clicks", str(per_user)],
                _job_env(spark_extra_venv), str(tmp_path))
    text = proc.stdout
    assert f"[demo] generated {users * per_user:,} clicks for {users} users" in text, text
    assert f"wrote {len(sessions):,} sessions to the Delta table {out}/sessions_delta" in text, text
    longest = max(end - start for _u, start, end, _c in sessions) / 1000
    avg = sum(c for *_x, c in sessions) / len(sessions)
    assert (f"[demo] users={len({s[0] for s in sessions})} avg clicks/session={avg:.2f} "
            f"longest session={longest:.0f} s") in text, text
    # the table's first rows, ordered by user and session start
    first = sorted(sessions)[0]
    assert re.search(rf"\|{first[0]}\s*\|{first[1]}\s*\|{first[2]}\s*\|{first[3]}\s*\|", text), text
