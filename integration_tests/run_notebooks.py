"""Run notebooks end to end in one Python process (one SparkSession), at their default size.

``python run_notebooks.py WORKDIR NOTEBOOK...``: each notebook is plain Python
(Databricks source format), executed with ``runpy`` as a user runs it: from the
current directory, with only the installed package importable (the repository's
``examples`` package must not be); prints ``OK <name> <seconds>s`` per notebook and
exits non-zero on the first failure.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import time
import warnings


def main(workdir: str, paths: list[str]) -> int:
    warnings.simplefilter("ignore", FutureWarning)
    for path in paths:
        if importlib.util.find_spec("examples") is not None:
            raise SystemExit("the repository root is importable: notebooks must run without it")
        name = os.path.basename(path)
        os.environ["NOTEBOOK_WORKDIR"] = os.path.join(workdir, name.removesuffix(".py"))
        start = time.monotonic()
        runpy.run_path(path, run_name="__main__")
        print(f"OK {name} {time.monotonic() - start:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
