"""BATCH translation of FLIP-380 full-window partition processing.

* Non-keyed: a partition is one Spark partition of the input (the upstream
  parallelism is kept: no shuffle). Keyed: the input is shuffled by key group
  and sorted by key within partitions, and each key's run of rows is one
  partition.
* ``map_partition`` / ``aggregate`` / ``reduce``: one ``mapInArrow`` pass that
  decodes Arrow batches lazily and streams the records through
  ``operators.partition`` (the partition is never held in memory).
* ``sort_partition``: Spark's spilling ``sortWithinPartitions``. When the input
  is a typed DataFrame and the field is a position, a field name or a traceable
  key selector, the sort is on the native column expression; otherwise one pass
  computes an order-preserving binary sort key (``_sk``) per record in Python,
  Spark sorts by it and the column is dropped.
"""

from __future__ import annotations

import logging
from typing import Any, Iterator, Optional

import pyarrow as pa

from ...operators.base import OperatorConfig
from ...operators.context import RuntimeContext
from ...operators.functions import wrapped_callable
from ...operators.partition import (
    Order,
    run_keyed_partition,
    run_partition,
    sort_key_bytes,
    sort_key_getter,
)
from ...plan.graph import FullPartitionNode, KeyByNode
from ...runtime.encoding import KEY, KG, PICKLED, TS, ColumnWriter, Encoding, make_decoder
from ...runtime.passes import partition_id
from ...spark_io.key_group_ranges import repartition_by_key_group_range
from ..rows import leading_rows
from ..stream import KeyedInputTranslator, Stream
from ..tracing import Expr, to_column, trace

__all__ = ["SORT_KEY", "translate_full_partition", "partition_batches", "sort_key_batches"]

log = logging.getLogger("pyspark_datastream")

#: Column holding the Python-computed sort key.
SORT_KEY = "_sk"


def translate_full_partition(translator: KeyedInputTranslator, node: FullPartitionNode) -> Stream:
    """The Stream of a FullPartitionNode in BATCH."""
    op = node.partition_op
    if node.keyed:
        key_node = node.inputs[0]
        assert isinstance(key_node, KeyByNode)
        df, enc = translator.keyed_input(key_node, node)
        df = repartition_by_key_group_range(df, KG, translator.parallelism,
                                            translator.max_parallelism)
        keys = [KG, KEY]
    else:
        parent = translator.input_stream(node.inputs[0])
        enc = parent.enc
        df = parent.df
        if parent.pending:
            enc = translator.preferred_encoding(parent.type_info)
            df = translator.materialize(parent, enc, name=node.name)
        keys = []
    if op.op == "sort_partition":
        return _sort(translator, node, df, enc, keys)
    if keys:
        df = df.sortWithinPartitions(*keys)
    spec = (op, enc, node.name, bool(keys), dict(translator.op_config))

    def fn(batches: Any) -> Any:
        return partition_batches(spec, batches)

    out = df.mapInArrow(fn, f"{TS} bigint, {PICKLED.spark_fields()[0]}")

    return Stream(out, PICKLED, node.output_type, name=node.name,
                  chain=leading_rows(node.output_type, node.name))  # ROW: records become Rows


def _native_sort_column(enc: Encoding, field: Any) -> Optional[Any]:
    """A Spark column for ``field`` over a typed encoding, or None."""
    from pyspark.sql import functions as F

    if not enc.typed or enc.type_info is None:
        return None
    cols = list(enc.columns)
    if enc.shape == "scalar":
        return None
    if isinstance(field, int) and not isinstance(field, bool):
        return F.col(f"`{cols[field]}`") if 0 <= field < len(cols) else None
    if isinstance(field, str):
        return F.col(f"`{field}`") if field in cols else None
    fn = wrapped_callable(field) if callable(field) else None
    if fn is None:
        return None
    from ...state_store.types import Types

    struct_t = Types.ROW_NAMED(cols, enc.field_types())
    traced = trace(fn, [struct_t])
    if not isinstance(traced, Expr):
        return None
    return to_column(traced, [cols])


def _sort(translator: KeyedInputTranslator, node: FullPartitionNode, df: Any, enc: Encoding,
          keys: list[str]) -> Stream:

    op = node.partition_op
    descending = op.order is Order.DESCENDING
    column = _native_sort_column(enc, op.field)
    if column is not None:
        log.info("BATCH: %s sorts on a native column", node.name)
        sort_col = column.desc() if descending else column.asc()
        df = df.sortWithinPartitions(*keys, sort_col)
    else:
        from pyspark.sql.types import BinaryType, StructField, StructType

        # a new StructType: df.schema.add() would mutate the DataFrame's cached schema
        schema = StructType(list(df.schema.fields) + [StructField(SORT_KEY, BinaryType())])
        spec = (op.field, enc, node.name)

        def fn(batches: Any) -> Any:
            return sort_key_batches(spec, batches)

        df = df.mapInArrow(fn, schema)
        from pyspark.sql import functions as F

        sk = F.col(SORT_KEY)
        df = df.sortWithinPartitions(*keys, sk.desc() if descending else sk.asc()).drop(SORT_KEY)
    if keys:
        df = df.drop(*keys)
    return Stream(df, enc, node.output_type or enc.type_info, name=node.name)


def sort_key_batches(spec: tuple[Any, Encoding, str], batches: Iterator[pa.RecordBatch]
                     ) -> Iterator[pa.RecordBatch]:
    """Append the ``_sk`` column (order-preserving bytes of each record's sort key)."""
    field, enc, name = spec
    get = sort_key_getter(field)
    decode = make_decoder(enc)
    for batch in batches:
        values = decode(batch) if batch.num_rows else []
        keys = [sort_key_bytes(get(v)) for v in values]
        yield pa.RecordBatch.from_arrays(
            list(batch.columns) + [pa.array(keys, pa.binary())],
            schema=batch.schema.append(pa.field(SORT_KEY, pa.binary())),
        )


def partition_batches(spec: tuple[Any, Encoding, str, bool, dict[str, Any]],
                      batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Run map_partition / aggregate / reduce over one Spark partition's Arrow batches.

    Records are decoded one batch at a time and handed on lazily. The function is opened
    with the ``RuntimeContext`` of this parallel instance (the Spark partition).
    """
    op, enc, name, keyed, op_config = spec
    decode = make_decoder(enc)
    subtask = partition_id()
    config = OperatorConfig.from_dict(
        op_config, subtask_index=subtask, operator_name=name,
        parallelism=max(int(op_config.get("parallelism", 1)), subtask + 1))
    context = RuntimeContext(config, None)
    writer = ColumnWriter(PICKLED, [pa.field(TS, pa.int64())])

    if keyed:
        def rows() -> Iterator[tuple[bytes, Any]]:
            for batch in batches:
                if batch.num_rows:
                    yield from zip(batch.column(KEY).to_pylist(), decode(batch))

        outputs = run_keyed_partition(op, rows(), name, context)
    else:
        def values() -> Iterator[Any]:
            for batch in batches:
                if batch.num_rows:
                    yield from decode(batch)

        outputs = run_partition(op, values(), name, context)
    for value in outputs:
        out = writer.append((None,), value)
        if out is not None:
            yield out
    last = writer.flush()
    if last is not None:
        yield last
