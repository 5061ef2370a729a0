"""A STREAMING job writing to a KafkaSink, killed between its Kafka writes and Spark's commit
of the micro-batch, then restarted over the same checkpoint in the test's process.

The job (``streaming_harness``, its own driver, JVM and Python workers) keeps a running sum
per key over a Parquet file stream read one file per micro-batch and writes one line per
record. It is armed (``faults``: ``kafka.after-write``) to SIGKILL its whole process group
right after its sinks wrote micro-batch 1, before Spark logged the batch, so the restart runs
batch 1 again and then batch 2. What a ``read_committed`` consumer finally reads is compared
with :func:`streaming_harness.expected_output`, computed in plain Python from the input:

* ``EXACTLY_ONCE``: every record exactly once (the rerun of batch 1 finds each partition's
  transaction committed and writes nothing);
* ``AT_LEAST_ONCE``: no record lost, and batch 1's records twice (what the transactions
  prevent).

Both mappings (``execution.streaming.query-mapping``): ``per-stage``, what ``auto`` runs for
this job of one keyed stage and one sink (``applyInPandasWithState``), with an EXACTLY_ONCE
sink; and ``one-query`` (``transformWithStateInPandas``), the job writing one sink of each
guarantee from its one query (``--sink kafka-fanout``), so the same rerun of batch 1 writes
the AT_LEAST_ONCE topic again and the EXACTLY_ONCE one not.
"""

from __future__ import annotations

import glob
import os
import random
import signal
import uuid
from collections import Counter

import pytest
import streaming_harness as harness
from faults import KILL_AT_ENV
from kafka_broker import consume_all


def _random_files(rng: random.Random, n: int) -> list[list[tuple[str, int]]]:
    return [[(rng.choice("pqrstuvw"), rng.randint(1, 99)) for _ in range(rng.randint(4, 12))]
            for _ in range(n)]


def _run(src: str, ckpt: str, out: str, backend: str, log: str, sink: str, mapping: str,
         extra_env: dict[str, str]) -> int:
    proc = harness.start(src, ckpt, out, backend, log, sink=sink, extra_env=extra_env,
                         mapping=mapping)
    try:
        return proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _log_tail(log: str) -> str:
    with open(log, encoding="utf-8", errors="replace") as f:
        return f.read()[-3000:]


def _records(broker, topic: str) -> list[tuple[str, int, int]]:
    return [harness.parse_running_sum_line(v)
            for v in consume_all(broker.bootstrap_servers, topic, isolation="read_committed")]


def _commit_log(ckpt: str) -> list[int]:
    """The micro-batches Spark's commit log holds in the job's one query's checkpoint (both
    mappings run this job as one query)."""
    (commits,) = glob.glob(os.path.join(ckpt, "**", "checkpoint", "commits"), recursive=True)
    return sorted(int(n) for n in os.listdir(commits) if n.isdigit())


@pytest.mark.parametrize("mapping,sink,backend", [
    ("per-stage", "kafka-exactly_once", "hashmap"),
    ("one-query", "kafka-fanout", "rocksdb"),  # a sink of each guarantee, in the one query
])
def test_job_killed_after_its_kafka_write_then_restarted(kafka_broker, spark, tmp_path, mapping,
                                                         sink, backend):
    rng = random.Random(f"kafka-kill-{sink.removeprefix('kafka-')}")
    files = _random_files(rng, 3)  # batch 0 committed, the kill after writing 1, then 1 and 2
    topic = f"sums-{uuid.uuid4().hex[:8]}"
    guarantees = (harness.GUARANTEES if sink == "kafka-fanout"
                  else (sink.removeprefix("kafka-"),))
    topics = {g: harness.guarantee_topic(topic, g) if len(guarantees) > 1 else topic
              for g in guarantees}
    for name in topics.values():
        kafka_broker.create_topic(name, 2)
    src, ckpt, log = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "driver.log")
    out = f"{kafka_broker.bootstrap_servers}/{topic}"
    harness.write_input(src, files)

    # each sink writes once per micro-batch: the kill follows the last sink's write of batch 1
    code = _run(src, ckpt, out, backend, log, sink, mapping,
                {KILL_AT_ENV: f"kafka.after-write:{2 * len(topics)}"})
    assert code == -signal.SIGKILL, _log_tail(log)
    # batches 0 and 1 reached Kafka before the kill, and Spark logged batch 0 only
    for name in topics.values():
        assert sorted(_records(kafka_broker, name)) == sorted(harness.expected_output(files[:2]))
    assert _commit_log(ckpt) == [0]

    # restarted over the same checkpoint (same job name and root), in this process
    harness.run_kafka_job(spark, src, ckpt, out, backend, sink, mapping)
    assert _commit_log(ckpt)[-1] == 2  # ran batch 1 again, then 2
    expected = harness.expected_output(files)
    for guarantee, name in topics.items():
        got = _records(kafka_broker, name)
        if guarantee == "exactly_once":
            assert sorted(got) == sorted(expected), guarantee
            assert harness.exactly_once_violations(got, files) == []
        else:
            batch_1 = Counter(harness.expected_output(files[:2])) - Counter(
                harness.expected_output(files[:1]))
            assert not Counter(expected) - Counter(got)  # none lost
            assert Counter(got) - Counter(expected) == batch_1  # the rerun batch, written again
