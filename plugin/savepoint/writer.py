"""Writing a savepoint: one new Delta version from an entries DataFrame and the metadata.

Format: see :mod:`pyspark_datastream.savepoint.format` (one Delta table; every Delta
version is one complete savepoint; entries and the metadata row are committed in one
transaction).

Executors write the Parquet data files (sorted, a contiguous key-group range per file)
straight into a fresh folder of the table directory; the driver writes the one-row
metadata file next to them and commits everything as ONE Delta version with delta-rs
(``overwrite``: the version replaces the previous savepoint; history stays readable by
version). The table snapshot is taken *before* the data files are written, so a writer
that commits in the meantime makes this commit fail with :class:`SavepointConflictError`
(delta-rs conflict checking: both remove the same files; creating a new table twice:
"already exists"). A failure before the commit removes the folder: no new version. When
the Spark session has Delta (``session_has_delta``) the rows are written with
``format("delta")`` instead (integration_tests/test_spark_delta.py).

The file layout (:func:`file_count`, :func:`range_partition`, :func:`write_order_of`) is
public because the bootstrap writer orders its source rows the same way before encoding.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from ..spark_io.progress import Heartbeat
from ..spark_io.storage_conf import current_storage
from ..state_store.exceptions import SavepointError, SavepointFormatError, StorageError
from ..state_store.keygroups import check_max_parallelism
from ..state_store.storage import Storage
from .exceptions import SavepointConflictError
from .format import (
    BROADCAST_KIND,
    ENTRY_COLUMNS,
    SAVEPOINT_COLUMNS,
    SavepointMetadata,
    metadata_row,
    savepoint_arrow_schema,
)
from .reader import is_delta_table, local_path, table_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "write_savepoint",
    "SavepointFolder",
    "savepoint_arrow_schema_columns",
    "file_count",
    "range_partition",
    "partition_slots",
    "spark_hash_int",
    "write_order_of",
]

log = logging.getLogger("pyspark_datastream")


def _kind_column(metadata: SavepointMetadata) -> Any:
    """``kind`` from (operator_uid, state_name); entries of undeclared states fail the write.
    Operator state rows (key group -1) are ``broadcast`` when their operator declares them."""
    from pyspark.sql import functions as F

    def kinds(pairs: list[tuple[tuple[str, str], str]]) -> Any:
        expr = None
        for (uid, name), kind in pairs:
            cond = (F.col("operator_uid") == F.lit(uid)) & (F.col("state_name") == F.lit(name))
            expr = F.when(cond, F.lit(kind)) if expr is None else expr.when(cond, F.lit(kind))
        return failure if expr is None else expr.otherwise(failure)

    failure = F.raise_error(F.concat(
        F.lit("savepoint entry of state '"), F.col("state_name"), F.lit("' of operator '"),
        F.coalesce(F.col("operator_uid"), F.lit("<null>")),
        F.lit("' has no state meta info in the savepoint metadata")))
    keyed = kinds(sorted(metadata.kind_of().items()))
    broadcast = metadata.broadcast_states()
    if not broadcast:
        return keyed
    operator_state = kinds([(pair, BROADCAST_KIND) for pair in broadcast])
    return F.when(F.col("key_group") < F.lit(0), operator_state).otherwise(keyed)


def _failure_text(exc: BaseException) -> str:
    """``exc`` as one message: a Py4J error (pyspark 3.5 hands Spark's job failures over as
    such) without its "An error occurred while calling o123.save." preamble, which would put
    the cause on a later line."""
    java = getattr(exc, "java_exception", None)
    text = str(java) if java is not None else str(exc)
    return f"{type(exc).__name__}: {text[:2000]}"


def _check_target(root: str) -> Any:
    """The current table (snapshot for conflict detection), or None for a new savepoint."""
    from deltalake import DeltaTable

    if is_delta_table(root):
        table = DeltaTable(root, storage_options=table_options(root))
        names = [f.name for f in table.schema().fields]
        expected = [n for n, _ in savepoint_arrow_schema_columns()]
        if names != expected:
            raise SavepointFormatError(
                f"{root} is a Delta table but not a savepoint (columns {names}, expected "
                f"{expected}); refusing to overwrite it"
            )
        return table
    names = current_storage().list_names(root)
    if names:
        foreign = [n for n in names if not _is_savepoint_part(root, n)]
        if foreign:
            raise SavepointError(
                f"{root} exists, is not empty and is not a Delta table (it holds "
                f"{sorted(foreign)[:5]}); refusing to write a savepoint there"
            )
        # only other writers' uncommitted data folders (a concurrent or a failed write):
        # write beside them; the commit decides (SavepointConflictError for the loser)
    return None


def _is_savepoint_part(root: str, name: str) -> bool:
    """A savepoint writer's data folder, or a Delta log with no readable commit yet."""
    if name.startswith("savepoint-"):
        return True
    log_dir = Storage.join(root, name)
    return name == "_delta_log" and not any(
        n.endswith(".json") for n in current_storage().list_names(log_dir))


def savepoint_arrow_schema_columns() -> list[tuple[str, Any]]:
    """(name, arrow type) pairs of the savepoint schema."""
    return [(f.name, f.type) for f in savepoint_arrow_schema()]


def write_savepoint(
    spark: SparkSession,
    path: str,
    entries_df: DataFrame,
    metadata: SavepointMetadata,
    num_files: Optional[int] = None,
    presorted: bool = False,
) -> int:
    """Write a savepoint as a new Delta version at ``path``; return that version.

    ``entries_df`` has the columns ``ENTRY_COLUMNS`` (operator_uid string,
    key_group int, key/namespace/user_key/value binary, state_name string) in
    the unified entry layout, key groups computed with ``metadata.max_parallelism``.
    Every (operator_uid, state_name) must be declared in ``metadata`` (else the
    write fails and leaves no version). Executors write the data; the driver
    commits. ``SavepointConflictError`` when another writer committed since this
    write started.

    The entries are shuffled into ``num_files`` key-group ranges and sorted into
    the write order (:func:`_write_order`), unless ``presorted``: then every
    partition of ``entries_df`` already holds one key-group range of one operator
    in that order (as :class:`SavepointWriter`'s pass produces them, having ordered
    its source rows before encoding) and is written as it is, one file each. Such
    rows may carry their ``kind`` already (that pass sets it from the metadata and
    refuses undeclared states itself); then no column is added either.
    """
    from pyspark.sql import functions as F

    missing = [c for c in ENTRY_COLUMNS if c not in entries_df.columns]
    if missing:
        raise SavepointFormatError(
            f"write_savepoint: entries DataFrame lacks columns {missing} (needs {list(ENTRY_COLUMNS)})"
        )
    maxp = check_max_parallelism(metadata.max_parallelism)
    from ..spark_io.delta_io import session_has_delta

    write = _write_with_spark_delta if session_has_delta(spark) else _write_with_delta_rs
    if presorted and "kind" in entries_df.columns:
        # whole savepoint rows from SavepointWriter's pass: written as they are
        return write(spark, path, entries_df.select(*[n for n, _ in SAVEPOINT_COLUMNS]), metadata)
    n = file_count(spark, maxp, num_files)
    df = entries_df.select(
        F.col("operator_uid").cast("string"), F.col("key_group").cast("int"),
        F.col("key").cast("binary"), F.col("state_name").cast("string"),
        F.coalesce(F.col("namespace").cast("binary"), F.lit(b"")).alias("namespace"),
        F.coalesce(F.col("user_key").cast("binary"), F.lit(b"")).alias("user_key"),
        F.coalesce(F.col("value").cast("binary"), F.lit(b"")).alias("value"),
    )
    # file i <- key-group range i, sorted; ``kind`` is added after the sort (narrower rows
    # to shuffle and sort, the sort spills later)
    if not presorted:
        df = df.repartition(n, range_partition(n, maxp)).sortWithinPartitions(_write_order())
    df = df.select(_kind_column(metadata).alias("kind"), *[c for c in df.columns])
    return write(spark, path, df, metadata)


def file_count(spark: SparkSession, maxp: int, num_files: Optional[int] = None) -> int:
    """Key-group ranges (= data files) of a write: ``num_files``, else the session's
    shuffle partitions, at most the max parallelism."""
    n = int(num_files or int(spark.conf.get("spark.sql.shuffle.partitions", "4") or 4))
    return max(1, min(n, maxp))


def spark_hash_int(value: int) -> int:
    """Spark's ``hash()`` of an INT (Murmur3 x86_32 ``hashInt``, seed 42), signed."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k1 = rotl(((value & 0xFFFFFFFF) * 0xCC9E2D51) & 0xFFFFFFFF, 15)
    k1 = (k1 * 0x1B873593) & 0xFFFFFFFF
    h1 = rotl(42 ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def range_partition(n: int, maxp: int, key_group_column: str = "key_group") -> Any:
    """Partitioning column for ``repartition(n, col)`` that sends key-group range
    ``r = key_group * n // maxp`` to partition ``r`` exactly.

    ``repartition(n, expr)`` places a row in ``pmod(hash(expr), n)``; hashing the range
    number itself scatters ranges (several in one partition, others empty: skewed,
    non-contiguous files). So each range maps to an int whose hash lands in partition
    ``r`` (found here, on the driver, with Spark's own hash function).
    """
    from pyspark.sql import functions as F

    slots = partition_slots(n)
    # operator state rows (key group -1) go with range 0
    key_group = F.greatest(F.col(key_group_column), F.lit(0))
    ranges = F.floor(key_group * F.lit(n) / F.lit(maxp)).cast("int")
    return F.element_at(F.array(*[F.lit(slot) for slot in slots]), ranges + F.lit(1))


def partition_slots(n: int) -> list[int]:
    """For each partition ``p`` of ``repartition(n, int_column)``, an int that Spark places
    there (``pmod(hash(int), n) == p``), the smallest such non-negative int."""
    slots: dict[int, int] = {}
    candidate = 0
    while len(slots) < n:
        slots.setdefault(spark_hash_int(candidate) % n, candidate)
        candidate += 1
    return [slots[p] for p in range(n)]


def write_order_of(key_group: Any, operator_uid: Any, key: Any) -> Any:
    """:func:`_write_order` over any three columns (the bootstrap orders its source rows
    by it before encoding them, from the key bytes Spark computes)."""
    from pyspark.sql import functions as F

    mixed = F.xxhash64(operator_uid, key).bitwiseAND(F.lit((1 << 48) - 1))
    return F.shiftleft(key_group.cast("long"), 48).bitwiseOR(mixed)


def _write_order() -> Any:
    """The one sort column of a savepoint write: ``key_group << 48 | 48 bits of
    xxhash64(operator_uid, key)`` (non-negative: key groups are < 2**15).

    Rows come out in key-group order with the entries of one (operator, key) together
    (two keys of one key group sharing the 48-bit hash, about 1e-7 per key group at 8k
    keys, are ordered by arrival). A single long sort column lets Spark use its radix
    sort, which is stable: a key's entries keep the canonical order (state name,
    namespace, user key) in which the writers here produce them, provided they reach
    the write from one input task (true unless a staged input file is split mid-key;
    no reader depends on the order inside a key).
    Sorting by the six entry columns instead made the write ~30% slower (10M entries).
    """
    from pyspark.sql import functions as F

    return write_order_of(F.col("key_group"), F.col("operator_uid"), F.col("key"))


def _write_with_spark_delta(spark: SparkSession, path: str, df: DataFrame,
                            metadata: SavepointMetadata) -> int:
    """Spark ``format("delta")`` writer (sessions with Delta): the metadata row and the
    entries in one ``overwrite`` commit. The target is checked as for delta-rs first (a
    Delta table that is not a savepoint, or a foreign non-empty folder, is refused before
    anything is written); a failed write commits no version."""
    from ..operators.exceptions import JobExecutionError
    from .format import savepoint_ddl

    _check_target(local_path(path))
    # the metadata row's operator_uid is null: its schema, not the entries' (whose columns
    # may be non-nullable), is the table's, as with delta-rs
    meta = spark.createDataFrame([metadata_row(metadata)], schema=savepoint_ddl())
    start = time.monotonic()
    try:
        with Heartbeat(f"writing savepoint {path} with Spark's Delta writer"):
            meta.unionByName(df).write.format("delta").mode("overwrite").save(path)
    except Exception as exc:  # noqa: BLE001 - map Delta's concurrency exceptions
        if "Concurrent" in type(exc).__name__ or "Concurrent" in str(exc)[:500]:
            raise SavepointConflictError(
                f"savepoint at {path}: another writer committed concurrently: {exc}") from exc
        raise JobExecutionError(
            f"writing the savepoint at {path} failed (no version was committed): "
            f"{_failure_text(exc)}") from exc
    hist = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()
    version = int(hist[0]["version"]) if hist else 0
    log.info("savepoint %s: Delta version %d written by Spark's Delta writer in %.1f s", path,
             version, time.monotonic() - start)
    return version


class SavepointFolder:
    """The data folder of a new savepoint version, committed as ONE Delta version (delta-rs).

    The target table is checked, and its snapshot taken, at construction: before any data
    file is written, so a writer that commits in the meantime makes :meth:`commit` fail with
    :class:`SavepointConflictError`. Spark's executors (a DataFrame write) or the keyed
    passes themselves (``runtime.entry_files``) put the entries' Parquet files into
    :attr:`target`; :meth:`commit` adds the metadata row's file and commits every
    ``*.parquet`` file there. A failed commit, or :meth:`discard`, removes the folder.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.root = local_path(path)
        #: the storage layer of the table (the job's in a job, else the session's)
        self.storage = current_storage()
        self._table = _check_target(self.root)
        self.folder = f"savepoint-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        #: absolute path (or URI) of the folder the data files go into
        self.target = Storage.join(self.root, self.folder)

    def commit(self, metadata: SavepointMetadata, files: Optional[list[str]] = None) -> int:
        """Write the metadata row, drop what is not a data file (partial files of failed
        tasks; with ``files``, every file they do not name), commit; return the new version.

        ``files`` names the data files to commit (the keyed passes' reports): they are read
        by exact name, never found by listing the folder right after they were written."""
        try:
            storage = self.storage
            meta_name = "part-metadata.parquet"
            keep = None if files is None else {*files, meta_name}
            for name in storage.list_names(self.target):  # clean-up only
                if (not name.endswith(".parquet")  # _SUCCESS, leftovers of failed tasks
                        or (keep is not None and name not in keep)):
                    storage.delete(Storage.join(self.target, name))
            meta = pa.Table.from_pylist([metadata_row(metadata)], schema=savepoint_arrow_schema())
            with storage.open_output(Storage.join(self.target, meta_name)) as f:
                pq.write_table(meta, f)
            names = None if keep is None else sorted(keep)
            with Heartbeat(f"committing savepoint {self.path}"):
                return _commit(self.root, self.folder, self._table, storage, names)
        except SavepointError:
            self.discard()
            raise
        except Exception as exc:
            self.discard()
            from ..operators.exceptions import JobExecutionError

            raise JobExecutionError(
                f"writing the savepoint at {self.path} failed (no version was committed): "
                f"{type(exc).__name__}: {str(exc)[:2000]}"
            ) from exc

    def discard(self) -> None:
        """Remove the folder and everything written into it (no version is added). Called
        after a failure: when the store fails too, the folder stays (no commit names it, and
        the next write goes beside it) and the failure is logged, not raised over the first."""
        try:
            self.storage.delete_dir(self.target)
        except StorageError as exc:
            log.warning("savepoint %s: the uncommitted folder %s stays (%s)", self.path,
                        self.target, exc)


def _write_with_delta_rs(spark: SparkSession, path: str, df: DataFrame,
                         metadata: SavepointMetadata) -> int:
    folder = SavepointFolder(path)
    start = time.monotonic()
    log.info("savepoint %s: executors encoding and writing the entries of operators %s",
             path, sorted(metadata.operators))
    try:
        with Heartbeat(f"writing savepoint {path} (executors writing entries)"):
            df.write.mode("error").parquet(folder.target)
    except Exception as exc:
        folder.discard()
        from ..operators.exceptions import JobExecutionError

        raise JobExecutionError(
            f"writing the savepoint at {path} failed (no version was committed): "
            f"{_failure_text(exc)}") from exc
    written = time.monotonic()
    version = folder.commit(metadata)
    done = time.monotonic()
    log.info("savepoint %s: committed Delta version %d (executors %.1f s, commit %.1f s, "
             "total %.1f s)", path, version, written - start, done - written, done - start)
    return version


def _commit(root: str, folder: str, table: Any, storage: Storage,
            names: Optional[list[str]] = None) -> int:
    from deltalake import CommitProperties, Schema
    from deltalake.exceptions import CommitFailedError, DeltaError
    from deltalake.transaction import create_table_with_add_actions

    from ..spark_io.delta_io import add_actions_for_folder

    actions, rows = add_actions_for_folder(root, folder, storage, names)
    # rows include the one metadata row (its own file)
    log.info("savepoint %s: %s entries written in %d files, %s bytes; committing", root,
             f"{max(rows - 1, 0):,}", len(actions), f"{sum(a.size for a in actions):,}")
    schema = Schema.from_arrow(savepoint_arrow_schema())
    props = CommitProperties(custom_metadata={"pyspark_datastream.savepoint": "1",
                                              "rows": str(rows)})
    try:
        if table is None:
            create_table_with_add_actions(root, schema, actions, mode="error",
                                          storage_options=table_options(root),
                                          commit_properties=props)
            return 0
        table.create_write_transaction(actions, mode="overwrite", schema=schema,
                                       commit_properties=props)
        return int(table.version()) + 1
    except CommitFailedError as exc:
        raise SavepointConflictError(
            f"savepoint at {root}: another writer committed a savepoint concurrently; this "
            f"write was not committed ({exc})") from exc
    except DeltaError as exc:
        if "already exists" in str(exc):
            raise SavepointConflictError(
                f"savepoint at {root}: another writer created the savepoint concurrently; this "
                f"write was not committed ({exc})") from exc
        raise
