"""``from_collection`` with ``Types.ROW_NAMED`` / ``Types.ROW`` gives named Rows, as PyFlink
does: a ported program reads ``value.info`` (it failed on plain tuples)."""

from __future__ import annotations

import pytest
from pyspark_datastream import GraphBuildError, Row, Types

ROWS = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_named_rows_from_a_collection(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    data = [(1, "a"), Row(id=2, info="b"), {"id": 1, "info": "c"}]
    ds = env.from_collection(data, type_info=ROWS)
    described = ds.map(lambda v: f"{v.id}:{v.info}:{v[1]}:{v.as_dict()['id']}",
                       output_type=Types.STRING())
    assert sorted(described.execute_and_collect()) == ["1:a:a:1", "1:c:c:1", "2:b:b:2"]
    merged = ds.key_by(lambda v: v.id, key_type=Types.INT()).reduce(
        lambda a, b: Row(id=a.id, info="".join(sorted(a.info + b.info))))
    got = list(merged.execute_and_collect())  # STREAMING: every intermediate value too
    assert all(isinstance(r, Row) for r in got)
    assert {r.id: r for r in got} == {1: (1, "ac"), 2: (2, "b")}  # each key's last value


def test_unnamed_rows_and_elements_that_do_not_fit(env_factory):
    env = env_factory("BATCH")
    pair = Types.ROW([Types.INT(), Types.STRING()])
    ds = env.from_collection([(1, "x")], type_info=pair)
    assert list(ds.map(lambda v: (isinstance(v, Row), v.f1, v == (1, "x")))
                .execute_and_collect()) == [(True, "x", True)]
    with pytest.raises(GraphBuildError, match=r"element 1 \(1, 2, 3\) does not fit"):
        env.from_collection([(1, "x"), (1, 2, 3)], type_info=pair)
