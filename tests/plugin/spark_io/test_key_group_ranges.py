"""key_group_ranges: salts that put each key group on the Spark partition of its contiguous
range (BATCH's (key group, salt) ints, STREAMING's long range key), checked against an
independent scalar Murmur3 (Spark's hash agrees with it in
integration_tests/test_streaming.py) and Flink's range assignment."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from pyspark_datastream import JobExecutionError
from pyspark_datastream.runtime.group_state import GroupSpec, check_partition
from pyspark_datastream.spark_io.key_group_ranges import (
    salts,
    spark_partition,
    spark_partition_of_longs,
)
from pyspark_datastream.state_store.keygroups import key_group_of_range_key

M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M32


def murmur3_x86_32(blocks: list[int], seed: int) -> int:
    """Murmur3 x86_32 of little-endian 4-byte ``blocks``, as a signed 32-bit int, written from
    the algorithm's description: one ``mix`` per block, then ``fmix`` of the byte length."""
    h = seed & M32
    for block in blocks:
        k = (block & M32) * 0xCC9E2D51 & M32
        k = _rotl(k, 15) * 0x1B873593 & M32
        h ^= k
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & M32
    h ^= 4 * len(blocks)
    h ^= h >> 16
    h = h * 0x85EBCA6B & M32
    h ^= h >> 13
    h = h * 0xC2B2AE35 & M32
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def murmur3_hash_int(value: int, seed: int) -> int:
    """Spark's hash of an int: one block."""
    return murmur3_x86_32([value], seed)


def murmur3_hash_long(value: int, seed: int) -> int:
    """Spark's hash of a long: two blocks, the low then the high 32 bits."""
    return murmur3_x86_32([value & M32, (value >> 32) & M32], seed)


def scalar_partition(values: list[int], partitions: int) -> int:
    h = 42
    for v in values:
        h = murmur3_hash_int(v, h)
    return h % partitions  # Python's % is pmod for a positive modulus


def test_vectorized_hash_equals_the_scalar_reference():
    rng = random.Random(5)
    rows = [(rng.randrange(-2**31, 2**31), rng.randrange(-2**31, 2**31)) for _ in range(3000)]
    rows += [(0, 0), (-1, -1), (2**31 - 1, -2**31), (127, 5)]
    for partitions in (1, 2, 4, 7, 200):
        got = spark_partition([np.array([a for a, _ in rows]), np.array([b for _, b in rows])],
                              partitions).tolist()
        assert got == [scalar_partition([a, b], partitions) for a, b in rows]


def test_vectorized_long_hash_equals_the_scalar_reference():
    rng = random.Random(6)
    values = [rng.randrange(-2**63, 2**63) for _ in range(3000)] + [0, -1, 2**63 - 1, -2**63, 5 << 32]
    for partitions in (1, 4, 7, 200):
        got = spark_partition_of_longs(np.array(values, dtype=np.int64), partitions).tolist()
        assert got == [murmur3_hash_long(v, 42) % partitions for v in values]


@pytest.mark.parametrize("max_parallelism,partitions", [(128, 4), (128, 2), (7, 10), (32768, 200)])
def test_range_keys_land_on_their_range_and_give_their_key_group_back(max_parallelism, partitions):
    table = salts(max_parallelism, partitions, long_key=True)
    for kg in range(0, max_parallelism, max(1, max_parallelism // 512)):
        key = kg + (table[kg] << 32)
        assert murmur3_hash_long(key, 42) % partitions == kg * partitions // max_parallelism
        assert all(murmur3_hash_long(kg + (s << 32), 42) % partitions
                   != kg * partitions // max_parallelism for s in range(table[kg]))
        assert key_group_of_range_key(key) == kg
    assert key_group_of_range_key(-1) == -1


@pytest.mark.parametrize("max_parallelism,partitions",
                         [(128, 4), (128, 2), (128, 1), (128, 3), (7, 10), (32768, 200), (1, 1)])
def test_every_key_group_lands_on_its_range_with_the_smallest_salt(max_parallelism, partitions):
    table = salts(max_parallelism, partitions)
    assert len(table) == max_parallelism
    for kg in range(0, max_parallelism, max(1, max_parallelism // 512)):
        target = kg * partitions // max_parallelism
        assert scalar_partition([kg, table[kg]], partitions) == target
        assert all(scalar_partition([kg, s], partitions) != target for s in range(table[kg]))
    per_partition = Counter(kg * partitions // max_parallelism for kg in range(max_parallelism))
    sizes = [per_partition.get(p, 0) for p in range(partitions)]
    # Flink's ranges: sizes differ by at most one (no partition gets more than its share)
    assert max(sizes) - min(s for s in sizes if s) <= 1


def test_a_key_group_in_another_partition_is_a_clear_error(monkeypatch):
    from pyspark_datastream.runtime import group_state

    spec = GroupSpec("counter", "process", None, None, {"max_parallelism": 128}, False, False,
                     frozenset(), partitions=4)
    monkeypatch.setattr(group_state, "partition_id", lambda: 2)
    check_partition(spec, 64)  # 64 * 4 // 128 == 2
    with pytest.raises(JobExecutionError,
                       match=r"'counter': key group 1 runs in Spark partition 2, not 0: .*"
                             r"spark.sql.shuffle.partitions=4"):
        check_partition(spec, 1)
