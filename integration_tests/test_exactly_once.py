"""Exactly-once keyed state in STREAMING, heap and RocksDB backends.

* Fault injection: (a) inside the keyed operator, after the user function updated its
  state for the trigger element and before the micro-batch committed; (b) after the
  keyed operator wrote its new state version (a downstream operator of the same
  micro-batch fails). Several batch numbers. Then a restart from the checkpoint.
* The driver process, running the job once per backend, killed with SIGKILL at a random
  moment (``streaming_harness``), then restarted from the checkpoints until it finishes; the
  heap backend's query on the ``per-stage`` mapping, RocksDB's on ``one-query``.
In every case the final state and the results equal an uninterrupted run (for the kill
test: up to the order of files that a restart merges into one micro-batch; see
``streaming_harness.exactly_once_violations``).
"""

from __future__ import annotations

import os
import random

import pytest
import streaming_harness as harness
from pyspark_datastream import (
    JobExecutionError,
    KeyedProcessFunction,
    MapFunction,
    Types,
    ValueStateDescriptor,
)

TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
FILES = [[("a", 1), ("b", 10)], [("a", 100), ("b", 20), ("c", 5)],
         [("c", 7), ("a", 1_000), ("b", 30)]]


class SumFailingInside(KeyedProcessFunction):
    """Running sum per key; raises for value ``trigger`` while ``marker`` exists, AFTER
    it updated its state for that element (the batch must not commit it)."""

    def __init__(self, marker: str, trigger: int) -> None:
        self.marker = marker
        self.trigger = trigger

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        count = (self.count.value() or 0) + 1
        self.total.update(total)
        self.count.update(count)
        if value[1] == self.trigger and os.path.exists(self.marker):
            raise RuntimeError("injected failure inside the keyed operator")
        yield (value[0], total, count)


class FailAfter(MapFunction):
    """Downstream of the keyed operator, same micro-batch: fails on ``trigger``."""

    def __init__(self, marker: str, trigger: int) -> None:
        self.marker = marker
        self.trigger = trigger

    def map(self, value):
        if value[1] >= self.trigger and os.path.exists(self.marker):
            raise RuntimeError("injected failure after the keyed operator")
        return value


@pytest.mark.parametrize("backend,where,trigger", [
    ("hashmap", "inside", 100),      # batch 1
    ("rocksdb", "inside", 1_000),    # batch 2 (the last)
    ("rocksdb", "after", 101),       # batch 1 (a's running sum 101)
])
def test_failure_before_commit_then_restart_equals_uninterrupted_run(
        spark, env_factory, tmp_path, backend, where, trigger):
    src = str(tmp_path / "in")
    harness.write_input(src, FILES)
    marker = str(tmp_path / "armed")
    open(marker, "w").close()

    def run():
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                        "state.backend.type": backend})
        df = spark.readStream.schema(harness.SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
        ks = env.from_dataframe(df).key_by(lambda r: r[0])
        if where == "inside":
            ds = ks.process(SumFailingInside(marker, trigger), output_type=TRIPLE)
        else:
            ds = ks.process(harness.RunningSum(), output_type=TRIPLE).map(
                FailAfter(marker, trigger), output_type=TRIPLE)
        return list(ds.execute_and_collect("exactly-once"))

    with pytest.raises(JobExecutionError, match=f"injected failure {where}"):
        run()
    os.remove(marker)
    resumed = run()
    expected = harness.expected_output(FILES)
    # the failed batch and what follows are re-run from the last committed state: no
    # element counted twice (count == position), no element lost
    assert set(resumed) <= set(expected)
    tail_start = len(expected) - len(resumed)
    assert 0 < len(resumed) < len(expected)  # the run resumed after committed batches
    assert sorted(resumed) == sorted(expected[tail_start:])
    last = {}
    for k, total, count in resumed:
        last[k] = (total, count)
    final = {"a": (1_101, 3), "b": (60, 3), "c": (12, 2)}
    assert last == {k: final[k] for k in last} and "a" in last


#: the kill test's driver runs one query per state backend, each on a mapping of its own
#: (``execution.streaming.query-mapping``): the same random kill hits ``per-stage``
#: (``applyInPandasWithState``, what ``auto`` runs for this job) and ``one-query``
#: (``transformWithStateInPandas``) at once
QUERIES = {"hashmap": "per-stage", "rocksdb": "one-query"}


@pytest.mark.slow  # one driver JVM killed, then the restart in this process
@pytest.mark.parametrize("queries", [QUERIES], ids=lambda q: "+".join(
    f"{backend}-{mapping}" for backend, mapping in q.items()))
def test_driver_killed_at_random_moments_then_restarted_equals_uninterrupted_run(
        spark, tmp_path, queries):
    rng = random.Random("kill-driver")
    files = [[(rng.choice("pqrstu"), rng.randint(1, 99)) for _ in range(rng.randint(1, 6))]
             for _ in range(7)]
    src, ckpt, out = (str(tmp_path / d) for d in ("in", "ckpt", "out"))
    harness.write_input(src, files)
    log = str(tmp_path / "driver.log")
    backends, mappings = list(queries), list(queries.values())
    # one driver runs the job once per backend (a query each, at once, each on its
    # mapping); it is killed at a random moment after a random committed micro-batch of one
    proc = harness.start(src, ckpt, out, ",".join(backends), log, mapping=",".join(mappings))
    watched = os.path.join(out, rng.choice(backends))
    code = harness.kill_after_batch(proc, watched, batch=rng.randint(0, 1),
                                    extra_s=rng.uniform(0.0, 2.0))
    assert code is None, open(log).read()[-3000:]  # it really was killed mid-way
    done = {b: harness.committed_batches(os.path.join(out, b)) for b in backends}
    assert all(n < len(files) for n in done.values()), done  # ... in each query
    # restarted from the same checkpoints, in this process, until each query finishes
    for query in harness.start_file_sink_queries(spark, src, ckpt, out, backends, mappings):
        query.awaitTermination()
    for backend in backends:
        # Spark's file sink lists only committed files (its metadata log)
        got = [tuple(r) for r in spark.read.parquet(os.path.join(out, backend)).collect()]
        assert harness.exactly_once_violations(got, files) == [], (backend, sorted(got))


def test_exactly_once_check_accepts_reordered_files_and_rejects_loss_or_duplicates():
    files = [[("a", 1), ("b", 2)], [("a", 10)], [("a", 100), ("b", 20)]]
    exact = harness.expected_output(files)
    assert harness.exactly_once_violations(exact, files) == []
    # files 1 and 2 in one micro-batch, file 2's row first: still exactly once
    swapped = [("a", 1, 1), ("b", 2, 1), ("a", 101, 2), ("a", 111, 3), ("b", 22, 2)]
    assert harness.exactly_once_violations(swapped, files) == []
    assert harness.exactly_once_violations(exact[:-1], files) == ["b: counts [1] for 2 inputs"]
    assert harness.exactly_once_violations(exact + [("a", 11, 2)], files) == [
        "a: counts [1, 2, 2, 3] for 3 inputs"]
    # an element applied to stale state (its predecessor's update lost)
    stale = [("a", 1, 1), ("b", 2, 1), ("a", 10, 2), ("a", 110, 3), ("b", 22, 2)]
    assert harness.exactly_once_violations(stale, files) == [
        "a: increments [1, 9, 100] are not the inputs [1, 10, 100]"]
