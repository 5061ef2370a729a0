"""State TTL on real Spark: expiry between STREAMING micro-batches (restarts of a file-stream
job, heap and RocksDB), and savepoints of TTL state (timestamps kept; a TTL change refused).

TTL is processing time: a STREAMING micro-batch processes a key group at one processing
time, so nothing expires inside a batch; between runs the test sleeps longer than the short
TTL, so the expectations do not depend on how long Spark takes. Expected values follow
Flink's documented semantics (NeverReturnExpired, OnCreateAndWrite: an expired value reads
as absent; a value written less than the TTL ago is kept, across restarts too).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from deltalake import DeltaTable
from helpers import KV_SCHEMA, add_file, entry_rows
from pyspark_datastream import (
    IncompatibleStateError,
    KeyedProcessFunction,
    ListStateDescriptor,
    StateTtlConfig,
    Time,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.savepoint import Savepoint
from pyspark_datastream.savepoint.inspection import inspect_savepoint
from pyspark_datastream.state_store.serializers.ttl import TTL_TIMESTAMP

SHORT_MS = 1_500
LONG_MS = 600_000
EVENT = Types.TUPLE([Types.STRING(), Types.LONG()])


def _ttl(ms: int) -> StateTtlConfig:
    return StateTtlConfig.new_builder(Time.milliseconds(ms)).build()


def _descriptors(with_ttl: bool = True) -> tuple[Any, Any, Any]:
    short = ValueStateDescriptor("short", Types.LONG())
    long = ValueStateDescriptor("long", Types.LONG())
    recent = ListStateDescriptor("recent", Types.LONG())
    if with_ttl:
        short.enable_time_to_live(_ttl(SHORT_MS))
        long.enable_time_to_live(_ttl(LONG_MS))
        recent.enable_time_to_live(_ttl(SHORT_MS))
    return short, long, recent


class Remember(KeyedProcessFunction):
    """Emits (key, value, short-TTL value, long-TTL value, short-TTL list length) as they were
    before the element, then remembers the element in all three."""

    def __init__(self, with_ttl: bool = True) -> None:
        self.with_ttl = with_ttl

    def open(self, runtime_context: Any) -> None:
        short, long, recent = _descriptors(self.with_ttl)
        self.short = runtime_context.get_state(short)
        self.long = runtime_context.get_state(long)
        self.recent = runtime_context.get_list_state(recent)

    def process_element(self, value: Any, ctx: Any) -> Any:
        key, v = value
        yield key, v, self.short.value(), self.long.value(), len(list(self.recent.get()))
        self.short.update(v)
        self.long.update(v)
        self.recent.add(v)


def _per_key(records: list[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for record in records:
        out.setdefault(record[0], []).append(record)
    return out


def _sleep_past_short_ttl(since: float) -> None:
    time.sleep(max(0.0, since + SHORT_MS / 1000 + 0.5 - time.time()))


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_state_expires_between_micro_batches_of_a_file_stream(spark, env_factory, tmp_path,
                                                              backend):
    src = str(tmp_path / "in")
    config = {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
              "state.backend.type": backend}

    def run() -> dict[str, list[tuple[Any, ...]]]:
        env = env_factory("STREAMING", config)
        df = spark.readStream.schema(KV_SCHEMA).parquet(src)
        ds = env.from_dataframe(df).key_by(lambda r: r[0]).process(Remember()).uid("remember")
        return _per_key(list(ds.execute_and_collect("ttl")))

    add_file(src, [("a", 1), ("b", 2), ("a", 3)], "f1")
    first = run()
    first_done = time.time()
    # one micro-batch, one processing time: nothing expires inside it
    assert first == {"a": [("a", 1, None, None, 0), ("a", 3, 1, 1, 1)],
                     "b": [("b", 2, None, None, 0)]}
    _sleep_past_short_ttl(first_done)
    add_file(src, [("a", 4), ("c", 5), ("a", 6)], "f2")
    second = run()  # a restart: the state comes from the checkpoint, timestamps with it
    # the short TTL passed: "short" and every "recent" element expired; "long" is kept
    assert second == {"a": [("a", 4, None, 3, 0), ("a", 6, 4, 4, 1)],
                      "c": [("c", 5, None, None, 0)]}


def _job(env: Any, data: list[tuple[str, int]], function: Any) -> Any:
    return (env.from_collection(data, EVENT).key_by(lambda r: r[0], key_type=Types.STRING())
            .process(function).uid("remember"))


OUT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])


def _run_to_delta(env: Any, stream: Any, out: str, name: str, savepoint: str | None = None) -> Any:
    """Run with a Delta sink (a savepoint needs ``execute``); the records, None as -1."""
    stream.map(lambda r: tuple(-1 if v is None else v for v in r), output_type=OUT
               ).sink_to_delta(out)
    env.execute(name, savepoint_path=savepoint)
    return sorted(tuple(r.values()) for r in DeltaTable(out).to_pyarrow_table().to_pylist())


def _stamps(spark: Any, path: str) -> dict[tuple[bytes, str], int]:
    """(key bytes, state name) -> last-access timestamp of each value entry of "remember"."""
    return {(row[2], row[3]): TTL_TIMESTAMP.unpack_from(row[6])[0]
            for row in entry_rows(spark, path, "remember") if row[3] in ("short", "long")}


def test_savepoint_round_trip_keeps_timestamps_and_refuses_a_ttl_change(
        spark, env_factory, tmp_path):
    sp_batch, sp_stream = str(tmp_path / "sp-batch"), str(tmp_path / "sp-stream")
    started = int(time.time() * 1000)
    env = env_factory("BATCH")
    _run_to_delta(env, _job(env, [("a", 1), ("b", 2), ("a", 3)], Remember()),
                  str(tmp_path / "out-batch"), "write", sp_batch)
    written = time.time()
    ended = int(written * 1000)
    # every value entry starts with its last-access time: when the BATCH run wrote it
    stamps = _stamps(spark, sp_batch)
    assert len(stamps) == 4 and all(started <= t <= ended for t in stamps.values())
    assert inspect_savepoint(sp_batch)["format_version"] == 2
    loaded = Savepoint.load(sp_batch, spark)
    short, long, _ = _descriptors()
    rows = loaded.read_keyed_state("remember", long).collect()
    assert sorted((r["key"], r["long"]) for r in rows) == [("a", 3), ("b", 2)]

    # a TTL change is incompatible state, refused before anything runs (both directions)
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt-x"),
                                    "execution.savepoint.path": sp_batch})
    with pytest.raises(IncompatibleStateError,
                       match="operator 'remember', state '(short|long|recent)'.*time-to-live"):
        _run_to_delta(env, _job(env, [("a", 9)], Remember(with_ttl=False)),
                      str(tmp_path / "out-x"), "plain")
    sp_plain = str(tmp_path / "sp-plain")
    env = env_factory("BATCH")
    _run_to_delta(env, _job(env, [("a", 1)], Remember(with_ttl=False)),
                  str(tmp_path / "out-plain"), "plain", sp_plain)
    env = env_factory("BATCH", {"execution.savepoint.path": sp_plain})
    with pytest.raises(IncompatibleStateError,
                       match="program's descriptor enables time-to-live but the savepoint"):
        _run_to_delta(env, _job(env, [("a", 9)], Remember()), str(tmp_path / "out-y"), "ttl")

    # STREAMING restore after the short TTL: short-TTL state expired, long-TTL state kept
    _sleep_past_short_ttl(written)
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt"),
                                    "execution.savepoint.path": sp_batch})
    out = _run_to_delta(env, _job(env, [("a", 10), ("c", 11)], Remember()),
                        str(tmp_path / "out-stream"), "restore", sp_stream)
    assert out == [("a", 10, -1, 3, 0), ("c", 11, -1, -1, 0)]
    # its savepoint keeps the timestamps of the values nobody touched since ("b")
    again = _stamps(spark, sp_stream)
    b_key = Types.STRING().key_serializer().serialize("b")
    for state in ("short", "long"):
        assert again[(b_key, state)] == stamps[(b_key, state)]
    a_key = Types.STRING().key_serializer().serialize("a")
    assert again[(a_key, "long")] > ended  # rewritten by the STREAMING run
