"""PySpark's Python worker daemon with the heavy imports done once, before it forks.

Run by executors as ``spark.python.daemon.module=preload_daemon`` (this folder is on their
``PYTHONPATH``). PySpark's own daemon imports pandas, pyarrow and the UDF's modules in every
forked worker, after the fork, because those imports start threads and a process must not
fork while other threads run. Here they (and every module of the project) are imported once with the two threads they would
start turned off (OpenBLAS's pool, the background thread of Arrow's jemalloc); the daemon
refuses to run if any other thread is alive. With ``spark.python.worker.reuse=false`` (a
fresh Python process per task) a worker then starts in a fork instead of ~2-6 s of imports
on 2 busy cores. What the workers compute is unchanged: the same modules, loaded earlier.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")

import importlib  # noqa: E402
import pkgutil  # noqa: E402

import pandas  # noqa: E402,F401
import pyarrow  # noqa: E402,F401
import pyarrow.compute  # noqa: E402,F401
import pyarrow.fs  # noqa: E402,F401
import pyarrow.parquet  # noqa: E402,F401
import pyspark.sql.pandas.serializers  # noqa: E402,F401
import pyspark.worker  # noqa: E402,F401
import pyspark_datastream  # noqa: E402
import rocksdict  # noqa: E402,F401
from pyspark.daemon import manager  # noqa: E402


def preload_project() -> None:
    """Import every module of the project (the functions a worker unpickles import them
    lazily); one that cannot be imported here is left to the worker, as without this."""
    for info in pkgutil.walk_packages(pyspark_datastream.__path__, "pyspark_datastream."):
        try:
            importlib.import_module(info.name)
        except ImportError:
            pass


def threads() -> list[str]:
    """Names of this process's threads (Linux ``/proc``)."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            names.append(f.read().strip())
    return names


if __name__ == "__main__":
    preload_project()  # not deltalake: its allocator starts a thread at import
    running = threads()
    if len(running) != 1:
        raise RuntimeError(f"preload_daemon: threads alive before forking workers: {running}")
    manager()
