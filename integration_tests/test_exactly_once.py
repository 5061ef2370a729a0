"""Exactly-once keyed state in STREAMING: a failure after the keyed operator ran but before
the micro-batch committed, then a restart from the checkpoint, equals an uninterrupted run.

Scope (see the report): heap backend, an exception injected in the same query after the
operator, at one batch number. Killing the driver process is not covered here yet.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark_datastream import JobExecutionError, MapFunction, Types

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
_mtime = [1_710_000_000]


def add_file(folder: str, rows: list[tuple[str, int]], name: str) -> None:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.parquet")
    pq.write_table(pa.table({"k": [r[0] for r in rows],
                             "v": pa.array([r[1] for r in rows], pa.int64())}), path)
    _mtime[0] += 10
    os.utime(path, (_mtime[0], _mtime[0]))


class FailWhenArmed(MapFunction):
    """Raises for a value >= ``threshold`` while ``marker`` exists (after reduce ran)."""

    def __init__(self, marker: str, threshold: int) -> None:
        self.marker = marker
        self.threshold = threshold

    def map(self, value):
        if value[1] >= self.threshold and os.path.exists(self.marker):
            raise RuntimeError("injected failure before commit")
        return value


@pytest.mark.parametrize("fail_at", [100, 1_000])  # batch 1 (second file) / batch 2 (third)
def test_failure_before_commit_then_restart_equals_uninterrupted_run(
        spark, env_factory, tmp_path, fail_at):
    src = str(tmp_path / "in")
    add_file(src, [("a", 1), ("b", 10)], "f1")
    add_file(src, [("a", 100), ("b", 20)], "f2")
    add_file(src, [("a", 1_000), ("b", 30)], "f3")
    marker = str(tmp_path / "armed")
    open(marker, "w").close()

    def run():
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
        df = spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1).parquet(src)
        ds = (env.from_dataframe(df).key_by(lambda r: r[0])
              .reduce(lambda x, y: (x[0], x[1] + y[1]))
              .map(FailWhenArmed(marker, fail_at), output_type=PAIR))
        return list(ds.execute_and_collect("exactly-once"))

    with pytest.raises(JobExecutionError, match="injected failure before commit"):
        run()
    os.remove(marker)
    resumed = run()
    last = {}
    for k, v in resumed:
        last[k] = v
    # uninterrupted: a = 1 + 100 + 1000, b = 10 + 20 + 30; a retried batch must not re-add
    assert last == {"a": 1_101, "b": 60}
    # the failed batch is re-run from the state of the last committed batch
    first_a = [v for k, v in resumed if k == "a"][0]
    assert first_a == (101 if fail_at == 100 else 1_101)
