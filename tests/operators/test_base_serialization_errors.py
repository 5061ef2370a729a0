"""A value a state cannot hold fails with a SerializationError that names the operator, the
state, the call and the record (RocksDB serializes on every write)."""

from __future__ import annotations

import threading

import pytest
from pyspark_datastream import (
    KeyedProcessFunction,
    KeyedProcessFunctionTestHarness,
    ListStateDescriptor,
    MapStateDescriptor,
    SerializationError,
    Types,
    ValueStateDescriptor,
)


class Writes(KeyedProcessFunction):
    def __init__(self, what: str) -> None:
        self.what = what

    def open(self, runtime_context):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))
        self.by_name = runtime_context.get_map_state(
            MapStateDescriptor("by_name", Types.STRING(), Types.LONG()))
        self.items = runtime_context.get_list_state(ListStateDescriptor("items", Types.LONG()))
        self.blob = runtime_context.get_state(
            ValueStateDescriptor("blob", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        if self.what == "value":
            self.last.update("x")
        elif self.what == "map value":
            self.by_name.put("a", "x")
        elif self.what == "map key":
            self.by_name.put(5, 1)
        elif self.what == "list":
            self.items.add("x")
        else:
            self.blob.update(threading.Lock())
        yield value


@pytest.mark.parametrize("what, state, cause", [
    ("value", "last", "LongSerializer cannot serialize 'x'"),
    ("map value", "by_name", "LongSerializer cannot serialize 'x'"),
    ("map key", "by_name", "StringSerializer cannot serialize 5"),
    ("list", "items", "LongSerializer cannot serialize 'x'"),
    ("unpicklable", "blob", "PickleSerializer cannot serialize <unlocked _thread.lock"),
])
def test_rocksdb_state_write_errors_name_operator_state_and_record(what, state, cause):
    harness = KeyedProcessFunctionTestHarness(Writes(what), key_selector=lambda r: r[0],
                                              backend="rocksdb")
    with pytest.raises(SerializationError) as info:
        harness.process_element(("k", 7), timestamp=1)
    assert str(info.value).startswith(
        f"operator 'Writes', state '{state}': process_element failed on ('k', 7): {cause}")
