"""Helpers shared by the integration tests: an environment per mode, a run into a Delta sink
read back, and a savepoint's entry rows as plain tuples."""

from __future__ import annotations

from typing import Any, Optional

from deltalake import DeltaTable
from pyspark_datastream.savepoint import Savepoint

__all__ = ["ENTRY_COLS", "env_for", "run_to_delta", "entry_rows"]

#: a savepoint's entry columns, in the order the tests compare them
ENTRY_COLS = ["operator_uid", "key_group", "key", "state_name", "namespace", "user_key", "value"]


def env_for(env_factory: Any, tmp_path: Any, mode: str, name: str, **config: Any) -> Any:
    """An environment in ``mode``; a STREAMING one checkpoints under ``tmp_path/ckpt-<name>``."""
    if mode == "STREAMING":
        config.setdefault("execution.checkpointing.dir", str(tmp_path / f"ckpt-{name}"))
    return env_factory(mode, config)


def run_to_delta(env: Any, stream: Any, out_path: str, job: str,
                 savepoint_path: Optional[str] = None) -> list[tuple]:
    """Sink ``stream`` into the Delta table ``out_path``, run ``job`` and return the table's
    rows, sorted."""
    stream.sink_to_delta(out_path)
    env.execute(job, savepoint_path=savepoint_path)
    return sorted(tuple(r.values()) for r in DeltaTable(out_path).to_pyarrow_table().to_pylist())


def entry_rows(spark: Any, path: str, uid: str) -> list[tuple]:
    """Every entry row of ``uid`` (state and timers), decoded to plain tuples, sorted."""
    df = Savepoint.load(path, spark).entries(uid).select(*ENTRY_COLS)
    return sorted(tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r)
                  for r in df.collect())
