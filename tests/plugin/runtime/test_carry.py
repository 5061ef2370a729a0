"""Carried records (runtime/carry.py): the keying pass hands each record it reads on, and
the keyed call below emits them untouched under the carry tag (no Spark)."""

from __future__ import annotations

import pickle

import pandas as pd
import pyarrow as pa
import pytest
from pyspark_datastream import Types
from pyspark_datastream.runtime.carry import (
    CARRIED_SEQ,
    MARK,
    carried_output,
    carrying,
    side_tag,
    split_carried,
    tagging,
)
from pyspark_datastream.runtime.encoding import KEY, KG, PICKLED, TAG, TS, VALUE, typed_encoding
from pyspark_datastream.runtime.group_frames import ORDER, ORDER_ROW, SEQ, unpack_blobs

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
KEYED = pa.schema([(TS, pa.int64()), (KG, pa.int32()), (KEY, pa.binary()), (VALUE, pa.binary()),
                   (SEQ, pa.int64())])


def _keying(batches):
    """A keying pass keeping every second record (its own output, numbered from 0)."""
    n = 0
    for b in batches:
        keep = list(range(0, b.num_rows, 2))
        yield pa.RecordBatch.from_arrays(
            [b.column(TS).take(pa.array(keep, pa.int64())), pa.array([7] * len(keep), pa.int32()),
             pa.array([b"k"] * len(keep)), pa.array([b"v"] * len(keep)),
             pa.array(range(n, n + len(keep)), pa.int64())], schema=KEYED)
        n += len(keep)


@pytest.mark.parametrize("typed", [True, False])
def test_the_keying_pass_hands_on_every_record_it_reads(typed):
    records = [[("a", 1), ("b", 2), ("c", 3)], [], [("d", 4), ("e", 5)]]
    enc = typed_encoding(PAIR) if typed else PICKLED

    def batch(rows):
        ts = pa.array([10 * v for _, v in rows], pa.int64())
        if typed:
            return pa.RecordBatch.from_arrays(
                [ts, pa.array([k for k, _ in rows], pa.string()),
                 pa.array([v for _, v in rows], pa.int64())], names=[TS, *enc.columns])
        return pa.RecordBatch.from_arrays(
            [ts, pa.array([pickle.dumps(r) for r in rows], pa.binary())], names=[TS, VALUE])

    out = list(carrying(_keying, enc, 5, 2, "mine")(iter(batch(rows) for rows in records)))
    assert all(b.schema == KEYED for b in out)
    rows = [r for b in out for r in b.to_pylist()]
    own = [r for r in rows if r[SEQ] >= 0]
    carried = [r for r in rows if r[SEQ] < 0]
    assert [r[TS] for r in own] == [10, 30, 40]  # the pass's own records, untouched
    assert [pickle.loads(r[VALUE]) for r in carried] == [r for rs in records for r in rs]
    assert [r[TS] for r in carried] == [10 * v for rs in records for _, v in rs]
    # numbered in the order the pass read them, from CARRIED_SEQ down
    assert [r[SEQ] for r in carried] == [CARRIED_SEQ - i for i in range(5)]
    assert {r[KEY] for r in carried} == {b"mine"}  # the tag they leave under
    # one key group of the task's subtask (outside Spark: partition 0, subtask 0 of 2,
    # which owns key groups 0-2 of 5)
    assert {r[KG] for r in carried} == {0}


def _tagged_pass(rows, seen, tag, **carry):
    """The output rows of a tagged keying pass over ``rows`` (tag, ts, value), each record
    its keying reads added to ``seen`` as (its columns, its value)."""
    batch = pa.RecordBatch.from_arrays(
        [pa.array([t for t, _, _ in rows], pa.string()), pa.array([ts for _, ts, _ in rows]),
         pa.array([pickle.dumps(v) for _, _, v in rows], pa.binary())], names=[TAG, TS, VALUE])

    def keying(batches):
        for b in batches:
            seen.extend((tuple(b.schema.names), pickle.loads(v))
                        for v in b.column(VALUE).to_pylist())
            yield from _keying(iter([b]))

    fn = carrying(keying, PICKLED, 4, 1, tag, tagged=True, **carry)
    return [r for b in fn(iter([batch])) for r in b.to_pylist()]


def test_records_carried_through_the_stage_above_are_handed_on_under_their_tag():
    """A carrier's tagged records: its own (no tag) go to the pass and are carried under
    the pass's tag, those carried through it keep theirs, its side outputs go under the
    pass's tag and theirs; neither reaches the pass."""
    above = MARK + "carried 1"
    seen: list = []
    out = _tagged_pass([(None, 1, "x"), (above, 2, "y"), (None, 3, "z"), ("late", 4, "w")],
                       seen, "mine")
    assert [v for _, v in seen] == ["x", "z"]  # the carrier's own records, untagged
    assert {names for names, _ in seen} == {(TS, VALUE)}
    carried = sorted((r[KEY], r[TS], pickle.loads(r[VALUE])) for r in out if r[SEQ] < 0)
    late = side_tag("mine", "late").encode()
    assert carried == sorted([(b"mine", 1, "x"), (b"mine", 3, "z"), (late, 4, "w"),
                              (above.encode(), 2, "y")])
    assert late not in {b"mine", above.encode()} and late.startswith(b"mine")
    assert [r[TS] for r in out if r[SEQ] >= 0] == [1]  # _keying keeps every second one
    # handed on in the order they came, whatever their tag
    assert [r[TS] for r in sorted((r for r in out if r[SEQ] < 0), key=lambda r: -r[SEQ])] == [
        1, 2, 3, 4]


@pytest.mark.parametrize("source_on", [False, True])
def test_a_pass_keying_records_carried_through_the_stage_above(source_on):
    """``source``: the records carried under that tag reach the pass (in their order); the
    stage above's own records, untagged, are handed on under the pass's tag, every other
    tagged row under its own; the source's records too when ``source_on``."""
    src, other = MARK + "carried 1", MARK + "carried 0"
    seen: list = []
    out = _tagged_pass([(src, 1, "a"), (None, 2, "own"), (src, 3, "b"), (other, 4, "o"),
                        ("late", 5, "l"), (src, 6, "c")], seen, MARK + "carried 2",
                       source=src, source_on=source_on)
    assert [v for _, v in seen] == ["a", "b", "c"]
    handed = [(r[KEY].decode(), pickle.loads(r[VALUE]))
              for r in sorted((r for r in out if r[SEQ] < 0), key=lambda r: -r[SEQ])]
    expected = [(src, "a"), (MARK + "carried 2", "own"), (src, "b"), (other, "o"),
                (side_tag(MARK + "carried 2", "late"), "l"), (src, "c")]
    assert handed == [h for h in expected if source_on or h[0] != src]


def test_a_savepoint_restore_row_is_no_carried_record():
    frame = pd.DataFrame({TS: [1.0, 2.0], KEY: [None, b"t"], VALUE: [b"state", b"x"],
                          SEQ: [-1, CARRIED_SEQ]})  # -1: translation/streaming/savepoint.RESTORE_SEQ
    own, carried = split_carried(frame)
    assert own[VALUE].tolist() == [b"state"] and carried[VALUE].tolist() == [b"x"]


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("ordered", [True, False])
def test_the_keyed_call_emits_carried_records_untouched_under_the_tag(direct, ordered):
    tag = b"\x1fcarried 3"
    frame = pd.DataFrame({TS: [5.0, float("nan"), 7.0], KEY: [b"k", tag, tag],
                          VALUE: [b"own", b"x", b"y"], SEQ: [0, CARRIED_SEQ - 4, CARRIED_SEQ - 9]})
    own, carried = split_carried(frame)
    assert own[VALUE].tolist() == [b"own"]
    assert carried[VALUE].tolist() == [b"x", b"y"]
    assert split_carried(own)[1].empty

    frames = list(carried_output([carried], direct, ordered))
    if direct:  # one row of arrays per chunk of records
        got = {c: [v for chunk in frames for cell in chunk[c] for v in cell]
               for c in (TAG, TS, VALUE)}
    else:  # Arrow IPC blobs, unpacked as the query does
        batches = [b for f in frames for b in unpack_blobs(iter([pa.RecordBatch.from_pandas(
            f, preserve_index=False)]))]
        got = {c: [v for b in batches for v in b.column(c).to_pylist()] for c in (TAG, TS, VALUE)}
    assert got == {TAG: ["\x1fcarried 3"] * 2, TS: [None, 7], VALUE: [b"x", b"y"]}
    if ordered and direct:  # the order the keying pass handed them on in
        assert [v for f in frames for cell in f[ORDER] for v in cell] == [4, 9]
        assert [v for f in frames for cell in f[ORDER_ROW] for v in cell] == [0, 0]


@pytest.mark.parametrize("tagged", [False, True])
def test_records_tagged_before_a_union_are_carried_by_the_keying_pass_below_it(tagged):
    mine = "\x1fcarried 4"
    if tagged:  # the stage's side outputs and records carried through it: tagged already
        rows = [(None, 1, ("a", 1)), ("late", 2, ("z", 9)), (f"{MARK}carried 2", 3, ("q", 0)),
                (None, 4, ("b", 2))]
        stage = pa.RecordBatch.from_arrays(
            [pa.array([t for t, _, _ in rows], pa.string()), pa.array([ts for _, ts, _ in rows]),
             pa.array([pickle.dumps(v) for _, _, v in rows], pa.binary())],
            names=[TAG, TS, VALUE])
        enc = PICKLED
    else:  # typed columns, pickled on the way
        rows = [(None, 1, ("a", 1)), (None, 4, ("b", 2))]
        enc = typed_encoding(PAIR)
        stage = pa.RecordBatch.from_arrays(
            [pa.array([1, 4], pa.int64()), pa.array(["a", "b"]), pa.array([1, 2], pa.int64())],
            names=[TS, *enc.columns])
    seen = []

    def path(batches):  # the operators down to the union: main records only, pickled
        for b in batches:
            values = [pickle.loads(v) if enc is PICKLED else v for v in (
                b.column(VALUE).to_pylist() if enc is PICKLED else
                list(zip(*(b.column(c).to_pylist() for c in enc.columns))))]
            seen.extend(values)
            yield pa.RecordBatch.from_arrays(
                [b.column(TS), pa.array([pickle.dumps((k.upper(), v)) for k, v in values])],
                names=[TS, VALUE])

    tee = list(tagging(path, enc, mine, tagged)(iter([stage])))
    assert seen == [("a", 1), ("b", 2)]  # the path ran over the stage's own records only
    # the union: the path's rows untagged, the stage's records tagged, another input's rows
    elsewhere = pa.RecordBatch.from_arrays(
        [pa.nulls(1, pa.string()), pa.array([7], pa.int64()), pa.array([pickle.dumps(("o", 7))])],
        names=[TAG, TS, VALUE])
    keyed = []

    def keying(batches):
        for b in batches:
            assert TAG not in b.schema.names
            keyed.extend(pickle.loads(v) for v in b.column(VALUE).to_pylist())
            yield from _keying(iter([b]))

    out = carrying(keying, PICKLED, 5, 2, mine, True, None, False, False, True)(
        iter([*tee, elsewhere]))
    got = [r for b in out for r in b.to_pylist()]
    assert keyed == [("A", 1), ("B", 2), ("o", 7)]  # every untagged row, from either input
    carried = [(r[KEY], r[TS], pickle.loads(r[VALUE])) for r in got if r[SEQ] < 0]
    want = [(mine.encode(), 1, ("a", 1)), (mine.encode(), 4, ("b", 2))]
    if tagged:
        want = [want[0], (side_tag(mine, "late").encode(), 2, ("z", 9)),
                (f"{MARK}carried 2".encode(), 3, ("q", 0)), want[1]]
    assert carried == want  # as they left the stage, under their tags, in order
    assert [r[SEQ] for r in got if r[SEQ] < 0] == [CARRIED_SEQ - i for i in range(len(want))]
