"""Kill/restart harness for STREAMING exactly-once tests.

``python streaming_harness.py --src DIR --ckpt DIR --out DIR --backend hashmap|rocksdb``
runs one keyed STREAMING job in its own driver process (own JVM): a running sum per
key (ValueState) over a Parquet file stream read one file per micro-batch, written
by Spark's exactly-once Parquet file sink (``--sink delta``: by ``sink_to_delta``, through
delta-rs, or with ``--delta-writer spark`` through Spark's own Delta Lake; ``--sink
kafka-exactly_once|kafka-at_least_once`` with ``--out <bootstrap>/<topic>``: by a KafkaSink
with that guarantee, one line per record, :func:`running_sum_line`; ``--sink kafka-fanout``:
by one KafkaSink of each guarantee, :func:`fan_out_to_kafka`). With the
Parquet sink, ``--backend hashmap,rocksdb`` runs one such query per backend at once in
the same driver (:func:`start_file_sink_queries`). ``--mapping`` sets
``execution.streaming.query-mapping`` (``auto``, ``per-stage``, ``one-query``; with the
Parquet sink one per backend, comma-separated). The test kills it with SIGKILL at
random moments (or arms a named crash point of ``faults`` through its environment
variable) and restarts it from the same checkpoint; :func:`expected_output` is what an
uninterrupted run emits.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor

__all__ = ["RunningSum", "write_input", "expected_output", "exactly_once_violations",
           "running_sum_stream", "start_file_sink_queries", "committed_batches", "run_job",
           "run_kafka_job", "start", "running_sum_line", "parse_running_sum_line", "kafka_sink",
           "fan_out_to_delta", "relay_to_delta", "GUARANTEES", "fan_out_to_kafka",
           "guarantee_topic", "MAPPING", "kill", "kill_after_batch"]

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "k string, v long"
#: the option choosing the STREAMING mapping (plugin/translation/streaming/one_query.py)
MAPPING = "execution.streaming.query-mapping"
#: the KafkaSink's delivery guarantees, as the harness's ``--sink kafka-<guarantee>`` names them
GUARANTEES = ("exactly_once", "at_least_once")
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"


class RunningSum(KeyedProcessFunction):
    """Emits (key, running sum, element count) per element."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        count = (self.count.value() or 0) + 1
        self.total.update(total)
        self.count.update(count)
        yield (value[0], total, count)


def write_input(folder: str, files: list[list[tuple[str, int]]]) -> None:
    """One Parquet file per list, with strictly increasing mtimes (file order = arrival)."""
    os.makedirs(folder, exist_ok=True)
    base = 1_700_000_000
    for i, rows in enumerate(files):
        path = os.path.join(folder, f"f{i:03d}.parquet")
        pq.write_table(pa.table({"k": [r[0] for r in rows],
                                 "v": pa.array([r[1] for r in rows], pa.int64())}), path)
        os.utime(path, (base + 10 * i, base + 10 * i))


def expected_output(files: list[list[tuple[str, int]]]) -> list[tuple[str, int, int]]:
    """What an uninterrupted run emits (as a multiset: sort before comparing)."""
    totals: dict[str, tuple[int, int]] = {}
    out = []
    for rows in files:
        for k, v in rows:
            t, c = totals.get(k, (0, 0))
            totals[k] = (t + v, c + 1)
            out.append((k, t + v, c + 1))
    return out


def exactly_once_violations(got: list[tuple[str, int, int]],
                            files: list[list[tuple[str, int]]]) -> list[str]:
    """What in ``got`` breaks exactly-once for the running sum over ``files`` ([] if none).

    Exactly-once does not fix the order of elements from different files: a restart can
    legitimately put two files into one micro-batch (Spark's file source logs a file as
    planned before the offset log records the batch; a driver killed in between re-plans
    the next batch as the union), and rows of one micro-batch reach a key in shuffle order.
    So, per key: the counts are exactly 1..n (nothing lost, nothing emitted twice), and
    each total is the previous one plus one of the key's input values, every value used
    exactly once (the state seen by each element is exactly the elements before it).
    """
    values: dict[str, list[int]] = {}
    for rows in files:
        for k, v in rows:
            values.setdefault(k, []).append(v)
    per_key: dict[str, list[tuple[int, int]]] = {}
    for k, total, count in got:
        per_key.setdefault(k, []).append((count, total))
    problems = []
    for k in sorted(set(values) | set(per_key)):
        rows = sorted(per_key.get(k, []))
        want = values.get(k, [])
        if [c for c, _ in rows] != list(range(1, len(want) + 1)):
            problems.append(f"{k}: counts {[c for c, _ in rows]} for {len(want)} inputs")
            continue
        steps = [t - p for (_, t), (_, p) in zip(rows, [(0, 0)] + rows[:-1])]
        if sorted(steps) != sorted(want):
            problems.append(f"{k}: increments {steps} are not the inputs {want}")
    return problems


def running_sum_stream(env: Any, spark: Any, src: str) -> Any:
    """The job's graph: the running sum per key over the file stream, one file per batch
    (built here so a restart in another process fingerprints the same graph)."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    return env.from_dataframe(df).key_by(lambda r: r[0]).process(
        RunningSum(), output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))


def start_file_sink_queries(spark: Any, src: str, ckpt: str, out: str, backends: list[str],
                            mappings: Optional[list[str]] = None) -> list[Any]:
    """Start the job once per backend on ``spark``, all at once, each into Spark's Parquet
    file sink ``out/<backend>`` with its checkpoints under ``ckpt/<backend>``.

    Args:
        spark: the session (the child's own, or the test's for a restart in the test).
        src: the input folder.
        ckpt: the checkpoint root.
        out: the output root.
        backends: the state backends (``hashmap``, ``rocksdb``), one query each.
        mappings: each query's ``execution.streaming.query-mapping``, in the order of
            ``backends`` (None: the default, ``auto``).

    Returns:
        The started streaming queries, in the order of ``backends``.
    """
    from helpers import env_on

    queries = []
    for backend, mapping in zip(backends, mappings or ["auto"] * len(backends)):
        env = env_on(spark, "STREAMING", {
            "execution.checkpointing.dir": os.path.join(ckpt, backend, "job"),
            "state.backend.type": backend, MAPPING: mapping})
        # a one-query to_dataframe() sets the state store provider it needs on the session
        # for the query the user starts; that query keeps a copy, the session (the test's
        # too) gets its own back for the next query
        before = spark.conf.get(_PROVIDER, None)
        try:
            queries.append(
                running_sum_stream(env, spark, src).to_dataframe().writeStream.format("parquet")
                .option("path", os.path.join(out, backend))
                .option("checkpointLocation", os.path.join(ckpt, backend, "sink"))
                .trigger(availableNow=True).start())
        finally:
            if before is None:
                spark.conf.unset(_PROVIDER)
            else:
                spark.conf.set(_PROVIDER, before)
    return queries


def committed_batches(out: str) -> int:
    """How many micro-batches Spark's Parquet file sink at ``out`` has committed (its
    metadata log's batch files; 0 before the first)."""
    log = os.path.join(out, "_spark_metadata")
    if not os.path.isdir(log):
        return 0
    return len([n for n in os.listdir(log) if n.split(".")[0].isdigit()])


def run_job(src: str, ckpt: str, out: str, backend: str, sink: str = "parquet",
            delta_writer: str = "delta-rs", mapping: str = "auto") -> None:
    """The job itself (runs in the child process); ``sink="parquet"``: one query per backend
    of the comma-separated ``backend`` (:func:`start_file_sink_queries`), each with its
    mapping of the comma-separated ``mapping`` (one for all when it names one);
    ``sink="delta"``: one query into the Delta table ``out`` through ``sink_to_delta`` (the
    job's checkpoint root is ``ckpt/job``), written by ``delta_writer`` (``spark``: Spark's
    Delta, the jars of ``make setup``); ``sink="delta-fanout"``: into two tables
    (:func:`fan_out_to_delta`); ``sink="delta-relay"``: through two keyed stages into two
    tables (:func:`relay_to_delta`); ``sink="kafka-fanout"``: into a topic per guarantee
    (:func:`fan_out_to_kafka`). Every job but the Parquet one runs with ``mapping``."""
    import faults
    from helpers import env_on
    from jvm_options import checkpoint_conf, driver_options
    from pyspark.sql import SparkSession

    faults.install()  # the crash point the test armed in this driver's environment, if any
    builder = SparkSession.builder
    for key, value in checkpoint_conf().items():  # as conftest.py's session
        builder = builder.config(key, value)
    if delta_writer == "spark":
        from jars import delta_spark_conf

        for key, value in delta_spark_conf().items():
            builder = builder.config(key, value)
        builder = builder.config("spark.databricks.delta.snapshotPartitions", "2")
    if sink.startswith("kafka"):  # Spark's Kafka connector (AT_LEAST_ONCE writes with it)
        from jars import class_path

        builder = builder.config("spark.driver.extraClassPath", class_path())
    builder = builder.config("pyspark_datastream.delta.writer", delta_writer)
    spark = (builder.master("local[2]").appName("pds-harness")
             .config("spark.sql.shuffle.partitions", "2")  # as conftest.py's session
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             # see jvm_options.py; the jars are on the class path for these two
             .config("spark.driver.extraJavaOptions", driver_options(
                 jars=delta_writer == "spark" or sink.startswith("kafka")))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    if sink == "parquet":
        backends = backend.split(",")
        mappings = mapping.split(",")
        for query in start_file_sink_queries(spark, src, ckpt, out, backends,
                                             mappings * len(backends) if len(mappings) == 1
                                             else mappings):
            query.awaitTermination()
        spark.stop()
        return
    if sink.startswith("kafka"):
        run_kafka_job(spark, src, ckpt, out, backend, sink, mapping)
        spark.stop()
        return
    env = env_on(spark, "STREAMING", {"execution.checkpointing.dir": os.path.join(ckpt, "job"),
                                      "state.backend.type": backend, MAPPING: mapping})
    if sink == "delta":
        running_sum_stream(env, spark, src).sink_to_delta(out)
    elif sink == "delta-relay":
        relay_to_delta(running_sum_stream(env, spark, src), out)
    else:
        fan_out_to_delta(running_sum_stream(env, spark, src), out)
    env.execute(f"{sink}-sink")
    spark.stop()


def run_kafka_job(spark: Any, src: str, ckpt: str, out: str, backend: str, sink: str,
                  mapping: str = "auto") -> None:
    """Run the job into Kafka on ``spark`` until its input is consumed (the child's session,
    or the test's for a restart in the test; the job's checkpoint root is ``ckpt/job``).

    Args:
        spark: the session; Spark's Kafka connector on its class path (AT_LEAST_ONCE).
        src: the input folder.
        ckpt: the checkpoint root.
        out: ``<bootstrap servers>/<topic>``.
        backend: the state backend.
        sink: ``kafka-<guarantee>`` (one KafkaSink to ``topic``) or ``kafka-fanout``
            (:func:`fan_out_to_kafka`).
        mapping: the job's ``execution.streaming.query-mapping``.
    """
    from helpers import env_on

    env = env_on(spark, "STREAMING", {"execution.checkpointing.dir": os.path.join(ckpt, "job"),
                                      "state.backend.type": backend, MAPPING: mapping})
    bootstrap, topic = out.split("/")
    if sink == "kafka-fanout":
        fan_out_to_kafka(running_sum_stream(env, spark, src), bootstrap, topic)
    else:
        (running_sum_stream(env, spark, src)
            .map(running_sum_line, output_type=Types.STRING())
            .sink_to(kafka_sink(bootstrap, topic, sink.partition("-")[2])))
    env.execute(f"{sink}-sink")


def fan_out_to_delta(stream: Any, out: str) -> None:
    """``stream`` (a keyed stage's running sums) into the Delta table ``out/a``, and through a
    second keyed stage into ``out/b``: a reduce keeping each key's latest record, so ``b``
    holds the same records as ``a``. On Spark 4.0+ one query writes both, carrying the first
    stage's records to ``a`` through the second (translation/streaming/one_query.py)."""
    stream.sink_to_delta(os.path.join(out, "a"))
    _latest_to_delta(stream, os.path.join(out, "b"))


def relay_to_delta(stream: Any, out: str) -> None:
    """``stream`` (a keyed stage's running sums) read by two keyed stages, each a reduce
    keeping a key's latest record, into the Delta tables ``out/b`` and ``out/c``: both hold
    the records of ``stream``. On Spark 4.0+ one query runs it relayed: the running sums are
    carried through the first reduce, whose output the second's keying pass reads
    (translation/streaming/one_query.py)."""
    for name in ("b", "c"):
        _latest_to_delta(stream, os.path.join(out, name))


def _latest_to_delta(stream: Any, path: str) -> None:
    """A keyed stage over ``stream`` keeping each key's latest record, into the Delta table
    ``path`` (its records are those of ``stream``)."""
    stream.key_by(lambda r: r[0]).reduce(lambda _older, latest: latest).sink_to_delta(path)


def fan_out_to_kafka(stream: Any, bootstrap: str, topic: str) -> None:
    """``stream`` into one KafkaSink per guarantee (:data:`GUARANTEES`), each to its topic
    (:func:`guarantee_topic`; several sinks: one query writes them all under ``auto``)."""
    lines = stream.map(running_sum_line, output_type=Types.STRING())
    for guarantee in GUARANTEES:
        lines.sink_to(kafka_sink(bootstrap, guarantee_topic(topic, guarantee), guarantee))


def guarantee_topic(topic: str, guarantee: str) -> str:
    """The topic ``--sink kafka-fanout`` writes with ``guarantee`` when its ``--out`` names
    ``topic``."""
    return f"{topic}-{guarantee}"


def running_sum_line(t: tuple) -> str:
    """A running-sum record as the Kafka sink writes it (:func:`parse_running_sum_line`)."""
    return f"{t[0]},{t[1]},{t[2]}"


def parse_running_sum_line(line: str) -> tuple[str, int, int]:
    """A Kafka value written by the harness back as the record."""
    k, total, count = line.split(",")
    return (k, int(total), int(count))


def kafka_sink(bootstrap: str, topic: str, guarantee: str) -> Any:
    """The harness's KafkaSink to ``topic`` with ``guarantee`` (``exactly_once``,
    ``at_least_once``), as a PyFlink program builds it."""
    from pyspark_datastream import (
        DeliveryGuarantee,
        KafkaRecordSerializationSchema,
        KafkaSink,
        SimpleStringSchema,
    )

    builder = (KafkaSink.builder().set_bootstrap_servers(bootstrap)
               .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic(topic)
                                      .set_value_serialization_schema(SimpleStringSchema())
                                      .build())
               .set_delivery_guarantee(DeliveryGuarantee[guarantee.upper()]))
    if guarantee == "exactly_once":
        builder = builder.set_transactional_id_prefix(f"harness-{topic}")
    return builder.build()


def start(src: str, ckpt: str, out: str, backend: str, log: str, sink: str = "parquet",
          extra_env: Optional[dict[str, str]] = None,
          delta_writer: str = "delta-rs", mapping: str = "auto") -> subprocess.Popen:
    """Start the job as a child process in its own process group (driver + JVM + workers);
    ``mapping``: its ``execution.streaming.query-mapping`` (:func:`run_job`)."""
    env = dict(os.environ, **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, env.get("PYTHONPATH", "")) if p)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    with open(log, "ab") as f:
        return subprocess.Popen(
            [sys.executable, os.path.join(HERE, "streaming_harness.py"), "--src", src,
             "--ckpt", ckpt, "--out", out, "--backend", backend, "--sink", sink,
             "--delta-writer", delta_writer, "--mapping", mapping],
            stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def kill(proc: subprocess.Popen, after_s: float) -> Optional[int]:
    """SIGKILL the child's whole process group after ``after_s`` seconds unless it ended
    first; its exit code when it ended by itself, else None."""
    deadline = time.time() + after_s
    while time.time() < deadline:
        code = proc.poll()
        if code is not None:
            return code
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    return None


def kill_after_batch(proc: subprocess.Popen, out: str, batch: int, extra_s: float,
                     timeout_s: float = 240) -> Optional[int]:
    """SIGKILL the child ``extra_s`` seconds after the sink committed micro-batch ``batch``
    (a moment inside the run, wherever the next batch is); its exit code if it ended first."""
    marker = os.path.join(out, "_spark_metadata", str(batch))
    deadline = time.time() + timeout_s
    while not os.path.exists(marker) and time.time() < deadline:
        code = proc.poll()
        if code is not None:
            return code
        time.sleep(0.05)
    return kill(proc, extra_s)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--src", "--ckpt", "--out", "--backend"):
        parser.add_argument(name, required=True)
    parser.add_argument("--sink", default="parquet", choices=[
        "parquet", "delta", "delta-fanout", "delta-relay", "kafka-exactly_once",
        "kafka-at_least_once", "kafka-fanout"])
    parser.add_argument("--delta-writer", default="delta-rs", choices=["delta-rs", "spark"])
    parser.add_argument("--mapping", default="auto")  # run_job: one, or one per backend
    a = parser.parse_args()
    import streaming_harness  # the job's functions under their module name, not __main__'s

    streaming_harness.run_job(a.src, a.ckpt, a.out, a.backend, a.sink, a.delta_writer,
                              a.mapping)
