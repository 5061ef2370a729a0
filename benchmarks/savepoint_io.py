"""Savepoint IO vs plain Parquet, in one process (issue 6).

Builds the entries of N keys x (ValueState + ListState of 9 elements) = 10 N
entries with the real single-key backend on the executors (``SavepointWriter``'s
encoding pass), persists them, then times:

* write:   ``write_savepoint`` (sort by key group + Parquet + metadata + Delta commit)
           vs ``df.write.parquet`` of the same rows, each after one untimed run;
* restore: ``load_operator_state`` (re-keyed for another max parallelism) fully read
           vs ``spark.read.parquet`` of the plain copy fully read (``noop`` sink).

Last line: JSON ``{"write_ratio": ..., "restore_ratio": ..., ...}`` (targets <= 1.5).
Full size is 1M keys (10M entries, a few minutes here); ``--quick`` uses 20k keys.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

__all__ = ["main"]


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print timings and the JSON summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="20k keys (CI smoke run)")
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args(argv)
    keys = 20_000 if args.quick else args.keys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark_datastream.savepoint import SavepointWriter, load_operator_state, write_savepoint
    from pyspark_datastream.state_store.descriptors import ListStateDescriptor, ValueStateDescriptor
    from pyspark_datastream.state_store.typeinfo import Types

    spark = (SparkSession.builder.master("local[2]").appName("savepoint-io-bench")
             .config("spark.sql.shuffle.partitions", str(args.partitions))
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "3g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="savepoint-io-bench-")
    try:
        source = spark.range(keys).select(
            F.col("id").alias("k"), (F.col("id") * 7).alias("n"),
            F.array_repeat(F.col("id"), 9).alias("xs"))
        value, lst = ValueStateDescriptor("n", Types.LONG()), ListStateDescriptor("xs", Types.LONG())
        writer = SavepointWriter(128).with_keyed_state("op", source, "k", {"n": value, "xs": lst})
        metadata = writer.metadata("bench")
        # the encoded entries, computed once (encoding is not part of either timing)
        from pyspark_datastream.savepoint import _bootstrap_pass
        from pyspark_datastream.savepoint_format import entries_ddl
        from pyspark_datastream.state_store.serializers import serializer_from_snapshot

        key_ser = serializer_from_snapshot(metadata.operators["op"].key_serializer)
        cols = [("n", value), ("xs", lst)]

        def encode(batches):  # type: ignore[no-untyped-def]
            return _bootstrap_pass("op", key_ser, 128, "k", cols, batches)

        entries = source.mapInArrow(encode, entries_ddl()).persist()
        n_entries = entries.count()
        plain, sp = os.path.join(work, "plain"), os.path.join(work, "sp")
        # one untimed run of each write first (JVM code paths compiled, files cached)
        entries.write.parquet(os.path.join(work, "warm-plain"))
        write_savepoint(spark, os.path.join(work, "warm-sp"), entries, metadata)
        t_plain_w = _timed(lambda: entries.write.parquet(plain))
        t_sp_w = _timed(lambda: write_savepoint(spark, sp, entries, metadata))
        t_plain_r = _timed(lambda: spark.read.parquet(plain).write.format("noop").mode("overwrite").save())
        t_sp_r = _timed(lambda: load_operator_state(spark, sp, "op", max_parallelism=256)
                        .write.format("noop").mode("overwrite").save())
        result = {
            "keys": keys, "entries": n_entries,
            "plain_write_s": round(t_plain_w, 2), "savepoint_write_s": round(t_sp_w, 2),
            "plain_read_s": round(t_plain_r, 2), "savepoint_restore_s": round(t_sp_r, 2),
            "write_ratio": round(t_sp_w / t_plain_w, 3),
            "restore_ratio": round(t_sp_r / t_plain_r, 3),
        }
        print(json.dumps(result))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
