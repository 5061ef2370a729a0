"""Row.get_fields_by_names (values in the order asked) and Row.of_kind (a Row of that kind,
equal to the same values of any kind), as PyFlink's Row."""

from __future__ import annotations

import pickle

import pytest
from pyspark_datastream import Row, RowKind


def test_fields_by_names_in_the_order_asked():
    row = Row(id=7, name="ann", score=3.5)
    assert row.get_fields_by_names(["score", "id"]) == [3.5, 7]
    assert row.get_fields_by_names([]) == []


@pytest.mark.parametrize("row,names,match", [
    (Row(1, 2), ["a"], "have no names"),
    (Row(a=1), ["a", "b"], "no field"),
])
def test_unnamed_rows_and_unknown_names_are_value_errors(row, names, match):
    with pytest.raises(ValueError, match=match):
        row.get_fields_by_names(names)


def test_of_kind_makes_a_row_of_that_kind():
    deleted = Row.of_kind(RowKind.DELETE, 1, "x")
    assert deleted.get_row_kind() is RowKind.DELETE
    assert deleted == Row(1, "x") and tuple(deleted) == (1, "x")
    named = Row.of_kind(RowKind.UPDATE_AFTER, a=1, b=2)
    assert named.get_row_kind() is RowKind.UPDATE_AFTER and named.as_dict() == {"a": 1, "b": 2}
    assert pickle.loads(pickle.dumps(named)).get_row_kind() is RowKind.UPDATE_AFTER
    with pytest.raises(TypeError, match="RowKind"):
        Row.of_kind("DELETE", 1)
