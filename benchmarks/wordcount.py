"""FLIP-140's WordCount at 1/10 scale: native Spark vs BATCH reduce vs BATCH sum.

``python -m benchmarks.wordcount [--records 4000000] [--keys 400000]`` generates its
input as Parquet once (reused across runs), then in one process and one
SparkSession times: native ``groupBy().count()``, the project's BATCH
``key_by().reduce(lambda)`` with a Python reduce function, and BATCH ``sum(1)``.
Results are checked against pandas. The last line is JSON with ratios measured
in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pandas as pd


def generate(path: str, records: int, keys: int, seed: int = 42) -> None:
    if os.path.exists(os.path.join(path, "_SUCCESS_GEN")):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    chunk = 1_000_000
    for i, start in enumerate(range(0, records, chunk)):
        n = min(chunk, records - start)
        ids = rng.integers(0, keys, size=n)
        words = pd.Series(ids).map(lambda k: f"w{k:07d}")
        pq.write_table(pa.table({"word": words.to_numpy()}), os.path.join(path, f"part-{i:03d}.parquet"))
    open(os.path.join(path, "_SUCCESS_GEN"), "w").close()


def expected_counts(path: str) -> pd.Series:
    df = pd.read_parquet(path)
    return df.groupby("word").size()


def check(rows: list, expected: pd.Series, what: str) -> None:
    got = pd.Series({w: c for w, c in rows})
    if len(got) != len(expected) or not (got.sort_index() == expected.sort_index()).all():
        raise SystemExit(f"{what}: result differs from pandas ({len(got)} vs {len(expected)} keys)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--keys", type=int, default=400_000)
    parser.add_argument("--data", default=".bench-data")
    args = parser.parse_args()

    from pyspark_datastream import (
        Configuration,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        Types,
    )
    from pyspark_datastream.environment import default_local_session

    path = os.path.abspath(os.path.join(args.data, f"words-{args.records}-{args.keys}"))
    generate(path, args.records, args.keys)
    expected = expected_counts(path)
    spark = default_local_session()
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    words = spark.read.parquet(path)
    words.count()  # warm up file listing and the JVM

    words.groupBy("word").count().collect()  # warm-up run (JIT, file cache)
    t = time.time()
    native = words.groupBy("word").count().collect()
    native_s = time.time() - t
    check([(r[0], r[1]) for r in native], expected, "native")

    def job(pushdown: bool = True) -> object:
        conf = Configuration()
        # The reduce figure measures the Python path: no native pushdown of the lambda.
        conf.set_boolean("execution.batch.native-pushdown.enabled", pushdown)
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        return env.from_dataframe(words).map(
            lambda r: (r[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))

    t = time.time()
    out = job(pushdown=False).key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    with out.execute_and_collect() as it:
        reduce_rows = list(it)
    reduce_s = time.time() - t
    check(reduce_rows, expected, "reduce")

    t = time.time()
    out = job().key_by(lambda x: x[0]).sum(1)
    with out.execute_and_collect() as it:
        sum_rows = list(it)
    sum_s = time.time() - t
    check(sum_rows, expected, "sum")

    result = {
        "native_s": round(native_s, 3), "reduce_s": round(reduce_s, 3), "sum_s": round(sum_s, 3),
        "reduce_ratio": round(reduce_s / native_s, 3), "sum_ratio": round(sum_s / native_s, 3),
    }
    print(f"records={args.records} keys={args.keys}: native {native_s:.2f}s, "
          f"reduce {reduce_s:.2f}s, sum {sum_s:.2f}s")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
