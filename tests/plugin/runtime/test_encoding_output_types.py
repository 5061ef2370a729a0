"""One type contract where typed columns are built: a value that does not fit its declared
field raises OutputTypeError naming the operator, the field, the value and the declared type;
nothing is truncated or coerced, except the documented widening of int to FLOAT/DOUBLE."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark_datastream import OutputTypeError, Types
from pyspark_datastream.runtime.encoding import (
    PICKLED,
    ColumnWriter,
    output_check,
    record_arrays,
    typed_encoding,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
TS = [pa.field("_ts", pa.int64())]


def _write(enc, values, bulk):
    writer = ColumnWriter(enc, TS, name="my-op")
    if bulk:
        list(writer.extend([[0] * len(values)], values))
    else:
        for v in values:
            writer.append((0,), v)
    return writer.flush()


BAD = [
    (Types.LONG(), [1, 1.75], r"field 'value' is declared Types.LONG\(\) but holds 1.75 \(float\)"),
    (Types.LONG(), [1.0], r"holds 1.0 \(float\)"),
    (Types.LONG(), ["x"], r"holds 'x' \(str\)"),
    (Types.LONG(), [True], r"holds True \(bool\)"),
    (Types.LONG(), [2**64], r"field 'value' is declared Types.LONG\(\) but holds 18446744073709551616"),
    (Types.INT(), [2**40], r"declared Types.INT\(\) but holds 1099511627776 \(int\)"),
    (Types.STRING(), [5], r"holds 5 \(int\)"),
    (Types.DOUBLE(), ["1.5"], r"holds '1.5' \(str\)"),
    (Types.BOOLEAN(), [1], r"holds 1 \(int\)"),
    (PAIR, [("a", 1), ("b", "x")], r"field 'f1' is declared Types.LONG\(\) but holds 'x'"),
    (PAIR, [("a", 1), (2, 2)], r"field 'f0' is declared Types.STRING\(\) but holds 2 \(int\)"),
    (PAIR, [("a", 1, 2)], r"record \('a', 1, 2\) has 3 fields but the declared output_type has 2"),
    (PAIR, ["ab"], r"record 'ab' of type str does not match"),
]


@pytest.mark.parametrize("bulk", [False, True])
@pytest.mark.parametrize("type_info, values, message", BAD)
def test_misfits_raise_naming_operator_field_value_and_type(type_info, values, message, bulk):
    with pytest.raises(OutputTypeError, match="operator 'my-op': " + ".*" + message):
        _write(typed_encoding(type_info), values, bulk)
    with pytest.raises(OutputTypeError, match=message):
        record_arrays(values, typed_encoding(type_info), "my-op")
    check = output_check(type_info, PICKLED, "my-op")
    assert check is not None
    with pytest.raises(OutputTypeError, match=message):
        check(values)


def test_fitting_values_and_documented_widening_pass_unchanged():
    batch = _write(typed_encoding(PAIR), [("a", 1), ("b", None), None, ("c", 2**62)], False)
    assert batch.column("f1").to_pylist() == [1, None, None, 2**62]
    assert batch.column("f1").type == pa.int64()
    # int widens to DOUBLE (exactly representable), int to a narrower integer in range
    assert _write(typed_encoding(Types.DOUBLE()), [3, 2.5, None], True).column(
        "value").to_pylist() == [3.0, 2.5, None]
    assert _write(typed_encoding(Types.INT()), [7, -7], False).column("value").type == pa.int32()
    assert _write(typed_encoding(Types.STRING()), [None, None], True).column(
        "value").to_pylist() == [None, None]
    with pytest.raises(OutputTypeError, match="holds 9007199254740993"):
        _write(typed_encoding(Types.DOUBLE()), [2**53 + 1], False)  # would lose precision
    assert output_check(PAIR, typed_encoding(PAIR), "x") is None  # typed: checked when built
    assert output_check(None, PICKLED, "x") is None
