"""The unified binary layout of keyed state entries (FLIP-41).

Every backend's ``snapshot()`` produces :class:`StateEntry` rows in this layout
and every backend's ``restore()`` accepts them, whichever backend wrote them.
The RocksDB backend uses the encoded entry key as its own storage key, so its
snapshot is a plain ordered scan.

::

    entry key  = key_group  : uint16 big-endian
               | state name : UTF-8 bytes + 0x00 terminator (names may not contain NUL)
               | key        : uint32 BE length + serialized key bytes
               | namespace  : uint32 BE length + serialized namespace bytes (b"" = no namespace)
               | user key   : map    -> serialized map key
                              list   -> uint64 BE element index
                              sorted -> lexicographic key bytes + uint64 BE value index
                              timer  -> lexicographic long timestamp
                              value/reducing/aggregating -> empty
    entry value = the value serializer's bytes (list/sorted: one element each; timer: b"")

The *canonical order* of a snapshot is the bytewise order of encoded entry keys,
and list / sorted indices are renumbered ``0..n-1`` per group, so the same
logical state gives byte-identical entries from every backend.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from itertools import chain, groupby
from operator import itemgetter
from typing import Any, NamedTuple

from .exceptions import SavepointFormatError, StateDescriptorError

__all__ = [
    "StateKind",
    "StateMetaInfo",
    "StateEntry",
    "EntryKey",
    "TIMER_STATE_PREFIX",
    "timer_state_name",
    "encode_state_name",
    "encode_key_group",
    "encode_length_prefixed",
    "encode_entry_key",
    "decode_entry_key",
    "encode_index",
    "decode_index",
    "encode_sorted_user_key",
    "split_sorted_user_key",
    "encode_timestamp",
    "decode_timestamp",
    "prefix_successor",
    "sort_canonical",
    "canonical_sort_key",
    "concat_canonical",
    "join_parts",
    "is_canonical",
]

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1

#: State name prefix of timer entries: ``_timer/<queue name>``.
TIMER_STATE_PREFIX = "_timer/"


class StateKind(str, Enum):
    """Kind of a keyed state; decides the user-key layout of its entries."""

    VALUE = "value"
    LIST = "list"
    MAP = "map"
    REDUCING = "reducing"
    AGGREGATING = "aggregating"
    SORTED = "sorted"
    TIMER = "timer"


@dataclass(frozen=True)
class StateMetaInfo:
    """Everything a reader needs to interpret one state's entries.

    Serializers are stored as their ``snapshot()`` dicts (JSON-able), so the
    savepoint metadata can be written without pickling code.
    """

    name: str
    kind: StateKind
    key_serializer: dict[str, Any]
    namespace_serializer: dict[str, Any]
    user_key_serializer: dict[str, Any] | None
    value_serializer: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (inverse of :meth:`from_dict`)."""
        return {
            "name": self.name,
            "kind": self.kind.value,
            "key_serializer": self.key_serializer,
            "namespace_serializer": self.namespace_serializer,
            "user_key_serializer": self.user_key_serializer,
            "value_serializer": self.value_serializer,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StateMetaInfo:
        """Parse :meth:`to_dict` output; ``SavepointFormatError`` on malformed input."""
        try:
            return cls(
                name=str(data["name"]),
                kind=StateKind(data["kind"]),
                key_serializer=dict(data["key_serializer"]),
                namespace_serializer=dict(data["namespace_serializer"]),
                user_key_serializer=(
                    None if data.get("user_key_serializer") is None
                    else dict(data["user_key_serializer"])
                ),
                value_serializer=(
                    None if data.get("value_serializer") is None
                    else dict(data["value_serializer"])
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SavepointFormatError(f"malformed state meta info {data!r}: {exc}") from exc


class StateEntry(NamedTuple):
    """One row of a keyed-state snapshot (see the module docstring for the layout)."""

    key_group: int
    state_name: str
    key: bytes
    namespace: bytes
    user_key: bytes
    value: bytes

    def encoded_key(self) -> bytes:
        """The encoded entry key; snapshots are sorted by it."""
        return encode_entry_key(
            self.key_group, self.state_name, self.key, self.namespace, self.user_key
        )


class EntryKey(NamedTuple):
    """Decoded parts of an entry key."""

    key_group: int
    state_name: str
    key: bytes
    namespace: bytes
    user_key: bytes


def timer_state_name(queue_name: str) -> str:
    """State name under which the timers of queue ``queue_name`` are snapshotted."""
    return TIMER_STATE_PREFIX + queue_name


_KG_CACHE = [_U16.pack(i) for i in range(1 << 15)]


def encode_key_group(key_group: int) -> bytes:
    """Two big-endian bytes of a key group."""
    try:
        return _KG_CACHE[key_group]
    except (IndexError, TypeError):
        raise SavepointFormatError(
            f"key group {key_group!r} does not fit the entry layout (0..32767)"
        ) from None


def encode_state_name(name: str) -> bytes:
    """UTF-8 bytes of a state name plus the NUL terminator."""
    if "\x00" in name:
        raise StateDescriptorError(f"state name {name!r} contains a NUL character")
    return name.encode("utf-8") + b"\x00"


def encode_length_prefixed(data: bytes) -> bytes:
    """``uint32 BE length + data`` (the key and namespace parts)."""
    return _U32.pack(len(data)) + data


def encode_entry_key(
    key_group: int, state_name: str, key: bytes, namespace: bytes, user_key: bytes = b""
) -> bytes:
    """Encode an entry key (layout in the module docstring)."""
    return b"".join(
        (
            encode_key_group(key_group),
            encode_state_name(state_name),
            _U32.pack(len(key)),
            key,
            _U32.pack(len(namespace)),
            namespace,
            user_key,
        )
    )


def decode_entry_key(data: bytes) -> EntryKey:
    """Inverse of :func:`encode_entry_key`; ``SavepointFormatError`` if malformed."""
    try:
        (key_group,) = _U16.unpack_from(data, 0)
        end = data.index(b"\x00", 2)
        name = data[2:end].decode("utf-8")
        pos = end + 1
        (klen,) = _U32.unpack_from(data, pos)
        pos += 4
        key = data[pos : pos + klen]
        pos += klen
        (nlen,) = _U32.unpack_from(data, pos)
        pos += 4
        namespace = data[pos : pos + nlen]
        pos += nlen
        if len(key) != klen or len(namespace) != nlen or pos > len(data):
            raise ValueError("truncated")
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise SavepointFormatError(f"malformed entry key {bytes(data[:64])!r}: {exc}") from exc
    return EntryKey(key_group, name, bytes(key), bytes(namespace), bytes(data[pos:]))


def encode_index(index: int) -> bytes:
    """uint64 big-endian element index (list and sorted user keys)."""
    return _U64.pack(index)


def decode_index(data: bytes) -> int:
    """Inverse of :func:`encode_index` (reads the last 8 bytes)."""
    if len(data) < 8:
        raise SavepointFormatError(f"index user key {data!r} is shorter than 8 bytes")
    return _U64.unpack_from(data, len(data) - 8)[0]


def encode_sorted_user_key(sort_key: bytes, index: int) -> bytes:
    """Sorted-state user key: lexicographic key bytes + uint64 BE value index."""
    return sort_key + _U64.pack(index)


def split_sorted_user_key(user_key: bytes) -> tuple[bytes, int]:
    """Split a sorted-state user key into ``(lexicographic key bytes, index)``."""
    if len(user_key) < 8:
        raise SavepointFormatError(f"sorted-state user key {user_key!r} is shorter than 8 bytes")
    return user_key[:-8], _U64.unpack_from(user_key, len(user_key) - 8)[0]


def encode_timestamp(timestamp: int) -> bytes:
    """Lexicographic long (sign bit flipped, big-endian); byte order = numeric order."""
    return _U64.pack((timestamp ^ _SIGN) & _MASK64)


def decode_timestamp(data: bytes) -> int:
    """Inverse of :func:`encode_timestamp`."""
    if len(data) != 8:
        raise SavepointFormatError(f"timer user key {data!r} is not 8 bytes")
    return _U64.unpack(data)[0] - _SIGN


def prefix_successor(prefix: bytes) -> bytes | None:
    """Smallest byte string greater than every string starting with ``prefix``.

    None when ``prefix`` is all ``0xFF`` (no finite upper bound).
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


_KEY_GROUP = itemgetter(0)
_NAME = itemgetter(1)
_KEY = itemgetter(2)
_NAMESPACE = itemgetter(3)
_USER_KEY = itemgetter(4)
_GROUP_AND_NAME = itemgetter(0, 1)


def canonical_sort_key(entry: StateEntry) -> tuple[int, str, int, bytes, int, bytes, bytes]:
    """A sort key that orders entries as their encoded keys do, without encoding them.

    Each part of the layout compares as its tuple item: the big-endian key group as the int,
    the NUL-terminated UTF-8 name as the str (code point order is UTF-8 byte order, and no
    name holds NUL), each length-prefixed part as ``(length, bytes)``, the user key (the
    tail) as bytes. For the few entries of one key, where encoding would cost more than
    the sort."""
    key_group, name, key, namespace, user_key, _ = entry
    return key_group, name, len(key), key, len(namespace), namespace, user_key


def sort_canonical(entries: Iterable[StateEntry]) -> list[StateEntry]:
    """The entries in canonical order: the list ``sorted(entries, key=StateEntry.encoded_key)``
    gives (stable, same errors), with the encoded keys built from parts encoded once per
    distinct ``(key group, name)``, key and namespace, joined at C speed."""
    rows = entries if isinstance(entries, list) else list(entries)
    if not rows:
        return []
    heads = dict.fromkeys(zip(map(_KEY_GROUP, rows), map(_NAME, rows)), b"")
    for key_group, name in heads:
        heads[key_group, name] = encode_key_group(key_group) + encode_state_name(name)
    keys = list(map(_KEY, rows))
    namespaces = list(map(_NAMESPACE, rows))
    sort_keys = join_parts(
        map(heads.__getitem__, zip(map(_KEY_GROUP, rows), map(_NAME, rows))),
        keys, namespaces, map(_USER_KEY, rows))
    return list(map(rows.__getitem__, sorted(range(len(rows)), key=sort_keys.__getitem__)))


def join_parts(heads: Iterable[bytes], keys: list[bytes], namespaces: list[bytes],
               user_keys: Iterable[bytes]) -> list[bytes]:
    """Encoded entry keys ``head | u32 len(key) key | u32 len(ns) ns | user key`` of parallel
    columns (``head``: key group and state name), each length-prefixed part encoded once
    per distinct key and namespace."""
    key_parts = dict.fromkeys(keys, b"")
    for key in key_parts:
        key_parts[key] = encode_length_prefixed(key)
    ns_parts = dict.fromkeys(namespaces, b"")
    for namespace in ns_parts:
        ns_parts[namespace] = encode_length_prefixed(namespace)
    join = bytes.__add__
    return list(map(join, map(join, map(join, heads, map(key_parts.__getitem__, keys)),
                              map(ns_parts.__getitem__, namespaces)), user_keys))


def concat_canonical(runs: Iterable[list[StateEntry]]) -> list[StateEntry]:
    """One canonical list of the entries of several runs, each already in canonical order.

    Entries of one ``(key group, state name)`` never interleave with others in canonical
    order, so the runs' blocks of such entries are ordered by ``(key group, name bytes)``
    and concatenated; when two runs hold the same block the entries are sorted instead.
    """
    blocks: list[tuple[tuple[int, bytes], list[StateEntry]]] = []
    for run in runs:
        for (key_group, name), block in groupby(run, _GROUP_AND_NAME):
            blocks.append(((key_group, encode_state_name(name)), list(block)))
    if len(blocks) < 2:
        return blocks[0][1] if blocks else []
    if len({block[0] for block in blocks}) < len(blocks):
        return sort_canonical(list(chain.from_iterable(block[1] for block in blocks)))
    blocks.sort(key=_KEY_GROUP)
    return list(chain.from_iterable(block[1] for block in blocks))


def is_canonical(entries: Iterable[StateEntry]) -> bool:
    """True when encoded keys are strictly increasing (no duplicates)."""
    last: bytes | None = None
    for entry in entries:
        key = entry.encoded_key()
        if last is not None and key <= last:
            return False
        last = key
    return True
