"""Broadcast state on Spark, BATCH and STREAMING: rules broadcast to events keyed by user.

Expected outputs come from :func:`model`, a plain-Python statement of Flink's semantics
(rules in force when an event is processed; BATCH: every broadcast record before any
event; STREAMING here: a micro-batch's broadcast records before its events), never
from this project's output. Events carry event times so each user's events are
processed in time order in both modes (BATCH sorts each key by time).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from helpers import env_for
from pyspark_datastream import (
    BroadcastProcessFunction,
    BroadcastStateError,
    Duration,
    GraphBuildError,
    KeyedBroadcastProcessFunction,
    MapStateDescriptor,
    OutputTag,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)
from pyspark_datastream.savepoint import Savepoint

RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
SEEN = ValueStateDescriptor("seen", Types.LONG())
ACKS = OutputTag("acks")
OUT_TYPE = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG(), Types.LONG()])
SCHEMA = "kind string, name string, amount long, ts long"


class RuleMatcher(KeyedBroadcastProcessFunction):
    """A rule ``(name, threshold)`` sets a rule (threshold < 0 removes it; ``reset`` clears
    every user's event count through apply_to_keyed_state); an event ``(user, amount, ts)``
    emits ``(user, rule, amount, events seen by the user)`` for each rule it meets."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_state(SEEN)

    def process_broadcast_element(self, value, ctx):
        name, threshold = value
        rules = ctx.get_broadcast_state(RULES)
        if name == "reset":
            ctx.apply_to_keyed_state(SEEN, lambda user, state: state.clear())
        elif threshold < 0:
            rules.remove(name)
        else:
            rules.put(name, threshold)
        ctx.output(ACKS, name)

    def process_element(self, value, ctx):
        user, amount, _ts = value
        seen = (self.seen.value() or 0) + 1
        self.seen.update(seen)
        for name, threshold in sorted(ctx.get_broadcast_state(RULES).items()):
            if amount >= threshold:
                yield (user, name, amount, seen)


class AckingMatcher(RuleMatcher):
    """Also emits ``("ack", rule, 0, 0)`` for every rule it receives."""

    def process_broadcast_element(self, value, ctx):
        super().process_broadcast_element(value, ctx)
        yield ("ack", value[0], 0, 0)


def model(batches: list[tuple[list[Any], list[Any]]], rules: dict[str, int] | None = None,
          seen: dict[str, int] | None = None) -> list[tuple[str, str, int, int]]:
    """Each batch's rules in order, then its events in time order (per user that is the
    order both modes process them in)."""
    rules = {} if rules is None else rules
    seen = {} if seen is None else seen
    out = []
    for rule_batch, event_batch in batches:
        for name, threshold in rule_batch:
            if name == "reset":
                seen.clear()
            elif threshold < 0:
                rules.pop(name, None)
            else:
                rules[name] = threshold
        for user, amount, _ts in sorted(event_batch, key=lambda e: e[2]):
            seen[user] = seen.get(user, 0) + 1
            out += [(user, n, amount, seen[user]) for n, t in sorted(rules.items()) if amount >= t]
    return sorted(out)


RULES_A = [("big", 100), ("small", 10), ("reset", 0), ("small", 20), ("tiny", 1), ("tiny", -1)]
EVENTS_A = [("ann", 5, 1_000), ("bob", 50, 2_000), ("ann", 150, 3_000), ("cat", 20, 4_000),
            ("bob", 15, 5_000), ("ann", 20, 6_000), ("dan", 99, 7_000), ("dan", 100, 8_000)]
RULES_B = [("huge", 1_000), ("small", 60)]
EVENTS_B = [("ann", 70, 10_000), ("eve", 1_500, 11_000), ("bob", 100, 12_000)]


def _strategy() -> WatermarkStrategy:
    return (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
            .with_timestamp_assigner(lambda e, _: e[2]))


def _job(env: Any, rules: list[Any], events: list[Any], function: Any = None) -> Any:
    broadcast = env.from_collection(rules).broadcast(RULES)
    return (env.from_collection(events).assign_timestamps_and_watermarks(_strategy())
            .key_by(lambda e: e[0], key_type=Types.STRING())
            .connect(broadcast).process(function or RuleMatcher(), output_type=OUT_TYPE)
            .uid("rules"))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_rules_applied_to_keyed_events(env_factory, tmp_path, mode):
    """BATCH: every rule (and the reset, before any event: a no-op) before any event.
    STREAMING: both bounded inputs arrive in one micro-batch, whose rules come first: the
    same result. What process_broadcast_element emits comes once per parallel instance
    (parallelism 2), in both modes."""
    env = env_for(env_factory, tmp_path, mode, "rules")
    out = sorted(_job(env, RULES_A, EVENTS_A, AckingMatcher())
                 .execute_and_collect(f"broadcast-{mode}"))
    got = [r for r in out if r[0] != "ack"]
    assert got == model([(RULES_A, EVENTS_A)])
    assert ("ann", "big", 150, 2) in got and not any(r[1] == "tiny" for r in got)
    assert sorted(r[1] for r in out if r[0] == "ack") == sorted([n for n, _ in RULES_A] * 2)


def _write_files(folder: str, files: list[list[tuple[str, str, int, int]]], start: int) -> None:
    """One Parquet file per list, strictly increasing mtimes (file order = arrival order)."""
    os.makedirs(folder, exist_ok=True)
    for i, rows in enumerate(files, start):
        path = os.path.join(folder, f"f{i:03d}.parquet")
        columns = list(zip(*rows))
        pq.write_table(pa.table({"kind": list(columns[0]), "name": list(columns[1]),
                                 "amount": pa.array(columns[2], pa.int64()),
                                 "ts": pa.array(columns[3], pa.int64())}), path)
        os.utime(path, (1_700_000_000 + 10 * i,) * 2)


def _file_job(env: Any, spark: Any, src: str) -> Any:
    records = env.from_dataframe(
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src))
    rules = records.filter(lambda r: r[0] == "rule").map(lambda r: (r[1], r[2]))
    events = (records.filter(lambda r: r[0] == "event").map(lambda r: (r[1], r[2], r[3]))
              .assign_timestamps_and_watermarks(_strategy()))
    return (events.key_by(lambda e: e[0], key_type=Types.STRING())
            .connect(rules.broadcast(RULES)).process(RuleMatcher(), output_type=OUT_TYPE)
            .uid("rules"))


def _batches(files: list[list[tuple[str, str, int, int]]]) -> list[tuple[list[Any], list[Any]]]:
    return [([(n, a) for k, n, a, _ in rows if k == "rule"],
             [(n, a, t) for k, n, a, t in rows if k == "event"]) for rows in files]


def test_streaming_micro_batches_and_a_restart_keep_the_broadcast_state(
        env_factory, spark, tmp_path):
    """A file per micro-batch: rules first, events later; a micro-batch mixing both applies
    its rules (and a reset of every user's count) before its events; a restart of the job
    resumes with the rules and counts of its committed state."""
    src = str(tmp_path / "src")
    first = [
        [("rule", "big", 100, 0), ("rule", "small", 10, 0), ("rule", "tiny", 1, 0)],
        [("event", "ann", 5, 1_000), ("event", "bob", 50, 1_100), ("event", "ann", 150, 1_200),
         ("event", "cat", 12, 1_300)],
        # the rules and the reset below apply before every event of this micro-batch
        [("event", "bob", 20, 2_000), ("rule", "small", 30, 0), ("event", "ann", 30, 2_100),
         ("rule", "tiny", -1, 0), ("rule", "reset", 0, 0), ("event", "cat", 100, 2_200)],
        [("event", "ann", 35, 3_000), ("event", "bob", 29, 3_100)],
    ]
    later = [
        [("rule", "big", 40, 0), ("event", "dan", 45, 4_000), ("event", "ann", 45, 4_100)],
        [("event", "bob", 100, 5_000), ("event", "dan", 10, 5_100)],
    ]
    _write_files(src, first, 0)
    rocks = {"state.backend.type": "rocksdb"}  # keyed state in RocksDB, broadcast beside it
    env = env_for(env_factory, tmp_path, "STREAMING", "files", **rocks)
    run1 = sorted(_file_job(env, spark, src).execute_and_collect("broadcast-files"))
    rules: dict[str, int] = {}
    seen: dict[str, int] = {}
    assert run1 == model(_batches(first), rules, seen)
    assert ("ann", "small", 30, 1) in run1  # small is 30 and ann's count was reset

    _write_files(src, later, len(first))
    env = env_for(env_factory, tmp_path, "STREAMING", "files", **rocks)
    run2 = sorted(_file_job(env, spark, src).execute_and_collect("broadcast-files"))
    assert run2 == model(_batches(later), rules, seen)
    assert ("ann", "big", 45, 3) in run2 and ("ann", "small", 45, 3) in run2


def _run_to_delta(env: Any, stream: Any, out: str, job: str, savepoint: str | None = None):
    stream.sink_to_delta(out)
    env.execute(job, savepoint_path=savepoint)
    return sorted(tuple(r.values()) for r in DeltaTable(out).to_pyarrow_table().to_pylist())


def _entries(spark: Any, path: str) -> list[tuple[Any, ...]]:
    df = Savepoint.load(path, spark).entries("rules").select(
        "kind", "key_group", "key", "state_name", "user_key", "value")
    return sorted(tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r)
                  for r in df.collect())


def test_savepoints_carry_the_broadcast_state_between_modes(env_factory, spark, tmp_path):
    """BATCH and STREAMING (RocksDB) savepoints of the same input hold the same rows
    (broadcast state as operator state: kind 'broadcast', key group -1); restoring the BATCH
    one into STREAMING (RocksDB) and into BATCH continues with its rules and counts."""
    sp_batch, sp_stream = str(tmp_path / "sp-batch"), str(tmp_path / "sp-stream")
    env = env_for(env_factory, tmp_path, "BATCH", "a-batch")
    out_a = _run_to_delta(env, _job(env, RULES_A, EVENTS_A), str(tmp_path / "a-batch"), "a",
                          sp_batch)
    rules: dict[str, int] = {}
    seen: dict[str, int] = {}
    assert out_a == model([(RULES_A, EVENTS_A)], rules, seen)
    rocks = {"state.backend.type": "rocksdb"}
    env = env_for(env_factory, tmp_path, "STREAMING", "a-stream", **rocks)
    _run_to_delta(env, _job(env, RULES_A, EVENTS_A), str(tmp_path / "a-stream"), "a", sp_stream)

    rows = _entries(spark, sp_batch)
    assert rows == _entries(spark, sp_stream)
    operator_rows = [r for r in rows if r[0] == "broadcast"]
    assert {(r[1], r[2], r[3]) for r in operator_rows} == {(-1, b"", "rules")}
    loaded = Savepoint.load(sp_stream, spark)
    assert loaded.read_broadcast_state("rules", RULES) == rules == {"big": 100, "small": 20}
    assert [m.name for m in loaded.metadata().operator("rules").broadcast_states] == ["rules"]
    counts = loaded.read_keyed_state("rules", SEEN).collect()
    assert sorted((r["key"], r["seen"]) for r in counts) == sorted(seen.items())

    expected_b = model([(RULES_B, EVENTS_B)], dict(rules), dict(seen))
    assert ("ann", "small", 70, 4) in expected_b and ("eve", "huge", 1_500, 1) in expected_b
    for mode in ("STREAMING", "BATCH"):
        env = env_for(env_factory, tmp_path, mode, f"b-{mode}",
                   **{"execution.savepoint.path": sp_batch}, **(rocks if mode == "STREAMING" else {}))
        out_b = _run_to_delta(env, _job(env, RULES_B, EVENTS_B), str(tmp_path / f"b-{mode}"),
                              f"b-{mode}")
        assert out_b == expected_b, mode


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_broadcast_input_from_a_keyed_stage(env_factory, tmp_path, mode):
    """Rules reduced per name (the highest threshold) by a keyed stage before the broadcast:
    STREAMING runs that stage in its own query and reads its output back; BATCH emits each
    name's final value. Either way the events see the highest thresholds."""
    env = env_for(env_factory, tmp_path, mode, "reduced")
    raw = [("big", 100), ("small", 10), ("big", 150), ("small", 5)]
    rules = env.from_collection(raw).key_by(lambda r: r[0]).reduce(lambda a, b: max(a, b))
    out = sorted(env.from_collection(EVENTS_A).assign_timestamps_and_watermarks(_strategy())
                 .key_by(lambda e: e[0], key_type=Types.STRING())
                 .connect(rules.broadcast(RULES)).process(RuleMatcher(), output_type=OUT_TYPE)
                 .execute_and_collect(f"reduced-{mode}"))
    assert out == model([([("big", 150), ("small", 10)], EVENTS_A)])


class Enrich(BroadcastProcessFunction):
    NAMES = MapStateDescriptor("names", Types.STRING(), Types.STRING())

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(self.NAMES)[value[0]] = value[1]

    def process_element(self, value, ctx):
        yield (value, ctx.get_broadcast_state(self.NAMES).get(value))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_non_keyed_broadcast_process_function(env_factory, tmp_path, mode):
    env = env_for(env_factory, tmp_path, mode, "enrich")
    names = env.from_collection([("a", "Alice"), ("b", "Bob"), ("a", "Ann")])
    codes = env.from_collection(["a", "b", "c", "a", "b"] * 3)
    out = sorted(codes.connect(names.broadcast(Enrich.NAMES)).process(Enrich())
                 .execute_and_collect(f"enrich-{mode}"))
    # every name before any code (BATCH); one micro-batch, names first (STREAMING)
    final = {"a": "Ann", "b": "Bob"}
    assert out == sorted((c, final.get(c)) for c in ["a", "b", "c", "a", "b"] * 3)


class Writes(RuleMatcher):
    def process_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put("sneaky", 0)
        return None


def test_a_write_in_process_element_fails_the_job_naming_operator_and_element(env_factory):
    env = env_factory("BATCH")
    stream = (env.from_collection([("ann", 1, 5)]).key_by(lambda e: e[0])
              .connect(env.from_collection([("big", 1)]).broadcast(RULES)).process(Writes()))
    with pytest.raises(BroadcastStateError, match=r"operator 'Writes'.*broadcast state 'rules' "
                                                  r"is read-only in process_element.*\('ann', 1, 5\)"):
        list(stream.execute_and_collect("writes"))


def test_graph_build_errors_name_the_operator_and_value(env_factory):
    env = env_factory("BATCH")
    ds = env.from_collection([1, 2])
    with pytest.raises(GraphBuildError, match="first broadcast state descriptor is None but "
                                              "others are given"):
        ds.broadcast(None, RULES)
    with pytest.raises(GraphBuildError, match="must be MapStateDescriptors, got "
                                              "ValueStateDescriptor"):
        ds.broadcast(RULES, SEEN)
    with pytest.raises(GraphBuildError, match="distinct"):
        ds.broadcast(RULES, MapStateDescriptor("rules", Types.STRING(), Types.STRING()))
    broadcast = ds.broadcast(RULES)
    with pytest.raises(GraphBuildError, match="operator 'RuleMatcher'.*non-keyed stream.*needs a "
                                              "BroadcastProcessFunction.*key_by"):
        ds.connect(broadcast).process(RuleMatcher())
    with pytest.raises(GraphBuildError, match="operator 'Enrich'.*keyed stream.*needs a "
                                              "KeyedBroadcastProcessFunction"):
        ds.key_by(lambda x: x).connect(broadcast).process(Enrich())
