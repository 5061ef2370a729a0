"""STREAMING's native keyed input: key groups computed by Spark, records kept as typed columns.

For a one-input keyed operator whose key selector reads one string/integer field of a typed
stream (:func:`.pushdown.traced_key_field`), Spark computes the key group and numbers the
records, and the ``applyInPandasWithState`` function reads the typed columns
(``runtime/group_frames.TypedInput``) instead of pickled records. ``translator.py`` decides
when it applies (the pushdown option on, no savepoint state restored into the operator).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

from ...plan.graph import KeyByNode
from ...runtime.columnar_reduce import FieldReduce
from ...runtime.encoding import KG, TS, Encoding
from ...runtime.group_frames import (
    ORDER,
    ORDER_ROW,
    ROW_INDEX_BITS,
    SEQ,
    SEQ_ROW,
    TypedInput,
    typed_input,
)
from ...runtime.group_state import append_seq
from ...state_store.backends import get_backend
from ...state_store.typeinfo import FieldsTypeInfo
from ..pushdown import traced_key_field
from ..stream import Stream, arrow_pass
from ..tracing import field_plan, struct_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["native_keyed_input", "file_row_seq", "file_ordered", "field_reduce_plan"]

log = logging.getLogger("pyspark_datastream")

#: ``_seq_row`` of a file stream: 21 bits of the file's hash, 42 bits of the row index
_FILE_HASH_BITS, _ROW_INDEX_BITS = 21, ROW_INDEX_BITS
#: the ``_metadata`` fields the file order reads
_FILE_ORDER = frozenset({"file_path", "file_modification_time"})


def file_row_seq(df: DataFrame) -> Optional[tuple[Any, Any]]:
    """``(_seq, _seq_row)`` as Spark columns for a stream read from files, else None.

    ``_seq`` is the file's modification time (ms) and ``_seq_row`` is
    ``hash(file path) << 42 | row index in the file``: inside one micro-batch, files are
    taken in modification-time order (the order Spark's file source picks new files in;
    ties by a hash of the path), and each file's rows keep their order. The numbers are
    the same whenever the micro-batch runs again. Sources without file metadata
    (``_metadata.row_index``: Parquet) get None.
    """
    return _row_seq(df, _metadata_fields(df))


def _row_seq(df: DataFrame, fields: frozenset[str]) -> Optional[tuple[Any, Any]]:
    """:func:`file_row_seq` of a ``df`` that resolves these ``_metadata`` fields."""
    from pyspark.sql import functions as F

    if not {"row_index", *_FILE_ORDER} <= fields:
        return None
    mtime, file_hash = _file_order(df)
    return mtime, F.shiftleft(file_hash, _ROW_INDEX_BITS) + F.col("_metadata.row_index")


def file_ordered(stream: Stream, fields: Optional[frozenset[str]] = None) -> Stream:
    """``stream`` read in file order by the Python pass over it, when it is a stream read
    from files that the pass numbers in arrival order (``group_state.append_seq``); else
    ``stream``.

    Spark packs a micro-batch's small files into fewer read partitions, larger files first,
    so a key spanning two files of one partition would see the later file's records first.
    The pass's Python worker takes the partition's files in modification-time order (ties
    by a hash of the path: :func:`file_row_seq`'s order), each file's rows in the order
    read, before it runs: a stable sort by file of the stream's ``ordered_from``
    (``stream.arrow_pass``, ``emit_order.ordered_first``; Spark refuses a sort on a
    streaming DataFrame). Any file format: the files' metadata is all it needs.

    Args:
        stream: The stream a Python pass (the keying pass, the native keyed input's
            numbering pass) reads.
        fields: The ``_metadata`` fields ``stream.df`` resolves, when the caller probed
            them already (None: probed here).

    Returns:
        ``stream``, its pass reading it in file order when it is a file stream.
    """
    # not a keyed stage's records (ordered_from), not a physical partitioning, not numbered
    if stream.ordered_from is not None or stream.partitioned or SEQ in stream.df.columns:
        return stream
    if not _FILE_ORDER <= (_metadata_fields(stream.df) if fields is None else fields):
        return stream
    mtime, file_hash = _file_order(stream.df)
    numbered = stream.df.withColumn(ORDER, mtime).withColumn(ORDER_ROW, file_hash)
    return replace(stream, ordered_from=(stream.df, numbered))


def _metadata_fields(df: DataFrame) -> frozenset[str]:
    """The fields of Spark's file ``_metadata`` column ``df`` resolves (none: not a stream
    read from files). One analysis of ``df``; any error of it means none (Spark 4.0 answers
    the probe on a stateful operator's output with its analyzer's iteration limit, a
    RuntimeException, not an AnalysisException), and PySpark's error log of the probe's own
    failure is left out (it is not the user's error).

    Args:
        df: The stream.

    Returns:
        The field names.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    with _probe_errors_unlogged():
        try:
            # reading the schema forces the analysis (Spark Connect analyses lazily)
            field = df.select(F.col("_metadata")).schema.fields[0]
        except Exception:  # noqa: BLE001 - a probe: whatever the analysis raises means no
            return frozenset()
    if not isinstance(field.dataType, StructType):
        return frozenset()
    return frozenset(field.dataType.names)


@contextmanager
def _probe_errors_unlogged() -> Iterator[None]:
    """PySpark (4.0+) logs each analysis error with its DataFrame context as it is raised;
    while the probe runs, this thread's records of those loggers are dropped."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # Spark 3.5 logs none
        yield
        return
    thread = threading.get_ident()

    def other_threads(record: logging.LogRecord) -> bool:
        return record.thread != thread

    loggers = [PySparkLogger.getLogger(name)
               for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger")]
    for logger in loggers:
        logger.addFilter(other_threads)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(other_threads)


def _file_order(df: DataFrame) -> tuple[Any, Any]:
    """A file's modification time (ms) and a hash of its path, as Spark columns."""
    from pyspark.sql import functions as F

    mtime = F.unix_millis(F.col("_metadata.file_modification_time"))
    return mtime, F.pmod(F.xxhash64(F.col("_metadata.file_path")), F.lit(1 << _FILE_HASH_BITS))


def restaged_order(df: DataFrame) -> DataFrame:
    """A stream read back from the files a keyed stage's input was staged in, with ``_seq``
    and ``_seq_row`` taken from the files (:func:`file_row_seq`): the upstream query numbered
    each micro-batch's records from 0, so a micro-batch reading the files of several upstream
    micro-batches would interleave a key's records of different ones; by file time and row,
    each key keeps the order the upstream stage emitted it in (Flink's order per channel).
    Unchanged when ``df`` has no ``_seq`` or no file metadata.

    Args:
        df: The staged files read as a stream.

    Returns:
        The stream, ordered by file.
    """
    if SEQ not in df.columns:
        return df
    seq = file_row_seq(df)
    if seq is None:
        return df
    return df.withColumn(SEQ, seq[0]).withColumn(SEQ_ROW, seq[1])


def native_keyed_input(parent: Stream, key_node: KeyByNode, max_parallelism: int
                       ) -> Optional[tuple[DataFrame, TypedInput]]:
    """``_ts, _kg, <typed columns>[, _n<i>], _seq`` computed by Spark (no per-record
    Python) and how the keyed function reads them, for a key selector that reads one
    string/integer field of a typed stream of basic types (group_frames.TypedInput: nullable
    numbers travel with a null flag); else None. The key bytes only feed ``_kg``; the keyed
    function serializes each distinct key itself (a column less through shuffle, sort and
    Arrow). ``_seq`` orders each upstream split's records as they arrive: the row's
    position in its file for a Parquet file stream (:func:`file_row_seq`), else a
    numbering pass like the Python one."""
    key_field = traced_key_field(parent, key_node)
    if key_field is None:
        return None
    typed = typed_input(parent.enc, parent.df.schema, key_field[0])
    if typed is None:
        return None
    from pyspark.sql import functions as F

    from ...spark_io.key_columns import native_key_bytes

    columns = typed.enc.columns
    name = columns[key_field[0]]
    key_bytes = native_key_bytes(F.col(f"`{name}`"), key_field[1], key_node.key_serializer)
    if key_bytes is None:
        return None
    if parent.df.schema[name].nullable:
        try:  # a null key is a key too (the Python pass serializes None)
            null_key = key_node.key_serializer.serialize(None)
        except Exception:  # noqa: BLE001 - the Python pass reports it per record
            return None
        key_bytes = F.coalesce(key_bytes, F.lit(bytearray(null_key)))
    payload = [F.col(f"`{c}`") for c in columns]
    fields = _metadata_fields(parent.df)
    seq = _row_seq(parent.df, fields)
    if seq is not None:
        df = parent.df.select(TS, *payload, seq[0].alias(SEQ), seq[1].alias(SEQ_ROW))
    else:
        # Spark refuses monotonically_increasing_id() on streams: a pass that only
        # appends the numbers (no per-record Python), before the key columns exist
        from pyspark.sql.types import LongType, StructField, StructType

        plain = replace(parent, df=parent.df.select(TS, *payload))
        schema = StructType([*plain.df.schema.fields,
                             StructField(SEQ, LongType(), nullable=False)])
        df = arrow_pass(file_ordered(plain, fields), append_seq, schema)
    df = df.withColumn(KG, F.pmod(F.crc32(key_bytes), F.lit(max_parallelism)).cast("int"))
    types = {f.name: f.dataType for f in df.schema.fields}
    out = [F.col(TS), F.col(KG)]
    for i, (c, column) in enumerate(zip(columns, payload)):
        nulls_flagged = i in typed.null_flags
        out.append(F.coalesce(column, F.lit(0).cast(types[c])).alias(c) if nulls_flagged
                   else column)
    out.extend(payload[i].isNull().alias(TypedInput.flag(i)) for i in typed.null_flags)
    df = df.select(*out, F.col(SEQ), *([F.col(SEQ_ROW)] if seq is not None else []))
    log.info("STREAMING: %s computes key groups natively; records stay typed columns",
             key_node.name)
    return df, typed


def field_reduce_plan(kind: str, function: object, typed: Optional[TypedInput],
                      out_enc: Optional[Encoding], backend_kind: str) -> Optional[FieldReduce]:
    """How a STREAMING ``reduce`` over a native keyed input runs on its columns
    (``runtime/columnar_reduce.py``): when the function is a built-in ``sum`` or traces to
    fields that keep their value or add up (:func:`.tracing.field_plan`, as BATCH's native
    aggregation), on integer, string and boolean fields of a plain tuple, on a backend whose
    registration allows snapshot fast paths (the heap backend: the lean reduce's state);
    else None (the function runs per record)."""
    if (kind != "reduce" or typed is None or out_enc is None or not out_enc.typed
            or not get_backend(backend_kind).snapshot_fast_paths or typed.enc.shape != "tuple"
            or out_enc.shape != "tuple" or not isinstance(typed.enc.type_info, FieldsTypeInfo)
            or not isinstance(out_enc.type_info, FieldsTypeInfo)):
        return None
    types = [t.type_name for t in typed.enc.type_info.get_field_types()]
    if [t.type_name for t in out_enc.type_info.get_field_types()] != types:
        return None
    plan = field_plan(function, struct_type(typed.enc), typed.key_index, types)
    if plan is None or plan[0] != "fields":
        return None
    kinds = {"key": "first", "first": "first", "sum": "sum"}
    if set(plan[1]) - set(kinds):
        return None
    try:
        planned = FieldReduce(tuple(kinds[k] for k in plan[1]), tuple(types))
    except ValueError:  # a type this path does not run
        return None
    log.info("STREAMING: the reduce's fields %s run on columns", list(planned.kinds))
    return planned
