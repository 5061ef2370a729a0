"""Records of ROW streams as Rows, without Spark (#16): typed decoding, the Row stage, the
reduce wrapper, STREAMING keyed output, and where the translation places Row stages."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark_datastream import OutputTypeError
from pyspark_datastream.operators.aggregations import sum as sum_agg
from pyspark_datastream.operators.base import Output
from pyspark_datastream.operators.functions import ReduceFunction, as_reduce_function
from pyspark_datastream.runtime.encoding import (
    PICKLED,
    TS,
    ColumnWriter,
    make_decoder,
    record_arrays,
    typed_encoding,
)
from pyspark_datastream.runtime.group_frames import (
    BLOB,
    output_blobs,
    output_encoding,
    unpack_blobs,
)
from pyspark_datastream.runtime.rows import RowShape, is_row_stage, row_stage, shaped_reduce
from pyspark_datastream.state_store.functions import Function
from pyspark_datastream.state_store.row import Row, named_row_class
from pyspark_datastream.state_store.types import Types
from pyspark_datastream.translation.rows import chain_before, chain_for_output, leading_rows
from pyspark_datastream.translation.stream import Stream

EVENT = Types.ROW_NAMED(["user", "amount"], [Types.STRING(), Types.LONG()])
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


def _batch(enc, records):
    writer = ColumnWriter(enc, [pa.field(TS, pa.int64())])
    for r in records:
        writer.append((None,), r)
    return writer.flush()


def test_typed_row_columns_decode_into_named_rows_and_tuple_columns_into_tuples():
    rows = make_decoder(typed_encoding(EVENT))(_batch(typed_encoding(EVENT), [("a", 1), ("b", 2)]))
    assert rows == [("a", 1), ("b", 2)]
    assert all(type(r) is named_row_class(("user", "amount")) for r in rows)
    assert rows[1].user == "b" and rows[1]["amount"] == 2 and rows[0].as_dict() == {
        "user": "a", "amount": 1}
    pairs = make_decoder(typed_encoding(PAIR))(_batch(typed_encoding(PAIR), [("a", 1)]))
    assert pairs == [("a", 1)] and type(pairs[0]) is tuple
    nested = Types.TUPLE([Types.STRING(), EVENT])
    got = make_decoder(typed_encoding(nested))(_batch(typed_encoding(nested), [("k", ("a", 1))]))
    assert type(got[0]) is tuple and got[0][1].amount == 1  # a nested ROW field is a Row


def test_columns_hold_the_same_values_for_tuples_rows_and_dicts():
    enc = typed_encoding(EVENT)
    as_tuples = _batch(enc, [("a", 1), ("b", None)])
    for records in ([Row(user="a", amount=1), Row(user="b", amount=None)],
                    [Row(amount=1, user="a"), Row(amount=None, user="b")],  # by name
                    [Row("a", 1), ["b", None]],
                    [{"user": "a", "amount": 1}, {"user": "b"}]):
        assert _batch(enc, records).equals(as_tuples)
        assert [a.to_pylist() for a in record_arrays(records, enc, "op")] == [
            ["a", "b"], [1, None]]
    writer = ColumnWriter(enc, [pa.field(TS, pa.int64())])
    rows = [Row(user="a", amount=1), Row(user="b", amount=None)]
    batches = list(writer.extend([[None, None]], rows)) + [writer.flush()]
    assert batches[-1].equals(as_tuples)


def test_a_wrong_field_type_in_a_row_still_raises_the_typed_error():
    with pytest.raises(OutputTypeError, match=r"operator 'op': .* field 'amount' is declared "
                                              r"Types.LONG\(\) but holds 'x' \(str\)"):
        writer = ColumnWriter(typed_encoding(EVENT), [pa.field(TS, pa.int64())], name="op")
        writer.append((None,), Row(user="a", amount="x"))
        writer.flush()


def test_row_shape_makes_every_record_form_a_named_row():
    shape = RowShape.of(EVENT, "Map")
    assert RowShape.of(PAIR) is None and RowShape.of(None) is None
    cls = named_row_class(("user", "amount"))
    same = Row(user="a", amount=1)
    assert shape(same) is same
    for record in [("a", 1), ["a", 1], Row("a", 1), Row(amount=1, user="a"),
                   Row(x="a", y=1), {"user": "a", "amount": 1}]:
        out = shape(record)
        assert type(out) is cls and out == ("a", 1) and out.user == "a", record
    assert shape(None) is None
    with pytest.raises(OutputTypeError, match=r"operator 'Map': record \('a', 1, 2\) has 3 "
                                              r"fields but the declared output_type has 2"):
        shape(("a", 1, 2))
    with pytest.raises(OutputTypeError, match=r"operator 'Map': record 5 of type int"):
        shape(5)
    back = pickle.loads(pickle.dumps(shape))
    assert back == shape and back(("b", 2)).amount == 2
    stage = row_stage(EVENT, "Map")
    assert stage is not None and stage[0] == "map" and is_row_stage(stage)
    assert row_stage(PAIR, "Map") is None and not is_row_stage(("map", len))


class _Rich(ReduceFunction):
    def open(self, runtime_context):
        self.opened = runtime_context

    def reduce(self, a, b):
        return (a.user, a.amount + b.amount)


def test_a_reduce_function_reads_rows_for_the_value_it_returned_last():
    plain = shaped_reduce(as_reduce_function(lambda a, b: (a.user, a.amount + b.amount)),
                          EVENT, "Reduce")
    acc = plain.reduce(Row(user="a", amount=1), ("a", 2))
    assert acc == ("a", 3) and type(acc) is tuple  # kept as returned
    assert plain.reduce(acc, ("a", 4)) == ("a", 7)  # the tuple reads as a Row
    # no lifecycle of its own: the BATCH sorted reduce fast path still applies
    assert type(plain).open is Function.open
    rich = shaped_reduce(_Rich(), EVENT, "Reduce")
    rich.open("ctx")
    assert rich.function.opened == "ctx" and rich.reduce(("a", 1), ("a", 2)) == ("a", 3)
    shipped = pickle.loads(cloudpickle.dumps(plain))  # as Spark ships it to executors
    assert shipped.reduce(("a", 1), ("a", 1)) == ("a", 2)
    builtin = sum_agg("amount")
    assert shaped_reduce(builtin, EVENT, "Sum") is builtin  # keeps the record's own type
    tuples = as_reduce_function(lambda a, b: a)
    assert shaped_reduce(tuples, PAIR, "Reduce") is tuples
    assert shaped_reduce(plain, EVENT, "Reduce") is plain


def test_streaming_keyed_output_of_a_row_type_leaves_as_pickled_rows():
    enc = output_encoding(EVENT, tagged=True)
    assert enc is not None and not enc.typed and enc.shape == "row"
    assert output_encoding(PAIR, tagged=False) == typed_encoding(PAIR)
    assert output_encoding(PAIR, tagged=True) is None and output_encoding(None, False) is None
    frame = output_blobs([Output(None, ("a", 1), 5), Output("late", ("x", 9), 6)],
                         frozenset({"late"}), enc, "Proc")
    batch = pa.RecordBatch.from_arrays([pa.array(frame[BLOB].tolist(), pa.binary())],
                                       names=[BLOB])
    table = pa.Table.from_batches(list(unpack_blobs(iter([batch]))))
    main, side = [pickle.loads(v) for v in table.column("_v").to_pylist()]
    assert main.user == "a" and main == ("a", 1)
    assert type(side) is tuple  # a side output has its own type: left as emitted


def test_the_translation_places_row_stages_where_a_function_reads_the_records():
    fresh = Stream(None, PICKLED, EVENT, name="src")
    assert chain_before(fresh) == ()  # decoded records are Rows already
    mapped = Stream(None, PICKLED, EVENT, chain=(("map", len),), name="Map")
    before = chain_before(mapped)
    assert len(before) == 2 and is_row_stage(before[-1]) and before[-1][1].operator == "Map"
    filtered = Stream(None, PICKLED, EVENT, chain=before + (("filter", bool),), name="Filter")
    assert chain_before(filtered) == filtered.chain  # a filter passes Rows on
    assert chain_before(Stream(None, PICKLED, PAIR, chain=(("map", len),))) == (("map", len),)
    shaped = Stream(None, PICKLED, EVENT, chain=before, name="Map")
    typed = typed_encoding(EVENT)
    assert chain_for_output(shaped, typed) == [("map", len)]  # typed columns need no Rows
    assert chain_for_output(shaped, typed, key_out=("k", "s")) == list(before)
    assert chain_for_output(mapped, PICKLED) == list(before)
    assert len(leading_rows(EVENT, "Side")) == 1 and leading_rows(PAIR, "Side") == ()


def test_records_collected_as_spark_rows_become_named_rows():
    from pyspark_datastream.runtime.spark_types import python_from_spark

    conv = python_from_spark(EVENT, "row", ("user", "amount"))
    out = conv(("a", 1))  # a collected Spark Row is a tuple of the payload columns
    assert type(out) is named_row_class(("user", "amount")) and out.amount == 1
    assert type(python_from_spark(PAIR, "tuple", ("f0", "f1"))(("a", 1))) is tuple
    nested = Types.TUPLE([Types.STRING(), EVENT])
    got = python_from_spark(nested, "tuple", ("f0", "f1"))(("k", ("a", 2)))
    assert type(got) is tuple and got[1].user == "a" and got[1] == ("a", 2)
