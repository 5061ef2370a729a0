"""``Row`` as PyFlink programs use it, and as code written for tuples uses it (#16)."""

from __future__ import annotations

import copy
import gc
import pickle
import sys

import pytest
from pyspark_datastream.state_store.row import Row, make_row, named_row_class


def test_constructor_forms() -> None:
    positional = Row(1, "x")
    assert positional.get_field_names() is None and tuple(positional) == (1, "x")
    named = Row(id=1, info="x")
    assert named.get_field_names() == ["id", "info"]  # the order given (PyFlink sorts)
    assert (named.id, named.info, named[0], named["info"], named[-1]) == (1, "x", 1, "x", "x")
    assert named.as_dict() == {"id": 1, "info": "x"}
    assert Row() == () and len(Row()) == 0
    Person = Row("name", "age")
    assert Person("Alice", 11) == Row(name="Alice", age=11)
    assert Person("Alice", 11).name == "Alice"


def test_a_row_works_where_a_tuple_did() -> None:
    r = Row(user="a", amount=3)
    user, amount = r  # unpacking
    assert (user, amount) == ("a", 3)
    assert r == ("a", 3) and ("a", 3) == r and r != ("a", 4)
    assert hash(r) == hash(("a", 3)) and {("a", 3): 1}[r] == 1
    assert len(r) == 2 and list(r) == ["a", 3] and "a" in r
    assert r[:1] == ("a",) and r + (1,) == ("a", 3, 1)
    assert sorted([Row(b=2), Row(a=1)]) == [(1,), (2,)]
    assert isinstance(r, tuple) and f"{r}" == "Row(user='a', amount=3)"
    # names take no part in equality or hashing (PyFlink compares names too)
    assert Row(a=1) == Row(b=1) == (1,) and Row(1) == Row(a=1)


def test_named_rows_cost_what_tuples_cost() -> None:
    r = Row(user="a", amount=3)
    assert not hasattr(r, "__dict__")
    assert sys.getsizeof(r) == sys.getsizeof(("a", 3))
    cls = named_row_class(("user", "amount"))
    assert type(r) is cls and type(make_row(["user", "amount"], ["b", 1])) is cls
    assert tuple.__new__(cls, ("c", 2)).amount == 2
    assert isinstance(r, Row) and type(r).__name__ == "Row"


def test_field_names_that_shadow_tuple_methods_read_as_fields() -> None:
    r = Row(word="w", count=3, index=7)
    assert r.count == 3 and r.index == 7  # PyFlink's Row has no count()/index() methods
    assert r["count"] == 3
    odd = Row.from_fields(["as_dict", "a b", "x"], [1, 2, 3])  # a method name, a non-identifier
    assert callable(odd.as_dict) and odd["as_dict"] == 1 and odd["a b"] == 2 and odd.x == 3


def test_set_field_names_renames_in_place() -> None:
    r = Row(1, 2)
    r.set_field_names(["a", "b"])
    assert r.a == 1 and r.get_field_names() == ["a", "b"] and r == (1, 2)
    r.set_field_names(None)
    assert r.get_field_names() is None
    with pytest.raises(ValueError, match="Row has 2 values but 1 field names"):
        r.set_field_names(["a"])


def test_rows_change_in_place_by_index_and_name_as_pyflinks_do() -> None:
    """PyFlink's Row: ``__setitem__`` by index, slice and field name; attribute assignment
    raises AttributeError; the hash is the hash of the tuple of the values."""
    r = Row("a", 2)
    alias = r
    r[1] += 1
    assert alias is r and r == ("a", 3) and r[1] == 3
    assert hash(r) == hash(("a", 3))
    r[-1] = 5
    r[0:2] = ("b", 6)
    assert tuple(r) == ("b", 6)
    n = Row(name="x", count=1)
    n["count"] += 1
    n[0] = "y"
    assert n.count == 2 and n["count"] == 2 and n.name == "y" and n.as_dict() == {
        "name": "y", "count": 2}
    assert Row.__reduce__(n)[1] == (("name", "count"), ("y", 2))
    with pytest.raises(AttributeError):
        n.count = 3  # type: ignore[misc]  # PyFlink refuses it too
    with pytest.raises(ValueError, match="Row has no field 'other'"):
        n["other"] = 1
    with pytest.raises(IndexError, match="Row index 2 out of range"):
        n[2] = 1
    with pytest.raises(ValueError, match="fixed length of 2"):
        n[0:2] = (1, 2, 3)
    with pytest.raises(TypeError, match="Row indices must be integers"):
        n[1.5] = 1  # type: ignore[index]
    held = Row([1])  # a Row holding a container still takes part in cycle collection
    held[0] = [held]
    assert gc.is_tracked(held)


def test_rows_repr_as_pyflinks() -> None:
    assert repr(Row("a", 2)) == "<Row('a', 2)>"
    assert repr(Row(a="x", b=2)) == "Row(a='x', b=2)"
    assert str(Row(1)) == "<Row(1)>"


def test_errors_are_the_types_pyflink_raises() -> None:
    with pytest.raises(ValueError, match="either positional values or keyword fields"):
        Row(1, a=2)
    with pytest.raises(ValueError, match="Row has no field 'b'"):
        _ = Row(a=1)["b"]
    with pytest.raises(KeyError):  # and the KeyError a mapping-style read raised before
        _ = Row(a=1)["b"]
    with pytest.raises(AttributeError, match="Row has no field 'b'"):
        _ = Row(a=1).b
    with pytest.raises(TypeError, match="cannot convert an unnamed Row to a dict"):
        Row(1).as_dict()


def test_pickles_name_only_the_builder_function() -> None:
    r = Row(k="a", v=Row(x=1), u=Row(1, 2))
    data = pickle.dumps(r, pickle.HIGHEST_PROTOCOL)
    assert b"_make_row" in data
    back = pickle.loads(data)
    assert back == r and back.v.x == 1 and back.u.get_field_names() is None
    assert back.as_dict(recursive=True) == {"k": "a", "v": {"x": 1}, "u": (1, 2)}
    assert copy.deepcopy(r).v.x == 1 and copy.copy(r) == r
    # a pickle written before named Rows were classes: the same builder call
    legacy = pickle.dumps(make_row(("k",), ("a",)))
    assert pickle.loads(legacy).k == "a"


def test_many_distinct_field_names_do_not_grow_without_bound() -> None:
    from pyspark_datastream.state_store import row as row_module

    for i in range(row_module._MAX_CLASSES + 5):
        Row(**{f"f{i}": i})
    assert len(row_module._CLASSES) <= row_module._MAX_CLASSES
    assert Row(f1=1).f1 == 1


def test_reads_by_index_slice_and_name_on_every_kind_of_row() -> None:
    import numpy as np
    from pyspark_datastream.state_store.row import RowKind

    r = Row(user="u", page="p", ts=7)
    assert (r[2], r[-3], r[0:2], r["ts"], r["user"], r[np.str_("page")]) == (
        7, "u", ("u", "p"), 7, "u", "p")
    assert r[np.int64(1)] == "p"
    r.set_row_kind(RowKind.DELETE)  # a subclass of the named class
    assert r["ts"] == 7 and r[1] == "p"
    with pytest.raises(ValueError, match="Row has no field 'x'"):
        _ = r["x"]
    with pytest.raises(ValueError, match="Row has no field 'x'"):
        _ = Row(1, 2)["x"]  # an unnamed Row has no names
    with pytest.raises(TypeError):
        _ = r[1.5]
    with pytest.raises(IndexError):
        _ = r[3]
