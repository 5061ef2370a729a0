"""Command line: ``python -m pyspark_datastream {demo,run FILE,savepoint inspect PATH}``."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

__all__ = ["main"]


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_datastream",
        description="pyspark-datastream: Flink-style DataStream programs on Spark.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("demo", help="run the main demo (BATCH sessionization into a Delta table)",
                   add_help=False)
    sub.add_parser("savepoint", help="savepoint tools: savepoint inspect PATH [--version N] [--json]",
                   add_help=False)
    sub.add_parser("run", help="run a notebook (Databricks source .py) or an example file locally",
                   add_help=False)
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    if argv[0] == "demo":
        from .demo import main as demo_main

        return demo_main(argv[1:])
    if argv[0] == "savepoint":
        return _savepoint_command(argv[1:])
    if argv[0] == "run":
        return _run_command(argv[1:])
    parser.error(f"unknown command {argv[0]!r}")
    return 2


def _run_command(argv: list[str]) -> int:
    """``run FILE [ARGS...]``: execute a notebook or example as a script (local Spark)."""
    import os
    import runpy

    parser = argparse.ArgumentParser(prog="python -m pyspark_datastream run")
    parser.add_argument("file", help="a notebooks/*.py notebook or an examples/*.py file")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the file")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.file):
        print(f"error: no such file: {args.file}", file=sys.stderr)
        return 1
    # examples import each other from the repository root
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(args.file))))
    sys.argv = [args.file, *args.args]
    runpy.run_path(args.file, run_name="__main__")
    return 0


def _savepoint_command(argv: list[str]) -> int:
    """``savepoint inspect PATH``: operators, states, entry counts and bytes, Delta versions."""
    import json

    from .state_store.exceptions import SavepointError

    parser = argparse.ArgumentParser(prog="python -m pyspark_datastream savepoint")
    sub = parser.add_subparsers(dest="action", required=True)
    inspect = sub.add_parser("inspect", help="describe the savepoint at PATH")
    inspect.add_argument("path")
    inspect.add_argument("--version", type=int, default=None, help="Delta version (default: latest)")
    inspect.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    from .savepoint import format_inspection, inspect_savepoint

    try:
        info = inspect_savepoint(args.path, args.version)
    except SavepointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(info, indent=2, default=str) if args.json else format_inspection(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
