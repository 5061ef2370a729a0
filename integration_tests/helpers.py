"""Helpers shared by the integration tests: an environment per mode, files of a file
stream, a run into a Delta sink read back, and a savepoint's entry rows as plain tuples."""

from __future__ import annotations

import os
import random
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from pyspark_datastream import (
    Configuration,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    TimestampAssigner,
)
from pyspark_datastream.savepoint import Savepoint

__all__ = ["ENTRY_COLS", "ByV", "QueryCounter", "KV_SCHEMA", "env_on", "env_for", "add_file", "add_keys_file",
           "last_commit", "drop_last_commit",
           "delta_rows", "run_to_delta", "entry_rows"]

#: a savepoint's entry columns, in the order the tests compare them
ENTRY_COLS = ["operator_uid", "key_group", "key", "state_name", "namespace", "user_key", "value"]
#: the Spark schema of the files :func:`add_file` writes
KV_SCHEMA = "k string, v long"
#: the last modification time given to a file of :func:`add_file`
_mtime = [1_700_000_000]


def spark_line(spark: Any) -> tuple[int, int]:
    """The session's Spark line as ``(major, minor)``: ``(3, 5)``, ``(4, 2)``."""
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


def env_on(spark: Any, mode: str, config: Optional[dict[str, Any]] = None) -> Any:
    """An environment in ``mode`` on the session ``spark``, with ``config`` and parallelism 2
    (what the ``env_factory`` fixture builds; usable where no fixture is, e.g. in a
    module-scoped fixture)."""
    conf = Configuration()
    for k, v in (config or {}).items():
        conf.set_string(k, str(v))
    env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
    env.set_runtime_mode(RuntimeExecutionMode[mode])
    env.set_parallelism(2)
    return env


def env_for(env_factory: Any, tmp_path: Any, mode: str, name: str, **config: Any) -> Any:
    """An environment in ``mode``; a STREAMING one checkpoints under ``tmp_path/ckpt-<name>``."""
    if mode == "STREAMING":
        config.setdefault("execution.checkpointing.dir", str(tmp_path / f"ckpt-{name}"))
    return env_factory(mode, config)


def out_of_order_files(seed: int, count: int, per_file: int, users: int, span: int
                       ) -> list[list[tuple[str, int]]]:
    """``count`` files' (user, event time) rows, users ``u0`` to ``u<users - 1>``: file ``i``'s
    times in ``[i * span, (i + 1) * span)``, each file later than the one before and its rows
    out of order."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rows = [(f"u{rng.randrange(users)}", i * span + rng.randrange(span))
                for _ in range(per_file)]
        rng.shuffle(rows)
        out.append(rows)
    return out


def add_file(folder: str, rows: list[tuple[str, int]], name: str) -> None:
    """One Parquet file ``<name>.parquet`` of (k, v) rows in ``folder``, written atomically
    (Spark's file source skips the hidden temporary file); each file's mtime is later than
    the previous one's, so the file order is the arrival order."""
    os.makedirs(folder, exist_ok=True)
    table = pa.table({"k": [r[0] for r in rows], "v": pa.array([r[1] for r in rows], pa.int64())})
    tmp = os.path.join(folder, f".{name}.tmp")
    pq.write_table(table, tmp)
    _mtime[0] += 10
    os.utime(tmp, (_mtime[0], _mtime[0]))
    os.replace(tmp, os.path.join(folder, f"{name}.parquet"))


def add_keys_file(folder: str, keys: list[str], name: str) -> None:
    """:func:`add_file` of one (key, 1) row per key."""
    add_file(folder, [(k, 1) for k in keys], name)


def delta_rows(path: str, missing_ok: bool = False) -> list[tuple]:
    """The rows of the Delta table at ``path`` as tuples, sorted; [] when ``missing_ok`` and
    no table is there yet (a sink's table before its first commit)."""
    if missing_ok and not DeltaTable.is_deltatable(path):
        return []
    return sorted(tuple(r.values()) for r in DeltaTable(path).to_pyarrow_table().to_pylist())


def run_to_delta(env: Any, stream: Any, out_path: str, job: str,
                 savepoint_path: Optional[str] = None) -> list[tuple]:
    """Sink ``stream`` into the Delta table ``out_path``, run ``job`` and return the table's
    rows, sorted."""
    stream.sink_to_delta(out_path)
    env.execute(job, savepoint_path=savepoint_path)
    return delta_rows(out_path)


def entry_rows(spark: Any, path: str, uid: str) -> list[tuple]:
    """Every entry row of ``uid`` (state and timers), decoded to plain tuples, sorted."""
    df = Savepoint.load(path, spark).entries(uid).select(*ENTRY_COLS)
    return sorted(tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r)
                  for r in df.collect())


def _commit_log(checkpoints: Any) -> Any:
    """The commit log of the one sink query checkpointed under ``checkpoints`` (a Path)."""
    (commits,) = [p for p in checkpoints.rglob("commits") if p.parent.name == "checkpoint"]
    return commits


def last_commit(checkpoints: Any) -> int:
    """The last batch id in the commit log of the one sink query under ``checkpoints``."""
    return max(int(p.name) for p in _commit_log(checkpoints).iterdir() if p.name.isdigit())


def drop_last_commit(checkpoints: Any) -> int:
    """Remove the last entry of that commit log, as a driver that died after the sink wrote
    the batch and before Spark logged it leaves it (the next run runs the batch again); the
    batch id removed."""
    last = last_commit(checkpoints)
    for name in (str(last), f".{last}.crc"):
        (_commit_log(checkpoints) / name).unlink(missing_ok=True)
    return last


class QueryCounter:
    """The streaming queries started on the session while it listens."""

    def __init__(self, spark):
        from pyspark.sql.streaming import StreamingQueryListener

        started = self.started = []

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event):  # noqa: N802 - Spark's name
                started.append(event.name)

            def onQueryProgress(self, event):  # noqa: N802
                pass

            def onQueryIdle(self, event):  # noqa: N802
                pass

            def onQueryTerminated(self, event):  # noqa: N802
                pass

        self.spark, self.listener = spark, Listener()

    def __enter__(self):
        self.spark.streams.addListener(self.listener)
        return self

    def __exit__(self, *exc):
        self.spark.streams.removeListener(self.listener)


class ByV(TimestampAssigner):
    """Event time from a (key, ts) record's second field."""

    def extract_timestamp(self, value, record_timestamp):
        return value[1]
