"""Key groups: the unit of state partitioning, as in Flink.

The key group of a key is ``crc32(serialized_key_bytes) % max_parallelism``.
CRC-32 (IEEE 802.3, the one in ``zlib`` and Spark SQL's ``crc32``) is
specified bit for bit, so the assignment is the same in every process, on every
platform and in every version of this library, and Spark can compute it
natively from the same bytes. Key groups are assigned to operator subtasks in
contiguous ranges, as Flink does.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from .exceptions import KeyGroupError

__all__ = [
    "subtask_partition",
    "DEFAULT_MAX_PARALLELISM",
    "UPPER_BOUND_MAX_PARALLELISM",
    "assign_key_group",
    "key_groups_of",
    "check_max_parallelism",
    "key_group_range_for_operator",
    "operator_index_for_key_group",
    "RANGE_KEY_SHIFT",
    "key_group_of_range_key",
]

DEFAULT_MAX_PARALLELISM = 128
#: Key groups are stored as two unsigned bytes in the unified entry layout.
UPPER_BOUND_MAX_PARALLELISM = 1 << 15


def check_max_parallelism(max_parallelism: int) -> int:
    """Validate ``pipeline.max-parallelism`` and return it."""
    if (
        not isinstance(max_parallelism, int)
        or isinstance(max_parallelism, bool)
        or not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM
    ):
        raise KeyGroupError(
            f"max parallelism must be an int in [1, {UPPER_BOUND_MAX_PARALLELISM}], "
            f"got {max_parallelism!r}"
        )
    return max_parallelism


def assign_key_group(key_bytes: bytes, max_parallelism: int) -> int:
    """Key group of a serialized key: ``crc32(key_bytes) % max_parallelism``."""
    return zlib.crc32(key_bytes) % max_parallelism


def key_groups_of(key_bytes: Iterable[bytes], max_parallelism: int) -> list[int]:
    """:func:`assign_key_group` of many serialized keys (one C-level map of the hash)."""
    return [crc % max_parallelism for crc in map(zlib.crc32, key_bytes)]


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """Subtask that owns ``key_group`` (Flink's contiguous-range assignment)."""
    return key_group * parallelism // max_parallelism


def subtask_partition(max_parallelism: int, parallelism: int, partitions: int,
                      key_group: int) -> int:
    """The Spark partition that runs ``key_group`` in STREAMING: its subtask's (Flink's
    range of ``parallelism`` subtasks) folded into ``partitions``, so a subtask never spans
    two partitions (``spark_io/key_group_ranges.py`` steers key groups there).

    Args:
        max_parallelism: The number of key groups.
        parallelism: The operator's parallel instances (subtasks).
        partitions: The Spark partitions the stage runs on.
        key_group: The key group.

    Returns:
        The partition index.
    """
    return operator_index_for_key_group(max_parallelism, parallelism, key_group) % partitions


def key_group_range_for_operator(
    max_parallelism: int, parallelism: int, operator_index: int
) -> range:
    """Key groups owned by subtask ``operator_index``, as a ``range``."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


#: A STREAMING range key is ``key_group + (salt << RANGE_KEY_SHIFT)``: the salt only steers
#: Spark's hash partitioning of the key group (``spark_io/key_group_ranges.py``).
RANGE_KEY_SHIFT = 32


def key_group_of_range_key(range_key: int) -> int:
    """The key group of a STREAMING range key (a negative one, the end-of-input sentinel's,
    is its own)."""
    return range_key if range_key < 0 else range_key & ((1 << RANGE_KEY_SHIFT) - 1)
