"""RocksDB key groups in STREAMING: local database + immutable versioned change files,
only a version pointer committed, restorable anywhere, unreachable versions collected."""

from __future__ import annotations

import gc
import os

import psutil
import pytest
from pyspark_datastream import JobExecutionError, SavepointFormatError, StateBackendError
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.functions import KeyedProcessFunction
from pyspark_datastream.operators.keygroup import KeyGroupRuntime
from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import (
    RocksDBKeyGroupStore,
    VersionPointer,
    drop_local_copies,
)
from pyspark_datastream.state_store.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import BytesSerializer, GenericKeySerializer
from pyspark_datastream.state_store.types import Types

KS = GenericKeySerializer.INSTANCE
MP = 8


def _cfg():
    return OperatorConfig.for_mode("STREAMING", operator_name="rocks-op", max_parallelism=MP)


def _keys_in_group(group: int, n: int) -> list[str]:
    out, i = [], 0
    while len(out) < n:
        k = f"k{i}"
        if assign_key_group(KS.serialize(k), MP) == group:
            out.append(k)
        i += 1
    return out


def _rows(*items):
    return [(KS.serialize(k), ts, v, 0) for k, ts, v in items]


class Everything(KeyedProcessFunction):
    """Value, list and map state plus an event-time timer per element."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.seen = ctx.get_list_state(ListStateDescriptor("seen", Types.LONG()))
        self.by_value = ctx.get_map_state(MapStateDescriptor("m", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.seen.add(value)
        self.by_value.put(value % 3, (self.by_value.get(value % 3) or 0) + value)
        if value % 2:
            self.by_value.remove(1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        yield ("seen", ctx.get_current_key(), value)

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), timestamp, self.count.value(),
               list(self.seen.get()), sorted(self.by_value.items()))


@pytest.fixture
def store(tmp_path):
    drop_local_copies()
    yield RocksDBKeyGroupStore(str(tmp_path / "ckpt"), KS, MP, local_dir=str(tmp_path / "local"))
    drop_local_copies()


def _batches(keys):
    a, b = keys[0], keys[1]
    return [
        (_rows((a, 100, 1), (b, 101, 2), (a, 102, 3)), 0),
        (_rows((b, 105, 4)), 111),
        ([], 200),
        (_rows((a, 300, 5), (a, 301, 6)), 250),
        (_rows((b, 400, 7)), 305),
    ]


def _run_all(runtime, batches, group, state=None, reset_between=False):
    outs = []
    for rows, wm in batches:
        r = runtime.run(state, rows, wm, key_group=group)
        outs.append([o.value for o in r.outputs])
        state = r.state
        if reset_between:
            drop_local_copies()  # every batch on a "fresh executor"
    return outs, state


def test_rocksdb_key_group_equals_heap_and_survives_moving_executors(store):
    group = 3
    keys = _keys_in_group(group, 2)
    heap = KeyGroupRuntime("process", Everything(), KS, _cfg())
    expected, _ = _run_all(heap, _batches(keys), group)
    rocks = KeyGroupRuntime("process", Everything(), KS, _cfg(), store=store)
    same_process, _ = _run_all(rocks, _batches(keys), group)
    assert same_process == expected
    assert any(o[0] == "timer" for batch in expected for o in batch)
    moving, pointer = _run_all(KeyGroupRuntime("process", Everything(), KS, _cfg(), store=store),
                         _batches(keys), group, reset_between=True)
    assert moving == expected
    # only the pointer is committed: small, and it names files under the checkpoint dir
    assert len(pointer) < 300
    vp = VersionPointer.from_bytes(pointer)
    assert vp.seq == 5 and all(os.path.exists(os.path.join(store.folder(group), f))
                               for f in vp.files)


def test_local_copy_ahead_of_the_committed_pointer_is_rebuilt(store):
    group = 1
    a = _keys_in_group(group, 1)[0]
    rt = KeyGroupRuntime("reduce", lambda x, y: x + y, KS, _cfg(), store=store)
    p1 = rt.run(None, _rows((a, 1, 10)), key_group=group).state
    p2 = rt.run(p1, _rows((a, 2, 5)), key_group=group).state  # written, never "committed"
    assert p2 != p1
    # Spark retries the batch from p1: the local copy (at p2) must not be used
    retried = rt.run(p1, _rows((a, 2, 5)), key_group=group)
    assert [o.value for o in retried.outputs] == [15]
    again = rt.run(retried.state, _rows((a, 3, 1)), key_group=group)
    assert [o.value for o in again.outputs] == [16]


def test_failure_mid_batch_drops_uncommitted_local_changes(store):
    group = 2
    a = _keys_in_group(group, 1)[0]

    def fragile(x, y):
        if y < 0:
            raise ValueError("boom after state was read")
        return x + y

    rt = KeyGroupRuntime("reduce", fragile, KS, _cfg(), store=store)
    p1 = rt.run(None, _rows((a, 1, 10), (a, 2, 1)), key_group=group).state
    with pytest.raises(JobExecutionError, match="rocks-op.*boom after state was read"):
        # the first element updates the local database, the second fails
        rt.run(p1, _rows((a, 3, 100), (a, 4, -1)), key_group=group)
    r = rt.run(p1, _rows((a, 3, 100)), key_group=group)
    assert [o.value for o in r.outputs] == [111]


def test_versions_are_rebased_and_unreachable_files_collected(tmp_path):
    drop_local_copies()
    store = RocksDBKeyGroupStore(str(tmp_path / "ckpt"), KS, MP, max_chain=4)
    group = 5
    keys = _keys_in_group(group, 20)
    rt = KeyGroupRuntime("reduce", lambda x, y: x + y, KS, _cfg(), store=store)
    state, seen = None, []
    for i in range(12):
        committed = state
        # a failed attempt: its file is written, its pointer never committed
        rt.run(committed, _rows((keys[i], 1, 1_000)), key_group=group)
        state = rt.run(committed, _rows((keys[i], 1, i), (keys[0], 2, 1)), key_group=group).state
        vp = VersionPointer.from_bytes(state)
        seen.append(len(vp.files))
        files = set(os.listdir(store.folder(group)))
        assert set(vp.files) <= files
        assert len(files) <= 2 * 4 + 2  # current chain + previous chain + failed attempts
    assert max(seen) <= 4 and seen[0] == 1 and seen[1] == 2  # base, then deltas, then rebase
    drop_local_copies()
    r = rt.run(state, _rows((keys[0], 3, 0)), key_group=group)
    assert [o.value for o in r.outputs] == [0 + 12 + 0]
    drop_local_copies()


def test_bad_pointer_and_missing_file_are_reported(store, tmp_path):
    rt = KeyGroupRuntime("reduce", lambda x, y: x + y, KS, _cfg(), store=store)
    with pytest.raises(SavepointFormatError, match="RocksDB key group pointer"):
        rt.run(b"garbage", [], key_group=0)
    heap_state = KeyGroupRuntime("reduce", lambda x, y: x + y, KS, _cfg()).run(
        None, _rows(("x", 1, 1))).state
    with pytest.raises(SavepointFormatError, match="state backend changed"):
        rt.run(heap_state, [], key_group=0)
    missing = VersionPointer(3, ("000000000003-nothere.base",), (10,)).to_bytes()
    with pytest.raises(StateBackendError, match="nothere.base is missing"):
        rt.run(missing, [], key_group=0)
    with pytest.raises(JobExecutionError, match="needs the key group number"):
        rt.run(None, [])


def test_savepoint_hooks_round_trip_unified_entries(store):
    group = 4
    a, b = _keys_in_group(group, 2)
    rt = KeyGroupRuntime("process", Everything(), KS, _cfg(), store=store)
    p = rt.run(None, _rows((a, 1, 4), (b, 2, 9)), key_group=group).state
    metas, entries = store.export_entries(group, p)
    heap = KeyGroupRuntime("process", Everything(), KS, _cfg())
    hp = heap.run(None, _rows((a, 1, 4), (b, 2, 9))).state
    from pyspark_datastream.operators.keygroup import decode_state

    assert (metas, entries) == decode_state(hp)  # the same unified entries as the heap backend
    drop_local_copies()
    p2 = store.import_entries(group, metas, entries)
    out = rt.run(p2, [], 1_000, key_group=group)
    assert sorted(o.value[:4] for o in out.outputs) == sorted([("timer", a, 11, 1), ("timer", b, 12, 1)])


class FillMap(KeyedProcessFunction):
    """Each element (n, size) puts n entries of ``size`` random bytes into a map state."""

    def open(self, ctx):
        self.m = ctx.get_map_state(MapStateDescriptor("blob", Types.LONG(), BytesSerializer.INSTANCE))
        self.n = ctx.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        n, size, first = value
        blob = os.urandom(n * size)
        self.m.put_all((first + i, blob[i * size:(i + 1) * size]) for i in range(n))
        self.n.update((self.n.value() or 0) + n)
        return ()


#: state size proved by the default run; PDS_LARGE_STATE_MB raises it (see the report)
LARGE_MB = int(os.environ.get("PDS_LARGE_STATE_MB", "80"))


def test_key_group_state_much_larger_than_the_cache_stays_on_disk(tmp_path):
    drop_local_copies()
    store = RocksDBKeyGroupStore(str(tmp_path / "ckpt"), KS, MP, local_dir=str(tmp_path / "local"),
                                 block_cache_size=1 << 20, write_buffer_size=2 << 20)
    rt = KeyGroupRuntime("process", FillMap(), KS, _cfg(), store=store)
    group = 6
    keys = _keys_in_group(group, 4)
    size, per_element = 200, 20_000
    total = LARGE_MB * 2**20 // size
    elements = total // per_element
    process = psutil.Process()
    gc.collect()
    rss0 = process.memory_info().rss
    peak, state, done = rss0, None, 0
    batches = 4
    per_key = dict.fromkeys(keys, 0)
    for _b in range(batches):  # several micro-batches, each a version
        rows = []
        for e in range(elements // batches):
            k = keys[e % len(keys)]
            rows.append((KS.serialize(k), None, (per_element, size, done), 0))
            done += per_element
            per_key[k] += per_element
        state = rt.run(state, rows, key_group=group).state
        peak = max(peak, process.memory_info().rss)
    data = done * (size + 8)
    files = sum(os.path.getsize(os.path.join(store.folder(group), f))
                for f in VersionPointer.from_bytes(state).files)
    print(f"\n{done} map entries, {data / 2**20:.0f} MiB, RSS growth "
          f"{(peak - rss0) / 2**20:.0f} MiB, committed files {files / 2**20:.0f} MiB")
    assert files > data * 0.9  # the versions really hold the state
    # ... and memory does not: state held in memory would grow RSS by more than ``data``;
    # RocksDB's own buffers grew it by 18 MiB alone and 27 MiB in a loaded suite worker
    assert peak - rss0 < data / 2
    # a fresh executor rebuilds it from the files, also in bounded memory
    drop_local_copies()
    gc.collect()
    rss1 = process.memory_info().rss
    backend = store.acquire(group, state)
    assert process.memory_info().rss - rss1 < data / 2
    backend.set_current_key(keys[1])
    n = backend.get_state(ValueStateDescriptor("n", Types.LONG())).value()
    m = backend.get_state(MapStateDescriptor("blob", Types.LONG(), BytesSerializer.INSTANCE))
    assert n == per_key[keys[1]] > 0 and sum(1 for _ in m.keys()) == n
    drop_local_copies()


def test_local_copies_go_to_the_executors_spark_scratch_when_it_has_one(monkeypatch, tmp_path):
    """Spark hands its Python workers SPARK_LOCAL_DIRS (the executor's scratch, removed with
    the executor); without it the copies go under the temporary directory."""
    import tempfile

    from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import default_local_dir

    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    assert default_local_dir() == str(tmp_path / "a" / "pyspark-datastream-local" /
                                      str(os.getpid()))
    monkeypatch.delenv("SPARK_LOCAL_DIRS")
    assert default_local_dir().startswith(tempfile.gettempdir() + os.sep)


def test_a_worker_keeps_every_key_group_of_its_partition_open_between_micro_batches(tmp_path):
    """A worker running 64 key groups of a 128-key-group operator (two partitions) in
    micro-batch after micro-batch reads no state back from the version files after the first
    commit: each key group's local copy stays open and current (a cap below the key groups
    of a partition made every micro-batch rebuild every key group from storage)."""
    drop_local_copies()
    groups = range(64)
    pointers: dict[int, bytes] = {}
    for batch in range(3):
        store = RocksDBKeyGroupStore(str(tmp_path / "kg"), KS, 128)  # one per micro-batch
        for group in groups:
            pointers[group] = store.commit(group, store.acquire(group, pointers.get(group)))
        assert store.restored_key_groups == 0, batch
    # a fresh process (no local copies) reads each key group back from its files
    assert drop_local_copies() == 64
    store = RocksDBKeyGroupStore(str(tmp_path / "kg"), KS, 128)
    for group in groups:
        store.commit(group, store.acquire(group, pointers[group]))
    assert store.restored_key_groups == 64 and store.restored_bytes > 0
    drop_local_copies()


class _Some(KeyedProcessFunction):
    """Emits value % 3 records per element and one timer record 10 ms after it."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        for i in range(value % 3):
            yield ("out", value, i)

    def on_timer(self, timestamp, ctx):
        yield ("timer", timestamp)


def test_each_output_names_the_element_that_produced_it():
    """``track_positions``: per output, its element's position; timers fired by the
    micro-batch's watermark before the elements are -1, those at the end of input come
    after the last element (the elements' count)."""
    group = 3
    a, b = _keys_in_group(group, 2)
    runtime = KeyGroupRuntime("process", _Some(), KS, _cfg())
    first = runtime.run(None, _rows((a, 100, 1), (b, 101, 3), (a, 102, 2)), 0, key_group=group,
                        track_positions=True)
    assert [o.value for o in first.outputs] == [("out", 1, 0), ("out", 2, 0), ("out", 2, 1)]
    assert first.positions == [0, 2, 2]  # element 1 (value 3) emitted nothing
    second = runtime.run(first.state, _rows((b, 120, 4)), 111, end_of_input=True,
                         key_group=group, track_positions=True)
    values = [o.value for o in second.outputs]
    # watermark 111 fires the timers at 110 and 111, then element 0, then end of input 112
    assert values == [("timer", 110), ("timer", 111), ("out", 4, 0), ("timer", 112),
                      ("timer", 130)]
    assert second.positions == [-1, -1, 0, 1, 1]
