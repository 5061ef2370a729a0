"""Keyed state contents drawn by hypothesis, written into a real backend and snapshotted, and
what a savepoint reader must give back for them (shared by the savepoint tests on delta-rs and
on Spark's Delta)."""

from __future__ import annotations

from hypothesis import strategies as st
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.descriptors import (
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.entries import StateEntry
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer
from pyspark_datastream.state_store.types import Types

KEY_T = Types.STRING()
KEY_SER = KEY_T.key_serializer()
VALUE = ValueStateDescriptor("count", Types.LONG())
LIST = ListStateDescriptor("events", Types.STRING())
MAP = MapStateDescriptor("attrs", Types.STRING(), Types.INT())
SORTED = BinarySortedStateDescriptor("byts", LexicographicLongSerializer.INSTANCE, Types.STRING())
ALL = (VALUE, LIST, MAP, SORTED)

keys_strategy = st.text(alphabet="abcdefgh", min_size=1, max_size=4)
contents_strategy = st.dictionaries(
    keys_strategy,
    st.fixed_dictionaries({
        "count": st.one_of(st.none(), st.integers(-2**40, 2**40)),
        "events": st.lists(st.text(max_size=3), max_size=3),
        "attrs": st.dictionaries(st.text(max_size=2), st.integers(-5, 5), max_size=2),
        "byts": st.dictionaries(st.integers(-100, 100), st.lists(st.text(max_size=2), min_size=1,
                                                                  max_size=2), max_size=2),
    }),
    min_size=1, max_size=6,
)


def make_backend(kind: str, maxp: int, tmp: str):
    if kind == "heap":
        return HeapKeyedStateBackend(KEY_SER, maxp)
    if kind == "rocksdb":
        return RocksDBKeyedStateBackend(KEY_SER, maxp, directory=tmp)
    return SingleKeyStateBackend(KEY_SER, maxp)


def _fill(backend, key: str, data: dict) -> None:
    backend.set_current_key(key)
    if data["count"] is not None:
        backend.get_state(VALUE).update(data["count"])
    if data["events"]:
        backend.get_state(LIST).update(data["events"])
    if data["attrs"]:
        backend.get_state(MAP).put_all(data["attrs"])
    sorted_state = backend.get_binary_sorted_state(SORTED)
    for k, vs in data["byts"].items():
        sorted_state.put(k, vs)
    backend.timer_queue("event").add(len(key) * 1000)


def snapshot_of(kind: str, contents: dict, maxp: int, tmp: str) -> tuple[list[StateEntry], list]:
    """Entries + meta infos a backend of ``kind`` holds for ``contents``."""
    backend = make_backend(kind, maxp, tmp)
    try:
        for d in ALL:
            backend.get_state(d) if d is not SORTED else backend.get_binary_sorted_state(d)
        backend.timer_queue("event")
        entries: list[StateEntry] = []
        for key, data in contents.items():
            _fill(backend, key, data)
            if kind == "single_key":
                entries.extend(backend.snapshot())
        if kind != "single_key":
            entries = list(backend.snapshot())
        return entries, backend.state_meta_infos()
    finally:
        backend.close()


def expected_state(contents: dict) -> dict:
    out = {}
    for key, d in contents.items():
        if d["count"] is None and not d["events"] and not d["attrs"] and not d["byts"]:
            continue
        out[key] = (d["count"], d["events"] or None, d["attrs"] or None,
                    sorted((k, v) for k, v in d["byts"].items()) or None)
    return out
