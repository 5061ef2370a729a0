"""A BATCH job's keyed passes write their savepoint entries themselves (real Spark, delta-rs).

Checked against a plain-Python model of the program's state: the keyed state, a state
some keys register lazily, and the pending timers; that the entries written directly
equal the entries of the staged path (Spark splitting them from the records); that a pass
run twice (its stream read by two sinks) or staged (side outputs) writes the same
savepoint; and that a failed job, or a pass that did not finish a partition, leaves no
version and no files behind.
"""

from __future__ import annotations

import os
import random

import pytest
from deltalake import DeltaTable
from pyspark_datastream import (
    Duration,
    JobExecutionError,
    KeyedProcessFunction,
    MapStateDescriptor,
    OutputTag,
    TimestampAssigner,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)
from pyspark_datastream.savepoint import Savepoint, read_metadata

EVENT = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()])  # user, page, ts
OUT = Types.TUPLE([Types.STRING(), Types.LONG()])
OOO = 2_000
DELAY = 5_000
BIG = OutputTag("big", Types.LONG())


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Tally(KeyedProcessFunction):
    """Counts clicks per user; users whose first page starts with "p1" also count pages in a
    MapState registered on first use (not known when the operator opens); a timer DELAY
    after each click emits the count; every 7th click of a user goes to a side output."""

    def open(self, runtime_context):
        self.ctx = runtime_context
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.pages = None

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        if n == 1 and value[1].startswith("p1") or self._tracks():
            if self.pages is None:
                self.pages = self.ctx.get_map_state(
                    MapStateDescriptor("pages", Types.STRING(), Types.LONG()))
            self.pages.put(value[1], (self.pages.get(value[1]) or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[2] + DELAY)
        if n % 7 == 0:
            ctx.output(BIG, n)

    def _tracks(self):
        return self.pages is not None and not self.pages.is_empty()

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), self.count.value())


def _clicks(seed: int, n: int = 3_000, users: int = 150) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    clicks = [(f"u{rng.randrange(users)}", f"p{rng.randrange(30)}", rng.randrange(200_000))
              for _ in range(n)]
    rng.shuffle(clicks)  # out of order: BATCH sorts each key's records by time
    return clicks


def _model(clicks: list[tuple[str, str, int]]) -> tuple[dict, dict, dict]:
    """Per user: the count; the pages map (users whose first click's page starts with
    "p1"); the timers still pending at the final watermark (BATCH fires those <= it)."""
    watermark = max(ts for _, _, ts in clicks) - OOO - 1
    counts: dict[str, int] = {}
    pages: dict[str, dict[str, int]] = {}
    timers: dict[str, set[int]] = {}
    for user, page, ts in sorted(clicks, key=lambda c: (c[0], c[2])):
        counts[user] = counts.get(user, 0) + 1
        if counts[user] == 1 and page.startswith("p1"):
            pages[user] = {}
        if user in pages:
            pages[user][page] = pages[user].get(page, 0) + 1
        if ts + DELAY > watermark:
            timers.setdefault(user, set()).add(ts + DELAY)
    return counts, pages, timers


def _program(env, clicks, side_output: str | None = None):
    ds = (env.from_collection(clicks, type_info=EVENT)
          .assign_timestamps_and_watermarks(
              WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OOO))
              .with_timestamp_assigner(Ts()))
          .key_by(lambda c: c[0], key_type=Types.STRING())
          .process(Tally(), output_type=OUT).uid("tally"))
    if side_output:
        ds.get_side_output(BIG).map(lambda n: n, output_type=Types.LONG()).sink_to_delta(side_output)
    return ds


def _state(spark, sp: str) -> tuple[dict, dict, dict]:
    loaded = Savepoint.load(sp, spark)
    rows = loaded.read_keyed_state(
        "tally", ValueStateDescriptor("count", Types.LONG()),
        MapStateDescriptor("pages", Types.STRING(), Types.LONG())).collect()
    counts = {r["key"]: r["count"] for r in rows if r["count"] is not None}
    pages = {r["key"]: dict(r["pages"]) for r in rows if r["pages"] is not None}
    timers: dict[str, set[int]] = {}
    for r in loaded.read_timers("tally").collect():
        timers.setdefault(r["key"], set()).add(r["timestamp"])
    return counts, pages, timers


def _entry_rows(sp: str) -> list[tuple]:
    table = DeltaTable(sp).to_pyarrow_table()
    rows = [tuple(r.values()) for r in table.to_pylist() if r["kind"] != "metadata"]
    return sorted(rows)


def _only_committed_files(sp: str) -> None:
    """The table folder holds its log and the committed data files, nothing else."""
    committed = {os.path.normpath(uri.removeprefix("file://"))
                 for uri in DeltaTable(sp).file_uris()}
    found = set()
    for dirpath, _dirs, files in os.walk(sp):
        if "_delta_log" in dirpath:
            continue
        found |= {os.path.normpath(os.path.join(dirpath, f)) for f in files}
    assert found == committed


def test_entries_written_by_the_passes_equal_the_model(env_factory, spark, tmp_path):
    clicks = _clicks(seed=5)
    env = env_factory("BATCH")
    env.set_parallelism(3)
    _program(env, clicks).sink_to_delta(str(tmp_path / "out"))
    env.execute("direct", savepoint_path=str(tmp_path / "sp"))

    counts, pages, timers = _model(clicks)
    assert 0 < len(pages) < len(counts)  # the lazy state exists for some users only
    assert _state(spark, str(tmp_path / "sp")) == (counts, pages, timers)
    meta = read_metadata(str(tmp_path / "sp"))
    assert sorted(m.name for m in meta.operators["tally"].states) == [
        "_timer/event", "_timer/processing", "count", "pages"]
    _only_committed_files(str(tmp_path / "sp"))
    # one data file per pass partition (3) and the metadata row's file
    assert len(DeltaTable(str(tmp_path / "sp")).file_uris()) == 4


@pytest.mark.parametrize("variant", ["read_twice", "side_output"])
def test_rerun_or_staged_pass_writes_the_same_savepoint(env_factory, spark, tmp_path, variant):
    clicks = _clicks(seed=9)
    env = env_factory("BATCH")
    _program(env, clicks).sink_to_delta(str(tmp_path / "out"))
    env.execute("direct", savepoint_path=str(tmp_path / "sp"))

    env2 = env_factory("BATCH")
    ds = _program(env2, clicks,
                  side_output=str(tmp_path / "side") if variant == "side_output" else None)
    # read_twice: a map read by two sinks runs the keyed pass once per sink (no staging)
    mapped = ds.map(lambda r: r, output_type=OUT)
    mapped.sink_to_delta(str(tmp_path / "out2"))
    if variant == "read_twice":
        mapped.sink_to_delta(str(tmp_path / "out3"))
    env2.execute("again", savepoint_path=str(tmp_path / "sp2"))

    assert _entry_rows(str(tmp_path / "sp2")) == _entry_rows(str(tmp_path / "sp"))
    _only_committed_files(str(tmp_path / "sp2"))
    assert _state(spark, str(tmp_path / "sp2")) == _model(clicks)


def test_staged_entries_equal_the_entries_written_directly(env_factory, spark, tmp_path,
                                                          monkeypatch):
    """With Spark's Delta writer the entries leave the pass beside its records and are
    split off by Spark: the same rows (that path's own Delta write needs Delta's jars, so
    here only the choice of path is forced; delta-rs still commits)."""
    from pyspark_datastream.translation.batch import savepoint as batch_savepoint

    clicks = _clicks(seed=13)
    env = env_factory("BATCH")
    _program(env, clicks).sink_to_delta(str(tmp_path / "out"))
    env.execute("direct", savepoint_path=str(tmp_path / "sp"))

    monkeypatch.setattr(batch_savepoint, "session_has_delta", lambda spark: True)
    env2 = env_factory("BATCH")
    _program(env2, clicks).sink_to_delta(str(tmp_path / "out2"))
    env2.execute("staged", savepoint_path=str(tmp_path / "sp2"))
    assert _entry_rows(str(tmp_path / "sp2")) == _entry_rows(str(tmp_path / "sp"))


class FailOn(KeyedProcessFunction):
    def process_element(self, value, ctx):
        if value[0] == "u7":
            raise ValueError("bad click for u7")
        yield (value[0], value[1])


def test_failed_job_leaves_no_version_and_no_files(env_factory, spark, tmp_path):
    clicks = _clicks(seed=3)
    sp = str(tmp_path / "sp")
    env = env_factory("BATCH")
    keyed = _program(env, clicks)
    (keyed.key_by(lambda r: r[0], key_type=Types.STRING())
     .process(FailOn(), output_type=OUT).uid("fail")
     .sink_to_delta(str(tmp_path / "out")))
    with pytest.raises(Exception, match="bad click for u7"):
        env.execute("fails", savepoint_path=sp)
    assert not os.path.exists(os.path.join(sp, "_delta_log"))
    assert not os.path.exists(sp) or os.listdir(sp) == []

    env2 = env_factory("BATCH")
    _program(env2, clicks).sink_to_delta(str(tmp_path / "out2"))
    env2.execute("ok", savepoint_path=sp)
    assert DeltaTable(sp).version() == 0
    assert _state(spark, sp) == _model(clicks)


def test_a_partition_that_did_not_finish_fails_the_write(env_factory, spark, tmp_path,
                                                         monkeypatch):
    """The driver finds no report of partition 1's pass (as when its task never ran to the
    end): the job fails naming the operator and the partition, and adds no version."""
    from pyspark_datastream.translation.batch import savepoint as batch_savepoint

    real = batch_savepoint.meta_file_name
    monkeypatch.setattr(batch_savepoint, "meta_file_name",
                        lambda index, subtask: real(index, subtask) + (".x" if subtask == 1 else ""))
    sp = str(tmp_path / "sp")
    env = env_factory("BATCH")
    _program(env, _clicks(seed=4)).sink_to_delta(str(tmp_path / "out"))
    with pytest.raises(JobExecutionError, match=r"operator 'tally' did not run to the end of "
                                                r"partitions \[1\] of 2"):
        env.execute("unfinished", savepoint_path=sp)
    assert not os.path.exists(os.path.join(sp, "_delta_log"))
    assert not os.path.exists(sp) or os.listdir(sp) == []
