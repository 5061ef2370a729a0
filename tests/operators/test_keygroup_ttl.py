"""State TTL across STREAMING micro-batches of one key group (no Spark): the committed state
bytes carry each value's last-access timestamp, and each micro-batch reads the processing
time it is given. Heap (state bytes) and RocksDB (version files, rebuilt on a fresh
executor) give the same outputs.

Expected values follow Flink's TTL semantics: expired once ``last access + ttl <= now``;
OnCreateAndWrite; NeverReturnExpired; ``cleanup_full_snapshot`` leaves expired entries out
of the full snapshot the heap backend commits.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark_datastream.api.time import Time
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.functions import KeyedProcessFunction
from pyspark_datastream.operators.keygroup import KeyGroupRuntime, decode_state
from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import (
    RocksDBKeyGroupStore,
    drop_local_copies,
)
from pyspark_datastream.state_store.descriptors import ListStateDescriptor, ValueStateDescriptor
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.serializers.ttl import TTL_TIMESTAMP
from pyspark_datastream.state_store.ttl_config import StateTtlConfig
from pyspark_datastream.state_store.types import Types

KS = GenericKeySerializer.INSTANCE
MP = 4
TTL = 1_000


def _config() -> StateTtlConfig:
    return StateTtlConfig.new_builder(Time.milliseconds(TTL)).cleanup_full_snapshot().build()


class LastAndRecent(KeyedProcessFunction):
    """Emits (key, value, last value, recent values) before remembering the value."""

    def open(self, ctx: Any) -> None:
        last = ValueStateDescriptor("last", Types.LONG())
        recent = ListStateDescriptor("recent", Types.LONG())
        last.enable_time_to_live(_config())
        recent.enable_time_to_live(_config())
        self.last = ctx.get_state(last)
        self.recent = ctx.get_list_state(recent)

    def process_element(self, value: Any, ctx: Any) -> Any:
        key, v = value
        yield key, v, self.last.value(), list(self.recent.get())
        self.last.update(v)
        self.recent.add(v)


def _group_keys(n: int) -> tuple[int, list[str]]:
    group = assign_key_group(KS.serialize("a"), MP)
    keys, i = ["a"], 0
    while len(keys) < n:
        i += 1
        if assign_key_group(KS.serialize(f"k{i}"), MP) == group:
            keys.append(f"k{i}")
    return group, keys


def _rows(*items: tuple[str, int]) -> list[tuple[bytes, None, tuple[str, int], int]]:
    return [(KS.serialize(k), None, (k, v), 0) for k, v in items]


@pytest.fixture(params=["heap", "rocksdb"])
def runtime(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    config = OperatorConfig.for_mode("STREAMING", operator_name="ttl-op", max_parallelism=MP)
    store = None
    if request.param == "rocksdb":
        store = RocksDBKeyGroupStore(str(tmp_path / "ckpt"), KS, MP,
                                     local_dir=str(tmp_path / "local"))
    yield KeyGroupRuntime("process", LastAndRecent(), KS, config, store=store)
    drop_local_copies()


def test_ttl_holds_across_micro_batches_and_fresh_executors(runtime: Any) -> None:
    group, (a, b) = _group_keys(2)

    def batch(state: Any, now: int, *items: tuple[str, int]) -> Any:
        result = runtime.run(state, _rows(*items), processing_time=now, key_group=group)
        drop_local_copies()  # the next batch runs on a fresh executor (RocksDB: from files)
        return result

    first = batch(None, 10_000, (a, 1), (b, 2))
    second = batch(first.state, 10_999, (a, 3))  # 10_000 + 1_000 > 10_999: kept
    third = batch(second.state, 11_000, (a, 4), (b, 5))  # b (10_000) expired, a (10_999) not
    fourth = batch(third.state, 12_000, (a, 6))  # a last written at 11_000: expired
    assert [o.value for o in first.outputs] == [(a, 1, None, []), (b, 2, None, [])]
    assert [o.value for o in second.outputs] == [(a, 3, 1, [1])]
    assert [o.value for o in third.outputs] == [(a, 4, 3, [3]), (b, 5, None, [])]
    assert [o.value for o in fourth.outputs] == [(a, 6, None, [])]


def test_heap_commits_full_snapshots_without_expired_entries() -> None:
    config = OperatorConfig.for_mode("STREAMING", operator_name="ttl-op", max_parallelism=MP)
    runtime = KeyGroupRuntime("process", LastAndRecent(), KS, config)
    group, (a, b) = _group_keys(2)
    first = runtime.run(None, _rows((a, 1), (b, 2)), processing_time=0, key_group=group)
    second = runtime.run(first.state, _rows((a, 3)), processing_time=600, key_group=group)
    _, entries = decode_state(second.state)
    stamps = sorted((KS.deserialize(e.key), e.state_name, TTL_TIMESTAMP.unpack_from(e.value)[0])
                    for e in entries)
    assert stamps == [(a, "last", 600), (a, "recent", 0), (a, "recent", 600),
                      (b, "last", 0), (b, "recent", 0)]
    # at 1_000 everything written at 0 expired: the committed snapshot leaves it out
    third = runtime.run(second.state, [], processing_time=1_000, key_group=group)
    _, entries = decode_state(third.state)
    assert sorted((KS.deserialize(e.key), e.state_name) for e in entries) == [
        (a, "last"), (a, "recent")]
    assert runtime.run(third.state, [], processing_time=1_600, key_group=group).state is None
