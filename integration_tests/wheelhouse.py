"""The local wheelhouse the install tests (``test_install.py``) install from, with no index.

``make install-setup`` (part of ``make compat-setup``) runs ``python integration_tests/
wheelhouse.py fill --spark-extra VERSION`` once: it fills :data:`WHEELHOUSE` with every wheel
those tests install (the package's dependencies at the floors Databricks Runtime 15.4 LTS
ships, ``databricks-connect`` with its dependencies, the ``[spark]`` extra's pyspark, the build
backend), lays out a Databricks-Runtime-like pyspark folder for ``PYTHONPATH`` (pyspark and
py4j, not registered with pip) and resolves Spark's Connect server jar for that pyspark. A
stamp records the inputs; a second run with the same inputs does nothing. Nothing is
downloaded at test time: the tests install with ``pip --no-index --find-links``.
"""

from __future__ import annotations

import configparser
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

__all__ = ["WHEELHOUSE", "RUNTIME_PYSPARK", "RUNTIME_PINS", "DATABRICKS_CONNECT",
           "DATABRICKS_CONNECT_PINS", "CONNECT_SERVER_JAR", "runtime_path", "connect_jars",
           "stamp", "fill"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Where the wheels go (gitignored, removed by ``make clean``).
WHEELHOUSE = os.path.join(ROOT, ".venv-compat-wheelhouse")
#: The pyspark a Databricks-Runtime-like install finds on ``PYTHONPATH`` (15.4 LTS: Spark 3.5.0),
#: and the Spark Connect server the databricks-connect client is pointed at runs it.
RUNTIME_PYSPARK = "3.5.0"
#: What Databricks Runtime 15.4 LTS has installed already: installing the wheel must keep them.
RUNTIME_PINS = ("numpy==1.23.5", "pandas==1.5.3", "pyarrow==14.0.1")
#: The newest databricks-connect served here (a Spark 3.5 Connect client).
DATABRICKS_CONNECT = "16.1.7"
#: What a databricks-connect 16.1 install needs beside it: it pins numpy<2, and pyarrow 26 (the
#: newest, which pip picks) refuses to import with numpy 1.x ("pyarrow requires NumPy 2.0 or
#: newer") without declaring it, so the client could not load.
DATABRICKS_CONNECT_PINS = ("pyarrow<26",)
#: Spark's Connect server for :data:`RUNTIME_PYSPARK` (pip's pyspark 3.5 does not ship it).
CONNECT_SERVER_JAR = f"org.apache.spark:spark-connect_2.12:{RUNTIME_PYSPARK}"
_STAMP = ".stamp.json"


def runtime_path() -> str:
    """The folder holding ``pyspark`` and ``py4j`` for ``PYTHONPATH`` (no pip metadata)."""
    return os.path.join(WHEELHOUSE, f"runtime-pyspark-{RUNTIME_PYSPARK}")


def connect_jars() -> list[str]:
    """The Connect server's jars (:data:`CONNECT_SERVER_JAR` and what it needs beyond pyspark)."""
    return sorted(glob.glob(os.path.join(WHEELHOUSE, "connect-jars", "*.jar")))


def stamp() -> dict[str, object]:
    """What :func:`fill` recorded (empty before ``make install-setup``)."""
    path = os.path.join(WHEELHOUSE, _STAMP)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(json.load(f))


def _inputs(spark_extra: str) -> dict[str, object]:
    """Everything the wheelhouse's contents depend on: the pins above, the ``[spark]`` extra's
    pyspark, and the requirements setup.cfg and pyproject.toml declare."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        # [build-system] requires = ["setuptools>=68", "wheel"] (tomllib is Python 3.11+)
        found = re.search(r"^requires\s*=\s*\[([^\]]*)\]", f.read(), re.M)
    backend = re.findall(r"[\"']([^\"']+)[\"']", found.group(1)) if found else []
    declared = json.dumps([cfg["options"]["install_requires"],
                           dict(cfg["options.extras_require"]), backend], sort_keys=True)
    return {"runtime_pyspark": RUNTIME_PYSPARK, "runtime_pins": list(RUNTIME_PINS),
            "databricks_connect": DATABRICKS_CONNECT,
            "databricks_connect_pins": list(DATABRICKS_CONNECT_PINS),
            "spark_extra_pyspark": spark_extra, "connect_server_jar": CONNECT_SERVER_JAR,
            "build_backend": backend,
            "declared": hashlib.sha256(declared.encode()).hexdigest()}


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", *args]
    print("  " + " ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in args))
    subprocess.run(cmd, check=True)


def _unpack_runtime(into: str) -> None:
    """pyspark and py4j from their wheels in the wheelhouse into ``into``, file modes kept
    (``bin/spark-submit`` must stay executable), without the ``.dist-info`` pip reads."""
    staged = into + ".partial"
    shutil.rmtree(staged, ignore_errors=True)
    for pattern in (f"pyspark-{RUNTIME_PYSPARK}-*.whl", "py4j-0.10.9.7-*.whl"):
        wheel, = glob.glob(os.path.join(WHEELHOUSE, pattern))
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                top = info.filename.split("/")[0]
                if top.endswith((".dist-info", ".data")):
                    continue
                path = zf.extract(info, staged)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(path, mode)
    shutil.rmtree(into, ignore_errors=True)
    os.rename(staged, into)


def fill(spark_extra: str) -> None:
    """Fill :data:`WHEELHOUSE` for the install tests unless a stamp says it holds the same
    inputs already.

    Args:
        spark_extra: The pyspark version the ``[spark]`` extra resolves to from the wheelhouse
            (``make``'s ``SPARK_VERSION``, the line the whole suite runs on).
    """
    wanted = _inputs(spark_extra)
    backend = [str(r) for r in wanted["build_backend"]]  # type: ignore[attr-defined]
    if stamp() == wanted and os.path.isdir(runtime_path()) and connect_jars():
        print(f"{os.path.relpath(WHEELHOUSE, ROOT)}: up to date")
        return
    shutil.rmtree(WHEELHOUSE, ignore_errors=True)
    os.makedirs(WHEELHOUSE)
    with tempfile.TemporaryDirectory() as tmp:
        # the package's own wheel, only to resolve its dependencies (the tests build their own)
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                        "--outdir", tmp, ROOT], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wheel, = glob.glob(os.path.join(tmp, "*.whl"))
        # pyspark is published as a source distribution: pip builds its wheels (from pip's
        # cache after the first time); everything else must be a binary wheel
        for version in sorted({RUNTIME_PYSPARK, spark_extra}):
            _pip("wheel", "-q", "--no-deps", "-w", WHEELHOUSE, f"pyspark=={version}")
        get = ["download", "-q", "-d", WHEELHOUSE, "--only-binary=:all:",
               "--find-links", WHEELHOUSE]
        # the build backend (python -m build's isolated environment installs it)
        _pip(*get, *backend)
        # Databricks Runtime: its pyspark's py4j and its preinstalled numpy/pandas/pyarrow
        _pip(*get, wheel, "py4j==0.10.9.7", *RUNTIME_PINS)
        # databricks-connect with the package (one resolution, so both install from here)
        _pip(*get, wheel, f"databricks-connect=={DATABRICKS_CONNECT}",
             *DATABRICKS_CONNECT_PINS)
        # `pip install 'pyspark-datastream[spark]'`
        _pip(*get, f"{wheel}[spark]", f"pyspark=={spark_extra}")
    for own in glob.glob(os.path.join(WHEELHOUSE, "pyspark_datastream-*")):
        os.remove(own)
    _unpack_runtime(runtime_path())
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jars

    print(f"  {CONNECT_SERVER_JAR} (mvn)")
    work = tempfile.mkdtemp()
    try:
        jars._resolve([CONNECT_SERVER_JAR], False, os.path.join(work, "jars"))
        shutil.move(os.path.join(work, "jars"), os.path.join(WHEELHOUSE, "connect-jars"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(WHEELHOUSE, _STAMP), "w") as f:
        json.dump(wanted, f, indent=1)
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(WHEELHOUSE, "*.whl")))
    print(f"{os.path.relpath(WHEELHOUSE, ROOT)}: "
          f"{len(glob.glob(os.path.join(WHEELHOUSE, '*.whl')))} wheels, {size / 2**20:.0f} MiB")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1:3] != ["fill", "--spark-extra"]:
        raise SystemExit("usage: python integration_tests/wheelhouse.py fill --spark-extra VERSION")
    fill(sys.argv[3])
