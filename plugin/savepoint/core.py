"""Savepoints as Delta tables: IO, the State Processor API and ``inspect``.

Format: see :mod:`pyspark_datastream.savepoint.format` (one Delta table; every
Delta version is one complete savepoint; entries and the metadata row are
committed in one transaction).

Writing (:func:`write_savepoint`): executors write the Parquet data files
(sorted, a contiguous key-group range per file) straight into a fresh folder
of the table directory; the driver writes the one-row metadata file next to
them and commits everything as ONE Delta version with delta-rs (``overwrite``:
the version replaces the previous savepoint; history stays readable by
version). The table snapshot is taken *before* the data files are written, so
a writer that commits in the meantime makes this commit fail with
:class:`SavepointConflictError` (delta-rs conflict checking: both remove the
same files; creating a new table twice: "already exists"). A failure before
the commit removes the folder: no new version. When the Spark session has Delta
(``session_has_delta``) the rows are written with ``format("delta")`` instead
(not exercised here: no Delta jars on this machine).

Reading: :func:`read_metadata` reads only the metadata row (delta-rs, filter
on ``kind``); :func:`load_operator_state` returns an operator's entries as a
DataFrame whose files executors read, with key groups recomputed from the key
bytes for the CURRENT max parallelism (restore under another max parallelism).

State Processor API: :class:`Savepoint` (``load``, ``metadata``, ``operators``,
``read_keyed_state``, ``read_timers``, ``entries``) and :class:`SavepointWriter`
(bootstrap a savepoint from any DataFrame; executors encode entries in
``mapInArrow`` with the real single-key backend). :func:`inspect_savepoint`
backs ``python -m pyspark_datastream savepoint inspect PATH``.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from ..spark_io.progress import Heartbeat
from ..state_store.descriptors import StateDescriptor
from ..state_store.entries import TIMER_STATE_PREFIX, StateKind
from ..state_store.errors import (
    SavepointConflictError,
    SavepointError,
    SavepointFormatError,
    SavepointNotFoundError,
    StateDescriptorError,
)
from ..state_store.keygroups import check_max_parallelism
from ..state_store.serializers import serializer_from_snapshot
from .format import (
    ENTRY_COLUMNS,
    METADATA_KIND,
    SAVEPOINT_COLUMNS,
    OperatorMetadata,
    SavepointMetadata,
    decode_key_states,
    decode_timers,
    entries_from_batch,
    entries_to_batch,
    group_by_key,
    metadata_row,
    savepoint_arrow_schema,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "write_savepoint",
    "read_metadata",
    "savepoint_versions",
    "load_operator_state",
    "Savepoint",
    "SavepointWriter",
    "inspect_savepoint",
    "format_inspection",
    "savepoint_arrow_schema_columns",
]

log = logging.getLogger("pyspark_datastream")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _is_delta(root: str) -> bool:
    from deltalake import DeltaTable

    try:
        return bool(DeltaTable.is_deltatable(root))
    except Exception:  # noqa: BLE001 - unreadable path: not a table
        return False


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------
def _kind_column(metadata: SavepointMetadata) -> Any:
    """``kind`` from (operator_uid, state_name); entries of undeclared states fail the write."""
    from pyspark.sql import functions as F

    expr = None
    for (uid, name), kind in sorted(metadata.kind_of().items()):
        cond = (F.col("operator_uid") == F.lit(uid)) & (F.col("state_name") == F.lit(name))
        expr = F.when(cond, F.lit(kind)) if expr is None else expr.when(cond, F.lit(kind))
    failure = F.raise_error(F.concat(
        F.lit("savepoint entry of state '"), F.col("state_name"), F.lit("' of operator '"),
        F.coalesce(F.col("operator_uid"), F.lit("<null>")),
        F.lit("' has no state meta info in the savepoint metadata")))
    return failure if expr is None else expr.otherwise(failure)


def _check_target(root: str) -> Any:
    """The current table (snapshot for conflict detection), or None for a new savepoint."""
    from deltalake import DeltaTable

    if _is_delta(root):
        table = DeltaTable(root)
        names = [f.name for f in table.schema().fields]
        expected = [n for n, _ in savepoint_arrow_schema_columns()]
        if names != expected:
            raise SavepointFormatError(
                f"{root} is a Delta table but not a savepoint (columns {names}, expected "
                f"{expected}); refusing to overwrite it"
            )
        return table
    if os.path.isdir(root):
        foreign = [n for n in os.listdir(root) if not _is_savepoint_part(root, n)]
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
    if name.startswith("savepoint-") and os.path.isdir(os.path.join(root, name)):
        return True
    log_dir = os.path.join(root, name)
    return name == "_delta_log" and os.path.isdir(log_dir) and not any(
        n.endswith(".json") for n in os.listdir(log_dir))


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
    n = _file_count(spark, maxp, num_files)
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
        df = df.repartition(n, _range_partition(n, maxp)).sortWithinPartitions(_write_order())
    df = df.select(_kind_column(metadata).alias("kind"), *[c for c in df.columns])
    return write(spark, path, df, metadata)


def _file_count(spark: SparkSession, maxp: int, num_files: Optional[int] = None) -> int:
    """Key-group ranges (= data files) of a write: ``num_files``, else the session's
    shuffle partitions, at most the max parallelism."""
    n = int(num_files or int(spark.conf.get("spark.sql.shuffle.partitions", "4") or 4))
    return max(1, min(n, maxp))


def _spark_hash_int(value: int) -> int:
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


#: the key-group column a bootstrap adds to its source rows to order them (then drops)
_SOURCE_KEY_GROUP = "__savepoint_key_group"


def _range_partition(n: int, maxp: int, key_group_column: str = "key_group") -> Any:
    """Partitioning column for ``repartition(n, col)`` that sends key-group range
    ``r = key_group * n // maxp`` to partition ``r`` exactly.

    ``repartition(n, expr)`` places a row in ``pmod(hash(expr), n)``; hashing the range
    number itself scatters ranges (several in one partition, others empty: skewed,
    non-contiguous files). So each range maps to an int whose hash lands in partition
    ``r`` (found here, on the driver, with Spark's own hash function).
    """
    from pyspark.sql import functions as F

    slots: dict[int, int] = {}
    candidate = 0
    while len(slots) < n:
        slots.setdefault(_spark_hash_int(candidate) % n, candidate)
        candidate += 1
    ranges = F.floor(F.col(key_group_column) * F.lit(n) / F.lit(maxp)).cast("int")
    return F.element_at(F.array(*[F.lit(slots[r]) for r in range(n)]), ranges + F.lit(1))


def _write_order_of(key_group: Any, operator_uid: Any, key: Any) -> Any:
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

    return _write_order_of(F.col("key_group"), F.col("operator_uid"), F.col("key"))


def _write_with_spark_delta(spark: SparkSession, path: str, df: DataFrame,
                            metadata: SavepointMetadata) -> int:
    """Spark ``format("delta")`` writer (sessions with Delta); untested on this machine."""
    meta = spark.createDataFrame([metadata_row(metadata)], schema=df.schema)
    start = time.monotonic()
    try:
        with Heartbeat(f"writing savepoint {path} with Spark's Delta writer"):
            meta.unionByName(df).write.format("delta").mode("overwrite").save(path)
    except Exception as exc:  # noqa: BLE001 - map Delta's concurrency exceptions
        if "Concurrent" in type(exc).__name__ or "Concurrent" in str(exc)[:500]:
            raise SavepointConflictError(
                f"savepoint at {path}: another writer committed concurrently: {exc}") from exc
        raise
    hist = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()
    version = int(hist[0]["version"]) if hist else 0
    log.info("savepoint %s: Delta version %d written by Spark's Delta writer in %.1f s", path,
             version, time.monotonic() - start)
    return version


def _write_with_delta_rs(spark: SparkSession, path: str, df: DataFrame,
                         metadata: SavepointMetadata) -> int:
    import pyarrow.parquet as pq

    root = _local(path)
    table = _check_target(root)  # snapshot BEFORE writing: later commits by others conflict
    folder = f"savepoint-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
    target = os.path.join(root, folder)
    start = time.monotonic()
    log.info("savepoint %s: executors encoding and writing the entries of operators %s",
             path, sorted(metadata.operators))
    try:
        with Heartbeat(f"writing savepoint {path} (executors writing entries)"):
            df.write.mode("error").parquet(target)
        written = time.monotonic()
        schema = savepoint_arrow_schema()
        meta = pa.Table.from_pylist([metadata_row(metadata)], schema=schema)
        pq.write_table(meta, os.path.join(target, "part-metadata.parquet"))
        with Heartbeat(f"committing savepoint {path}"):
            version = _commit(root, folder, table)
        done = time.monotonic()
        log.info("savepoint %s: committed Delta version %d (executors %.1f s, commit %.1f s, "
                 "total %.1f s)", path, version, written - start, done - written, done - start)
        return version
    except SavepointError:
        shutil.rmtree(target, ignore_errors=True)
        raise
    except Exception as exc:
        shutil.rmtree(target, ignore_errors=True)
        from ..state_store.errors import JobExecutionError

        raise JobExecutionError(
            f"writing the savepoint at {path} failed (no version was committed): "
            f"{type(exc).__name__}: {str(exc)[:2000]}"
        ) from exc


def _commit(root: str, folder: str, table: Any) -> int:
    from deltalake import CommitProperties, Schema
    from deltalake.exceptions import CommitFailedError, DeltaError
    from deltalake.transaction import create_table_with_add_actions

    from ..spark_io.delta_io import add_actions_for_folder

    actions, rows = add_actions_for_folder(root, folder)
    # rows include the one metadata row (its own file)
    log.info("savepoint %s: %s entries written in %d files, %s bytes; committing", root,
             f"{max(rows - 1, 0):,}", len(actions), f"{sum(a.size for a in actions):,}")
    schema = Schema.from_arrow(savepoint_arrow_schema())
    props = CommitProperties(custom_metadata={"pyspark_datastream.savepoint": "1",
                                              "rows": str(rows)})
    try:
        if table is None:
            create_table_with_add_actions(root, schema, actions, mode="error",
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


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def _open_table(path: str, version: Optional[int]) -> Any:
    from deltalake import DeltaTable

    root = _local(path)
    log_dir = os.path.join(root, "_delta_log")
    commits = sorted(n for n in os.listdir(log_dir) if n.endswith(".json")) \
        if os.path.isdir(log_dir) else []
    if not commits and not _is_delta(root):
        raise SavepointNotFoundError(f"{path} is not a savepoint: no Delta table there")
    try:
        table = DeltaTable(root, version=version)
    except Exception as exc:  # noqa: BLE001 - foreign error: a missing version or a bad log
        if version is not None:
            try:
                latest = DeltaTable(root).version()
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

    table = _open_table(path, version)
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
    table = _open_table(path, None)
    return [{"version": h.get("version"), "timestamp": h.get("timestamp"),
             "operation": h.get("operation")} for h in table.history()]


def _table_df(spark: SparkSession, path: str, version: Optional[int]) -> DataFrame:
    from ..spark_io.delta_io import read_delta

    _open_table(path, version)
    return read_delta(spark, path, version)


def load_operator_state(
    spark: SparkSession,
    path: str,
    uid: str,
    max_parallelism: Optional[int] = None,
    version: Optional[int] = None,
    sort_partitions: Optional[int] = None,
) -> DataFrame:
    """Entries of operator ``uid`` as a DataFrame (never collected).

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

    df = _table_df(spark, path, version).filter(
        (F.col("kind") != F.lit(METADATA_KIND)) & (F.col("operator_uid") == F.lit(uid)))
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


# --------------------------------------------------------------------------------------------
# State Processor API
# --------------------------------------------------------------------------------------------
_BASIC_BY_SERIALIZER = {
    "Long": "LONG", "Int": "INT", "Short": "SHORT", "Byte": "BYTE", "Double": "DOUBLE",
    "Float": "FLOAT", "Boolean": "BOOLEAN", "String": "STRING", "BigInt": "BIG_INT",
    "BigDecimal": "BIG_DEC", "Timestamp": "SQL_TIMESTAMP", "Date": "SQL_DATE", "Time": "SQL_TIME",
}


def _type_from_serializer(snapshot: dict[str, Any]) -> Any:
    """TypeInformation for a basic serializer snapshot, or None."""
    from ..state_store.typeinfo import BasicTypeInfo, Types

    name = str(snapshot.get("name", ""))
    base = name[len("Lexicographic"):] if name.startswith("Lexicographic") else name
    base = base[: -len("Serializer")] if base.endswith("Serializer") else base
    if base == "Bytes":
        return Types.PRIMITIVE_ARRAY(Types.BYTE())
    basic = _BASIC_BY_SERIALIZER.get(base)
    return None if basic is None else BasicTypeInfo(basic)


def _type_of(info: Any, serializer: Any, what: str) -> Any:
    from ..state_store.typeinfo import TypeInformation

    if isinstance(info, TypeInformation):
        return info
    found = _type_from_serializer(serializer.snapshot())
    if found is None:
        raise StateDescriptorError(
            f"{what}: cannot derive a column type from serializer {serializer!r}; build the "
            "descriptor with a TypeInformation (e.g. Types.LONG())")
    return found


def _state_column_type(d: StateDescriptor) -> Any:
    from ..state_store.typeinfo import Types

    owner = f"{type(d).__name__} {d.name!r}"
    if d.kind is StateKind.VALUE or d.kind is StateKind.REDUCING:
        return _type_of(getattr(d, "type_info", None), d.value_serializer, owner)
    if d.kind is StateKind.AGGREGATING:
        return _type_of(getattr(d, "state_type_info", None), d.value_serializer, owner)
    if d.kind is StateKind.LIST:
        return Types.LIST(_type_of(getattr(d, "elem_type_info", None), d.value_serializer, owner))
    if d.kind is StateKind.MAP:
        return Types.MAP(_type_of(getattr(d, "key_type_info", None), d.user_key_serializer, owner),
                         _type_of(getattr(d, "value_type_info", None), d.value_serializer, owner))
    if d.kind is StateKind.SORTED:
        k = _type_of(None, d.user_key_serializer, owner)
        v = _type_of(getattr(d, "value_type_info", None), d.value_serializer, owner)
        return Types.LIST(Types.ROW_NAMED(["key", "values"], [k, Types.LIST(v)]))
    raise StateDescriptorError(f"{owner}: state kind {d.kind.value} cannot be read")


def _decode_pass(op: OperatorMetadata, maxp: int, descriptors: tuple[StateDescriptor, ...],
                 types: list[Any], schema: pa.Schema, batches: Iterator[pa.RecordBatch]
                 ) -> Iterator[pa.RecordBatch]:
    """Executor side of ``read_keyed_state``: one output row per key."""
    from ..runtime.spark_types import python_to_arrow

    convs = [python_to_arrow(t) for t in types]
    key_ser = serializer_from_snapshot(op.key_serializer)

    def entries() -> Iterator[Any]:
        for b in batches:
            if b.num_rows:
                yield from entries_from_batch(b, maxp)

    cols: list[list[Any]] = [[] for _ in types]

    def flush() -> pa.RecordBatch:
        arrays = [pa.array(c, type=f.type) for c, f in zip(cols, schema)]
        for c in cols:
            c.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    for key_bytes, group in group_by_key(entries()):
        key, values = decode_key_states(op, maxp, key_bytes, group, descriptors, key_ser)
        for i, v in enumerate([key, *values]):
            conv = convs[i]
            cols[i].append(v if v is None or conv is None else conv(v))
        if len(cols[0]) >= 4096:
            yield flush()
    if cols[0]:
        yield flush()


def _timer_pass(op: OperatorMetadata, key_type: Any, schema: pa.Schema,
                batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from ..runtime.spark_types import python_to_arrow

    conv = python_to_arrow(key_type)
    for b in batches:
        if not b.num_rows:
            continue
        rows = list(decode_timers(op, entries_from_batch(b)))
        ns_bytes = b.column("namespace").to_pylist()
        keys = [k if conv is None or k is None else conv(k) for k, _, _, _ in rows]
        yield pa.RecordBatch.from_arrays([
            pa.array(keys, type=schema.field(0).type),
            pa.array([q for _, q, _, _ in rows], type=pa.string()),
            pa.array([t for _, _, t, _ in rows], type=pa.int64()),
            pa.array([n or None for n in ns_bytes], type=pa.binary()),
        ], schema=schema)


class Savepoint:
    """A savepoint opened for reading (State Processor API)."""

    def __init__(self, path: str, metadata: SavepointMetadata, spark: Optional[SparkSession],
                 version: Optional[int]) -> None:
        self.path = path
        self._metadata = metadata
        self._spark = spark
        self.version = version

    @classmethod
    def load(cls, path: str, spark: Optional[SparkSession] = None,
             version: Optional[int] = None) -> Savepoint:
        """Open the savepoint at ``path`` (latest version unless ``version``); reads metadata only."""
        start = time.monotonic()
        metadata = read_metadata(path, version)
        if version is None:
            version = int(_open_table(path, None).version())
        log.info("savepoint %s version %d: metadata read in %.2f s (%d operators %s, max "
                 "parallelism %d, written by %s job %r)", path, version, time.monotonic() - start,
                 len(metadata.operators), sorted(metadata.operators), metadata.max_parallelism,
                 metadata.mode, metadata.job_name)
        return cls(path, metadata, spark, version)

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            from pyspark.sql import SparkSession

            self._spark = SparkSession.builder.getOrCreate()
        return self._spark

    def metadata(self) -> SavepointMetadata:
        """The savepoint's metadata."""
        return self._metadata

    def operators(self) -> list[str]:
        """Uids of the operators in the savepoint, sorted."""
        return sorted(self._metadata.operators)

    def entries(self, uid: Optional[str] = None) -> DataFrame:
        """Raw entry rows (all operators, or one), the metadata row excluded."""
        from pyspark.sql import functions as F

        df = _table_df(self.spark, self.path, self.version).filter(
            F.col("kind") != F.lit(METADATA_KIND))
        return df if uid is None else df.filter(F.col("operator_uid") == F.lit(uid))

    def _key_type(self, op: OperatorMetadata, key_type: Any) -> Any:
        if key_type is not None:
            return key_type
        found = _type_from_serializer(op.key_serializer)
        if found is None:
            raise StateDescriptorError(
                f"operator {op.uid!r}: cannot derive the key column type from key serializer "
                f"{op.key_serializer!r}; pass key_type=Types....")
        return found

    def read_keyed_state(self, uid: str, *descriptors: StateDescriptor,
                         key_type: Any = None) -> DataFrame:
        """One row per key holding any of the states: ``key`` then one column per descriptor.

        Value/Reducing -> its type, List -> array, Map -> map, Aggregating -> the
        accumulator, BinarySortedState -> array of ``(key, values)`` structs;
        null where the key has no value. Only the void namespace is read.
        """
        from pyspark.sql import functions as F

        from ..runtime.spark_types import arrow_type, spark_ddl_type

        op = self._metadata.operator(uid)
        if not descriptors:
            raise StateDescriptorError("read_keyed_state needs at least one state descriptor")
        for d in descriptors:
            op.state(d.name)
        types = [self._key_type(op, key_type)] + [_state_column_type(d) for d in descriptors]
        names = ["key"] + [d.name for d in descriptors]
        schema = pa.schema([pa.field(n, arrow_type(t)) for n, t in zip(names, types)])
        ddl = ", ".join(f"`{n}` {spark_ddl_type(t)}" for n, t in zip(names, types))
        maxp = self._metadata.max_parallelism
        df = self.entries(uid).filter(F.col("state_name").isin([d.name for d in descriptors]))
        parts = int(self.spark.conf.get("spark.sql.shuffle.partitions", "4") or 4)
        df = df.repartition(parts, "key").sortWithinPartitions("key", "state_name", "namespace",
                                                                "user_key")
        descs = tuple(descriptors)
        log.info("savepoint %s: reading keyed state %s of operator %r (lazy: executors decode "
                 "it when the DataFrame runs)", self.path, [d.name for d in descriptors], uid)

        def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return _decode_pass(op, maxp, descs, types, schema, batches)

        return df.mapInArrow(fn, ddl)

    def read_timers(self, uid: str, key_type: Any = None) -> DataFrame:
        """Pending timers of operator ``uid``: ``key, queue, timestamp, namespace`` (raw bytes)."""
        from pyspark.sql import functions as F

        from ..runtime.spark_types import arrow_type, spark_ddl_type

        op = self._metadata.operator(uid)
        kt = self._key_type(op, key_type)
        schema = pa.schema([pa.field("key", arrow_type(kt)), pa.field("queue", pa.string()),
                            pa.field("timestamp", pa.int64()), pa.field("namespace", pa.binary())])
        ddl = f"key {spark_ddl_type(kt)}, queue string, timestamp bigint, namespace binary"
        df = self.entries(uid).filter(F.col("state_name").startswith(TIMER_STATE_PREFIX))

        def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return _timer_pass(op, kt, schema, batches)

        return df.mapInArrow(fn, ddl)


# --------------------------------------------------------------------------------------------
# Bootstrap writer
# --------------------------------------------------------------------------------------------
def _bootstrap_pass(uid: str, key_serializer: Any, maxp: int, key_column: str,
                    columns: list[tuple[str, StateDescriptor]],
                    batches: Iterator[pa.RecordBatch],
                    kinds: Optional[dict[str, str]] = None) -> Iterator[pa.RecordBatch]:
    """Executor side of ``SavepointWriter``: each row's states through a single-key backend
    (with ``kinds``, whole savepoint rows: see ``entries_to_batch``)."""
    from ..state_store.backends.single_key import SingleKeyStateBackend

    backend = SingleKeyStateBackend(key_serializer, maxp)
    try:
        for b in batches:
            if not b.num_rows:
                continue
            keys = b.column(key_column).to_pylist()
            values = [b.column(c).to_pylist() for c, _ in columns]
            out = []
            for i, key in enumerate(keys):
                backend.set_current_key(key)
                for (_c, d), col in zip(columns, values):
                    _put_state(backend, d, col[i])
                out.extend(backend.snapshot())
            yield entries_to_batch(uid, out, kinds)
    finally:
        backend.close()


def _put_state(backend: Any, d: StateDescriptor, value: Any) -> None:
    if value is None:
        return
    kind = d.kind
    if kind is StateKind.SORTED:
        state = backend.get_binary_sorted_state(d)
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            k, vs = (item["key"], item["values"]) if isinstance(item, dict) else item
            state.put(k, list(vs))
        return
    state = backend.get_state(d)
    if kind is StateKind.VALUE:
        state.update(value)
    elif kind is StateKind.LIST:
        state.update(list(value))
    elif kind is StateKind.MAP:
        state.put_all(dict(value) if not isinstance(value, dict) else value)
    else:  # reducing / aggregating: the stored value / accumulator
        state.update_internal(value)


class SavepointWriter:
    """Build a savepoint from DataFrames (bootstrap), e.g. from a warehouse table."""

    def __init__(self, max_parallelism: int = 128) -> None:
        self.max_parallelism = check_max_parallelism(max_parallelism)
        self._ops: list[tuple[str, DataFrame, str, dict[str, StateDescriptor], Any]] = []

    def with_keyed_state(self, uid: str, df: DataFrame, key_column: str,
                         states: dict[str, StateDescriptor], key_type: Any = None
                         ) -> SavepointWriter:
        """Add operator ``uid``: one key per row of ``df[key_column]`` (unique keys), and for
        each ``column: descriptor`` the state's value taken from that column (List: array,
        Map: map, BinarySortedState: array of (key, values) structs). ``key_type``
        (TypeInformation) defaults to the one of the key column's Spark type."""
        from ..spark_io.schema import type_info_from_spark

        if not isinstance(uid, str) or not uid:
            raise StateDescriptorError(f"with_keyed_state: uid must be a non-empty str, got {uid!r}")
        if any(u == uid for u, *_ in self._ops):
            raise StateDescriptorError(f"with_keyed_state: operator uid {uid!r} was already added")
        if key_column not in df.columns:
            raise StateDescriptorError(
                f"with_keyed_state({uid!r}): key column {key_column!r} is not in {df.columns}")
        for column, d in states.items():
            if column not in df.columns:
                raise StateDescriptorError(
                    f"with_keyed_state({uid!r}): state column {column!r} is not in {df.columns}")
            if not isinstance(d, StateDescriptor):
                raise StateDescriptorError(
                    f"with_keyed_state({uid!r}): {column!r} maps to {d!r}, not a state descriptor")
        if key_type is None:
            key_type = type_info_from_spark(df.schema[key_column].dataType)
        self._ops.append((uid, df, key_column, dict(states), key_type))
        return self

    def metadata(self, job_name: str = "bootstrap") -> SavepointMetadata:
        """The metadata the savepoint will carry."""
        from ..state_store.namespaces import VOID_NAMESPACE_SERIALIZER

        ops = {}
        for uid, _df, _k, states, key_type in self._ops:
            key_ser = key_type.key_serializer() if hasattr(key_type, "key_serializer") \
                else key_type.create_serializer()
            metas = tuple(sorted((d.meta_info(key_ser, VOID_NAMESPACE_SERIALIZER)
                                  for d in states.values()), key=lambda m: m.name))
            ops[uid] = OperatorMetadata(uid, key_ser.snapshot(), metas)
        return SavepointMetadata(max_parallelism=self.max_parallelism, operators=ops,
                                 mode="BOOTSTRAP", backend="single_key", job_name=job_name)

    def write(self, path: str, job_name: str = "bootstrap") -> int:
        """Encode every operator's rows on the executors and write the savepoint; return the version."""
        if not self._ops:
            raise StateDescriptorError("SavepointWriter.write: no operator added (with_keyed_state)")
        metadata = self.metadata(job_name)
        spark = self._ops[0][1].sparkSession
        entries, presorted = self._entries(metadata)
        log.info("bootstrap savepoint %s: operators %s (max parallelism %d)%s", path,
                 [u for u, *_ in self._ops], self.max_parallelism,
                 ", source rows ordered by key group before encoding" if presorted else "")
        return write_savepoint(spark, path, entries, metadata, presorted=presorted)

    def _entries(self, metadata: SavepointMetadata) -> tuple[DataFrame, bool]:
        """Every operator's entries (never collected) and whether they come presorted.

        When Spark can compute every operator's key bytes (string and integer keys, see
        :func:`~pyspark_datastream.translation.tracing.native_key_bytes`), each operator's *source rows*
        (one per key) are shuffled into the key-group ranges and put in the write order
        before the Python pass encodes them: each output partition is then one range of
        one operator in write order, as whole savepoint rows (``kind`` included), and the
        ten-times-larger entry rows need no shuffle, sort or projection of their own.
        Otherwise the pass emits ``ENTRY_COLUMNS`` and the write shuffles and sorts them.
        """
        from pyspark.sql import functions as F

        from ..spark_io.key_columns import native_key_bytes
        from .format import entries_ddl, savepoint_ddl

        maxp = self.max_parallelism
        key_sers = {uid: serializer_from_snapshot(op.key_serializer)
                    for uid, op in metadata.operators.items()}
        key_bytes = {uid: native_key_bytes(F.col(f"`{key_column}`"),
                                           getattr(key_type, "type_name", ""), key_sers[uid])
                     for uid, _df, key_column, _states, key_type in self._ops}
        presorted = all(b is not None for b in key_bytes.values())
        union: Optional[DataFrame] = None
        for uid, df, key_column, states, _kt in self._ops:
            key_ser = key_sers[uid]
            cols = list(states.items())
            # presorted rows carry their kind, so the write adds no column (no projection)
            kinds = metadata.operators[uid].kind_of() if presorted else None

            def fn(batches: Iterator[pa.RecordBatch], uid: str = uid, key_ser: Any = key_ser,
                   key_column: str = key_column, cols: list[Any] = cols,
                   kinds: Optional[dict[str, str]] = kinds) -> Iterator[pa.RecordBatch]:
                return _bootstrap_pass(uid, key_ser, maxp, key_column, cols, batches, kinds)

            source = df.select(key_column, *states)
            if presorted:
                n = _file_count(df.sparkSession, maxp)
                key_group = F.pmod(F.crc32(key_bytes[uid]), F.lit(maxp)).cast("int")
                source = (source.withColumn(_SOURCE_KEY_GROUP, key_group)
                          .repartition(n, _range_partition(n, maxp, _SOURCE_KEY_GROUP))
                          .sortWithinPartitions(_write_order_of(F.col(_SOURCE_KEY_GROUP),
                                                                F.lit(uid), key_bytes[uid]))
                          .select(key_column, *states))
            entries = source.mapInArrow(fn, savepoint_ddl() if presorted else entries_ddl())
            union = entries if union is None else union.unionByName(entries)
        assert union is not None
        return union, presorted


# --------------------------------------------------------------------------------------------
# inspect
# --------------------------------------------------------------------------------------------
def inspect_savepoint(path: str, version: Optional[int] = None) -> dict[str, Any]:
    """Summary of a savepoint: format version, metadata, per state entry counts and bytes,
    Delta versions. Reads with pyarrow (no Spark): fine for a CLI, streams column chunks."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    metadata = read_metadata(path, version)
    table = _open_table(path, version)
    counts: dict[tuple[str, str], list[int]] = {}
    dataset = table.to_pyarrow_dataset()
    scanner = dataset.scanner(columns=["kind", "operator_uid", "state_name", "key", "namespace",
                                       "user_key", "value"],
                              filter=ds.field("kind") != METADATA_KIND)
    for batch in scanner.to_batches():
        if not batch.num_rows:
            continue
        size = pc.add(pc.add(pc.binary_length(batch.column("key")),
                             pc.binary_length(batch.column("namespace"))),
                      pc.add(pc.binary_length(batch.column("user_key")),
                             pc.binary_length(batch.column("value"))))
        t = pa.table({"u": batch.column("operator_uid"), "s": batch.column("state_name"),
                      "b": size})
        agg = t.group_by(["u", "s"]).aggregate([("b", "count"), ("b", "sum")])
        for u, s, c, b in zip(*(agg.column(i).to_pylist() for i in range(4))):
            slot = counts.setdefault((u, s), [0, 0])
            slot[0] += c
            slot[1] += b or 0
    operators = []
    for uid in sorted(metadata.operators):
        op = metadata.operators[uid]
        operators.append({
            "uid": uid,
            "key_serializer": op.key_serializer,
            "states": [{"name": m.name, "kind": m.kind.value,
                        "entries": counts.get((uid, m.name), [0, 0])[0],
                        "bytes": counts.get((uid, m.name), [0, 0])[1]} for m in op.states],
        })
    return {
        "path": path,
        "format_version": metadata.format_version,
        "version": int(table.version()),
        "max_parallelism": metadata.max_parallelism,
        "mode": metadata.mode,
        "backend": metadata.backend,
        "job_name": metadata.job_name,
        "created_ms": metadata.created_ms,
        "final_watermark": metadata.final_watermark,
        "operators": operators,
        "delta_versions": savepoint_versions(path),
    }


def format_inspection(info: dict[str, Any]) -> str:
    """Human-readable text of :func:`inspect_savepoint`."""
    lines = [
        f"savepoint {info['path']}",
        f"  format version {info['format_version']}, Delta version {info['version']}, "
        f"max parallelism {info['max_parallelism']}",
        f"  written by job {info['job_name']!r} in {info['mode']} mode, backend "
        f"{info['backend']}, final watermark {info['final_watermark']}",
        "  operators:",
    ]
    for op in info["operators"]:
        lines.append(f"    {op['uid']}  (key serializer {op['key_serializer'].get('name')})")
        for s in op["states"]:
            lines.append(f"      {s['name']:<28} {s['kind']:<12} {s['entries']:>10} entries "
                         f"{s['bytes']:>12} bytes")
    lines.append("  Delta versions:")
    for h in info["delta_versions"]:
        lines.append(f"    {h['version']}  {h['operation']}  {h['timestamp']}")
    return "\n".join(lines)
