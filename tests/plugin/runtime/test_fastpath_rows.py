"""The batch-at-a-time chain of plain functions takes a Row when it is emitted, as the
per-record chain (and PyFlink, which encodes a record when it is yielded) does."""

from __future__ import annotations

from pyspark_datastream import Row
from pyspark_datastream.operators.functions import as_flat_map_function, as_map_function
from pyspark_datastream.runtime.fastpath import compile_chain


def test_plain_functions_that_change_a_row_after_emitting_it():
    def yield_then_change(value):
        r = Row(id=value, n=10)
        yield r
        r[1] += 1
        yield r

    def twice(value):
        r = Row(value)
        return [r, r]

    def add_thousand(r):
        r[0] += 1000
        return r

    total = Row(total=0)

    def running_total(value):
        total[0] += value
        return total

    run = compile_chain([("flat_map", as_flat_map_function(yield_then_change))], "fm")
    got, ts = run([1], [5])
    assert [tuple(r) for r in got] == [(1, 10), (1, 11)] and ts == [5, 5]
    assert got[0].get_field_names() == ["id", "n"]
    run = compile_chain([("flat_map", as_flat_map_function(twice)),
                         ("map", as_map_function(add_thousand))], "chain")
    assert [tuple(r) for r in run([10], [None])[0]] == [(1010,), (1010,)]
    run = compile_chain([("map", as_map_function(running_total))], "map")
    assert [tuple(r) for r in run([2, 3], [None, None])[0]] == [(2,), (5,)]
