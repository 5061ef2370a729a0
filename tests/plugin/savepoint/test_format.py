"""Unit tests of the savepoint format (no Spark): metadata, checks, per-key decoding."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark_datastream import IncompatibleStateError, SavepointFormatError, UnclaimedStateError
from pyspark_datastream.savepoint.format import (
    ENTRY_COLUMNS,
    FORMAT_VERSION,
    OperatorMetadata,
    SavepointMetadata,
    check_restore,
    decode_key_states,
    decode_timers,
    entries_from_batch,
    entries_to_batch,
    group_by_key,
    metadata_row,
    savepoint_arrow_schema,
    savepoint_ddl,
)
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.descriptors import (
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer
from pyspark_datastream.state_store.types import Types

KEY_SER = Types.STRING().key_serializer()
VALUE = ValueStateDescriptor("count", Types.LONG())
LIST = ListStateDescriptor("events", Types.STRING())
MAP = MapStateDescriptor("attrs", Types.STRING(), Types.INT())
SORTED = BinarySortedStateDescriptor("byts", LexicographicLongSerializer.INSTANCE, Types.STRING())


def _backend_with_state(maxp: int = 128) -> HeapKeyedStateBackend:
    backend = HeapKeyedStateBackend(KEY_SER, maxp)
    for key, n in (("a", 1), ("b", 2)):
        backend.set_current_key(key)
        backend.get_state(VALUE).update(n)
        backend.get_state(LIST).update([f"{key}{i}" for i in range(n)])
        backend.get_state(MAP).put_all({"x": n})
        backend.get_binary_sorted_state(SORTED).add(10 * n, key)
        backend.timer_queue("event").add(100 * n)
    return backend


def _metadata(backend: HeapKeyedStateBackend, uid: str = "op") -> SavepointMetadata:
    op = OperatorMetadata(uid, KEY_SER.snapshot(), tuple(backend.state_meta_infos()))
    return SavepointMetadata(max_parallelism=backend.max_parallelism, operators={uid: op},
                             final_watermark=42, job_name="j")


def test_schema_and_ddl_name_every_column() -> None:
    names = [f.name for f in savepoint_arrow_schema()]
    assert names == ["kind", *ENTRY_COLUMNS]
    assert savepoint_ddl().startswith("kind string, operator_uid string, key_group int")


def test_metadata_json_round_trip() -> None:
    meta = _metadata(_backend_with_state())
    again = SavepointMetadata.from_json(meta.to_json())
    assert again == meta
    assert again.operator("op").state("count").kind.value == "value"
    row = metadata_row(meta)
    # no TTL state: written as version 1, as before version 2 existed
    assert row["kind"] == "metadata" and json.loads(row["value"])["format_version"] == 1


def test_metadata_errors_name_the_problem() -> None:
    meta = _metadata(_backend_with_state())
    with pytest.raises(SavepointFormatError, match="not valid JSON"):
        SavepointMetadata.from_json(b"{nope")
    data = json.loads(meta.to_json())
    data["format_version"] = 99
    with pytest.raises(SavepointFormatError, match="format version 99 is not supported"):
        SavepointMetadata.from_json(json.dumps(data))
    data["format_version"] = FORMAT_VERSION
    del data["max_parallelism"]
    with pytest.raises(SavepointFormatError, match="malformed savepoint metadata"):
        SavepointMetadata.from_json(json.dumps(data))
    with pytest.raises(SavepointFormatError, match="no operator with uid 'zz'.*\\['op'\\]"):
        meta.operator("zz")
    with pytest.raises(SavepointFormatError, match="operator 'op' has no state 'nope'"):
        meta.operator("op").state("nope")


def test_check_restore_incompatible_and_unclaimed() -> None:
    backend = _backend_with_state()
    meta = _metadata(backend)
    good = {"op": (KEY_SER, backend.state_meta_infos())}
    check_restore(meta, good)
    bad_value = ValueStateDescriptor("count", Types.STRING())
    program = {"op": (KEY_SER, [bad_value.meta_info(KEY_SER, _void())])}
    with pytest.raises(IncompatibleStateError,
                       match="operator 'op', state 'count'.*LongSerializer.*StringSerializer"):
        check_restore(meta, program)
    with pytest.raises(IncompatibleStateError, match="operator 'op': the savepoint's key serializer"):
        check_restore(meta, {"op": (Types.LONG().key_serializer(), [])})
    with pytest.raises(UnclaimedStateError, match=r"\['op'\] is not claimed.*ignore-unclaimed"):
        check_restore(meta, {"other": (KEY_SER, [])})
    check_restore(meta, {"other": (KEY_SER, [])}, ignore_unclaimed=True)


def _void():
    from pyspark_datastream.state_store.namespaces import VOID_NAMESPACE_SERIALIZER

    return VOID_NAMESPACE_SERIALIZER


def test_arrow_round_trip_and_rekey() -> None:
    backend = _backend_with_state()
    entries = list(backend.snapshot())
    batch = entries_to_batch("op", entries)
    assert batch.schema.names == list(ENTRY_COLUMNS)
    assert list(entries_from_batch(batch)) == entries
    rekeyed = list(entries_from_batch(batch, max_parallelism=7))
    assert all(e.key_group == assign_key_group(e.key, 7) for e in rekeyed)
    assert [e._replace(key_group=0) for e in rekeyed] == [e._replace(key_group=0) for e in entries]


def test_arrow_batch_with_kinds_is_a_whole_savepoint_row() -> None:
    backend = _backend_with_state()
    entries = list(backend.snapshot())
    kinds = _metadata(backend).operator("op").kind_of()
    batch = entries_to_batch("op", entries, kinds)
    assert batch.schema == savepoint_arrow_schema()
    assert batch.column("kind").to_pylist() == [kinds[e.state_name] for e in entries]
    assert list(entries_from_batch(batch)) == entries
    del kinds[entries[0].state_name]
    with pytest.raises(SavepointFormatError,
                       match=rf"state '{entries[0].state_name}' of operator 'op' has no state meta"):
        entries_to_batch("op", entries, kinds)


def test_decode_key_states_equals_program_state_under_other_max_parallelism() -> None:
    backend = _backend_with_state()
    meta = _metadata(backend).operator("op")
    entries = sorted(backend.snapshot(), key=lambda e: (e.key, e.state_name, e.namespace, e.user_key))
    decoded = {}
    for key_bytes, group in group_by_key(entries):
        key, values = decode_key_states(meta, 16, key_bytes, group, [VALUE, LIST, MAP, SORTED])
        decoded[key] = values
    assert decoded == {
        "a": [1, ["a0"], {"x": 1}, [(10, ["a"])]],
        "b": [2, ["b0", "b1"], {"x": 2}, [(20, ["b"])]],
    }
    with pytest.raises(IncompatibleStateError, match="operator 'op'.*state 'count'"):
        decode_key_states(meta, 16, entries[0].key, [e for e in entries if e.key == entries[0].key],
                          [ValueStateDescriptor("count", Types.STRING())])


def test_decode_timers() -> None:
    backend = _backend_with_state()
    meta = _metadata(backend).operator("op")
    timers = sorted(decode_timers(meta, backend.snapshot()))
    assert [(k, q, t) for k, q, t, _ in timers] == [("a", "event", 100), ("b", "event", 200)]


def test_entries_from_batch_fills_nulls() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"key_group": [1], "key": [b"k"], "state_name": ["s"], "namespace": [None],
         "user_key": [None], "value": [b"v"]})
    (entry,) = entries_from_batch(batch)
    assert entry.namespace == b"" and entry.user_key == b"" and entry.value == b"v"
