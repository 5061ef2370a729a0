"""``FileSource`` over CSV (``CsvReaderFormat.for_schema``) and Parquet
(``for_bulk_file_format(ParquetColumnarRowInputFormat(...))``) as a PyFlink program reads
them: bounded in both modes, monitored in STREAMING across two runs, the CSV dialect options,
and the refusals. Inputs are several random files in nested folders (written with the csv
module and pyarrow); expected records and per-key sums come from plain Python over the rows
written."""

from __future__ import annotations

import csv
import os
import random
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import env_for
from pyspark_datastream import (
    CsvReaderFormat,
    CsvSchema,
    Duration,
    FileSource,
    GraphBuildError,
    ParquetColumnarRowInputFormat,
    Types,
    UnsupportedConnectorError,
    WatermarkStrategy,
)

ROW = Types.ROW_NAMED(["user", "amount", "ok"], [Types.STRING(), Types.LONG(), Types.BOOLEAN()])


def _rows(seed: int, n: int) -> list[tuple[str, int, bool]]:
    rng = random.Random(seed)
    return [(f"u{rng.randrange(12)}", rng.randrange(-500, 500), rng.random() < 0.5)
            for _ in range(n)]


def _moved_in(path: str, write) -> None:
    """Write aside and move in, so a monitoring source never sees a half-written file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _csv(path: str, rows, sep: str = ",", header: bool = False) -> None:
    def write(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter=sep, quotechar="'")
            if header:
                w.writerow(["user", "amount", "ok"])
            w.writerows([(u, a, "true" if ok else "false") for u, a, ok in rows])
    _moved_in(path, write)


def _parquet(path: str, rows) -> None:
    table = pa.table({"ok": [r[2] for r in rows], "user": [r[0] for r in rows],
                      "amount": [r[1] for r in rows], "extra": [1.5] * len(rows)})
    _moved_in(path, lambda tmp: pq.write_table(table, tmp))


def _schema(sep: str = ",", header: bool = False) -> CsvSchema:
    b = (CsvSchema.builder().add_string_column("user").add_number_column("amount")
         .add_boolean_column("ok").set_column_separator(sep).set_quote_char("'"))
    return b.set_use_header(header).build()


def _sums(rows) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for user, amount, ok in rows:
        if ok:
            out[user] += amount
    return dict(out)


def _sum_ok(env, source, name):
    """The program a PyFlink user writes: sum the amounts of ok rows per user."""
    return list(env.from_source(source, WatermarkStrategy.no_watermarks(), "Files")
                .filter(lambda r: r.ok)
                .map(lambda r: (r.user, r.amount),
                     output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
                .key_by(lambda t: t[0])
                .reduce(lambda a, b: (a[0], a[1] + b[1]))
                .execute_and_collect(name))


def _final(counts) -> dict[str, int]:
    """Per key the running sum with the largest count of updates (STREAMING emits every one,
    BATCH only the last): the reduce's final value."""
    last: dict[str, list[int]] = defaultdict(list)
    for key, total in counts:
        last[key].append(total)
    return {k: v[-1] for k, v in last.items()}


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_csv_and_parquet_files_give_their_schemas_rows(env_factory, tmp_path, mode):
    csv_rows = _rows(1, 60) + _rows(2, 45)
    _csv(str(tmp_path / "csv" / "a.csv"), csv_rows[:60], sep=";", header=True)
    _csv(str(tmp_path / "csv" / "2026" / "b.csv"), csv_rows[60:], sep=";", header=True)
    pq_rows = _rows(3, 70) + _rows(4, 30)
    _parquet(str(tmp_path / "pq" / "x.parquet"), pq_rows[:70])
    _parquet(str(tmp_path / "pq" / "y" / "z.parquet"), pq_rows[70:])

    env = env_for(env_factory, tmp_path, mode, f"formats-{mode}")
    csv_source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(_schema(";", header=True)), (tmp_path / "csv").as_uri()).build()
    got = list(env.from_source(csv_source, WatermarkStrategy.no_watermarks(), "CSV")
               .execute_and_collect(f"csv-{mode}"))
    assert sorted(tuple(r) for r in got) == sorted(csv_rows)
    assert all(r.user == r[0] and r.amount == r[1] and r.ok is r[2] for r in got)  # named

    parquet = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW),
                                              str(tmp_path / "pq")).build()
    sums = _sum_ok(env_for(env_factory, tmp_path, mode, f"parquet-{mode}"), parquet,
                   f"parquet-sum-{mode}")
    assert _final(sums) == _sums(pq_rows)  # columns by name, in the row type's order


def test_monitored_csv_reads_each_new_file_once_across_runs(env_factory, tmp_path):
    folder = tmp_path / "in"
    first = _rows(5, 50)
    _csv(str(folder / "1.csv"), first)

    def run():  # one job name: the second run resumes the first's checkpoint
        env = env_for(env_factory, tmp_path, "STREAMING", "monitored-csv")
        source = (FileSource.for_record_stream_format(CsvReaderFormat.for_schema(_schema()),
                                                      str(folder))
                  .monitor_continuously(Duration.of_seconds(1)).build())
        return list(env.from_source(source, WatermarkStrategy.no_watermarks(), "CSV")
                    .execute_and_collect("monitored-csv"))

    assert sorted(tuple(r) for r in run()) == sorted(first)
    second = _rows(6, 30)
    _csv(str(folder / "sub" / "2.csv"), second)
    assert sorted(tuple(r) for r in run()) == sorted(second)  # only the new file


def test_csv_dialect_nulls_comments_and_unparsable_fields(env_factory, tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("# a comment line\nann|7|true\nbob|-|false\ncid|x9|true\n", encoding="utf-8")
    schema = (CsvSchema.builder().add_string_column("user").add_number_column("amount")
              .add_boolean_column("ok").set_column_separator("|").set_null_value("-")
              .set_allow_comments().build())
    env = env_for(env_factory, tmp_path, "BATCH", "dialect")
    got = list(env.from_source(FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(path)).build(),
        WatermarkStrategy.no_watermarks(), "CSV").execute_and_collect("dialect"))
    # Spark's permissive CSV mode: a field it cannot parse as its type is None
    assert sorted(tuple(r) for r in got) == [("ann", 7, True), ("bob", None, False),
                                             ("cid", None, True)]
    assert schema.size() == 3


def test_formats_refuse_what_spark_cannot_read(env_factory, tmp_path):
    with pytest.raises(UnsupportedConnectorError, match="add_array_column"):
        CsvSchema.builder().add_array_column("tags")
    with pytest.raises(GraphBuildError, match="number_type must be a numeric"):
        CsvSchema.builder().add_number_column("n", Types.STRING())
    with pytest.raises(GraphBuildError, match="column separator must be one character"):
        CsvSchema.builder().set_column_separator("||")
    with pytest.raises(GraphBuildError, match="column 'a' is already defined"):
        CsvSchema.builder().add_string_column("a").add_string_column("a")
    with pytest.raises(GraphBuildError, match="add one or more columns"):
        CsvSchema.builder().build()
    with pytest.raises(GraphBuildError, match="must be Types.ROW_NAMED"):
        ParquetColumnarRowInputFormat(Types.TUPLE([Types.LONG()]))
    with pytest.raises(GraphBuildError, match="batch_size must be a positive int"):
        ParquetColumnarRowInputFormat(ROW, batch_size=0)
    with pytest.raises(UnsupportedConnectorError, match="for_bulk_file_format.*spark.read"):
        FileSource.for_bulk_file_format(object(), str(tmp_path))
    env = env_for(env_factory, tmp_path, "BATCH", "typed")
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW),
                                             str(tmp_path)).build()
    with pytest.raises(GraphBuildError, match="gives .* records, got type_info"):
        env.from_source(source, WatermarkStrategy.no_watermarks(), "P", type_info=Types.STRING())
