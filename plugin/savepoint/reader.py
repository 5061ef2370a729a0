"""Reading savepoints: open the Delta table, read the metadata row, load an operator's entries.

The driver finds and checks the table here (a path that is no savepoint, a missing
version and a damaged Delta log each get their own error) before anything reads data.
:func:`read_metadata` reads only the metadata row (delta-rs, filter on ``kind``);
:func:`load_operator_state` returns an operator's entries as a DataFrame whose files
executors read, with key groups recomputed from the key bytes for the CURRENT max
parallelism (restore under another max parallelism). The writer, the ``Savepoint``
reader and inspection open tables through :func:`open_table` too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..spark_io.storage_conf import current_storage, delta_options
from ..state_store.entries import StateEntry
from ..state_store.exceptions import SavepointFormatError
from ..state_store.keygroups import check_max_parallelism
from ..state_store.storage import Storage, normalize_uri
from .exceptions import SavepointNotFoundError
from .format import BROADCAST_KIND, METADATA_KIND, SavepointMetadata

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "local_path",
    "is_delta_table",
    "table_options",
    "open_table",
    "read_metadata",
    "savepoint_versions",
    "table_df",
    "load_operator_state",
    "read_broadcast_entries",
]


def local_path(path: str) -> str:
    """``path`` as the storage layer keeps it (``file:``/``file://`` dropped, a relative path
    made absolute, an object-store URI kept); an unserved scheme is a ConfigurationError."""
    return normalize_uri(path, "savepoint path")


def table_options(root: str) -> Optional[dict[str, str]]:
    """delta-rs ``storage_options`` of the table at ``root`` (``current_storage``'s)."""
    return delta_options(root, current_storage())


def is_delta_table(root: str) -> bool:
    """Whether ``root`` holds a readable Delta table."""
    from deltalake import DeltaTable

    try:
        return bool(DeltaTable.is_deltatable(root, storage_options=table_options(root)))
    except Exception:  # noqa: BLE001 - unreadable path: not a table
        return False


def open_table(path: str, version: Optional[int]) -> Any:
    """The savepoint's ``DeltaTable`` at ``version`` (latest when None), checked to be one.

    ``SavepointNotFoundError`` when ``path`` holds no savepoint or not that version;
    ``SavepointFormatError`` when the Delta log is damaged.
    """
    from deltalake import DeltaTable

    root = local_path(path)
    options = table_options(root)
    log_dir = Storage.join(root, "_delta_log")
    commits = sorted(n for n in current_storage().list_names(log_dir) if n.endswith(".json"))
    if not commits and not is_delta_table(root):
        raise SavepointNotFoundError(f"{path} is not a savepoint: no Delta table there")
    try:
        table = DeltaTable(root, version=version, storage_options=options)
    except Exception as exc:  # noqa: BLE001 - foreign error: a missing version or a bad log
        if version is not None:
            try:
                latest = DeltaTable(root, storage_options=options).version()
            except Exception:  # noqa: BLE001 - the log itself is unreadable: below
                latest = None
            if latest is not None:
                raise SavepointNotFoundError(
                    f"{path}: cannot open savepoint version {version}: the savepoint has no "
                    f"version {version} (latest is {latest})") from exc
        raise SavepointFormatError(
            f"{path}: the savepoint's Delta log is damaged ({log_dir} holds commits "
            f"{commits[:3]}{'...' if len(commits) > 3 else ''}; reading it failed with "
            f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}); restore the log "
            "from a copy or write "
            "the savepoint again") from exc
    names = [f.name for f in table.schema().fields]
    if "kind" not in names or "value" not in names or "operator_uid" not in names:
        raise SavepointNotFoundError(
            f"{path} is a Delta table but not a savepoint (columns {names})")
    return table


def read_metadata(path: str, version: Optional[int] = None) -> SavepointMetadata:
    """The metadata of the savepoint at ``path`` (latest version unless ``version``).

    ``SavepointNotFoundError`` when ``path`` is not a savepoint;
    ``SavepointFormatError`` when its metadata is unreadable.
    """
    import pyarrow.dataset as ds

    table = open_table(path, version)
    try:
        rows = table.to_pyarrow_dataset().to_table(
            columns=["value"], filter=ds.field("kind") == METADATA_KIND).column("value").to_pylist()
    except Exception as exc:  # noqa: BLE001 - unreadable files
        raise SavepointFormatError(f"{path}: cannot read the savepoint metadata: {exc}") from exc
    if len(rows) != 1:
        raise SavepointFormatError(
            f"{path}: a savepoint has exactly one metadata row, found {len(rows)}")
    return SavepointMetadata.from_json(rows[0])


def savepoint_versions(path: str) -> list[dict[str, Any]]:
    """Delta history of the savepoint table (newest first): version, timestamp, operation."""
    table = open_table(path, None)
    return [{"version": h.get("version"), "timestamp": h.get("timestamp"),
             "operation": h.get("operation")} for h in table.history()]


def table_df(spark: SparkSession, path: str, version: Optional[int]) -> DataFrame:
    """Every row of the savepoint (metadata row included) as a DataFrame, after :func:`open_table`."""
    from ..spark_io.delta_io import read_delta

    open_table(path, version)
    return read_delta(spark, path, version)


def load_operator_state(
    spark: SparkSession,
    path: str,
    uid: str,
    max_parallelism: Optional[int] = None,
    version: Optional[int] = None,
    sort_partitions: Optional[int] = None,
) -> DataFrame:
    """Keyed entries of operator ``uid`` as a DataFrame (never collected; its broadcast
    state rows are not among them, see :func:`read_broadcast_entries`).

    Columns: ``kind, key_group, key, state_name, namespace, user_key, value``.
    With ``max_parallelism`` the key group is recomputed from the key bytes
    (``pmod(crc32(key), max_parallelism)``, the same function as
    ``state_store.keygroups.assign_key_group``). With ``sort_partitions`` the
    rows are hash-partitioned by key group into that many partitions and
    sorted by ``(key_group, key, state_name, namespace, user_key)`` so that a
    ``mapInArrow`` sees each key's entries together (``entries_from_batch`` +
    ``group_by_key`` turn batches into per-key :class:`StateEntry` lists).
    """
    from pyspark.sql import functions as F

    df = table_df(spark, path, version).filter(
        (F.col("kind") != F.lit(METADATA_KIND)) & (F.col("kind") != F.lit(BROADCAST_KIND))
        & (F.col("operator_uid") == F.lit(uid)))
    kg = F.col("key_group")
    if max_parallelism is not None:
        maxp = check_max_parallelism(max_parallelism)
        kg = F.pmod(F.crc32(F.col("key")), F.lit(maxp)).cast("int")
    df = df.select("kind", kg.alias("key_group"), "key", "state_name", "namespace", "user_key",
                   "value")
    if sort_partitions is not None:
        df = df.repartition(int(sort_partitions), "key_group").sortWithinPartitions(
            "key_group", "key", "state_name", "namespace", "user_key")
    return df


def read_broadcast_entries(path: str, uid: str, version: Optional[int] = None) -> list[StateEntry]:
    """The broadcast (operator) state entries of operator ``uid``, read on the driver with
    delta-rs: broadcast state is replicated to every parallel instance, so it is small by
    design. Sorted by state name and user key."""
    import pyarrow.dataset as ds

    table = open_table(path, version)
    try:
        rows = table.to_pyarrow_dataset().to_table(
            columns=["state_name", "user_key", "value"],
            filter=(ds.field("kind") == BROADCAST_KIND) & (ds.field("operator_uid") == uid))
    except Exception as exc:  # noqa: BLE001 - unreadable files
        raise SavepointFormatError(
            f"{path}: cannot read the broadcast state of operator {uid!r}: {exc}") from exc
    entries = [StateEntry(-1, name, b"", b"", bytes(user_key or b""), bytes(value or b""))
               for name, user_key, value in zip(*(rows.column(i).to_pylist() for i in range(3)))]
    return sorted(entries, key=lambda e: (e.state_name, e.user_key))
