"""Delta table IO: Spark's Delta when the session has it, else delta-rs.

With delta-rs, executors write the Parquet data files into a fresh folder
inside the table directory and the driver commits them in one Delta
transaction (``AddAction`` per file). Nothing is collected to the driver but
file metadata; a failed write leaves no new table version (its files are
removed and were never referenced by the log).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Optional

from ..operators.exceptions import JobExecutionError
from ..state_store.exceptions import ConfigurationError, DataStreamError, StateBackendError
from ..state_store.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "WRITER_CHOICES",
    "delta_writer",
    "session_has_delta",
    "write_delta",
    "write_parquet_files",
    "new_folder_name",
    "local_path",
    "commit_parquet_folder",
    "add_actions_for_folder",
    "delta_file_uris",
    "read_delta",
    "DeltaCommitConflict",
]

WRITER_CONF = "pyspark_datastream.delta.writer"  # auto | spark | delta-rs

log = logging.getLogger("pyspark_datastream")


class DeltaCommitConflict(DataStreamError):
    """Another writer committed the same table version first."""


#: the values ``pyspark_datastream.delta.writer`` takes
WRITER_CHOICES = ("auto", "spark", "delta-rs")


def delta_writer(spark: SparkSession) -> str:
    """The session's ``pyspark_datastream.delta.writer`` (auto, spark or delta-rs); any other
    value is a ConfigurationError, not a silent auto."""
    try:
        raw = spark.conf.get(WRITER_CONF, "auto")
    except Exception:  # noqa: BLE001 - restricted sessions may refuse conf reads
        return "auto"
    choice = (raw or "auto").strip().lower()
    if choice not in WRITER_CHOICES:
        raise ConfigurationError(
            f"{WRITER_CONF} (Spark conf) must be one of {', '.join(WRITER_CHOICES)}, got {raw!r}")
    return choice


def session_has_delta(spark: SparkSession) -> bool:
    """True when ``format("delta")`` works in this session (e.g. on Databricks)."""
    choice = delta_writer(spark)
    if choice in ("spark", "delta-rs"):
        return choice == "spark"
    try:
        ext = spark.conf.get("spark.sql.extensions", "") or ""
        catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "") or ""
        if "DeltaSparkSessionExtension" in ext or "DeltaCatalog" in catalog:
            return True
        return bool(spark.conf.get("spark.databricks.clusterUsageTags.sparkVersion", "") or "")
    except Exception:  # noqa: BLE001
        return False


def local_path(path: str) -> str:
    """``path`` as the storage layer keeps it (``file:``/``file://`` dropped, relative made
    absolute, object-store URIs kept); an unserved scheme is a ConfigurationError."""
    from ..state_store.storage import normalize_uri

    return normalize_uri(path, "Delta table path")


def write_delta(spark: SparkSession, df: DataFrame, path: str, mode: str = "append",
                configuration: Optional[dict[str, str]] = None) -> int:
    """Write ``df`` as a new version of the Delta table at ``path``; return rows written."""
    from .progress import Heartbeat

    if session_has_delta(spark):
        with Heartbeat(f"writing Delta table {path} with Spark's Delta writer"):
            df.write.format("delta").mode(mode).save(path)
        hist = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()
        metrics = hist[0]["operationMetrics"] if hist else {}
        return int((metrics or {}).get("numOutputRows", 0))
    from .storage_conf import current_storage

    folder = new_folder_name()
    target = Storage.join(local_path(path), folder)
    write_parquet_files(spark, df, target)
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(df.schema)
    try:
        return commit_parquet_folder(path, folder, schema, mode, configuration)
    except Exception:
        current_storage(spark).delete_dir(target)
        raise


def new_folder_name(tag: str = "") -> str:
    """A fresh folder name for data files inside a table directory."""
    return f"part-{int(time.time() * 1000)}{tag}-{uuid.uuid4().hex[:12]}"


def write_parquet_files(spark: SparkSession, df: DataFrame, target: str) -> None:
    """Executors write ``df`` as Parquet files into the new folder ``target`` (timestamps as
    microseconds, which Delta readers accept); a failed write leaves no folder."""
    from .progress import Heartbeat

    previous = None
    try:
        previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    except Exception:  # noqa: BLE001
        previous = None
    try:
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        with Heartbeat(f"writing Delta data files into {target} (executors)"):
            df.write.mode("error").parquet(target)
    except Exception as exc:
        from .storage_conf import current_storage

        current_storage(spark).delete_dir(target)
        raise JobExecutionError(f"writing Delta data files into {target} failed: {exc}") from exc
    finally:
        if previous is not None:
            spark.conf.set("spark.sql.parquet.outputTimestampType", previous)


def add_actions_for_folder(root: str, folder: str, storage: Optional[Storage] = None,
                           names: Optional[list[str]] = None) -> tuple[list[Any], int]:
    """One delta-rs ``AddAction`` per Parquet file under ``root/folder`` (or per file of
    ``names`` there, looked up by exact name, not listed), and the row count.

    Only file metadata is read (row counts from Parquet footers), on the driver, through
    the storage layer (``root`` may be an object-store URI).
    """
    import posixpath

    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    storage = storage or Storage()
    fs, base = storage.resolve(root)
    if names is not None:
        infos = fs.get_file_info([posixpath.join(base, folder, n) for n in names])
        lost = [i.path for i in infos if i.type != pafs.FileType.File]
        if lost:
            raise StateBackendError(f"savepoint data files {lost[:5]} under {root} are missing")
    else:
        infos = fs.get_file_info(pafs.FileSelector(posixpath.join(base, folder),
                                                   recursive=True, allow_not_found=True))
    actions = []
    total = 0
    for info in sorted(infos, key=lambda i: i.path):
        if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
            continue
        with fs.open_input_file(info.path) as f:
            n = pq.ParquetFile(f).metadata.num_rows
        total += n
        mtime = info.mtime.timestamp() if info.mtime is not None else time.time()
        actions.append(AddAction(
            path=posixpath.relpath(info.path, base), size=int(info.size), partition_values={},
            modification_time=int(mtime * 1000), data_change=True,
            stats=json.dumps({"numRecords": n}),
        ))
    return actions, total


def commit_parquet_folder(path: str, folder: str, arrow_schema: Any, mode: str = "append",
                          configuration: Optional[dict[str, str]] = None) -> int:
    """Commit every ``*.parquet`` file under ``path/folder`` as one Delta version."""
    from deltalake import DeltaTable, Schema
    from deltalake.exceptions import CommitFailedError
    from deltalake.transaction import create_table_with_add_actions

    from .storage_conf import current_storage, delta_options

    root = local_path(path)
    storage = current_storage()
    options = delta_options(root, storage)
    start = time.monotonic()
    actions, total = add_actions_for_folder(root, folder, storage)
    schema = Schema.from_arrow(arrow_schema)
    try:
        if DeltaTable.is_deltatable(root, storage_options=options):
            table = DeltaTable(root, storage_options=options)
            table.create_write_transaction(actions, mode=mode, schema=schema)
            version = int(table.version()) + 1
        else:
            create_table_with_add_actions(root, schema, actions, mode="error",
                                          configuration=configuration, storage_options=options)
            version = 0
    except CommitFailedError as exc:
        raise DeltaCommitConflict(f"concurrent commit to the Delta table at {path}: {exc}") from exc
    log.info("Delta table %s: committed version %d (%s rows in %d files, %s bytes, mode %s) "
             "in %.2f s", path, version, f"{total:,}", len(actions),
             f"{sum(a.size for a in actions):,}", mode, time.monotonic() - start)
    return total


def delta_file_uris(path: str, version: Optional[int] = None) -> list[str]:
    """Data files of the Delta table at ``path`` (latest version unless ``version``)."""
    from deltalake import DeltaTable

    from .storage_conf import current_storage, delta_options

    root = local_path(path)
    return DeltaTable(root, version=version,
                      storage_options=delta_options(root, current_storage())).file_uris()


def read_delta(spark: SparkSession, path: str, version: Optional[int] = None) -> DataFrame:
    """The Delta table at ``path`` as a DataFrame (executors read the files).

    Args:
        spark: The SparkSession.
        path: The table path (local or on the configured storage).
        version: The Delta version to read, or None for the latest.

    Returns:
        The DataFrame.
    """
    if session_has_delta(spark):
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(path)
    from deltalake import DeltaTable

    from .storage_conf import current_storage, delta_options

    root = local_path(path)
    table = DeltaTable(root, version=version,
                       storage_options=delta_options(root, current_storage(spark)))
    uris = table.file_uris()
    if not uris:
        from pyspark.sql.pandas.types import from_arrow_schema

        arrow_schema = table.schema().to_arrow()
        return spark.createDataFrame([], from_arrow_schema(_as_pa_schema(arrow_schema)))
    return spark.read.parquet(*uris)


def _as_pa_schema(schema: Any) -> Any:
    import pyarrow as pa

    return schema if isinstance(schema, pa.Schema) else pa.schema(schema)
