"""Every ```python block of the documentation site runs, or says why it cannot.

A page's blocks run in order in one namespace that starts with ``from pyspark_datastream
import *``. A block may run jobs: ``StreamExecutionEnvironment.get_execution_environment()``
starts a local SparkSession when none is active, and the test stops the session a page started.
A page that reads the reader's own data gets it from ``PAGE_INPUTS`` (the test runs each page
in a temporary working directory). A block that cannot run at all (it needs a cluster, say)
starts with the line ``# not run: <reason>`` (docs/README.md); it is compiled, not run. The
site itself is built by ``make docs`` (``mkdocs build --strict``), which ``make test`` runs.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable

import pytest

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
NOT_RUN = re.compile(r"^# not run: (\S.*)$")


def _pages() -> list[str]:
    pages = glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True)
    return sorted(os.path.relpath(p, DOCS) for p in pages if os.path.basename(p) != "README.md")


def _blocks(page: str) -> list[str]:
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.M | re.S)


PAGES_WITH_CODE = [p for p in _pages() if _blocks(p)]
CLICKS = [("alice", "home", 1_000), ("alice", "cart", 20_000), ("bob", "home", 5_000),
          ("alice", "pay", 90_000), ("bob", "cart", 40_000), ("alice", "home", 95_000)]


def _sessions(clicks: list[tuple[str, str, int]]) -> list[tuple[str, int]]:
    """Getting started's sessions by hand: a user's last click before a gap over 30 s, and
    the last click of each user (its timer fires at the end of BATCH input)."""
    out = []
    for user in sorted({c[0] for c in clicks}):
        times = sorted(c[2] for c in clicks if c[0] == user)
        out += [(user, a) for a, b in zip(times, times[1:]) if b - a > 30_000]
        out.append((user, times[-1]))
    return sorted(out)


def _clicks_folder(namespace: dict) -> Callable[[], None]:
    """getting-started.md reads ``clicks/`` with the reader's ``spark``: give it both, and
    check the Delta table its job writes against ``_sessions``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark_datastream import default_local_session

    os.makedirs("clicks")
    users, pages, times = zip(*CLICKS)
    pq.write_table(pa.table({"user": users, "page": pages, "ts": pa.array(times, pa.int64())}),
                   os.path.join("clicks", "part-0.parquet"))
    namespace["spark"] = default_local_session()
    namespace["schema"] = "user string, page string, ts bigint"

    def check() -> None:
        from deltalake import DeltaTable

        rows = DeltaTable("sessions").to_pyarrow_table().to_pylist()
        assert sorted(tuple(r.values()) for r in rows) == _sessions(CLICKS)

    return check


#: set in the child process a page with PAGE_INPUTS runs in when this one has a session
_IN_CHILD = "PYSPARK_DATASTREAM_DOCS_PAGE_CHILD"

PAGE_INPUTS: dict[str, Callable[[dict], Callable[[], None]]] = {
    "getting-started.md": _clicks_folder,
}


def test_the_site_has_python_blocks_and_some_run():
    runnable = [b for p in PAGES_WITH_CODE for b in _blocks(p) if not NOT_RUN.match(b.split("\n")[0])]
    assert PAGES_WITH_CODE and runnable


def _start_with_the_suites_jars() -> None:
    """Start the session a page would start, with the jars of ``make setup`` on its class
    path: this process's JVM outlives the session, and a later test of the same process
    (the integration suite's Delta session) needs them there, where only a starting JVM
    takes them."""
    from pyspark_datastream import default_local_session

    jars = os.path.join(sys.prefix, "jars")
    if glob.glob(os.path.join(jars, "*.jar")):
        default_local_session({"spark.driver.extraClassPath": os.path.join(jars, "*")})


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_python_blocks_of_page_run_or_say_why_not(page, tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if page in PAGE_INPUTS and active is not None and not os.environ.get(_IN_CHILD):
        # the page reads and writes paths relative to the working directory, and Spark
        # resolves them against its JVM's, fixed when this process's session started: run
        # the page as a reader does, in a fresh Python process started in tmp_path
        test_id = f"{os.path.abspath(__file__)}::{test_python_blocks_of_page_run_or_say_why_not.__name__}[{page}]"
        child = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_id],
            cwd=tmp_path, env={**os.environ, _IN_CHILD: "1"}, capture_output=True, text=True,
            timeout=600)
        assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
        return
    logger = logging.getLogger("pyspark_datastream")
    handlers, level = list(logger.handlers), logger.level
    namespace: dict = {}
    exec("from pyspark_datastream import *", namespace)  # noqa: S102
    monkeypatch.chdir(tmp_path)
    (tmp_path / "temp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))  # the pages' mkdtemp()s
    if active is None:  # after chdir: the JVM resolves relative paths against its start folder
        _start_with_the_suites_jars()
    try:
        check = PAGE_INPUTS[page](namespace) if page in PAGE_INPUTS else None
        for i, block in enumerate(_blocks(page)):
            name = f"docs/{page} block {i + 1}"
            first = block.split("\n", 1)[0]
            if first.startswith("# not run"):
                assert NOT_RUN.match(first), f"{name}: '# not run: <reason>' needs a reason"
                compile(block, name, "exec")
                continue
            exec(compile(block, name, "exec"), namespace)  # noqa: S102
        if check is not None:
            check()
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        started = SparkSession.getActiveSession()
        if started is not None and started is not active:
            started.stop()
