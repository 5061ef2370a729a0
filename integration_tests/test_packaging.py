"""The wheel installs into a clean venv and runs a job outside the repository."""

from __future__ import annotations

import configparser
import glob
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest
from jvm_options import submit_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_package_folder_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    mapping = {"plugin": "pyspark_datastream", "state_store": "pyspark_datastream.state_store",
               "operators": "pyspark_datastream.operators"}
    found = set()
    for folder, package in mapping.items():
        for init in glob.glob(os.path.join(ROOT, folder, "**", "__init__.py"), recursive=True):
            rel = os.path.relpath(os.path.dirname(init), os.path.join(ROOT, folder))
            found.add(package if rel == "." else package + "." + rel.replace(os.sep, "."))
    assert found <= listed, f"add to setup.cfg packages: {sorted(found - listed)}"


@pytest.mark.slow
def test_wheel_installs_in_clean_venv_and_runs_a_job(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                            "--outdir", str(dist), ROOT], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = glob.glob(str(dist / "*.whl"))
    assert len(wheel) == 1
    venv = tmp_path / "venv"
    # a venv without its own pip (ensurepip would install one, seconds of a 2-core budget):
    # this interpreter's pip installs the wheel into it (``--python``)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    py = str(venv / "bin" / "python")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q",
                              "--no-deps", wheel[0]], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-3000:]
    job = textwrap.dedent("""
        import os, sys
        import pyspark_datastream as pds
        from pyspark_datastream import state_store, operators
        assert pds.__file__.startswith(sys.prefix), (pds.__file__, sys.prefix)
        assert os.path.exists(os.path.join(os.path.dirname(pds.__file__), "py.typed"))
        env = pds.StreamExecutionEnvironment.get_execution_environment()
        env.set_runtime_mode(pds.RuntimeExecutionMode.BATCH)
        out = env.from_collection([("a", 1), ("b", 2), ("a", 3)]).key_by(lambda x: x[0]).sum(1)
        print(sorted(out.execute_and_collect()))
    """)
    # Dependencies (pyspark, pyarrow, ...) come from this interpreter's site-packages, placed
    # after the venv's own: the package itself must come from the wheel.
    deps = sysconfig.get_paths()["purelib"]
    env = submit_env(dict(os.environ, PYTHONPATH=deps, PYSPARK_PYTHON=py,
                          PYSPARK_DRIVER_PYTHON=py))
    env.pop("PYSPARK_DATASTREAM_MASTER", None)
    proc = subprocess.run([py, "-c", job], capture_output=True, text=True, timeout=600,
                          env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().splitlines()[-1] == "[('a', 4), ('b', 2)]"
