"""Savepoint format version 2 (state TTL): when it is written, what reads it, and the
restore check refusing a TTL change (no Spark)."""

from __future__ import annotations

import json

import pytest
from pyspark_datastream import IncompatibleStateError, SavepointFormatError, StateTtlConfig, Time
from pyspark_datastream.savepoint.format import (
    FORMAT_VERSION,
    READABLE_FORMAT_VERSIONS,
    OperatorMetadata,
    SavepointMetadata,
    check_restore,
    decode_key_states,
    group_by_key,
    metadata_row,
)
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.descriptors import ListStateDescriptor, ValueStateDescriptor
from pyspark_datastream.state_store.namespaces import VOID_NAMESPACE_SERIALIZER
from pyspark_datastream.state_store.serializers.ttl import TTL_TIMESTAMP
from pyspark_datastream.state_store.ttl import ttl_time_provider
from pyspark_datastream.state_store.types import Types

KEY_SER = Types.STRING().key_serializer()


def _seen(ttl: bool) -> ValueStateDescriptor:
    descriptor = ValueStateDescriptor("seen", Types.LONG())
    if ttl:
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.minutes(5)).build())
    return descriptor


def _metadata(ttl: bool, now: int = 1_000) -> tuple[SavepointMetadata, HeapKeyedStateBackend]:
    backend = HeapKeyedStateBackend(KEY_SER, 128)
    ttl_time_provider(backend).use(lambda: now)
    backend.set_current_key("a")
    backend.get_state(_seen(ttl)).update(7)
    items = ListStateDescriptor("items", Types.STRING())
    backend.get_state(items).add("x")
    op = OperatorMetadata("dedup", KEY_SER.snapshot(), tuple(backend.state_meta_infos()))
    return SavepointMetadata(max_parallelism=128, operators={"dedup": op}), backend


def test_version_2_only_with_ttl_state() -> None:
    assert FORMAT_VERSION == 2 and READABLE_FORMAT_VERSIONS == (1, 2)
    plain, _ = _metadata(ttl=False)
    with_ttl, _ = _metadata(ttl=True)
    assert json.loads(metadata_row(plain)["value"])["format_version"] == 1
    assert json.loads(metadata_row(with_ttl)["value"])["format_version"] == 2
    again = SavepointMetadata.from_json(with_ttl.to_json())
    assert again == with_ttl and again.format_version == 2
    assert SavepointMetadata.from_json(plain.to_json()).format_version == 1


def test_unknown_versions_are_refused() -> None:
    plain, _ = _metadata(ttl=False)
    data = json.loads(plain.to_json())
    for version in (0, 3, "2", True, None):
        data["format_version"] = version
        with pytest.raises(SavepointFormatError, match=r"is not supported.*reads versions 1, 2"):
            SavepointMetadata.from_json(json.dumps(data))


def test_entries_carry_the_last_access_timestamp_and_decode() -> None:
    meta, backend = _metadata(ttl=True, now=1_234)
    entries = list(backend.snapshot())
    seen = [e for e in entries if e.state_name == "seen"]
    assert len(seen) == 1 and TTL_TIMESTAMP.unpack_from(seen[0].value)[0] == 1_234
    assert seen[0].value[8:] == Types.LONG().create_serializer().serialize(7)
    ((key_bytes, group),) = list(group_by_key(entries))
    key, values = decode_key_states(meta.operator("dedup"), 128, key_bytes, group, [_seen(True)])
    assert (key, values) == ("a", [7])


@pytest.mark.parametrize("saved_ttl", [True, False], ids=["ttl-to-plain", "plain-to-ttl"])
def test_check_restore_refuses_a_ttl_change(saved_ttl: bool) -> None:
    meta, _ = _metadata(ttl=saved_ttl)
    program = {"dedup": (KEY_SER, [_seen(not saved_ttl).meta_info(KEY_SER, VOID_NAMESPACE_SERIALIZER)])}
    expected = ("savepoint's state has time-to-live but the program's descriptor does not" if saved_ttl
                else "program's descriptor enables time-to-live but the savepoint's state has none")
    with pytest.raises(IncompatibleStateError, match=f"operator 'dedup', state 'seen'.*{expected}"):
        check_restore(meta, program)
    same = {"dedup": (KEY_SER, [_seen(saved_ttl).meta_info(KEY_SER, VOID_NAMESPACE_SERIALIZER)])}
    check_restore(meta, same)


def test_decoding_ttl_state_through_a_plain_descriptor_is_refused() -> None:
    meta, backend = _metadata(ttl=True)
    ((key_bytes, group),) = list(group_by_key(backend.snapshot()))
    with pytest.raises(IncompatibleStateError, match="operator 'dedup'.*state 'seen'"):
        decode_key_states(meta.operator("dedup"), 128, key_bytes, group, [_seen(False)])
