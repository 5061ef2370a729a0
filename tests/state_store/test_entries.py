"""The unified entry layout (FLIP-41): encoding, decoding, canonical order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_datastream import SavepointFormatError, StateDescriptorError
from pyspark_datastream.state_store.entries import (
    StateEntry,
    StateKind,
    StateMetaInfo,
    canonical_sort_key,
    decode_entry_key,
    decode_index,
    decode_timestamp,
    encode_entry_key,
    encode_index,
    encode_sorted_user_key,
    encode_timestamp,
    is_canonical,
    prefix_successor,
    sort_canonical,
    split_sorted_user_key,
    timer_state_name,
)
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer

NAMES = st.text(min_size=1, max_size=6).filter(lambda s: "\x00" not in s)
ENTRY_KEYS = st.tuples(
    st.integers(0, (1 << 15) - 1), NAMES, st.binary(max_size=8), st.binary(max_size=8),
    st.binary(max_size=8),
)


def test_layout_is_exactly_as_documented() -> None:
    encoded = encode_entry_key(258, "ab", b"K", b"NS", b"UK")
    assert encoded == (
        b"\x01\x02" + b"ab\x00" + b"\x00\x00\x00\x01K" + b"\x00\x00\x00\x02NS" + b"UK"
    )


@given(ENTRY_KEYS)
def test_entry_key_round_trip(parts: tuple[int, str, bytes, bytes, bytes]) -> None:
    assert tuple(decode_entry_key(encode_entry_key(*parts))) == parts


@given(ENTRY_KEYS, ENTRY_KEYS)
def test_canonical_order_is_field_order(
    a: tuple[int, str, bytes, bytes, bytes], b: tuple[int, str, bytes, bytes, bytes]
) -> None:
    """Bytewise order of encoded keys == (key group, name bytes, key, namespace, user key)
    with key and namespace compared as (length, bytes)."""

    def field_order(p: tuple[int, str, bytes, bytes, bytes]) -> tuple[object, ...]:
        return (p[0], p[1].encode(), len(p[2]), p[2], len(p[3]), p[3], p[4])

    assert (encode_entry_key(*a) < encode_entry_key(*b)) == (field_order(a) < field_order(b))


@given(st.lists(st.tuples(ENTRY_KEYS, st.binary(max_size=2)), max_size=12))
def test_canonical_sort_key_orders_as_encoded_keys(
    rows: list[tuple[tuple[int, str, bytes, bytes, bytes], bytes]]
) -> None:
    """Sorting by the tuple key gives the list sorting by encoded keys gives (stable)."""
    entries = [StateEntry(*parts, value) for parts, value in rows]
    assert sorted(entries, key=canonical_sort_key) == sorted(entries, key=StateEntry.encoded_key)


def test_canonical_sort_key_compares_names_as_utf8_bytes() -> None:
    """A name and its extension, and non-ASCII names whose UTF-16 order differs from
    their UTF-8 order."""
    names = ["a", "a\x01", "ab", "\uffff", "\U0001f600", "\u00e9", "_timer/event"]
    entries = [StateEntry(3, name, b"k", b"", b"", b"") for name in names]
    by_bytes = sorted(names, key=lambda n: n.encode("utf-8") + b"\x00")
    assert [e.state_name for e in sorted(entries, key=canonical_sort_key)] == by_bytes


@given(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1))
def test_timestamps_are_lexicographic_longs(a: int, b: int) -> None:
    assert encode_timestamp(a) == LexicographicLongSerializer.INSTANCE.serialize(a)
    assert decode_timestamp(encode_timestamp(a)) == a
    assert (encode_timestamp(a) < encode_timestamp(b)) == (a < b)


def test_indices_and_sorted_user_keys() -> None:
    assert encode_index(1) == b"\x00" * 7 + b"\x01"
    assert decode_index(b"xx" + encode_index(300)) == 300
    assert split_sorted_user_key(encode_sorted_user_key(b"key", 7)) == (b"key", 7)
    with pytest.raises(SavepointFormatError, match="shorter than 8 bytes"):
        split_sorted_user_key(b"abc")


def test_prefix_successor() -> None:
    assert prefix_successor(b"ab") == b"ac"
    assert prefix_successor(b"a\xff\xff") == b"b"
    assert prefix_successor(b"\xff") is None


def test_malformed_entry_keys_are_rejected() -> None:
    with pytest.raises(SavepointFormatError, match="malformed entry key"):
        decode_entry_key(b"\x00")
    with pytest.raises(SavepointFormatError, match="malformed entry key"):
        decode_entry_key(b"\x00\x01name\x00\x00\x00\x00\x09abc")
    with pytest.raises(StateDescriptorError, match="contains a NUL"):
        encode_entry_key(0, "a\x00b", b"", b"")
    with pytest.raises(SavepointFormatError, match="key group 40000"):
        encode_entry_key(40000, "a", b"", b"")


def test_sort_canonical_and_is_canonical() -> None:
    entries = [
        StateEntry(1, "a", b"k", b"", b"", b"1"),
        StateEntry(0, "b", b"k", b"", b"", b"2"),
        StateEntry(0, "a", b"kk", b"", b"", b"3"),
        StateEntry(0, "a", b"z", b"", b"", b"4"),
    ]
    ordered = sort_canonical(entries)
    assert [e.value for e in ordered] == [b"4", b"3", b"2", b"1"]
    assert is_canonical(ordered)
    assert not is_canonical(entries)
    assert not is_canonical([ordered[0], ordered[0]])


def test_meta_info_round_trip() -> None:
    meta = StateMetaInfo(
        name=timer_state_name("event"),
        kind=StateKind.TIMER,
        key_serializer={"name": "StringSerializer", "params": {}},
        namespace_serializer={"name": "VoidNamespaceSerializer", "params": {}},
        user_key_serializer=None,
        value_serializer=None,
    )
    assert meta.name == "_timer/event"
    assert StateMetaInfo.from_dict(meta.to_dict()) == meta
    with pytest.raises(SavepointFormatError, match="malformed state meta info"):
        StateMetaInfo.from_dict({"name": "x", "kind": "nonsense"})
