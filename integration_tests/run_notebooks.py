"""Run notebooks end to end in one Python process (one SparkSession), small data.

``python run_notebooks.py WORKDIR NOTEBOOK...``: each notebook is plain Python
(Databricks source format), executed with ``runpy``; prints ``OK <name>`` per
notebook and exits non-zero on the first failure.
"""

from __future__ import annotations

import os
import runpy
import sys
import warnings


def main(workdir: str, paths: list[str]) -> int:
    os.environ["NOTEBOOK_SMALL"] = "1"
    warnings.simplefilter("ignore", FutureWarning)
    for path in paths:
        name = os.path.basename(path)
        os.environ["NOTEBOOK_WORKDIR"] = os.path.join(workdir, name.removesuffix(".py"))
        runpy.run_path(path, run_name="__main__")
        print(f"OK {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
