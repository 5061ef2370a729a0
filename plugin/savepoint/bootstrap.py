"""Bootstrapping a savepoint from DataFrames: the ``SavepointWriter`` class.

Each added operator is a DataFrame with one row per key and one column per state. On
the executors, ``mapInArrow`` puts every row's states through the real single-key state
backend and emits its snapshot entries, so a bootstrapped savepoint holds exactly the
bytes a running job would have written. When Spark can compute the key bytes itself,
the source rows are ordered into the write's key-group ranges before encoding (the
layout of :mod:`pyspark_datastream.savepoint.writer`), so the much larger entry rows
need no shuffle of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from ..state_store.backends import SINGLE_KEY
from ..state_store.descriptors import StateDescriptor
from ..state_store.entries import StateKind
from ..state_store.exceptions import StateDescriptorError
from ..state_store.keygroups import check_max_parallelism
from ..state_store.serializers import serializer_from_snapshot
from .format import BOOTSTRAP, OperatorMetadata, SavepointMetadata, entries_to_batch
from .writer import file_count, range_partition, write_order_of, write_savepoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SavepointWriter"]

log = logging.getLogger("pyspark_datastream")

#: the key-group column a bootstrap adds to its source rows to order them (then drops)
_SOURCE_KEY_GROUP = "__savepoint_key_group"


def _bootstrap_pass(uid: str, key_serializer: Any, maxp: int, key_column: str,
                    columns: list[tuple[str, StateDescriptor]],
                    batches: Iterator[pa.RecordBatch],
                    kinds: Optional[dict[str, str]] = None) -> Iterator[pa.RecordBatch]:
    """Executor side of ``SavepointWriter``: each row's states through a single-key backend
    (with ``kinds``, whole savepoint rows: see ``entries_to_batch``)."""
    backend = SINGLE_KEY.create(key_serializer, maxp)
    try:
        for b in batches:
            if not b.num_rows:
                continue
            keys = b.column(key_column).to_pylist()
            values = [b.column(c).to_pylist() for c, _ in columns]
            out: list[Any] = []
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
    """Build a savepoint from DataFrames (bootstrap), e.g. from a warehouse table.

    Args:
        max_parallelism: The key-group count of the savepoint (``pipeline.max-parallelism``
            of the jobs that restore it), 1 to 32768.

    Raises:
        KeyGroupError: ``max_parallelism`` is not an int in [1, 32768].
    """

    def __init__(self, max_parallelism: int = 128) -> None:
        self.max_parallelism = check_max_parallelism(max_parallelism)
        self._ops: list[tuple[str, DataFrame, str, dict[str, StateDescriptor], Any]] = []

    def with_keyed_state(self, uid: str, df: DataFrame, key_column: str,
                         states: dict[str, StateDescriptor], key_type: Any = None
                         ) -> SavepointWriter:
        """Add operator ``uid``: one key per row of ``df[key_column]`` (unique keys), and for
        each ``column: descriptor`` the state's value taken from that column (List: array,
        Map: map, BinarySortedState: array of (key, values) structs). ``key_type``
        (TypeInformation) defaults to the one of the key column's Spark type.

        Args:
            uid: The operator's uid (non-empty, not added before).
            df: The DataFrame holding the keys and state values.
            key_column: The key column.
            states: State column name to its state descriptor.
            key_type: The key's ``TypeInformation``, or None for the column's type.

        Returns:
            This writer.

        Raises:
            StateDescriptorError: ``uid`` is empty or added twice, a column is missing, or a
                value of ``states`` is not a state descriptor.
        """
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
        """The metadata the savepoint will carry.

        Args:
            job_name: The job name recorded in the metadata.

        Returns:
            The ``SavepointMetadata``.
        """
        from ..state_store.namespaces import VOID_NAMESPACE_SERIALIZER

        ops = {}
        for uid, _df, _k, states, key_type in self._ops:
            key_ser = key_type.key_serializer() if hasattr(key_type, "key_serializer") \
                else key_type.create_serializer()
            metas = tuple(sorted((d.meta_info(key_ser, VOID_NAMESPACE_SERIALIZER)
                                  for d in states.values()), key=lambda m: m.name))
            ops[uid] = OperatorMetadata(uid, key_ser.snapshot(), metas)
        return SavepointMetadata(max_parallelism=self.max_parallelism, operators=ops,
                                 mode=BOOTSTRAP, backend=SINGLE_KEY.name, job_name=job_name)

    def write(self, path: str, job_name: str = "bootstrap") -> int:
        """Encode every operator's rows on the executors and write the savepoint; return the version.

        Args:
            path: The savepoint's Delta table path.
            job_name: The job name recorded in the metadata.

        Returns:
            The Delta version written.

        Raises:
            StateDescriptorError: No operator was added.
        """
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
        :func:`~pyspark_datastream.spark_io.key_columns.native_key_bytes`), each operator's
        *source rows* (one per key) are shuffled into the key-group ranges and put in the
        write order before the Python pass encodes them: each output partition is then one
        range of one operator in write order, as whole savepoint rows (``kind`` included),
        and the ten-times-larger entry rows need no shuffle, sort or projection of their own.
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
                n = file_count(df.sparkSession, maxp)
                key_group = F.pmod(F.crc32(key_bytes[uid]), F.lit(maxp)).cast("int")
                source = (source.withColumn(_SOURCE_KEY_GROUP, key_group)
                          .repartition(n, range_partition(n, maxp, _SOURCE_KEY_GROUP))
                          .sortWithinPartitions(write_order_of(F.col(_SOURCE_KEY_GROUP),
                                                                F.lit(uid), key_bytes[uid]))
                          .select(key_column, *states))
            entries = source.mapInArrow(fn, savepoint_ddl() if presorted else entries_ddl())
            union = entries if union is None else union.unionByName(entries)
        assert union is not None
        return union, presorted
