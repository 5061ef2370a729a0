"""Command line: ``python -m pyspark_datastream {demo,savepoint inspect PATH}``."""

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
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    if argv[0] == "demo":
        from .demo import main as demo_main

        return demo_main(argv[1:])
    parser.error(f"unknown command {argv[0]!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
