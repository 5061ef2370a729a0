"""What the RocksDB states and the backend share: row-layout codecs and batch/cache limits.

Tests shrink the limits to exercise the batch and cache edges; each module reads
the limit under its own name, so a test sets it in every module that uses it.
"""

from __future__ import annotations

import struct
from typing import NoReturn

__all__ = ["U32", "U64", "KEY_MEMO_LIMIT", "INDEX_CACHE_LIMIT", "BATCH_LIMIT", "UNSET"]

#: length prefixes of keys and namespaces in the row key
U32 = struct.Struct(">I")
#: list and sorted-state value indices (the last 8 bytes of their row keys)
U64 = struct.Struct(">Q")
#: keys remembered by ``set_current_key`` before the memo starts over
KEY_MEMO_LIMIT = 1 << 14
#: most prefixes (key and namespace) a state keeps next-index cache entries or floors for
INDEX_CACHE_LIMIT = 65536
#: most writes gathered in one write batch before it is written
BATCH_LIMIT = 10000


class _UnsetPart(bytes):
    """A row-key part not known yet: an empty ``bytes`` that refuses concatenation, so
    building a row key with it raises ``TypeError`` (the states turn that into their error)."""

    __slots__ = ()

    def __add__(self, other: object) -> NoReturn:
        raise TypeError("row-key part not set")

    __radd__ = __add__


#: the row-key part of the current key before the first ``set_current_key``, and of a
#: namespace not set yet; empty, so false (a set part never is: it has a length prefix)
UNSET: bytes = _UnsetPart()
