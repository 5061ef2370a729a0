"""Records keep their order from one keyed stage to the next, as between two Flink subtasks.

A keyed STREAMING stage runs key group by key group, but its subtask received its elements
in one arrival order, and the next keyed stage must see that subtask's outputs in it (Flink:
the records of one channel keep their order). At parallelism 1 Flink's result is then fully
determined by the input order, so it is computed here by a plain-Python model of the
program:

* PyFlink's STREAMING ``test_keyed_min_by_and_max`` (its input) up to its second keyed
  stage, whose output Flink gives as (a,3,0), (a,1,1), (a,5,0), (a,3,1);
* three keyed stages whose states fold every record in order (a running hash), over several
  files and micro-batches with keys spread over many key groups, on the RocksDB backend
  (PyFlink's test above runs on the heap one).
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor

M = 1_000_003
ROW3 = Types.ROW_NAMED(["v1", "v2", "v3"], [Types.STRING(), Types.INT(), Types.INT()])
TUP3 = Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()])


def _conf(tmp_path, mapping="per-stage"):
    return {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
            "execution.streaming.query-mapping": mapping}


MAPPINGS = pytest.mark.parametrize("mapping", ["per-stage", "one-query"])


@MAPPINGS
def test_pyflinks_keyed_min_by_and_max_first_two_stages(env_factory, tmp_path, mapping):
    """PyFlink's STREAMING test (pyflink/datastream/tests/test_data_stream.py) up to its
    second keyed stage, whose output Flink gives as (a,3,0), (a,1,1), (a,5,0), (a,3,1): the
    ``max(1)`` keeps the first record's other fields, so it shows which record of each key
    arrived first (its last three stages only fold these further)."""
    env = env_factory("STREAMING", _conf(tmp_path, mapping))
    env.set_parallelism(1)
    data = [("a", 3, 0), ("a", 1, 1), ("b", 5, 0), ("b", 3, 1)]
    two = (env.from_collection(data, type_info=ROW3)
           .key_by(lambda x: x[0]).min_by("v2")
           .map(lambda x: (x[0], x[1], x[2]), output_type=TUP3)
           .key_by(lambda x: x[2]).max(1))
    with two.execute_and_collect() as it:
        assert sorted(tuple(r) for r in it) == sorted(
            [("a", 3, 0), ("a", 1, 1), ("a", 5, 0), ("a", 3, 1)])


class Fold(KeyedProcessFunction):
    """A running hash of every value the key received, in the order received; emits the
    record's key field, the hash, and the value."""

    def __init__(self, field: int):
        self.field = field

    def open(self, runtime_context):
        self.h = runtime_context.get_state(ValueStateDescriptor("h", Types.LONG()))

    def process_element(self, value, ctx):
        h = ((self.h.value() or 7) * 31 + value[2]) % M
        self.h.update(h)
        yield value[0], value[1], h


def _model(records):
    """Flink at parallelism 1: each stage processes its input in the order it arrives, one
    record after the other; returns the last stage's outputs in emission order."""
    stages = [lambda r: r[0], lambda r: r[1] % 5, lambda r: r[2] % 3]
    stream = [(k, v, v) for k, v in records]
    for key_of in stages:
        state: dict = {}
        out = []
        for r in stream:
            key = key_of(r)
            state[key] = (state.get(key, 7) * 31 + r[2]) % M
            out.append((r[0], r[1], state[key]))
        stream = out
    return stream


@MAPPINGS
def test_three_keyed_stages_at_parallelism_one_match_flinks_order(spark, env_factory, tmp_path,
                                                                  mapping):
    rng = random.Random(53)
    files = [[(f"k{rng.randrange(40)}", rng.randrange(1000)) for _ in range(150)]
             for _ in range(4)]
    src = tmp_path / "in"
    src.mkdir()
    for i, rows in enumerate(files):
        path = src / f"f{i}.parquet"
        pq.write_table(pa.table({"k": [k for k, _ in rows],
                                 "v": pa.array([v for _, v in rows], pa.int64())}), path)
        os.utime(path, (1_700_000_000 + 10 * i,) * 2)
    env = env_factory("STREAMING", {**_conf(tmp_path, mapping), "state.backend.type": "rocksdb"})
    env.set_parallelism(1)
    # one file per micro-batch, in file order: the input order is the files' rows in turn
    df = spark.readStream.schema("k string, v long").option("maxFilesPerTrigger", 1) \
        .parquet(str(src))
    triple = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
    ds = env.from_dataframe(df).map(lambda r: (r[0], r[1], r[1]), output_type=triple)
    for i, key_of in enumerate([lambda r: r[0], lambda r: r[1] % 5, lambda r: r[2] % 3]):
        ds = ds.key_by(key_of).process(Fold(i), output_type=triple)
    with ds.execute_and_collect() as it:
        got = sorted(it)
    assert got == sorted(_model([r for rows in files for r in rows]))
