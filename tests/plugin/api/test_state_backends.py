"""EmbeddedRocksDBStateBackend with PyFlink's signature: PredefinedOptions onto the
rocksdict options that have a counterpart (Flink's documented values for the high-memory
set), explicit sizes winning, storage paths onto ``local_dir``, a real RocksDB backend opened
with them; the Java options factory and CustomStateBackend refused."""

from __future__ import annotations

import os

import pytest
from pyspark_datastream import (
    ConfigurationError,
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    PredefinedOptions,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.api.state_backends import backend_spec
from pyspark_datastream.state_store.backends import get_backend


def test_predefined_options_map_onto_rocksdict_options():
    backend = EmbeddedRocksDBStateBackend()
    assert backend.get_predefined_options() is PredefinedOptions.DEFAULT
    assert backend.options() == {}
    backend.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM)
    # Flink: 256 MB block cache, 64 MB write buffers, at most 4 of them, parallelism 4
    assert backend.options() == {"max_background_jobs": 4, "block_cache_size": 256 << 20,
                                 "write_buffer_size": 64 << 20, "max_write_buffer_number": 4}
    backend.set_predefined_options(PredefinedOptions.FLASH_SSD_OPTIMIZED)
    assert backend.options() == {"max_background_jobs": 4}


def test_explicit_sizes_win_over_the_predefined_set():
    backend = EmbeddedRocksDBStateBackend(block_cache_size=1 << 20)
    backend.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM)
    assert backend.options()["block_cache_size"] == 1 << 20
    assert backend.options()["write_buffer_size"] == 64 << 20
    assert "version_cache" not in backend.options()  # the store's default: on
    assert EmbeddedRocksDBStateBackend(version_cache=False).options() == {"version_cache": False}


def test_storage_paths_are_the_working_directory(tmp_path, caplog):
    backend = EmbeddedRocksDBStateBackend(True)
    assert backend.is_incremental_checkpoints_enabled()
    assert not EmbeddedRocksDBStateBackend().is_incremental_checkpoints_enabled()
    backend.set_db_storage_paths(str(tmp_path / "a"), str(tmp_path / "b"))
    assert backend.get_db_storage_paths() == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert backend.options()["local_dir"] == str(tmp_path / "a")
    assert any(str(tmp_path / "b") in r.getMessage() for r in caplog.records)
    backend.set_db_storage_paths()
    assert "local_dir" not in backend.options()
    assert backend.get_number_of_transfer_threads() == 4
    backend.set_number_of_transfer_threads(8)
    assert backend.get_number_of_transfer_threads() == 8
    assert backend.get_options() is None


def test_a_real_rocksdb_backend_opens_with_the_high_memory_set(tmp_path):
    backend = EmbeddedRocksDBStateBackend()
    backend.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM)
    backend.set_db_storage_paths(str(tmp_path))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_state_backend(backend)
    reference, options = env.get_state_backend()
    keyed = get_backend(reference).create(Types.STRING().key_serializer(), 128, **options)
    try:
        state = keyed.get_state(ValueStateDescriptor("count", Types.LONG()))
        for key, value in (("a", 1), ("b", 2), ("a", 3)):
            keyed.set_current_key(key)
            state.update((state.value() or 0) + value)
        keyed.set_current_key("a")
        assert state.value() == 4
        assert os.listdir(tmp_path)  # the database lives under the storage path
    finally:
        keyed.close()


@pytest.mark.parametrize("call,match", [
    (lambda: EmbeddedRocksDBStateBackend().set_options("org.example.MyOptionsFactory"),
     "set_options.*RocksDBOptionsFactory"),
    (lambda: EmbeddedRocksDBStateBackend().set_predefined_options("DEFAULT"),
     "set_predefined_options"),
    (lambda: EmbeddedRocksDBStateBackend().set_number_of_transfer_threads(0),
     "set_number_of_transfer_threads"),
    (lambda: EmbeddedRocksDBStateBackend().set_db_storage_paths(""), "set_db_storage_paths"),
    (lambda: EmbeddedRocksDBStateBackend("yes"), "enable_incremental_checkpointing"),
    (lambda: EmbeddedRocksDBStateBackend(version_cache="no"),
     "version_cache must be a bool, got str 'no'"),
    (lambda: EmbeddedRocksDBStateBackend(None, object()), "Java Flink object"),
    (lambda: CustomStateBackend(object()), "CustomStateBackend"),
])
def test_what_cannot_run_here_is_refused(call, match):
    with pytest.raises(ConfigurationError, match=match):
        call()


def test_the_spec_checks_the_options_against_the_registration():
    backend = EmbeddedRocksDBStateBackend()
    backend.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED)
    assert backend_spec(backend) == ("rocksdb", {"max_background_jobs": 4})
