"""The branched keying pass (runtime/branches.py): a keyed stage's output read once, each
path's operators run over the rows it reads, then the operators after the union and the
key extraction over all of them (no Spark)."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from pyspark_datastream.runtime.branches import branched_pass
from pyspark_datastream.runtime.carry import CARRIED_SEQ, carrying, side_tag
from pyspark_datastream.runtime.encoding import KEY, KG, PICKLED, TAG, TS, VALUE
from pyspark_datastream.runtime.group_frames import SEQ
from pyspark_datastream.runtime.passes import PassSpec
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import StringSerializer

CONFIG = {"mode": "BATCH", "parallelism": 1, "max_parallelism": 8}


def _spec(name, chain, key_out=None):
    return PassSpec(name, PICKLED, PICKLED, dict(CONFIG), chain=chain, key_out=key_out,
                    max_parallelism=8)


def _batch(rows, tagged):
    """(tag, ts, record) rows as the stage above's output."""
    columns = [pa.array([ts for _, ts, _ in rows], pa.int64()),
               pa.array([pickle.dumps(r) for _, _, r in rows], pa.binary())]
    if not tagged:
        return pa.RecordBatch.from_arrays(columns, names=[TS, VALUE])
    return pa.RecordBatch.from_arrays(
        [pa.array([t for t, _, _ in rows], pa.string()), *columns], names=[TAG, TS, VALUE])


@pytest.mark.parametrize("tagged", [True, False])
def test_each_path_runs_over_its_rows_then_the_joined_operators_key_them_all(tagged):
    lengths = []

    def joined(r):  # after the union: one instance sees every path's records
        lengths.append(r)
        return (r[0].upper(), r[1])

    branches = [(None, _spec("even", [("filter", lambda r: r[1] % 2 == 0, "even")])),
                (None, _spec("tenfold", [("map", lambda r: (r[0], 10 * r[1]), "tenfold")]))]
    if tagged:  # a side output's rows: a path of their own, the main output's untouched
        branches.append(("late", _spec("late", [("map", lambda r: ("late", r[1]), "late")])))
    serializer = StringSerializer()
    fn = branched_pass(branches, tagged, _spec("joined", [("map", joined, "joined")],
                                               (lambda r: r[0], serializer)), 2)
    rows = [(None, 1, ("a", 1)), (None, 2, ("b", 2)), ("late", 3, ("z", 7)), ("other", 4, ("q", 0))]
    rows = rows if tagged else rows[:2]
    out = list(fn(iter([_batch(rows[:1], tagged), _batch(rows[1:], tagged)])))
    got = [(r[TS], r[KG], r[KEY], pickle.loads(r[VALUE]), r[SEQ])
           for b in out for r in b.to_pylist()]
    want = [(1, ("A", 10)), (2, ("B", 2)), (2, ("B", 20))] + ([(3, ("LATE", 7))] if tagged else [])
    assert [(ts, v) for ts, _, _, v, _ in got] == want  # per batch: each path in its order
    for _, kg, key, value, _ in got:
        assert key == serializer.serialize(value[0]) and kg == assign_key_group(key, 8)
    assert [s for *_, s in got] == sorted(s for *_, s in got)  # numbered in arrival order
    assert len(lengths) == len(want)  # the joined operators ran once per record


def test_a_carried_stage_reaches_the_paths_whole_and_is_handed_on_under_its_tags():
    branches = [(None, _spec("main", [("map", lambda r: (r[0], r[1] + 100), "main")])),
                ("late", _spec("late", [("map", lambda r: ("late", r[1]), "late")]))]
    serializer = StringSerializer()
    fn = carrying(branched_pass(branches, True, _spec("joined", [], (lambda r: r[0], serializer)),
                                2), PICKLED, 8, 2, "\x1fcarried 1", True, None, False, True)
    through = "\x1fcarried 0"  # records carried through the stage above: handed on only
    rows = [(None, 1, ("a", 1)), ("late", 2, ("z", 7)), (through, 3, ("q", 0)), (None, 4, ("b", 2))]
    got = [r for b in fn(iter([_batch(rows, True)])) for r in b.to_pylist()]
    keyed = [(r[TS], pickle.loads(r[VALUE])) for r in got if r[SEQ] >= 0]
    assert keyed == [(1, ("a", 101)), (4, ("b", 102)), (2, ("late", 7))]  # every path ran
    carried = [(r[KEY], r[TS], pickle.loads(r[VALUE]), r[SEQ]) for r in got if r[SEQ] < 0]
    assert carried == [  # every row as it left the stage above, in arrival order
        (b"\x1fcarried 1", 1, ("a", 1), CARRIED_SEQ),
        (side_tag("\x1fcarried 1", "late").encode(), 2, ("z", 7), CARRIED_SEQ - 1),
        (through.encode(), 3, ("q", 0), CARRIED_SEQ - 2),
        (b"\x1fcarried 1", 4, ("b", 2), CARRIED_SEQ - 3)]
