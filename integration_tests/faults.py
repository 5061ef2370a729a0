"""Named crash points for the fault-injection tests, armed from outside the product.

``PDS_TEST_KILL_AT=<point>:<n>`` (or :func:`install` with that spec) makes the process that
reaches ``<point>`` for the ``n``-th time (1-based) die there with SIGKILL: a real kill, no
``finally`` block, no cleanup, no flush. A process that leads its own process group (a
driver started in a new session, as the tests do) kills the whole group, so its JVM and
Python workers die with it the way they would when the machine fails; any other process
kills only itself.

The product has no crash points of its own: :func:`install` wraps the functions the
STREAMING Delta sink (``pyspark_datastream.translation.delta_sink``) calls at each step of
its commit protocol, in the process that runs the sink (the driver, where ``foreachBatch``
runs), and the wrapper dies at the armed point. The points:

* ``delta.before-write``: the batch was found not yet committed and nothing is written
  (delta-rs: the sink names the batch's new data folder; Spark's Delta: the sink is about
  to hand the batch to Spark's Delta writer);
* ``delta.after-write``: delta-rs only, the data files are written and not yet committed
  (the sink lists them for the commit);
* ``delta.after-commit``: the Delta commit holding the batch returned, and Spark has not
  yet logged the batch (delta-rs: its commit call returned; Spark's Delta: the sink's
  write of the batch returned).

and for the STREAMING Kafka sink (``pyspark_datastream.translation.kafka``):

* ``kafka.after-write``: the batch's records are in Kafka (EXACTLY_ONCE: every partition's
  transaction committed; AT_LEAST_ONCE: Spark's Kafka write returned), and Spark has not
  yet logged the batch.
"""

from __future__ import annotations

import functools
import os
import signal
from typing import Any, Callable, Optional

__all__ = ["KILL_AT_ENV", "POINTS", "DELTA_POINTS", "KAFKA_POINTS", "parse", "kill_point", "install"]

KILL_AT_ENV = "PDS_TEST_KILL_AT"
DELTA_POINTS = ("delta.before-write", "delta.after-write", "delta.after-commit")
KAFKA_POINTS = ("kafka.after-write",)
POINTS = DELTA_POINTS + KAFKA_POINTS

#: (point, n) of this process once armed; ("", 0) when unarmed
_armed: tuple[str, int] = ("", 0)
_arrivals = 0
_installed = False


def parse(spec: Optional[str]) -> tuple[str, int]:
    """``"<point>:<n>"`` -> (point, n); ("", 0) for None or a malformed spec."""
    point, _, count = (spec or "").rpartition(":")
    if not point or not count.isdigit() or int(count) < 1:
        return ("", 0)
    return (point, int(count))


def kill_point(name: str) -> None:
    """Die here (SIGKILL) when the armed point is ``name`` and this is its n-th arrival."""
    global _arrivals
    if _armed[0] != name:
        return
    _arrivals += 1
    if _arrivals < _armed[1]:
        return
    if os.getpgrp() == os.getpid():  # a session leader: its JVM and workers die with it
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _before(point: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        kill_point(point)
        return function(*args, **kwargs)

    return wrapped


def _after(point: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        kill_point(point)
        return result

    return wrapped


def install(spec: Optional[str] = None) -> bool:
    """Arm this process with ``spec`` (default: the ``PDS_TEST_KILL_AT`` environment
    variable) and wrap the Delta and Kafka sinks' steps; True when a point is armed.

    Args:
        spec: ``"<point>:<n>"``, one of :data:`POINTS`.

    Returns:
        Whether a point is armed (unarmed, nothing is wrapped).
    """
    global _armed, _arrivals, _installed
    armed = parse(spec if spec is not None else os.environ.get(KILL_AT_ENV))
    if not armed[0]:
        return False
    if armed[0] not in POINTS:
        raise ValueError(f"unknown crash point {armed[0]!r}; the points are {POINTS}")
    _armed, _arrivals = armed, 0
    if _installed:
        return True
    _installed = True
    from pyspark_datastream.translation import kafka

    kafka.write_kafka = _after("kafka.after-write", kafka.write_kafka)
    kafka.write_kafka_transactions = _after("kafka.after-write", kafka.write_kafka_transactions)
    import deltalake
    import deltalake.transaction
    from pyspark_datastream.spark_io.delta_io import session_has_delta
    from pyspark_datastream.translation import delta_sink

    # delta-rs (commit_batch): the sink names the new data folder right after finding the
    # batch uncommitted, lists the written files right before committing them, and commits
    # by creating the table or by a write transaction on it
    delta_sink.new_folder_name = _before("delta.before-write", delta_sink.new_folder_name)
    delta_sink.add_actions_for_folder = _before("delta.after-write",
                                                delta_sink.add_actions_for_folder)
    deltalake.transaction.create_table_with_add_actions = _after(
        "delta.after-commit", deltalake.transaction.create_table_with_add_actions)
    deltalake.DeltaTable.create_write_transaction = _after(
        "delta.after-commit", deltalake.DeltaTable.create_write_transaction)
    # Spark's Delta writes and commits in one call of the sink's write_batch
    write_batch = delta_sink.write_batch

    @functools.wraps(write_batch)
    def write_batch_at_points(spark: Any, *args: Any, **kwargs: Any) -> int:
        spark_delta = session_has_delta(spark)
        if spark_delta:
            kill_point("delta.before-write")
        rows: int = write_batch(spark, *args, **kwargs)
        if spark_delta:
            kill_point("delta.after-commit")
        return rows

    delta_sink.write_batch = write_batch_at_points
    return True
