"""A damaged savepoint log is a SavepointFormatError that says what is damaged; a missing
version or path is a SavepointNotFoundError; a new savepoint path holding only another
writer's uncommitted data is written beside it (the commit decides a race)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark_datastream import SavepointFormatError, SavepointNotFoundError
from pyspark_datastream.savepoint import read_metadata
from pyspark_datastream.savepoint.format import savepoint_arrow_schema


def _table(path: str, versions: int = 2) -> list[str]:
    empty = pa.Table.from_pylist([], schema=savepoint_arrow_schema())
    for i in range(versions):
        write_deltalake(path, empty, mode="append" if i else "error")
    log = os.path.join(path, "_delta_log")
    return sorted(os.path.join(log, n) for n in os.listdir(log) if n.endswith(".json"))


def test_truncated_log_is_a_format_error_naming_the_log(tmp_path):
    path = str(tmp_path / "sp")
    commits = _table(path)
    with open(commits[-1], encoding="utf-8") as f:
        text = f.read()
    with open(commits[-1], "w", encoding="utf-8") as f:
        f.write(text[: len(text) // 2])
    for version in (None, 7):
        with pytest.raises(SavepointFormatError, match=r"Delta log is damaged .*_delta_log holds "
                                                       r"commits .*00000000000000000001.json"):
            read_metadata(path, version)


def test_missing_version_and_missing_table_are_not_found(tmp_path):
    path = str(tmp_path / "sp")
    _table(path)
    with pytest.raises(SavepointNotFoundError, match="has no version 7 .latest is 1."):
        read_metadata(path, 7)
    with pytest.raises(SavepointNotFoundError, match="no Delta table there"):
        read_metadata(str(tmp_path / "nothing"))
    # a readable log of the right schema but without the metadata row
    with pytest.raises(SavepointFormatError, match="exactly one metadata row, found 0"):
        read_metadata(path)
