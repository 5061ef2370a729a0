"""A STREAMING job on real Spark executors runs on a state backend registered from the test
folder alone (``tests/state_store/backends/counting_backend.py``, the heap backend counting calls):
the module ships with the job (``SparkContext.addPyFile``) and is named by its
``"module:attr"`` path, which the executors import. No product file knows the backend."""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark_datastream import StateBackend

COUNTING_MODULE = (Path(__file__).resolve().parents[1] / "tests" / "state_store" / "backends"
                   / "counting_backend.py")
PATH = "counting_backend:COUNTING"
_mtime = [1_710_000_000]


@dataclass
class CountingStateBackend(StateBackend):
    """The user-side configuration object of the counting backend."""

    record_dir: str

    kind = PATH

    def options(self) -> dict[str, Any]:
        return {"record_dir": self.record_dir}


def _add_file(folder: Path, rows: list[tuple[str, int]], name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.parquet"
    pq.write_table(pa.table({"k": [r[0] for r in rows],
                             "v": pa.array([r[1] for r in rows], pa.int64())}), path)
    _mtime[0] += 10
    os.utime(path, (_mtime[0], _mtime[0]))


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def _running_counts(rows: list[tuple[str, int]], start: dict[str, int]) -> dict[str, list]:
    """Plain Python: per key, the (key, count) outputs in arrival order."""
    counts, out = dict(start), {}
    for key, _ in rows:
        counts[key] = counts.get(key, 0) + 1
        out.setdefault(key, []).append((key, counts[key]))
    return out


def test_a_streaming_job_runs_on_a_backend_registered_from_the_test_folder(
        spark, env_factory, tmp_path):
    spark.sparkContext.addPyFile(str(COUNTING_MODULE))  # executors (and the driver) import it
    running_count = importlib.import_module("counting_backend").RunningCount  # shared with tests/
    src = tmp_path / "in"
    first_rows = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("a", 5)]
    second_rows = [("b", 6), ("a", 7), ("d", 8)]

    def run(records: Path) -> dict[str, list]:
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
        env.set_state_backend(CountingStateBackend(str(records)))
        assert env.get_state_backend() == (PATH, {"record_dir": str(records)})
        df = spark.readStream.schema("k string, v long").parquet(str(src))
        out: dict[str, list] = {}
        for key, n in env.from_dataframe(df).key_by(lambda r: r[0]).process(
                running_count()).execute_and_collect("counting-backend"):
            out.setdefault(key, []).append((key, n))
        return out

    _add_file(src, first_rows, "f1")
    assert run(tmp_path / "records-1") == _running_counts(first_rows, {})
    first = _records(tmp_path / "records-1")
    assert first, "the executors built no counting backend"
    assert any(r["pid"] != os.getpid() for r in first)  # Python workers, not the driver
    keys = {key for key, _ in first_rows}
    assert sum(r["calls"].get("set_current_key", 0) for r in first) >= len(keys)
    assert sum(r["calls"].get("snapshot", 0) for r in first) >= 1

    # a second run continues from the checkpoint: the key groups' committed state is restored
    # into counting backends on the executors
    _add_file(src, second_rows, "f2")
    assert run(tmp_path / "records-2") == _running_counts(second_rows, {"a": 3, "b": 1})
    second = _records(tmp_path / "records-2")
    assert sum(r["calls"].get("restore", 0) for r in second) >= 2  # key groups of a and b
