"""DataFrame calls that differ between the supported Spark lines, behind one function each.

Spark 4.0 added ``DataFrame.toArrow`` and ``GroupedData.applyInArrow``; Spark 3.5 has
neither. :func:`to_arrow` collects a DataFrame as one Arrow table on every line (classic and
Spark Connect sessions), and :func:`map_groups_in_arrow` runs a function once per group as an
Arrow table with what every line has: a shuffle by the grouping column, a sort within each
partition and ``mapInArrow`` cutting the sorted rows into groups.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

__all__ = ["map_groups_in_arrow", "to_arrow"]


def _is_connect(df: Any) -> bool:
    return type(df).__module__.startswith("pyspark.sql.connect")


def to_arrow(df: Any) -> Any:
    """All rows of ``df`` on the driver as one ``pyarrow.Table``.

    Args:
        df: A DataFrame of a classic or a Spark Connect session.

    Returns:
        The table, with ``df``'s columns (none of its rows is left out; an empty ``df`` gives
        an empty table of its schema).
    """
    to_arrow_method = getattr(df, "toArrow", None)
    if to_arrow_method is not None:  # Spark 4.0+
        return to_arrow_method()
    import pyarrow as pa

    if _is_connect(df):  # Spark 3.5 over Connect: the client's own Arrow collect
        client = df.sparkSession.client
        table, _ = client.to_table(df._plan.to_proto(client))
        return table
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()  # Spark 3.5, classic: toArrow's own collect
    if not batches:
        return to_arrow_schema(df.schema).empty_table()
    return pa.Table.from_batches(batches)


def map_groups_in_arrow(df: Any, key: str, fn: Callable[[Any], Any], schema: Any) -> Any:
    """``fn`` once per distinct value of column ``key``, on all rows with that value as one
    Arrow table (``groupBy(key).applyInArrow(fn, schema)`` on every Spark line).

    Args:
        df: The rows to group.
        key: The grouping column (rows whose value is null form one group too).
        fn: Called with a ``pyarrow.Table`` of one group's rows (all of ``df``'s columns, in
            no particular row order); returns a ``pyarrow.Table`` of ``schema``.
        schema: The output schema (a ``StructType`` or a DDL string).

    Returns:
        The DataFrame of every group's output.
    """
    def per_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        pending: list[Any] = []  # slices of the current group, which may span batches

        def flush() -> Iterator[Any]:
            if pending:
                out = fn(pa.Table.from_batches(pending))
                pending.clear()
                yield from out.to_batches()

        for batch in batches:
            if batch.num_rows == 0:
                continue
            column = batch.column(batch.schema.get_field_index(key))
            if pending:  # does the batch start a new group?
                last = pending[-1].column(batch.schema.get_field_index(key))[-1]
                if not _same(last, column[0]):
                    yield from flush()
            # where the value changes within the batch (the rows are sorted by it)
            changes = [0]
            if batch.num_rows > 1:
                prev, cur = column.slice(0, batch.num_rows - 1), column.slice(1)
                differs = pc.fill_null(pc.not_equal(prev, cur), True)
                both_null = pc.and_(pc.is_null(prev), pc.is_null(cur))
                differs = pc.and_not(differs, both_null)
                changes += [int(i) + 1 for i in pc.indices_nonzero(differs).to_pylist()]
            changes.append(batch.num_rows)
            for start, end in zip(changes[:-1], changes[1:]):
                if start > 0:
                    yield from flush()
                pending.append(batch.slice(start, end - start))
        yield from flush()

    sorted_df = df.repartition(key).sortWithinPartitions(key)
    return sorted_df.mapInArrow(per_partition, schema)


def _same(a: Any, b: Any) -> bool:
    """Two Arrow scalars of the grouping column hold the same group (nulls are one group)."""
    return bool(a.is_valid == b.is_valid and (not a.is_valid or a.as_py() == b.as_py()))
