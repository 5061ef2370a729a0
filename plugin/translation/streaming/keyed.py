"""The Spark plan around a STREAMING keyed stage.

:func:`watermarked` adds the watermark column its GroupState timeouts need;
:func:`keyed_call` is its ``applyInPandasWithState`` call and the step that turns the
function's output into the stage's records (in arrival order when :func:`feeds_keyed`:
runtime/emit_order.py).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Optional

from ...plan.graph import Transformation, is_keyed
from ...runtime.emit_order import order_partition
from ...runtime.encoding import KG, TS
from ...runtime.group_frames import (
    BLOB,
    ORDER,
    ORDER_ROW,
    float_columns,
    nan_column,
    output_schema,
    unpack_blobs,
)
from ...runtime.group_state import GroupSpec, group_function
from ...runtime.tws_processor import ET_OUT, KeyGroupProcessor, TwsCall

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, GroupedData

    from ...plan.graph import WatermarkSpec

__all__ = ["feeds_keyed", "keyed_call", "own_watermark", "watermarked"]

#: The watermark-tagged column a GroupState timeout needs (null on every row).
_ET = "_et"
#: Spark's GroupState of a keyed call: the key group's state bytes.
_STATE_SCHEMA = "s binary"
#: A record's position in its output row (which NaN positions refer to).
_POS = "_pos"


def _watermark_on_ts(df: Any, ws: Any, sentinel: Any) -> tuple[Any, int]:
    """``df`` with Spark's watermark on ``_et``, the event time of the rows that have one
    (every ``_ts`` under ``ws``; without it only the ``sentinel`` rows, the end of input's),
    and the watermark's delay in ms."""
    from pyspark.sql import functions as F

    delay = int(ws.out_of_orderness_ms or 0) if ws is not None else 0
    stamped = F.col(TS).isNotNull() if ws is not None else sentinel
    return (df.withColumn(_ET, F.when(stamped, F.timestamp_millis(F.col(TS))))
            .withWatermark(_ET, f"{delay} milliseconds")), delay


def watermarked(df: DataFrame, ws: Optional[WatermarkSpec]) -> Any:
    """``df`` with the watermark-tagged ``_et`` column a GroupState timeout needs.

    Args:
        df: the keyed stage's input.
        ws: the nearest upstream WatermarkStrategy; None: the watermark follows only the
            end-of-input sentinel's event time.

    Returns:
        ``df`` and ``_et``, null on every row, carrying the watermark's delay.
    """
    from pyspark.sql import functions as F

    df, delay = _watermark_on_ts(df, ws, F.col(KG) < 0)
    # Keep a watermark-tagged column (Spark requires one for EventTimeTimeout) but make it
    # null: Spark's late-row filter then drops nothing, as Flink's process functions see
    # late elements. A bigint, not a timestamp: the watermark is computed upstream, and
    # PySpark hands a timestamp column to pandas one value at a time (~0.3 s of CPU per 4M
    # records) where a bigint one is a single array conversion.
    # (a select, not withColumn: over Spark Connect withColumn drops the alias metadata)
    return df.select(*[F.col(f"`{c}`") for c in df.columns if c != _ET],
                     F.lit(None).cast("long").alias(
                         _ET, metadata={"spark.watermarkDelayMs": delay}))


def own_watermark(df: DataFrame, ws: Optional[WatermarkSpec],
                  end_of_input: Optional[Callable[[Any], Any]], records: bool) -> Any:
    """``df`` with a watermark of its own, for records that meet a keyed stage's outputs in
    the one query (whose chained stage adds none): Spark takes the least of the query's.

    Args:
        df: the records (``_ts`` their event time).
        ws: their WatermarkStrategy; None: only the end of input moves the watermark.
        end_of_input: ``end_of_input(schema)``, the end-of-input row's stream of a bounded
            job (:func:`~.queries.end_of_input_stream`); None: unbounded.
        records: ``df`` holds records, not a keyed input (whose stage skips the row's key
            group -1): the row is dropped again once the watermark has seen it.

    Returns:
        The same records.
    """
    from pyspark.sql import functions as F

    from ...runtime.group_state import END_THRESHOLD

    if end_of_input is not None:
        df = df.unionByName(end_of_input(df.schema))
    elif ws is None:
        return df
    df, _ = _watermark_on_ts(df, ws, F.col(TS) >= END_THRESHOLD)
    if end_of_input is not None and records:
        # on the watermark's column: Spark's optimizer moves other filters below the
        # watermark, which would then never see the row
        df = df.filter(F.col(_ET).isNull()
                       | (F.col(_ET) < F.timestamp_millis(F.lit(END_THRESHOLD))))
    return df.drop(_ET)


def feeds_keyed(node: Transformation, readers: dict[int, list[Transformation]]) -> bool:
    """Whether a keyed stage's outputs reach another keyed stage (through stateless
    operators, side outputs, unions): that stage must see them in arrival order.

    Args:
        node: The keyed stage.
        readers: Node id -> the nodes reading it (``plan.graph.consumers``).

    Returns:
        True when some keyed stage reads them.
    """
    todo, seen = list(readers.get(node.id, [])), set()
    while todo:
        n = todo.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if is_keyed(n):
            return True
        todo.extend(readers.get(n.id, []))
    return False


def keyed_call(grouped: GroupedData, spec: GroupSpec, fields: list[tuple[str, str]],
               timeout: str, tws: Optional[TwsCall] = None) -> tuple[Any, Optional[Any]]:
    """The keyed stage's records: ``applyInPandasWithState`` of ``spec`` over ``grouped``
    (or, in the one-query mapping, ``transformWithStateInPandas``: runtime/tws_processor.py).

    Args:
        grouped: the input grouped on the key group (or its range key).
        spec: the keyed call; its ``direct_output`` chooses the output's way out.
        fields: the records' columns, ``(name, Spark DDL type)`` (``[_tag,] _ts, payload``).
        timeout: the GroupState timeout kind.
        tws: the stage's call in the one-query mapping; None: per-stage.

    Returns:
        The records (the function's arrays exploded into rows by Spark, or its Arrow IPC
        blobs unpacked by a ``mapInArrow`` pass) and, for a stage whose records must keep
        their arrival order (``spec.ordered``), the same records before the pass that sorts
        them (``Stream.ordered_from``), else None.
    """
    call = partial(_call, grouped, spec, timeout, tws)
    if not spec.ordered:
        return _records(call, spec, fields), None
    # in arrival order (emit_order.py): sorted in a pass of the same query, then dropped
    records = _records(call, spec, [*fields, (ORDER, "bigint"), (ORDER_ROW, "bigint")])
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in fields)
    return records.mapInArrow(order_partition, ddl), records


def _call(grouped: Any, spec: GroupSpec, timeout: str, tws: Optional[TwsCall],
          ddl: str) -> Any:
    """The stateful operator of the stage, returning ``ddl``."""
    if tws is None:
        return grouped.applyInPandasWithState(group_function(spec), ddl, _STATE_SCHEMA,
                                              "append", timeout)
    out = grouped.transformWithStateInPandas(
        KeyGroupProcessor(spec, tws), f"{ddl}, `{ET_OUT}` timestamp", "Append", tws.time_mode,
        eventTimeColumnName=ET_OUT if tws.time_mode == "EventTime" else "")
    return out.drop(ET_OUT)


def _records(call: Callable[[str], Any], spec: GroupSpec,
             fields: list[tuple[str, str]]) -> Any:
    from pyspark.sql import functions as F

    names = [name for name, _ in fields]
    if spec.direct_output:
        kinds = dict(fields)
        floats = [(name, kinds[name]) for name in float_columns(
            output_schema(spec.output_enc, bool(spec.tags), spec.ordered))]
        arrays = ", ".join([f"`{name}` array<{kind}>" for name, kind in fields]
                           + [f"`{nan_column(name)}` array<int>" for name, _ in floats])
        out = call(arrays)
        zipped = F.arrays_zip(*[F.col(f"`{name}`") for name in names])
        if not floats:
            return out.select(F.inline(zipped)).toDF(*names)
        nans = [nan_column(name) for name, _ in floats]
        rows = (out.select(F.posexplode(zipped).alias(_POS, "_r"), *nans)
                .select(_POS, "_r.*", *nans).toDF(_POS, *names, *nans))
        nan_of = {name: (nan_column(name), kind) for name, kind in floats}
        return rows.select(*[
            F.when(F.array_contains(F.col(nan_of[name][0]), F.col(_POS)),
                   F.lit(float("nan")).cast(nan_of[name][1])).otherwise(F.col(f"`{name}`"))
            .alias(name) if name in nan_of else F.col(f"`{name}`") for name in names])
    out = call(f"{BLOB} binary")
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in fields)
    return out.mapInArrow(unpack_blobs, ddl)
