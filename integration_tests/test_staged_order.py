"""STREAMING: a keyed stage fed by another keyed stage sees each key's records in the order the
upstream stage emitted them (Flink keeps the order of each channel), also when one of its
micro-batches reads the staged output of several upstream micro-batches at once.

The upstream query numbers each micro-batch's records from 0; read back without the files'
order, three staged micro-batches of key ``a`` came out interleaved (10, 40, 70, 20, ...).
"""

from __future__ import annotations

import os
import time

import pandas as pd
from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
SEEN = Types.TUPLE([Types.STRING(), Types.STRING()])


class Seen(KeyedProcessFunction):
    """Emits, per record, the key's values so far in the order this stage received them."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_state(
            ValueStateDescriptor("seen", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        seen = (self.seen.value() or []) + [value[1]]
        self.seen.update(seen)
        yield value[0], ",".join(map(str, seen))


def test_a_second_keyed_stage_keeps_each_keys_upstream_order(spark, env_factory, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    files = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    for i, values in enumerate(files):
        pd.DataFrame({"k": ["a"] * 3 + ["b"] * 3,
                      "v": [v * 10 for v in values] + values}).to_parquet(src / f"f{i}.parquet")
        os.utime(src / f"f{i}.parquet", (time.time() + i, time.time() + i))
    # one file per upstream micro-batch, so the second stage finds several staged ones
    df = spark.readStream.schema(spark.read.parquet(str(src)).schema) \
        .option("maxFilesPerTrigger", 1).parquet(str(src))
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    latest = (env.from_dataframe(df).map(lambda r: (r[0], r[1]), output_type=PAIR)
              .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], b[1]))  # each record's value
              .key_by(lambda r: r[0]).process(Seen(), output_type=SEEN))
    with latest.execute_and_collect("staged-order") as it:
        got = list(it)
    final = {k: max((s for key, s in got if key == k), key=len) for k in ("a", "b")}
    # the file order is the input order: a reduce emits each record's value in it
    assert final == {"a": ",".join(str(v * 10) for f in files for v in f),
                     "b": ",".join(str(v) for f in files for v in f)}
