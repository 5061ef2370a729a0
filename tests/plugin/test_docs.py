"""Every ```python block of the documentation site runs, or says why it cannot.

A page's blocks run in order in one namespace that starts with ``from pyspark_datastream
import *``. A block may run jobs: ``StreamExecutionEnvironment.get_execution_environment()``
starts a local SparkSession when none is active, and the test stops the session a page started.
A block that needs what a test cannot give it (input files, a cluster) starts with the line
``# not run: <reason>`` (docs/README.md); it is compiled, not run. The site itself is built by
``make docs`` (``mkdocs build --strict``), which ``make test`` runs.
"""

from __future__ import annotations

import glob
import logging
import os
import re

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


def test_the_site_has_python_blocks_and_some_run():
    runnable = [b for p in PAGES_WITH_CODE for b in _blocks(p) if not NOT_RUN.match(b.split("\n")[0])]
    assert PAGES_WITH_CODE and runnable


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_python_blocks_of_page_run_or_say_why_not(page):
    from pyspark.sql import SparkSession

    logger = logging.getLogger("pyspark_datastream")
    handlers, level = list(logger.handlers), logger.level
    active = SparkSession.getActiveSession()
    namespace: dict = {}
    exec("from pyspark_datastream import *", namespace)  # noqa: S102
    try:
        for i, block in enumerate(_blocks(page)):
            name = f"docs/{page} block {i + 1}"
            first = block.split("\n", 1)[0]
            if first.startswith("# not run"):
                assert NOT_RUN.match(first), f"{name}: '# not run: <reason>' needs a reason"
                compile(block, name, "exec")
                continue
            exec(compile(block, name, "exec"), namespace)  # noqa: S102
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        started = SparkSession.getActiveSession()
        if started is not None and started is not active:
            started.stop()
