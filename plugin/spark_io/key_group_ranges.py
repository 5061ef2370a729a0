"""Key groups placed on Spark partitions in contiguous ranges, as Flink places them on subtasks.

Spark's hash partitioning of the key-group column alone spreads 128 key groups over 4
partitions as 25, 41, 29 and 33 (over 2 as 54 and 74): the largest partition decides when a
stage ends. Flink gives subtask ``i`` of ``P`` the key groups ``kg`` with
``kg * P // max_parallelism == i`` (``keygroups.operator_index_for_key_group``), equal ranges.

Spark picks a row's partition as ``pmod(murmur3(columns, seed 42), P)``, so a per-key-group
*salt*, read from a small table, can steer each key group onto the partition of its range:

* BATCH repartitions by ``(key group, salt)`` (:func:`repartition_by_key_group_range`; its
  sorts do not involve the salt);
* STREAMING groups on ONE long column, the *range key* ``kg + (salt << 32)``
  (:func:`range_key_column`; :func:`key_group_of_range_key` reads the key group back): a
  second grouping column would make Spark's sort compare rows past the sort prefix. Its type
  (long, the key group's is int) makes Spark refuse a checkpoint of the old layout.

A STREAMING keyed operator of parallelism ``p`` runs ``p`` subtasks whatever the number of
partitions ``P``: subtask ``i`` runs in partition ``i % P`` (``subtask_partition``), so
a subtask's key groups never span two partitions and ``open()`` runs once per subtask.

The salts depend on ``P`` and ``p``: a query must be planned with the number of partitions it
runs with (the runtime checks each key group's partition, ``GroupSpec.partitions``), and a
checkpoint keeps its operators' parallelism (translation/evolution.py).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ..state_store.keygroups import RANGE_KEY_SHIFT, subtask_partition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["RANGE_KEY", "stateful_partitions", "spark_partition", "spark_partition_of_longs",
           "salts", "salt_column", "range_key_column",
           "key_group_of_range_key_column", "repartition_by_key_group_range"]

#: Name of STREAMING's grouping column: the key group plus its salt (a long).
RANGE_KEY = "_kgr"

log = logging.getLogger("pyspark_datastream")


def stateful_partitions(spark: Any) -> int:
    """The session's ``spark.sql.shuffle.partitions`` (the number of partitions a new
    STREAMING stateful query runs with); 0 when it is not a number (e.g. ``auto``): key
    groups are then placed by Spark's hash.

    Args:
        spark: the job's session.

    Returns:
        The number of partitions the key-group ranges are planned for, or 0.
    """
    raw = spark.conf.get("spark.sql.shuffle.partitions") or "200"
    try:
        return max(1, int(raw))
    except ValueError:
        log.info("STREAMING: spark.sql.shuffle.partitions is %r: key groups are placed by "
                 "Spark's hash of the key group, not in ranges", raw)
        return 0
_SEED = 42
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h1: np.ndarray, value: np.ndarray) -> np.ndarray:
    k1 = _rotl(value * _C1, 15) * _C2
    return _rotl(h1 ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h1: np.ndarray, length: int) -> np.ndarray:
    h1 = h1 ^ np.uint32(length)
    h1 ^= h1 >> np.uint32(16)
    h1 *= np.uint32(0x85EBCA6B)
    h1 ^= h1 >> np.uint32(13)
    h1 *= np.uint32(0xC2B2AE35)
    h1 ^= h1 >> np.uint32(16)
    return h1


def _hash_int(value: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``Murmur3_x86_32.hashInt`` over uint32 arrays (wrapping arithmetic)."""
    return _fmix(_mix(seed, value), 4)


def _hash_long(value: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``Murmur3_x86_32.hashLong``: the low then the high 32 bits, length 8."""
    low = value.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    high = value.astype(np.uint64) >> np.uint64(32)
    return _fmix(_mix(_mix(seed, low.astype(np.uint32)), high.astype(np.uint32)), 8)


def _pmod(h: np.ndarray, partitions: int) -> np.ndarray:
    return np.mod(h.view(np.int32).astype(np.int64), partitions)


def spark_partition(columns: list[Any], partitions: int) -> np.ndarray:
    """``pmod(hash(c1, c2, ...), partitions)`` of int columns (arrays of equal length), as
    Spark's ``HashPartitioning`` computes a row's partition."""
    with np.errstate(over="ignore"):
        h = np.full(np.shape(columns[0]), _SEED, dtype=np.uint32)
        for c in columns:
            h = _hash_int(np.asarray(c, dtype=np.int64).astype(np.uint32), h)
        return _pmod(h, partitions)


def spark_partition_of_longs(values: Any, partitions: int) -> np.ndarray:
    """The partition of each value of one long column under Spark's ``HashPartitioning``."""
    with np.errstate(over="ignore"):
        seed = np.full(np.shape(values), _SEED, dtype=np.uint32)
        return _pmod(_hash_long(np.asarray(values, dtype=np.int64), seed), partitions)


@lru_cache(maxsize=16)
def salts(max_parallelism: int, partitions: int, long_key: bool = False,
          parallelism: int = 0) -> tuple[int, ...]:
    """For each key group, the smallest salt ``s >= 0`` that puts it on partition
    ``(kg * parallelism // max_parallelism) % partitions`` (its subtask's; ``parallelism``
    0: ``partitions``): as the int columns ``(kg, s)`` (BATCH's repartitioning) or, with
    ``long_key``, as the long ``kg + (s << 32)`` (STREAMING's range key). About
    ``partitions`` candidates per key group; searched in blocks of 64 for all open key
    groups at once, once per layout (every keyed operator of a job shares it)."""
    target = np.array([subtask_partition(max_parallelism, parallelism or partitions,
                                         partitions, g)
                       for g in range(max_parallelism)], dtype=np.int64)
    found = np.full(max_parallelism, -1, dtype=np.int64)
    open_groups = np.arange(max_parallelism, dtype=np.int64)
    start, step = 0, 64
    while len(open_groups):
        candidates = np.arange(start, start + step, dtype=np.int64)
        kg = np.repeat(open_groups, step)
        salt = np.tile(candidates, len(open_groups))
        placed = (spark_partition_of_longs(kg + (salt << RANGE_KEY_SHIFT), partitions)
                  if long_key else spark_partition([kg, salt], partitions))
        hit = (placed == np.repeat(target[open_groups], step)).reshape(len(open_groups), step)
        done = hit.any(axis=1)
        found[open_groups[done]] = hit[done].argmax(axis=1) + start
        open_groups = open_groups[~done]
        start += step
    return tuple(found.tolist())


def salt_column(key_group: Any, max_parallelism: int, partitions: int,
                long_key: bool = False, parallelism: int = 0) -> Any:
    """The salt of each row's key group (:func:`salts`) as an int Spark column (0 for a
    negative key group, the end-of-input sentinel's): one constant array literal indexed by
    the key group."""
    from pyspark.sql import functions as F

    table = ", ".join(map(str, salts(max_parallelism, partitions, long_key, parallelism)))
    lookup = F.element_at(F.expr(f"array({table})"), key_group + 1)
    return F.when(key_group >= 0, lookup).otherwise(F.lit(0)).cast("int")


def range_key_column(key_group: Any, max_parallelism: int, partitions: int,
                     parallelism: int = 0) -> Any:
    """STREAMING's grouping column: ``kg + (salt << 32)`` as a long (a negative key group,
    the end-of-input sentinel's, stays itself), placing each key group on the partition of
    its subtask among ``parallelism`` (0: ``partitions``)."""
    from pyspark.sql import functions as F

    salt = salt_column(key_group, max_parallelism, partitions, long_key=True,
                       parallelism=parallelism)
    return key_group.cast("long") + F.shiftleft(salt.cast("long"), RANGE_KEY_SHIFT)


def key_group_of_range_key_column(range_key: Any) -> Any:
    """The key group of a range-key column, as an int Spark column: the Spark twin of
    :func:`~pyspark_datastream.state_store.keygroups.key_group_of_range_key`."""
    from pyspark.sql import functions as F

    low = range_key.bitwiseAND(F.lit((1 << RANGE_KEY_SHIFT) - 1))
    return F.when(range_key < 0, range_key).otherwise(low).cast("int")


def repartition_by_key_group_range(df: DataFrame, key_group: str, partitions: int,
                                   max_parallelism: int) -> DataFrame:
    """``df`` shuffled into ``partitions`` partitions, partition ``i`` holding the key groups
    (column ``key_group``) of Flink's subtask ``i``: a BATCH keyed stage's partitions are as
    even as key groups allow (Spark's hash of the key group alone is not)."""
    from pyspark.sql import functions as F

    kg = F.col(key_group)
    return df.repartition(partitions, kg, salt_column(kg, max_parallelism, partitions))
