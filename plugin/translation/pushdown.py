"""Native pushdowns both translators use: traceable lambdas over typed streams as Spark columns.

A map or timestamp assigner that :mod:`.tracing` can read becomes a native projection; a key
selector reading one field names the column the keyed pushdowns of each mode key by
(``batch/translator.py``: shuffle/sort and aggregation by that column;
``streaming/translator.py``: key groups computed by Spark).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Optional

from ..operators.functions import wrapped_callable
from ..plan.graph import ChainNode, KeyByNode
from ..runtime.encoding import TS, typed_encoding
from ..runtime.spark_types import is_spark_mappable
from ..spark_io.columns import col
from .stream import Stream
from .tracing import Expr, Untraceable, struct_type, to_column, trace

__all__ = ["native_map", "native_timestamps", "traced_key_field"]

log = logging.getLogger("pyspark_datastream")


def native_map(node: ChainNode, parent: Stream) -> Optional[Stream]:
    """A traceable map over a typed DataFrame becomes a native select."""
    if parent.pending or not parent.enc.typed or parent.tagged:
        return None
    if node.stage == "timestamps":
        return native_timestamps(node, parent)
    if node.stage != "map":
        return None
    fn = wrapped_callable(node.function)
    out_t = node.output_type
    if fn is None or out_t is None or not is_spark_mappable(out_t):
        return None
    traced = trace(fn, [struct_type(parent.enc)])
    if traced is None:
        return None
    out_enc = typed_encoding(out_t)
    exprs = traced if isinstance(traced, tuple) else (traced,)
    if out_enc.shape == "scalar":
        if isinstance(traced, tuple):
            return None
    elif len(exprs) != len(out_enc.columns):
        return None
    ddl = [kind for _, kind in out_enc.spark_columns()]
    try:
        cols = [to_column(e, [list(parent.enc.columns)]).cast(t).alias(c)
                for e, t, c in zip(exprs, ddl, out_enc.columns)]
    except Untraceable:
        return None
    df = parent.df.select(col(TS), *cols)
    log.info("%s runs as a native Spark projection", node.name)
    return Stream(df, out_enc, out_t, name=node.name)


def native_timestamps(node: ChainNode, parent: Stream) -> Optional[Stream]:
    """A timestamp assigner that reads one integer field becomes a native column."""
    from ..state_store.types import Types

    assigner = node.function
    if assigner is None:  # a strategy without assigner keeps record timestamps
        return replace(parent, name=node.name)
    fn = wrapped_callable(assigner)
    if fn is None:
        return None
    traced = trace(fn, [struct_type(parent.enc), Types.LONG()])
    if not isinstance(traced, Expr) or traced.op != "field" or traced.args[0] != 0 \
            or traced.type_info is None or traced.type_info.type_name not in ("LONG", "INT"):
        return None
    column = to_column(traced, [list(parent.enc.columns)]).cast("bigint")
    df = parent.df.withColumn(TS, column)
    return Stream(df, parent.enc, parent.type_info, name=node.name)


def traced_key_field(parent: Stream, key_node: KeyByNode) -> Optional[tuple[int, str]]:
    """(index, type name) of the field a key selector reads, when it is a traceable lambda
    over a typed stream with nothing pending (the keyed pushdowns key by that column)."""
    if parent.pending or not parent.enc.typed or parent.tagged or parent.enc.shape == "scalar":
        return None
    key_fn = wrapped_callable(key_node.key_selector)
    if key_fn is None:
        return None
    key_expr = trace(key_fn, [struct_type(parent.enc)])
    if not isinstance(key_expr, Expr) or key_expr.op != "field" or key_expr.type_info is None:
        return None
    return key_expr.args[1], key_expr.type_info.type_name
