"""Translation steps that BATCH and STREAMING share, as functions of a translator.

``batch/translator.py`` and ``streaming/translator.py`` each say what their mode does with
every node kind; where both do the same (side-output filtering, a fused chain stage, a union,
a shared stream materialized once, the Spark results of a stream) they call these functions,
which reach the translator only through :class:`~.stream.StreamTranslator`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

from ..plan.config import Configuration, RuntimeMode, resolve
from ..plan.graph import (
    ChainNode,
    CoChainNode,
    CoKeyedNode,
    KeyByNode,
    SideOutputNode,
    SourceNode,
    Transformation,
    UnionNode,
)
from ..runtime.encoding import PICKLED, SIDE, TAG, TS, VALUE, Encoding, output_check, typed_encoding
from ..runtime.passes import PassSpec
from ..runtime.spark_types import is_spark_mappable, python_from_spark
from ..spark_io.columns import col, lit
from ..state_store.exceptions import GraphBuildError
from .rows import chain_before, chain_for_output, leading_rows
from .stream import Stream, StreamTranslator

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..runtime.passes import Combiner, KeyOut
    from ..state_store.typeinfo import TypeInformation

__all__ = [
    "operator_config",
    "side_output_tags",
    "fan_out",
    "preferred_encoding",
    "input_stream",
    "fused_chain",
    "co_chain_input",
    "same_key_serializer",
    "union",
    "side_output",
    "dataframe_source",
    "materialize_shared",
    "needs_pass",
    "pass_spec",
    "typed_df",
    "collectable_arrow",
    "collectable",
    "string_values",
    "write_partitions",
]


# -- configuration ------------------------------------------------------------------------------
def by_kind(table: dict[type, Any], translator: StreamTranslator, node: Transformation,
            mode: RuntimeMode) -> Stream:
    """``node`` translated by the method ``table`` (a translator's ``_BY_KIND``) gives its
    class.

    Args:
        table: node class -> the translator's method for that kind of node.
        translator: the translator the method is called on.
        node: the node to translate.
        mode: the translator's mode, for the error.

    Returns:
        The node's stream.

    Raises:
        GraphBuildError: the translator has no method for the node's kind.
    """
    method = table.get(type(node))
    if method is None:
        raise GraphBuildError(f"{node.describe()} is not supported in {mode.value} mode")
    result: Stream = method(translator, node)
    return result


def by_source_kind(table: dict[str, Any], translator: StreamTranslator, node: SourceNode,
                   mode: RuntimeMode) -> Stream:
    """``node``'s stream, from the method ``table`` (a translator's ``_SOURCES``) gives its kind.

    Args:
        table: source kind -> the translator's method for that kind of source.
        translator: the translator the method is called on.
        node: the source to translate.
        mode: the translator's mode, for the error.

    Returns:
        The source's stream.

    Raises:
        GraphBuildError: the translator has no method for the source's kind (naming the
            source and its kind).
    """
    method = table.get(node.kind)
    if method is None:
        raise GraphBuildError(
            f"{node.describe()} has source kind {node.kind!r}, which {mode.value} mode does not read "
            f"(the source kinds: {', '.join(sorted(table))})")
    result: Stream = method(translator, node)
    return result


def operator_config(cfg: Configuration, mode: RuntimeMode, parallelism: int, max_parallelism: int
                    ) -> dict[str, Any]:
    """The configuration every operator of a ``mode`` job is opened with (a plain dict
    shipped to executors)."""
    return {
        "mode": mode,
        "processing_time_allow": str(resolve(cfg, "pipeline.processing-time.allow", mode)),
        "processing_time_end_of_input": str(
            resolve(cfg, "pipeline.processing-time.end-of-input", mode)),
        "parallelism": parallelism,
        "max_parallelism": max_parallelism,
        "job_parameters": cfg.to_dict(),
    }


# -- the graph ----------------------------------------------------------------------------------
def side_output_tags(nodes: list[Transformation]) -> dict[int, frozenset[str]]:
    """Node id -> the side-output tags read from that node (its outputs carry a ``_tag``)."""
    tags: dict[int, frozenset[str]] = {}
    for n in nodes:
        if isinstance(n, SideOutputNode):
            parent = n.inputs[0]
            tags[parent.id] = tags.get(parent.id, frozenset()) | {n.tag_id}
    return tags


def fan_out(consumers: dict[int, list[Transformation]], node: Transformation) -> int:
    """How many consumers read ``node``'s main output (side outputs do not count)."""
    return len([c for c in consumers.get(node.id, []) if not isinstance(c, SideOutputNode)])


def preferred_encoding(type_info: Optional[TypeInformation]) -> Encoding:
    """Typed Spark columns for a Spark-mappable type, pickled records otherwise."""
    if type_info is not None and is_spark_mappable(type_info):
        return typed_encoding(type_info)
    return PICKLED


# -- node kinds both modes translate alike -------------------------------------------------------
def input_stream(t: StreamTranslator, parent: Transformation) -> Stream:
    """``parent``'s stream as its consumer reads it: its main output, side outputs filtered out."""
    stream = t.translate(parent)
    if stream.tagged:
        main = stream.df.filter(col(TAG).isNull()).drop(TAG)
        return Stream(main, stream.enc, stream.type_info, name=stream.name, chain=stream.chain)
    return stream


def fused_chain(parent: Stream, node: ChainNode, stage: Optional[int]) -> Stream:
    """``parent`` with ``node``'s stage appended to its pending work (run in the same pass;
    ``stage``: the progress stage of that pass)."""
    return replace(parent, chain=chain_before(parent) + ((node.stage, node.function, node.name),),
                   type_info=node.output_type, name=node.name, stage=stage)


def co_chain_input(t: StreamTranslator, node: CoChainNode) -> DataFrame:
    """The two inputs of a connected (non-keyed) two-input stage, pickled, one ``_side`` each."""
    co_parts = []
    for side, upstream in enumerate(node.inputs):
        df = t.materialize(t.input_stream(upstream), PICKLED, name=node.name)
        co_parts.append(df.select(TS, VALUE, lit(side).alias(SIDE)))
    return co_parts[0].unionByName(co_parts[1])


def same_key_serializer(node: CoKeyedNode) -> Any:
    """The key serializer of both inputs of a keyed two-input operator (they must agree)."""
    serializers = [k.key_serializer if isinstance(k, KeyByNode) else None for k in node.inputs]
    if None in serializers:
        raise GraphBuildError(f"{node.describe()}: both inputs of a keyed two-input operator "
                              "must be keyed streams")
    if serializers[0] != serializers[1]:
        raise GraphBuildError(
            f"{node.describe()}: both inputs must use the same key type, got "
            f"{serializers[0]!r} and {serializers[1]!r}"
        )
    return serializers[0]


def union(t: StreamTranslator, node: UnionNode, streams: list[Stream]) -> Stream:
    """The union of ``streams``: in their common encoding when nothing is pending, else in
    the preferred encoding of their common type (pickled for mixed types)."""
    encs = {s.enc for s in streams}
    enc = encs.pop() if len(encs) == 1 and all(not s.pending for s in streams) else None
    if enc is None:
        types = {repr(s.type_info) for s in streams}
        first = streams[0].type_info
        enc = t.preferred_encoding(first) if len(types) == 1 else PICKLED
    return Stream(union_all([t.materialize(s, enc, name=node.name) for s in streams]), enc,
                  node.output_type, name=node.name)


def union_all(dfs: list[DataFrame]) -> DataFrame:
    """The union of ``dfs`` by column name (at least one).

    Args:
        dfs: DataFrames of the same columns.

    Returns:
        Their union.
    """
    return functools.reduce(lambda df, other: df.unionByName(other), dfs)


def side_output(t: StreamTranslator, node: SideOutputNode) -> Stream:
    """One tag's records of the tagged stream of the node that emitted them."""
    parent = t.translate(node.inputs[0])
    assert parent.tagged
    df = parent.df.filter(col(TAG) == node.tag_id).select(TS, VALUE)
    return Stream(df, PICKLED, node.output_type, name=node.name,
                  chain=leading_rows(node.output_type, node.name))


def dataframe_source(df: DataFrame, node: SourceNode) -> Stream:
    """A source DataFrame's columns as typed records without timestamps (ROW: Rows)."""
    cols = tuple(df.columns)
    enc = typed_encoding(node.output_type, columns=cols)  # ROW: records are Rows
    df = df.select(lit(None).cast("bigint").alias(TS), *[col(f"`{c}`") for c in cols])
    return Stream(df, enc, node.output_type, name=node.name)


def materialize_shared(t: StreamTranslator, stream: Stream, node: Transformation,
                       tags: frozenset[str]) -> Stream:
    """Apply pending work once for a node read by several consumers or with side outputs."""
    if tags:
        df = t.materialize(stream, PICKLED, tags=tags, name=node.name)
        return Stream(df, PICKLED, stream.type_info, name=node.name, tagged=True)
    enc = t.preferred_encoding(stream.type_info)
    df = t.materialize(stream, enc, name=node.name)
    # a partitioning read by several consumers: still its ``parallelism`` partitions
    return Stream(df, enc, stream.type_info, name=node.name, partitioned=stream.partitioned)


# -- one fused pass -----------------------------------------------------------------------------
def needs_pass(stream: Stream, enc: Encoding, key_out: Optional[KeyOut], tags: frozenset[str],
               force: bool) -> bool:
    """Whether materializing ``stream`` in ``enc`` takes a Python pass (else its df is it)."""
    return not (not stream.pending and key_out is None and not tags and stream.enc == enc
                and not force)


def pass_spec(t: StreamTranslator, stream: Stream, enc: Encoding, key_out: Optional[KeyOut] = None,
              combiner: Optional[Combiner] = None, tags: frozenset[str] = frozenset(),
              name: str = "") -> PassSpec:
    """The fused pass running ``stream``'s pending work into ``enc`` (one ``mapInArrow``)."""
    return PassSpec(
        name=name or stream.name,
        input_enc=stream.enc,
        output_enc=enc,
        config=dict(t.op_config),
        sided=stream.sided,
        co_stage=stream.co_stage,
        keyed=stream.keyed,
        chain=chain_for_output(stream, enc, key_out),
        tags=tags,
        key_out=key_out,
        combiner=combiner,
        max_parallelism=t.max_parallelism,
        partitioned=stream.partitioned,
    )


# -- results ------------------------------------------------------------------------------------
def typed_df(t: StreamTranslator, stream: Stream, node: Transformation) -> DataFrame:
    """``node``'s records as typed Spark columns (``to_dataframe``, a Delta sink)."""
    out_t = node.output_type
    if out_t is None or not is_spark_mappable(out_t):
        raise GraphBuildError(f"{node.describe()} has no Spark-mappable output_type")
    enc = stream.enc if (stream.enc.typed and not stream.pending) else typed_encoding(out_t)
    df = t.materialize(stream, enc, name=node.name)
    return df.select(*[col(f"`{c}`") for c in enc.columns])


def collectable_arrow(t: StreamTranslator, stream: Stream, node: Transformation
                      ) -> tuple[DataFrame, Encoding]:
    """The DataFrame to collect (payload columns only) and its encoding."""
    if stream.enc.typed and not stream.pending:
        enc = stream.enc
        return stream.df.select(*[col(f"`{c}`") for c in enc.columns]), enc
    return t.materialize(stream, PICKLED, name=node.name).select(VALUE), PICKLED


def collectable(t: StreamTranslator, stream: Stream, node: Transformation) -> tuple[DataFrame, Any]:
    """The DataFrame to collect and a converter from a list of its Spark Rows to the
    records (checked against the node's output_type when they travel pickled)."""
    df, enc = collectable_arrow(t, stream, node)
    if enc.typed:
        conv = python_from_spark(enc.declared_type(), enc.shape, enc.columns)
        return df, lambda rows: [conv(row) for row in rows]
    import pickle

    loads = pickle.loads
    check = output_check(node.output_type, enc, node.name) or (lambda records: records)
    return df, lambda rows: check([loads(row[0]) for row in rows])


# -- sinks written from the executors ----------------------------------------------------------

def string_values(df: DataFrame) -> DataFrame:
    """``df``'s only column (the records' strings) as one string column ``value``.

    Args:
        df: A DataFrame of one column.

    Returns:
        The DataFrame of the ``value`` column.
    """
    from pyspark.sql import functions as F

    (column,) = df.columns
    return df.select(F.col(f"`{column}`").cast("string").alias("value"))


def write_partitions(df: DataFrame, writer: Callable[[Iterator[Any]], Iterator[Any]]) -> int:
    """Run ``writer`` (a ``runtime.partition_writes.counting_writer``) over every partition of
    ``df``'s records, one string column, and add up what the partitions wrote.

    Args:
        df: The records (a stateful query's micro-batch: every partition runs).
        writer: The ``mapInArrow`` function.

    Returns:
        The records written.
    """
    written = string_values(df).mapInArrow(writer, "written long")
    return int(sum(row[0] for row in written.collect()))
