"""Key groups placed on Spark partitions in contiguous ranges, as Flink places them on subtasks.

Spark's hash partitioning of the key-group column alone spreads 128 key groups over 4
partitions as 25, 41, 29 and 33 (over 2 as 54 and 74): the largest partition decides when a
stage ends. Flink gives subtask ``i`` of ``P`` the key groups ``kg`` with
``kg * P // max_parallelism == i`` (:func:`operator_index_for_key_group`), equal ranges.

Spark picks a row's partition as ``pmod(murmur3(grouping columns, seed 42), P)``, so a
second grouping column - a per-key-group *salt*, read from a small table - steers each key
group onto the partition of its range: :func:`salts` finds, for every key group, the
smallest salt whose hash lands there; :func:`salt_column` is that table as a Spark column.
The salts depend on ``P``: a query must be planned with the number of partitions it runs
with (the runtime checks each key group's partition, ``GroupSpec.partitions``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..state_store.keygroups import operator_index_for_key_group

__all__ = ["SALT", "spark_partition", "salts", "salt_column", "repartition_by_key_group_range"]

#: Name of the salt column grouped on beside the key group.
SALT = "_kgs"
_SEED = 42
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _hash_int(value: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``Murmur3_x86_32.hashInt`` over uint32 arrays (wrapping arithmetic)."""
    k1 = _rotl(value * _C1, 15) * _C2
    h1 = _rotl(seed ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)
    h1 ^= np.uint32(4)
    h1 ^= h1 >> np.uint32(16)
    h1 *= np.uint32(0x85EBCA6B)
    h1 ^= h1 >> np.uint32(13)
    h1 *= np.uint32(0xC2B2AE35)
    h1 ^= h1 >> np.uint32(16)
    return h1


def spark_partition(columns: list[Any], partitions: int) -> np.ndarray:
    """``pmod(hash(c1, c2, ...), partitions)`` of int columns (arrays of equal length), as
    Spark's ``HashPartitioning`` computes a row's partition."""
    with np.errstate(over="ignore"):
        h = np.full(np.shape(columns[0]), _SEED, dtype=np.uint32)
        for c in columns:
            h = _hash_int(np.asarray(c, dtype=np.int64).astype(np.uint32), h)
    return np.mod(h.view(np.int32).astype(np.int64), partitions)


def salts(max_parallelism: int, partitions: int) -> list[int]:
    """For each key group, the smallest salt ``s >= 0`` with
    ``spark_partition([kg, s]) == kg * partitions // max_parallelism`` (about ``partitions``
    candidates per key group; searched in blocks of 64 for all open key groups at once)."""
    target = np.array([operator_index_for_key_group(max_parallelism, partitions, g)
                       for g in range(max_parallelism)], dtype=np.int64)
    found = np.full(max_parallelism, -1, dtype=np.int64)
    open_groups = np.arange(max_parallelism, dtype=np.int64)
    start, step = 0, 64
    while len(open_groups):
        candidates = np.arange(start, start + step, dtype=np.int64)
        kg = np.repeat(open_groups, step)
        salt = np.tile(candidates, len(open_groups))
        hit = (spark_partition([kg, salt], partitions) == np.repeat(target[open_groups], step)
               ).reshape(len(open_groups), step)
        done = hit.any(axis=1)
        found[open_groups[done]] = hit[done].argmax(axis=1) + start
        open_groups = open_groups[~done]
        start += step
    return found.tolist()


def salt_column(key_group: Any, max_parallelism: int, partitions: int) -> Any:
    """The salt of each row's key group as an int Spark column (0 for a negative key group,
    the end-of-input sentinel's): one constant array literal indexed by the key group."""
    from pyspark.sql import functions as F

    table = ", ".join(map(str, salts(max_parallelism, partitions)))
    lookup = F.element_at(F.expr(f"array({table})"), key_group + 1)
    return F.when(key_group >= 0, lookup).otherwise(F.lit(0)).cast("int")


def repartition_by_key_group_range(df: Any, key_group: str, partitions: int,
                                   max_parallelism: int) -> Any:
    """``df`` shuffled into ``partitions`` partitions, partition ``i`` holding the key groups
    (column ``key_group``) of Flink's subtask ``i``: a BATCH keyed stage's partitions are as
    even as key groups allow (Spark's hash of the key group alone is not)."""
    from pyspark.sql import functions as F

    kg = F.col(key_group)
    return df.repartition(partitions, kg, salt_column(kg, max_parallelism, partitions))
