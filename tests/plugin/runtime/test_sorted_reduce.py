"""BATCH's sorted reduce over one key field: vectorised run boundaries give exactly the
per-record fold (order, runs across batch boundaries, null/float keys, errors)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark_datastream import JobExecutionError, ReduceFunction, Types
from pyspark_datastream.runtime.encoding import make_decoder, typed_encoding
from pyspark_datastream.runtime.sorted_reduce import sorted_reduce_by_field


class Concat(ReduceFunction):
    """Order-sensitive: the result shows every element in the order it was folded."""

    def reduce(self, a, b):
        return (a[0], a[1] + "," + b[1])


def _batches(rows, key_type, cuts):
    enc = typed_encoding(Types.TUPLE([key_type, Types.STRING()]))
    batches, start = [], 0
    for end in sorted(set(cuts)) + [len(rows)]:
        part = rows[start:end]
        batches.append(pa.RecordBatch.from_arrays(
            [pa.array([r[0] for r in part], type=pa.string() if key_type == Types.STRING()
                      else pa.float64() if key_type == Types.DOUBLE() else pa.int64()),
             pa.array([r[1] for r in part], type=pa.string())], names=list(enc.columns)))
        start = end
    return enc, batches


def _expected(rows):
    out, current = [], object()
    for k, v in rows:
        if out and k == current:
            out[-1] = (k, out[-1][1] + "," + v)
        else:
            out.append((k, v))
            current = k
    return out


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=4),
       vectorised=st.booleans())
def test_runs_equal_the_per_record_fold(keys, cuts, vectorised):
    rows = [(k, str(i)) for i, k in enumerate(sorted(keys))]
    enc, batches = _batches(rows, Types.STRING(), [c for c in cuts if c <= len(rows)])
    outs = sorted_reduce_by_field(Concat(), iter(batches), make_decoder(enc), 0, "r",
                                   enc.columns[0] if vectorised else None)
    assert [o.value for o in outs] == _expected(rows)


def test_null_and_float_keys_keep_python_equality():
    rows = [(None, "0"), (None, "1"), (1.5, "2"), (1.5, "3"), (2.0, "4")]
    enc, batches = _batches(rows, Types.DOUBLE(), [1, 3])
    outs = sorted_reduce_by_field(Concat(), iter(batches), make_decoder(enc), 0, "r",
                                   enc.columns[0])
    assert [o.value for o in outs] == [(None, "0,1"), (1.5, "2,3"), (2.0, "4")]


class FailsOn(ReduceFunction):
    def reduce(self, a, b):
        if b[1] == "bad":
            raise ValueError("no bad values")
        return b


@pytest.mark.parametrize("vectorised", [True, False])
def test_a_failing_reduce_names_the_element(vectorised):
    rows = [("a", "0"), ("a", "1"), ("a", "bad"), ("a", "3")]
    enc, batches = _batches(rows, Types.STRING(), [])
    outs = sorted_reduce_by_field(FailsOn(), iter(batches), make_decoder(enc), 0, "my-reduce",
                                   enc.columns[0] if vectorised else None)
    with pytest.raises(JobExecutionError, match=r"my-reduce.*reduce.*'bad'.*no bad values"):
        list(outs)


@pytest.mark.parametrize("typed", [True, False])
def test_column_writer_extend_equals_append(typed):
    from pyspark_datastream.runtime.encoding import PICKLED, ColumnWriter

    enc = typed_encoding(Types.TUPLE([Types.STRING(), Types.LONG()])) if typed else PICKLED
    ts_field = [pa.field("_ts", pa.int64())]
    values = [(f"k{i}", i) for i in range(10)] + [("odd", None)]
    one, bulk = ColumnWriter(enc, ts_field, batch_size=4), ColumnWriter(enc, ts_field, batch_size=4)
    by_one = [b for i, v in enumerate(values) if (b := one.append((i,), v)) is not None]
    by_bulk = list(bulk.extend([list(range(len(values)))], values))
    by_one.append(one.flush())
    by_bulk.append(bulk.flush())
    assert [b.num_rows for b in by_bulk] == [4, 4, 3]
    assert [b.to_pylist() for b in by_bulk] == [b.to_pylist() for b in by_one]


def test_column_writer_extend_checks_records_as_append_does():
    from pyspark_datastream.runtime.encoding import ColumnWriter

    enc = typed_encoding(Types.TUPLE([Types.STRING(), Types.LONG()]))
    writer = ColumnWriter(enc, [pa.field("_ts", pa.int64())])
    with pytest.raises(ValueError, match="has 3 fields but the declared output_type has 2"):
        list(writer.extend([[1, 2]], [("a", 1), ("a", 1, 2)]))


def _counted_batches(rows, cuts):
    """``(key, value, count)`` rows as batches of a counted input (``KeyedSpec.counted``)."""
    from pyspark_datastream.runtime.passes import COUNT

    enc = typed_encoding(Types.TUPLE([Types.STRING(), Types.STRING()]))
    batches, start = [], 0
    for end in sorted(set(cuts)) + [len(rows)]:
        part = rows[start:end]
        batches.append(pa.RecordBatch.from_arrays(
            [pa.array([r[0] for r in part], type=pa.string()),
             pa.array([r[1] for r in part], type=pa.string()),
             pa.array([r[2] for r in part], type=pa.int64())],
            names=[*enc.columns, COUNT]))
        start = end
    return enc, batches


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y"]),
                               st.integers(1, 4)), max_size=30),
       cuts=st.lists(st.integers(0, 30), max_size=4),
       vectorised=st.booleans())
def test_counted_rows_fold_each_record_in_as_often_as_counted(rows, cuts, vectorised):
    from pyspark_datastream.runtime.passes import COUNT

    rows = sorted(rows, key=lambda r: r[0])
    enc, batches = _counted_batches(rows, [c for c in cuts if c <= len(rows)])
    calls = []

    class Counting(Concat):
        def reduce(self, a, b):
            calls.append(b)
            return super().reduce(a, b)

    outs = sorted_reduce_by_field(Counting(), iter(batches), make_decoder(enc), 0, "r",
                                   enc.columns[0] if vectorised else None, COUNT)
    expanded = [(k, v) for k, v, n in rows for _ in range(n)]
    assert [o.value for o in outs] == _expected(expanded)
    # one call per record after each key's first, as without counting
    assert len(calls) == len(expanded) - len({k for k, _ in expanded})


def test_counted_rows_name_the_failing_record():
    from pyspark_datastream.runtime.passes import COUNT

    enc, batches = _counted_batches([("a", "0", 2), ("a", "bad", 3), ("b", "1", 1)], [])
    outs = sorted_reduce_by_field(FailsOn(), iter(batches), make_decoder(enc), 0, "my-reduce",
                                   enc.columns[0], COUNT)
    with pytest.raises(JobExecutionError, match=r"my-reduce.*reduce.*'bad'.*no bad values"):
        list(outs)


def test_a_counted_pass_repeats_rows_for_the_operator_path_too():
    """A counted input read by the per-record keyed path (here a plain process function on the
    single-key backend) sees every record as often as counted."""
    from pyspark_datastream import KeyedProcessFunction
    from pyspark_datastream.runtime.encoding import PICKLED
    from pyspark_datastream.runtime.passes import COUNT, KeyedSpec, PassSpec, run_pass
    from pyspark_datastream.state_store.serializers import GenericKeySerializer

    class Echo(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    enc = typed_encoding(Types.TUPLE([Types.STRING(), Types.STRING()]))
    batch = pa.RecordBatch.from_arrays(
        [pa.array([None, None], type=pa.int64()), pa.array(["a", "b"]), pa.array(["x", "y"]),
         pa.array([3, 1], type=pa.int64())], names=["_ts", *enc.columns, COUNT])
    spec = PassSpec("echo", enc, PICKLED, {"mode": "BATCH", "parallelism": 1,
                                          "max_parallelism": 128},
                    keyed=KeyedSpec("process", Echo(), GenericKeySerializer.INSTANCE, True,
                                    ("hashmap", {}), key_field=0, counted=True))
    out = [v for b in run_pass(spec, iter([batch]), subtask=0) for v in make_decoder(PICKLED)(b)]
    assert out == [("a", "x")] * 3 + [("b", "y")]


def test_only_a_function_without_lifecycle_folds_outside_the_keyed_operator():
    """A sorted fold or a pre-aggregation never opens or closes the function, so only a
    function with neither ``open`` nor ``close`` of its own may run there; one with either
    runs in the keyed operator, opened before its first record and closed after its last."""
    from pyspark_datastream.runtime.rows import shaped_reduce
    from pyspark_datastream.runtime.sorted_reduce import folds_without_context

    class Opens(Concat):
        def open(self, runtime_context):
            self.ctx = runtime_context

    class Closes(Concat):
        def close(self):
            self.closed = True

    row = Types.ROW([Types.STRING(), Types.STRING()])
    assert folds_without_context(Concat())
    assert folds_without_context(shaped_reduce(Concat(), row, "r"))
    for rich in (Opens(), Closes()):
        assert not folds_without_context(rich)
        assert not folds_without_context(shaped_reduce(rich, row, "r"))
