"""The RocksDB backend holds state far larger than the memory it is given."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import psutil
import pytest
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.descriptors import MapStateDescriptor
from pyspark_datastream.state_store.serializers import BytesSerializer
from pyspark_datastream.state_store.types import Types

TOTAL_ENTRIES = 5_000_000
ENTRIES_PER_KEY = 50_000
VALUE_SIZE = 100


def _folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@pytest.mark.slow
def test_rocksdb_holds_5m_map_entries_in_bounded_memory(tmp_path: Path) -> None:
    process = psutil.Process()
    backend = RocksDBKeyedStateBackend(
        Types.LONG().create_serializer(),
        directory=tmp_path,
        block_cache_size=8 << 20,
        write_buffer_size=8 << 20,
        max_write_buffer_number=2,
    )
    try:
        state = backend.get_state(
            MapStateDescriptor("m", Types.LONG(), BytesSerializer.INSTANCE)
        )
        gc.collect()
        rss_before = process.memory_info().rss
        peak = rss_before
        keys = TOTAL_ENTRIES // ENTRIES_PER_KEY
        for key in range(keys):
            backend.set_current_key(key)
            blob = os.urandom(ENTRIES_PER_KEY * VALUE_SIZE)  # incompressible values
            state.put_all(
                (i, blob[i * VALUE_SIZE : (i + 1) * VALUE_SIZE]) for i in range(ENTRIES_PER_KEY)
            )
            if key % 10 == 9:
                peak = max(peak, process.memory_info().rss)
        peak = max(peak, process.memory_info().rss)
        data_bytes = TOTAL_ENTRIES * (VALUE_SIZE + 8)
        growth = peak - rss_before
        on_disk = _folder_size(tmp_path)
        print(
            f"\n{TOTAL_ENTRIES} entries, {data_bytes / 2**20:.0f} MiB of keys+values, "
            f"RSS growth {growth / 2**20:.0f} MiB, on disk {on_disk / 2**20:.0f} MiB"
        )
        # the data really is stored (and mostly on disk, not in memory)
        assert on_disk > data_bytes // 2
        assert growth < data_bytes // 4
        # and it reads back: point lookups and a full per-key scan
        backend.set_current_key(keys - 1)
        assert state.get(0) is not None and len(state.get(ENTRIES_PER_KEY - 1)) == VALUE_SIZE
        assert state.get(ENTRIES_PER_KEY) is None
        backend.set_current_key(17)
        assert sum(1 for _ in state.keys()) == ENTRIES_PER_KEY
    finally:
        backend.close()
    assert not any(tmp_path.iterdir())
