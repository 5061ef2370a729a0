"""The ValueState benchmark runs and ends with its JSON summary line."""

from __future__ import annotations

import json

import pytest

from benchmarks import state_ops


def test_benchmark_prints_json_last(capsys: pytest.CaptureFixture[str]) -> None:
    results = state_ops.main(["--keys", "2000", "--repeat", "1"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert json.loads(lines[-1]) == results
    assert set(results) == {"value_get", "value_update", "value_add"}
    for row in results.values():
        assert set(row) == {"single_key", "heap", "rocksdb"}
        assert all(ops > 0 for ops in row.values())
    assert any("single_key/heap=" in line for line in lines)
