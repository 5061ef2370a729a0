"""S3 outages in the middle of a job: the S3 server becomes unreachable for a few seconds
(a proxy in front of moto, conftest ``s3_proxy``, is stopped: connections refused, open ones
dropped) in the middle of a STREAMING micro-batch and in the middle of a savepoint commit.

The job either gets through the outage or fails with one of the product's typed errors
naming the s3a path; a rerun of the same job then finishes, and its output equals a
plain-Python model of the input: nothing lost, nothing duplicated. A savepoint whose commit
was interrupted is complete, or absent with a clear error; never partial but readable."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Optional

import pytest
from deltalake import DeltaTable
from helpers import KV_SCHEMA as SCHEMA
from helpers import add_file
from pyspark_datastream import (
    DataStreamError,
    KeyedProcessFunction,
    SavepointNotFoundError,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint
from s3_proxy import command
from s3_server import ACCESS_KEY, SECRET_KEY

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
OUTAGE_S = 5
#: the key whose first record stops the S3 server (the second input file holds it)
OUTAGE_KEY = "outage"
FILES = [
    [("apple", 1), ("banana", 1), ("apple", 1), ("cherry", 1), ("elder", 1)],
    [("banana", 1), (OUTAGE_KEY, 1), ("apple", 1), ("date", 1), ("cherry", 1)],
]


class CountStoppingS3(KeyedProcessFunction):
    """Counts per key, emits (key, running count); the first time it sees ``OUTAGE_KEY``
    (a flag file remembers it across runs) it stops the S3 proxy, in the middle of the
    micro-batch, and goes on."""

    def __init__(self, control_port: int, flag: str) -> None:
        self.control_port = control_port
        self.flag = flag

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        if value[0] == OUTAGE_KEY and not os.path.exists(self.flag):
            with open(self.flag, "w"):
                pass
            assert command(self.control_port, f"down {OUTAGE_S}") == "ok"
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield (value[0], n)


def expected_counts(rows: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Plain Python: every (key, running count) a per-key count emits, sorted."""
    return sorted((k, i) for k, c in Counter(k for k, _ in rows).items()
                  for i in range(1, c + 1))


def delta_rows(server: Any, uri: str) -> list[tuple]:
    """The rows of the Delta table at ``uri``, read from the server directly."""
    options = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1",
               "AWS_ALLOW_HTTP": "true"}
    table = DeltaTable(uri, storage_options=options)
    return sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist())


def _assert_typed_naming(exc: BaseException, prefix: str) -> None:
    assert isinstance(exc, DataStreamError), f"{type(exc).__name__}: {exc}"
    assert prefix in str(exc), f"{type(exc).__name__} does not name {prefix}: {exc}"


def test_an_outage_in_the_middle_of_a_streaming_micro_batch(
        spark, env_factory, s3_server, s3_proxy, tmp_path):
    """RocksDB keyed job, checkpoint root and Delta sink on s3a://, one input file per
    micro-batch; the server stops while the second micro-batch runs its keyed function."""
    bucket = f"s3a://{s3_proxy.bucket}"
    src, flag = str(tmp_path / "in"), str(tmp_path / "outage-done")
    for i, rows in enumerate(FILES):
        add_file(src, rows, f"f{i}")
    config = {"state.backend.type": "rocksdb", "execution.checkpointing.dir": f"{bucket}/ckpt",
              "s3.endpoint": s3_proxy.endpoint}
    out = f"{bucket}/out"

    def run() -> Optional[BaseException]:
        env = env_factory("STREAMING", config)
        df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
        (env.from_dataframe(df).key_by(lambda r: r[0], key_type=Types.STRING())
         .process(CountStoppingS3(s3_proxy.control_port, flag), output_type=PAIR)
         .uid("count").sink_to_delta(out))
        try:
            env.execute("outage-stream")
        except Exception as exc:  # noqa: BLE001 - checked by the caller
            return exc
        return None

    failure = run()
    assert os.path.exists(flag) and s3_proxy.outages() == 1  # the outage happened mid-run
    s3_proxy.wait_up()
    if failure is not None:
        _assert_typed_naming(failure, bucket + "/")
        assert run() is None  # the rerun resumes from the checkpoint root on S3
    expected = expected_counts([r for rows in FILES for r in rows])
    assert delta_rows(s3_server, f"s3://{s3_proxy.bucket}/out") == expected
    assert s3_proxy.outages() == 1


@pytest.mark.parametrize("request_text", [
    "PUT /{bucket}/sp/savepoint-",  # an entry file, written from the keyed pass (pyarrow)
    "part-metadata.parquet",        # the commit's first write, on the driver (pyarrow)
    "PUT /{bucket}/sp/_delta_log/0",  # the Delta commit itself (delta-rs)
], ids=["entry-file", "commit-metadata-file", "delta-log-commit"])
def test_an_outage_in_the_middle_of_a_batch_savepoint_commit(
        spark, env_factory, s3_server, s3_proxy, tmp_path, request_text):
    """A BATCH job writes its savepoint to s3a://; the server stops at the savepoint's
    first write request of the kind given (dropped unsent: its entry files, then its commit's
    metadata file, then its Delta log entry) and comes back after a few seconds. The savepoint is then complete, or absent (a clear error); a rerun writes it
    whole and its output (an overwritten Delta table) equals the model."""
    from savepoint_jobs import DATA_A, Count, keyed_stream

    sp = f"s3a://{s3_proxy.bucket}/sp"
    out = str(tmp_path / "out")
    config = {"s3.endpoint": s3_proxy.endpoint}

    def run() -> Optional[BaseException]:
        env = env_factory("BATCH", config)
        keyed_stream(env, DATA_A, Count(), uid="count").sink_to_delta(out, mode="overwrite")
        try:
            env.execute("outage-batch", savepoint_path=sp)
        except Exception as exc:  # noqa: BLE001 - checked by the caller
            return exc
        return None

    s3_proxy.arm(OUTAGE_S, request_text.format(bucket=s3_proxy.bucket))
    failure = run()
    assert s3_proxy.outages() == 1  # the armed request came, and was dropped
    s3_proxy.wait_up()
    counts = sorted(Counter(k for k, _ in DATA_A).items())
    if failure is not None:
        _assert_typed_naming(failure, sp)
        with pytest.raises(SavepointNotFoundError, match="sp"):
            Savepoint.load(sp, spark)  # nothing committed: no savepoint, a clear error
        assert run() is None
    loaded = Savepoint.load(sp, spark)
    state = loaded.read_keyed_state("count", ValueStateDescriptor("count", Types.LONG()))
    assert sorted((r["key"], r["count"]) for r in state.collect()) == counts
    assert sorted(tuple(r.values()) for r in DeltaTable(out).to_pyarrow_table().to_pylist()) \
        == expected_counts(DATA_A)
