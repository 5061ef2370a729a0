"""Reading a savepoint's state as DataFrames: the ``Savepoint`` class (State Processor API).

``Savepoint.load`` reads only the metadata on the driver; ``read_keyed_state`` and
``read_timers`` return lazy DataFrames whose executors decode the entries in
``mapInArrow`` (one row per key, one column per state, typed from the descriptors'
TypeInformation or, for basic serializers, from the serializer snapshots themselves).
``entries`` gives the raw entry rows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from ..state_store.descriptors import StateDescriptor
from ..state_store.entries import TIMER_STATE_PREFIX, StateKind
from ..state_store.exceptions import StateDescriptorError
from ..state_store.serializers import serializer_from_snapshot
from .format import (
    BROADCAST_KIND,
    METADATA_KIND,
    OperatorMetadata,
    SavepointMetadata,
    decode_key_states,
    decode_timers,
    entries_from_batch,
    group_by_key,
)
from .reader import open_table, read_metadata, table_df

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Savepoint"]

log = logging.getLogger("pyspark_datastream")


_BASIC_BY_SERIALIZER = {
    "Long": "LONG", "Int": "INT", "Short": "SHORT", "Byte": "BYTE", "Double": "DOUBLE",
    "Float": "FLOAT", "Boolean": "BOOLEAN", "String": "STRING", "BigInt": "BIG_INT",
    "BigDecimal": "BIG_DEC", "Timestamp": "SQL_TIMESTAMP", "Date": "SQL_DATE", "Time": "SQL_TIME",
}


def _type_from_serializer(snapshot: dict[str, Any]) -> Any:
    """TypeInformation for a basic serializer snapshot, or None."""
    from ..state_store.typeinfo import BasicTypeInfo
    from ..state_store.types import Types

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
    from ..state_store.types import Types

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
    """A savepoint opened for reading (State Processor API). Opened by
    :meth:`Savepoint.load`; not constructed directly.
    """

    def __init__(self, path: str, metadata: SavepointMetadata, spark: Optional[SparkSession],
                 version: Optional[int]) -> None:
        self.path = path
        self._metadata = metadata
        self._spark = spark
        self.version = version

    @classmethod
    def load(cls, path: str, spark: Optional[SparkSession] = None,
             version: Optional[int] = None) -> Savepoint:
        """Open the savepoint at ``path`` (latest version unless ``version``); reads metadata only.

        Args:
            path: The savepoint's Delta table path.
            spark: The SparkSession for the reads; None uses ``getOrCreate()`` when first needed.
            version: The Delta version to read, or None for the latest.

        Returns:
            The savepoint.

        Raises:
            SavepointNotFoundError: ``path`` is not a savepoint.
            SavepointFormatError: Its metadata is unreadable.

        Example:
            >>> sp = Savepoint.load("/tables/sessions_sp")  # doctest: +SKIP
            >>> sp.read_keyed_state("sessionize", ValueStateDescriptor("last", Types.LONG())).show()  # doctest: +SKIP
        """
        start = time.monotonic()
        metadata = read_metadata(path, version)
        if version is None:
            version = int(open_table(path, None).version())
        log.info("savepoint %s version %d: metadata read in %.2f s (%d operators %s, max "
                 "parallelism %d, written by %s job %r)", path, version, time.monotonic() - start,
                 len(metadata.operators), sorted(metadata.operators), metadata.max_parallelism,
                 metadata.mode, metadata.job_name)
        return cls(path, metadata, spark, version)

    @property
    def spark(self) -> SparkSession:
        """The SparkSession reads run on (``getOrCreate()`` when none was given)."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            self._spark = SparkSession.builder.getOrCreate()
        return self._spark

    def metadata(self) -> SavepointMetadata:
        """The savepoint's metadata.

        Returns:
            The ``SavepointMetadata`` (operators, states, serializers, max parallelism).
        """
        return self._metadata

    def operators(self) -> list[str]:
        """Uids of the operators in the savepoint, sorted.

        Returns:
            The uids.
        """
        return sorted(self._metadata.operators)

    def entries(self, uid: Optional[str] = None) -> DataFrame:
        """Raw entry rows (all operators, or one), the metadata row excluded.

        Args:
            uid: An operator uid, or None for all.

        Returns:
            A DataFrame of the raw entries (bytes as stored).
        """
        from pyspark.sql import functions as F

        df = table_df(self.spark, self.path, self.version).filter(
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

        Args:
            uid: The operator's uid.
            *descriptors: The state descriptors to read, one column each.
            key_type: The key column's ``TypeInformation``; None derives it from the stored key
                serializer.

        Returns:
            A lazy DataFrame decoded on the executors.

        Raises:
            StateDescriptorError: No descriptor is given, or the key type cannot be derived.
            SavepointFormatError: ``uid`` or a state name is not in the savepoint.
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
        df = self.entries(uid).filter(F.col("state_name").isin([d.name for d in descriptors])
                                      & (F.col("kind") != F.lit(BROADCAST_KIND)))
        parts = int(self.spark.conf.get("spark.sql.shuffle.partitions", "4") or 4)
        df = df.repartition(parts, "key").sortWithinPartitions("key", "state_name", "namespace",
                                                                "user_key")
        descs = tuple(descriptors)
        log.info("savepoint %s: reading keyed state %s of operator %r (lazy: executors decode "
                 "it when the DataFrame runs)", self.path, [d.name for d in descriptors], uid)

        def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return _decode_pass(op, maxp, descs, types, schema, batches)

        return df.mapInArrow(fn, ddl)

    def read_broadcast_state(self, uid: str, descriptor: Any) -> dict[Any, Any]:
        """The broadcast state ``descriptor`` (a MapStateDescriptor) of operator ``uid`` as a
        dict, read on the driver (broadcast state is small: every instance holds it all).

        Args:
            uid: The operator's uid.
            descriptor: The broadcast state's ``MapStateDescriptor``.

        Returns:
            The state as a dict.

        Raises:
            StateDescriptorError: The operator has no broadcast state of that name.
            IncompatibleStateError: The descriptor's serializers cannot read the stored state.
            SavepointFormatError: ``uid`` is not in the savepoint.
        """
        from ..operators.broadcast import check_broadcast_compatible
        from .reader import read_broadcast_entries

        op = self._metadata.operator(uid)
        name = getattr(descriptor, "name", None)
        stored = ({m.name: m for m in op.broadcast_states}.get(name) if isinstance(name, str)
                  else None)
        if stored is None:
            raise StateDescriptorError(
                f"operator {uid!r} has no broadcast state {getattr(descriptor, 'name', descriptor)!r}"
                f" in the savepoint; it has {sorted(m.name for m in op.broadcast_states)}")
        check_broadcast_compatible(stored, descriptor, f"operator {uid!r}")
        key_ser, value_ser = descriptor.user_key_serializer, descriptor.value_serializer
        return {key_ser.deserialize(e.user_key): value_ser.deserialize(e.value)
                for e in read_broadcast_entries(self.path, uid, self.version)
                if e.state_name == descriptor.name}

    def read_timers(self, uid: str, key_type: Any = None) -> DataFrame:
        """Pending timers of operator ``uid``: ``key, queue, timestamp, namespace`` (raw bytes).

        Args:
            uid: The operator's uid.
            key_type: The key column's ``TypeInformation``; None derives it from the stored key
                serializer.

        Returns:
            A lazy DataFrame of the timers.

        Raises:
            StateDescriptorError: The key type cannot be derived.
            SavepointFormatError: ``uid`` is not in the savepoint.
        """
        from pyspark.sql import functions as F

        from ..runtime.spark_types import arrow_type, spark_ddl_type

        op = self._metadata.operator(uid)
        kt = self._key_type(op, key_type)
        schema = pa.schema([pa.field("key", arrow_type(kt)), pa.field("queue", pa.string()),
                            pa.field("timestamp", pa.int64()), pa.field("namespace", pa.binary())])
        ddl = f"key {spark_ddl_type(kt)}, queue string, timestamp bigint, namespace binary"
        df = self.entries(uid).filter(F.col("state_name").startswith(TIMER_STATE_PREFIX)
                                      & (F.col("kind") != F.lit(BROADCAST_KIND)))

        def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return _timer_pass(op, kt, schema, batches)

        return df.mapInArrow(fn, ddl)
