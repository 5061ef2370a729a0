"""Exactly-once STREAMING Delta sink: each micro-batch is committed idempotently.

Spark runs a ``foreachBatch`` function at least once per micro-batch: a batch whose
function ran but whose entry in the query's commit log was never written (the driver
died in between, or a second job ran the same checkpoint) runs again, with the same
batch id and the same rows. The sink makes the second run a no-op:

* **Application id**: the sink query's id, which Spark keeps in its checkpoint
  (``<checkpoint>/metadata``): stable across restarts of the query, different for every
  sink query and for every new checkpoint (a fresh checkpoint restarts batch ids at 0
  under a new id): :func:`query_app_id`, from ``query_ids.streaming_query_id``.
* **Spark's Delta** (``session_has_delta``): the ``txnAppId``/``txnVersion`` write options;
  Delta skips a batch whose version it has recorded for that id (without running its
  DataFrame, so the sink then drains it, as below). A run that loses a concurrent commit of
  the same batch gets Delta's conflict and writes again, which Delta then skips.
* **delta-rs**: :func:`commit_batch`. If the table's ``transaction_version(app_id)`` is
  already ``>= batch_id`` the batch is skipped (its DataFrame still runs, into Spark's
  ``noop`` sink: :func:`drain`). Otherwise the executors write the data
  files into a fresh folder and the driver commits their add actions together with the
  application transaction ``(app_id, batch_id)`` in one Delta commit, with no automatic
  rebase (``max_commit_retries=0``). A commit that loses to a concurrent one reloads the
  table: if the winner recorded this batch, this run's files are removed and the batch
  counts as done; otherwise it commits again (a few attempts).

A run killed after writing data files and before its commit leaves those files
unreferenced by the Delta log (readers never see them; ``VACUUM`` removes them).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from ..operators.exceptions import JobExecutionError
from ..spark_io.delta_io import (
    DeltaCommitConflict,
    add_actions_for_folder,
    local_path,
    new_folder_name,
    session_has_delta,
    write_parquet_files,
)
from ..spark_io.storage_conf import current_storage, delta_options, job_scope
from ..state_store.exceptions import DataStreamError, StorageError
from ..state_store.storage import Storage
from .query_ids import scoped, streaming_query_id

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["APP_ID_PREFIX", "query_app_id", "commit_batch", "write_batch", "drain",
           "micro_batch_writer"]

APP_ID_PREFIX = "pyspark-datastream:"
#: commits attempted for one batch before a conflict is raised
COMMIT_ATTEMPTS = 8

log = logging.getLogger("pyspark_datastream")


def query_app_id(spark: SparkSession, checkpoint: str) -> str:
    """The Delta application id of the streaming query whose checkpoint is ``checkpoint``
    (called from inside its ``foreachBatch`` function): :func:`streaming_query_id` with
    :data:`APP_ID_PREFIX`."""
    return f"{APP_ID_PREFIX}{streaming_query_id(spark, checkpoint)}"


def _committed(root: str, app_id: str, options: Optional[dict[str, str]] = None) -> int:
    """The last batch id the table recorded for ``app_id`` (-1: none, or no table)."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(root, storage_options=options):
        return -1
    version = DeltaTable(root, storage_options=options).transaction_version(app_id)
    return -1 if version is None else int(version)


def commit_batch(path: str, app_id: str, batch_id: int, write_files: Callable[[str], None],
                 arrow_schema: pa.Schema, mode: str = "append",
                 skipped: Optional[Callable[[], None]] = None) -> int:
    """Write and commit one micro-batch exactly once (delta-rs); return the rows it added
    (0 when the table already holds this batch).

    ``write_files(folder)`` writes the batch's Parquet files into the new folder ``folder``
    inside the table directory (Spark's executors, or anything writing Parquet);
    ``skipped()`` runs instead when the table already held the batch before anything was
    written.
    """
    from deltalake import CommitProperties, DeltaTable, Schema, Transaction
    from deltalake.exceptions import CommitFailedError, DeltaError
    from deltalake.transaction import create_table_with_add_actions

    root = local_path(path)
    storage = current_storage()
    options = delta_options(root, storage)
    done = _committed(root, app_id, options)
    if done >= batch_id:
        log.info("Delta table %s: micro-batch %d of %s is already committed (up to %d); "
                 "skipped", path, batch_id, app_id, done)
        if skipped is not None:
            skipped()
        return 0
    folder = new_folder_name(f"-b{batch_id}")
    target = Storage.join(root, folder)
    try:
        write_files(target)
    except DataStreamError:
        storage.delete_dir(target)
        raise
    except Exception as exc:
        storage.delete_dir(target)
        raise JobExecutionError(f"writing micro-batch {batch_id} into {path} failed: {exc}") from exc
    start = time.monotonic()
    actions, total = add_actions_for_folder(root, folder, storage)
    schema = Schema.from_arrow(arrow_schema)
    props = CommitProperties(max_commit_retries=0,
                             app_transactions=[Transaction(app_id, batch_id)])
    failure: Exception = DeltaCommitConflict("no attempt")
    for attempt in range(COMMIT_ATTEMPTS):
        if attempt:
            time.sleep(0.05 * attempt)
            if _committed(root, app_id, options) >= batch_id:  # a concurrent run won
                return _lost(root, folder, total, path, batch_id, app_id, storage)
        creating = not DeltaTable.is_deltatable(root, storage_options=options)
        try:
            if creating:
                create_table_with_add_actions(root, schema, actions, mode="error",
                                              storage_options=options,
                                              commit_properties=props)
            else:
                table = DeltaTable(root, storage_options=options)
                recorded = table.transaction_version(app_id)
                if recorded is not None and recorded >= batch_id:
                    continue  # recognised as done at the top of the next attempt
                table.create_write_transaction(actions, mode=mode, schema=schema,
                                               commit_properties=props)
        except CommitFailedError as exc:  # another commit took the version
            failure = exc
            continue
        except (DeltaError, OSError) as exc:
            if creating and DeltaTable.is_deltatable(root, storage_options=options):
                failure = exc  # another run created the table first
                continue
            # the data files stay: the commit may have reached the store before the failure
            # (a lost answer), and files no commit names are invisible to readers
            error = StorageError if isinstance(exc, OSError) else JobExecutionError
            raise error(f"committing micro-batch {batch_id} to {path} failed: {exc}") from exc
        log.info("Delta table %s: micro-batch %d of %s committed (%s rows in %d files) in "
                 "%.2f s", path, batch_id, app_id, f"{total:,}", len(actions),
                 time.monotonic() - start)
        return total
    if _committed(root, app_id, options) >= batch_id:
        return _lost(root, folder, total, path, batch_id, app_id, storage)
    storage.delete_dir(target)
    raise DeltaCommitConflict(f"micro-batch {batch_id} of {app_id} could not be committed to "
                              f"{path} after {COMMIT_ATTEMPTS} attempts: {failure}") from failure


def _lost(root: str, folder: str, total: int, path: str, batch_id: int, app_id: str,
          storage: Storage) -> int:
    """The table holds the batch after a failed commit: another run's commit (remove this
    run's files, 0 rows) or, when the log references them, this run's own (its rows)."""
    from deltalake import DeltaTable

    marker = f"/{folder}/"
    table = DeltaTable(root, storage_options=delta_options(root, storage))
    if any(marker in uri for uri in table.file_uris()):
        return total  # the commit went through although it reported a failure
    storage.delete_dir(Storage.join(root, folder))
    log.info("Delta table %s: micro-batch %d of %s was committed by a concurrent run; this "
             "run's files removed", path, batch_id, app_id)
    return 0


def _spark_delta_version(spark: SparkSession, path: str) -> int:
    try:
        rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()
    except Exception:  # noqa: BLE001 - no table yet
        return -1
    return int(rows[0]["version"]) if rows else -1


def write_batch(spark: SparkSession, df: DataFrame, path: str, app_id: str, batch_id: int,
                mode: str = "append") -> int:
    """Write micro-batch ``batch_id`` of ``df`` to the Delta table at ``path`` exactly once;
    return the rows added (0 when the table already holds this batch)."""
    if session_has_delta(spark):
        return _write_batch_spark_delta(spark, df, path, app_id, batch_id, mode)
    from pyspark.sql.pandas.types import to_arrow_schema

    return commit_batch(path, app_id, batch_id,
                        lambda folder: write_parquet_files(spark, df, folder),
                        to_arrow_schema(df.schema), mode, skipped=lambda: drain(df))


#: Spark's Delta's optimistic-concurrency failures (``io.delta.exceptions``): another commit
#: won the version this write read
_SPARK_DELTA_CONFLICTS = ("ConcurrentTransactionException", "ConcurrentAppendException",
                          "ConcurrentWriteException", "MetadataChangedException",
                          "ProtocolChangedException", "DeltaConcurrentModificationException")


def _spark_delta_conflict(exc: Exception) -> bool:
    text = f"{type(exc).__name__} {str(exc)[:4000]}"
    return any(name in text for name in _SPARK_DELTA_CONFLICTS)


def _write_batch_spark_delta(spark: SparkSession, df: DataFrame, path: str, app_id: str,
                             batch_id: int, mode: str) -> int:
    """:func:`write_batch` with Spark's Delta: the ``txnAppId``/``txnVersion`` options make
    Delta skip a batch it recorded for ``app_id``. A concurrent run of the same batch (two
    jobs on one checkpoint) that commits first makes this commit fail with a Delta conflict:
    the write is tried again, and Delta then skips it (or, for another conflict, commits it)."""
    failure: Exception = DeltaCommitConflict("no attempt")
    for attempt in range(COMMIT_ATTEMPTS):
        if attempt:
            time.sleep(0.05 * attempt)
        before = _spark_delta_version(spark, path)
        try:
            (df.write.format("delta").mode(mode).option("txnAppId", app_id)
             .option("txnVersion", batch_id).save(path))
        except Exception as exc:  # noqa: BLE001 - Delta's conflicts are Py4J errors here
            if not _spark_delta_conflict(exc):
                raise
            log.info("Delta table %s: micro-batch %d of %s lost a concurrent commit (%s); "
                     "trying again", path, batch_id, app_id, str(exc).splitlines()[0][:200])
            failure = exc
            continue
        rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()
        if not rows or int(rows[0]["version"]) == before:
            drain(df)  # Delta skipped a batch it had recorded for this application id
            return 0
        return int((rows[0]["operationMetrics"] or {}).get("numOutputRows", 0))
    raise DeltaCommitConflict(f"micro-batch {batch_id} of {app_id} could not be committed to "
                              f"{path} after {COMMIT_ATTEMPTS} attempts: {failure}") from failure


def drain(df: DataFrame) -> None:
    """Run ``df`` to the end and drop its rows: a skipped micro-batch of a stateful query
    must still run every partition, or Spark refuses to commit the batch's state
    (STATE_STORE_COMMIT_VALIDATION_FAILED, Spark 4.2)."""
    df.write.format("noop").mode("overwrite").save()


def micro_batch_writer(path: str, mode: str, checkpoint: str,
                       total: list[int], storage: Storage, scope: str = ""
                       ) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of a STREAMING ``sink_to_delta``: batch 0 uses ``mode``,
    later batches append; rows added accumulate in ``total[0]``. Spark calls it from a thread
    of its own, so it enters the job's storage scope (``storage``) itself. It takes the
    session from the micro-batch: Spark Connect 3.5 cannot pickle a session into it.
    ``scope`` tells the sinks of the job's one query apart: it joins the application id."""

    def write(batch_df: Any, batch_id: int) -> None:
        spark = batch_df.sparkSession
        with job_scope(storage):
            app_id = scoped(query_app_id(spark, checkpoint), scope)
            try:
                total[0] += write_batch(spark, batch_df, path, app_id, batch_id,
                                        mode if batch_id == 0 else "append")
            except DataStreamError:
                raise
            except OSError as exc:  # delta-rs reading the table's log: the store failed
                raise StorageError(f"micro-batch {batch_id} of the Delta table {path}: "
                                   f"{type(exc).__name__}: {exc}") from exc

    return write
