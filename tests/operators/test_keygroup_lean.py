"""The lean reduce path of KeyGroupRuntime gives what the operator path gives, byte for byte
where it matters (outputs, decoded state), and steps aside whenever it cannot."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest
from pyspark_datastream import JobExecutionError, SerializationError
from pyspark_datastream.operators.base import OperatorConfig, Output
from pyspark_datastream.operators.functions import ReduceFunction
from pyspark_datastream.operators.keygroup import (
    KeyGroupColumns,
    KeyGroupRuntime,
    decode_state,
    encode_state,
)
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.entries import StateEntry, is_canonical
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KS = GenericKeySerializer.INSTANCE
MAXP = 128


def _cfg(name: str = "lean-op") -> OperatorConfig:
    return OperatorConfig.for_mode("STREAMING", operator_name=name, max_parallelism=MAXP)


def _pair(function, name: str = "lean-op"):
    """(lean runtime, operator-path runtime) over the same function."""
    lean = KeyGroupRuntime("reduce", function, KS, _cfg(name))
    full = KeyGroupRuntime("reduce", function, KS, _cfg(name),
                           backend_factory=lambda: HeapKeyedStateBackend(KS, MAXP))
    assert lean._lean_reduce is not None and full._lean_reduce is None
    return lean, full


def _rows(items):
    return [(KS.serialize(k), ts, v, 0) for k, ts, v in items]


def _add(a, b):
    return (a[0], a[1] + b[1])


BATCH1 = [("a", 1, ("a", 1)), ("b", None, ("b", 1)), ("a", 3, ("a", 5)), ("c", 4, ("c", 2))]
BATCH2 = [("b", 5, ("b", 10)), ("d", 6, ("d", 1)), ("a", 7, ("a", 1)), ("b", 8, ("b", 1))]


def test_same_outputs_and_state_entries_as_the_operator_path_across_batches():
    lean, full = _pair(_add)
    r_lean = lean.run(None, _rows(BATCH1))
    r_full = full.run(None, _rows(BATCH1))
    assert r_lean.outputs == r_full.outputs
    assert r_lean.outputs[2] == Output(None, ("a", 6), 3)
    assert decode_state(r_lean.state) == decode_state(r_full.state)
    # each path reads the other's bytes: the format is one
    r2_lean = lean.run(r_full.state, _rows(BATCH2))
    r2_full = full.run(r_lean.state, _rows(BATCH2))
    assert r2_lean.outputs == r2_full.outputs
    assert [o.value for o in r2_lean.outputs] == [("b", 11), ("d", 1), ("a", 7), ("b", 12)]
    metas, entries = decode_state(r2_lean.state)
    assert decode_state(r2_full.state) == (metas, entries)
    assert is_canonical(entries) and r2_lean.state_entries == 4 and r2_lean.elements == 4
    assert {KS.deserialize(e.key): pickle.loads(e.value) for e in entries} == {
        "a": ("a", 7), "b": ("b", 12), "c": ("c", 2), "d": ("d", 1)}


def test_untouched_keys_keep_their_stored_bytes():
    lean, _ = _pair(_add)
    first = lean.run(None, _rows(BATCH1))
    second = lean.run(first.state, _rows([("d", 9, ("d", 3))]))
    before = {e.key: e for e in decode_state(first.state)[1]}
    after = {e.key: e for e in decode_state(second.state)[1]}
    for key in (KS.serialize("a"), KS.serialize("b"), KS.serialize("c")):
        assert after[key] == before[key]
    assert pickle.loads(after[KS.serialize("d")].value) == ("d", 3)


def test_none_result_clears_the_key_and_an_empty_group_has_no_state():
    def drop(a, b):
        return None

    lean, full = _pair(drop)
    batch = [("k", 1, 10), ("k", 2, 20), ("k", 3, 30)]
    r_lean, r_full = lean.run(None, _rows(batch)), full.run(None, _rows(batch))
    assert r_lean.outputs == r_full.outputs == [
        Output(None, 10, 1), Output(None, None, 2), Output(None, 30, 3)]
    assert decode_state(r_lean.state) == decode_state(r_full.state)
    r_lean = lean.run(r_lean.state, _rows([("k", 4, 1)]))
    assert r_lean.outputs == [Output(None, None, 4)]
    assert r_lean.state is None and r_lean.state_entries == 0


def test_columns_and_rows_give_the_same_result_and_bad_columns_are_refused():
    lean, _ = _pair(_add)
    rows = _rows(BATCH1)
    columns = KeyGroupColumns([bytearray(r[0]) for r in rows], [r[1] for r in rows],
                              [r[2] for r in rows])
    assert list(columns)[0] == (bytearray(rows[0][0]), 1, ("a", 1), 0)
    assert lean.run(None, columns).outputs == lean.run(None, rows).outputs
    with pytest.raises(JobExecutionError, match="columns of different lengths"):
        KeyGroupColumns([b"x"], [], [1])


def test_user_error_names_operator_and_record():
    def boom(a, b):
        raise ValueError("no sum today")

    lean, _ = _pair(boom, name="summer")
    first = lean.run(None, _rows([("k", 1, 1)]))
    with pytest.raises(JobExecutionError, match=r"'summer': reduce failed on 2: ValueError: no sum"):
        lean.run(first.state, _rows([("k", 2, 2)]))


def test_foreign_state_falls_back_to_the_operator_path():
    """A state holding more than ``_reduce`` values (here an extra state) is not the lean
    path's to handle: the operator path restores and keeps it."""
    lean, full = _pair(_add)
    base = full.run(None, _rows(BATCH1))
    metas, entries = decode_state(base.state)
    reduce_meta = next(m for m in metas if m.name == "_reduce")
    extra = StateEntry(entries[0].key_group, "zz_other", entries[0].key, b"", b"",
                       pickle.dumps("x"))
    mixed = encode_state([*metas, replace(reduce_meta, name="zz_other")], [*entries, extra])
    got = lean.run(mixed, _rows([("a", 9, ("a", 1))]))
    assert [o.value for o in got.outputs] == [("a", 7)]
    assert any(e.state_name == "zz_other" for e in decode_state(got.state)[1])


def test_rich_function_and_other_kinds_take_the_operator_path():
    class Rich(ReduceFunction):
        def open(self, runtime_context):
            self.opened = True

        def reduce(self, a, b):
            return a + b

    assert KeyGroupRuntime("reduce", Rich(), KS, _cfg())._lean_reduce is None
    assert KeyGroupRuntime("process", _add, KS, _cfg())._lean_reduce is None


def test_unreadable_restored_value_is_a_serialization_error():
    lean, full = _pair(_add)
    state = full.run(None, _rows([("k", 1, ("k", 1))])).state
    metas, entries = decode_state(state)
    broken = encode_state(metas, [entries[0]._replace(value=b"not a pickle")])
    with pytest.raises(SerializationError, match="unpickling failed"):
        lean.run(broken, _rows([("k", 2, ("k", 1))]))


def _typed_columns(items):
    """The rows of ``items`` as a typed reader gives them: key values and distinct bytes."""
    keys = [k for k, _, _ in items]
    return KeyGroupColumns(None, [ts for _, ts, _ in items], [v for _, _, v in items],
                           key_values=keys, key_bytes={k: KS.serialize(k) for k in keys})


def test_typed_key_values_give_what_key_bytes_give_across_batches():
    lean, full = _pair(_add)
    first_typed = lean.run(None, _typed_columns(BATCH1))
    first_bytes = full.run(None, _rows(BATCH1))
    assert first_typed.outputs == first_bytes.outputs
    assert first_typed.state == lean.run(None, _rows(BATCH1)).state
    assert decode_state(first_typed.state) == decode_state(first_bytes.state)
    second_typed = lean.run(first_typed.state, _typed_columns(BATCH2))
    second_bytes = full.run(first_bytes.state, _rows(BATCH2))
    assert second_typed.outputs == second_bytes.outputs
    assert decode_state(second_typed.state) == decode_state(second_bytes.state)
    # a None result clears the key in the typed path too
    cleared = KeyGroupRuntime("reduce", lambda a, b: None, KS, _cfg()).run(
        None, _typed_columns([("k", 1, 10), ("k", 2, 20), ("j", 3, 5)]))
    assert [o.value for o in cleared.outputs] == [10, None, 5]
    assert {KS.deserialize(e.key) for e in decode_state(cleared.state)[1]} == {"j"}


def test_typed_columns_build_key_bytes_only_when_read():
    cols = _typed_columns(BATCH1)
    assert len(cols) == 4 and cols.key_values == ["a", "b", "a", "c"]
    assert cols.keys == [KS.serialize(k) for k, _, _ in BATCH1]
    assert list(cols)[2] == (KS.serialize("a"), 3, ("a", 5), 0)
    with pytest.raises(JobExecutionError, match="keys, or key values"):
        KeyGroupColumns(None, [], [], key_values=[])


def test_lean_outputs_come_as_columns_and_as_output_tuples():
    lean, _ = _pair(_add)
    result = lean.run(None, _rows(BATCH1))
    tags, values, stamps = result.output_columns()
    assert tags is None and stamps == [1, None, 3, 4]
    assert values == [("a", 1), ("b", 1), ("a", 6), ("c", 2)]
    assert result.outputs == [Output(None, v, t) for v, t in zip(values, stamps)]
    # once built, the tuples are what output_columns reads
    assert result.output_columns() == ([None] * 4, values, stamps)


def test_state_entries_are_canonical_across_key_groups():
    from pyspark_datastream.operators.lean_reduce import keyed_entries
    from pyspark_datastream.state_store.keygroups import assign_key_group

    keys = [KS.serialize(k) for k in ("a", "bb", "ccc", "zz", "y", "x" * 40)]
    running = {kb: ("v", i) for i, kb in enumerate(keys)}
    entries = keyed_entries(list(running), list(running.values()), {}, 4)
    expected = sorted(keys, key=lambda kb: (assign_key_group(kb, 4), len(kb), kb))
    assert len({e[0] for e in entries}) > 1
    assert [e[2] for e in entries] == expected
    assert is_canonical([StateEntry(*e) for e in entries])


def test_state_entries_with_a_checked_key_group_restored_keys_and_cleared_keys():
    """The entries of a call that restored some keys, updated some, cleared one (a None
    result) and added new ones: the same with the reader's checked key group as computed
    per key, and what an independent model gives."""
    import random

    from pyspark_datastream.operators.lean_reduce import VOID_NS, keyed_entries
    from pyspark_datastream.state_store.keygroups import assign_key_group

    rng = random.Random(3)
    words = [f"k{rng.randrange(10**6)}" for _ in range(400)]
    group = assign_key_group(KS.serialize(words[0]), MAXP)
    same = sorted({w for w in words if assign_key_group(KS.serialize(w), MAXP) == group}
                  | {words[0]})
    extra = [f"x{i}" for i in range(5000) if assign_key_group(KS.serialize(f"x{i}"), MAXP) == group]
    keys = same + extra[:30]
    restored = {KS.serialize(k): (group, "_reduce", KS.serialize(k), VOID_NS, b"",
                                  pickle.dumps(("old", k), protocol=5)) for k in keys[::2]}
    running = {k: (None if i % 7 == 0 else ("new", i)) for i, k in enumerate(keys[::3])}
    key_bytes = {k: KS.serialize(k) for k in running}
    model = {kb: pickle.loads(e[5]) for kb, e in restored.items()}
    for k, v in running.items():
        if v is None:
            model.pop(key_bytes[k], None)
        else:
            model[key_bytes[k]] = v
    fresh = {key_bytes[k]: v for k, v in running.items() if v is not None}  # nothing restored
    for checked in (None, group):
        for start, want in ((restored, model), ({}, fresh)):
            entries = keyed_entries([key_bytes[k] for k in running], list(running.values()),
                                    start, MAXP, checked)
            order = sorted(want, key=lambda kb: (len(kb), kb))
            assert [e[2] for e in entries] == order
            assert [pickle.loads(e[5]) for e in entries] == [want[kb] for kb in order]
            assert {(e[0], e[1], e[3], e[4]) for e in entries} == {
                (group, "_reduce", VOID_NS, b"")}
            assert is_canonical([StateEntry(*e) for e in entries])


def test_an_unpicklable_result_is_a_serialization_error_naming_the_operator():
    import threading

    lean, _ = _pair(lambda a, b: threading.Lock(), name="locker")
    with pytest.raises(SerializationError, match="locker"):
        lean.run(None, _rows([("k", 1, 1), ("k", 2, 2)]))
