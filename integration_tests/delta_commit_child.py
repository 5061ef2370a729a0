"""Child processes of ``test_delta_exactly_once`` (no JVM): commit micro-batches to a real
delta-rs table through the STREAMING Delta sink's own protocol
(``pyspark_datastream.translation.delta_sink.commit_batch``), optionally armed to die at a named
point (``faults``).

Run through a ``multiprocessing`` forkserver context that preloads this module, so a child
costs a fork, not an interpreter start.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import deltalake  # noqa: F401 - imported once, in the forkserver
import faults
import pandas  # noqa: F401 - pyarrow's Parquet writer imports it at its first write (~2 s)
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark_datastream.translation.delta_sink import commit_batch

__all__ = ["SCHEMA", "files_writer", "record_commit", "committed_batches", "commit_batches",
           "race"]

#: the sink's columns for the running sum's (key, total, count) records
SCHEMA = pa.schema([("f0", pa.string()), ("f1", pa.int64()), ("f2", pa.int64())])


def files_writer(rows: list[tuple[str, int, int]], barrier: Any = None) -> Any:
    """Writes ``rows`` as two Parquet files into a new folder (as Spark's executors would);
    then waits at ``barrier`` when given (both racers have checked and written by then)."""

    def write(folder: str) -> None:
        os.makedirs(folder)
        half = len(rows) // 2
        for i, part in enumerate((rows[:half], rows[half:])):
            table = pa.table({"f0": [r[0] for r in part], "f1": [r[1] for r in part],
                              "f2": [r[2] for r in part]}, schema=SCHEMA)
            pq.write_table(table, os.path.join(folder, f"part-{i:05d}.parquet"))
        if barrier is not None:
            barrier.wait(timeout=60)

    return write


def record_commit(log_path: str, batch_id: int) -> None:
    """What Spark does after ``foreachBatch`` returned: log the batch as committed."""
    with open(log_path, "a", encoding="utf-8") as f:
        f.write(f"{batch_id}\n")
        f.flush()
        os.fsync(f.fileno())


def committed_batches(log_path: str) -> list[int]:
    if not os.path.exists(log_path):
        return []
    with open(log_path, encoding="utf-8") as f:
        return [int(line) for line in f if line.strip()]


def commit_batches(table: str, app_id: str, batches: list[tuple[int, list[Any]]],
                   log_path: str, kill_at: Optional[str], ready: Any = None) -> None:
    """The sink of a micro-batch loop: commit each batch, then log it (Spark's commit log);
    armed with ``kill_at`` (``point:n``) it dies there with SIGKILL."""
    if kill_at:
        faults.install(kill_at)
    if ready is not None:
        ready.set()
    for batch_id, rows in batches:
        commit_batch(table, app_id, batch_id, files_writer(rows), SCHEMA)
        record_commit(log_path, batch_id)


def race(table: str, app_id: str, batch_id: int, rows: list[Any], barrier: Any,
         results: Any) -> None:
    """One of two runs of the same micro-batch at once (two jobs on one checkpoint)."""
    results.put((os.getpid(), commit_batch(table, app_id, batch_id, files_writer(rows, barrier),
                                           SCHEMA)))
