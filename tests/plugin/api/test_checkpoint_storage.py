"""PyFlink's checkpoint storages onto the checkpoint root (``execution.checkpointing.dir``),
with Flink's documented defaults for the values kept, and the storages refused."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    CheckpointStorage,
    ConfigurationError,
    CustomCheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    StreamExecutionEnvironment,
)


def test_a_file_system_storage_is_the_checkpoint_root():
    env = StreamExecutionEnvironment.get_execution_environment()
    storage = FileSystemCheckpointStorage("s3a://bucket/ckpt")
    env.get_checkpoint_config().set_checkpoint_storage(storage)
    assert env.get_checkpoint_config().get_checkpoint_storage_dir() == "s3a://bucket/ckpt"
    assert env.get_config().get_string("execution.checkpointing.dir") == "s3a://bucket/ckpt"
    assert isinstance(storage, CheckpointStorage)
    assert storage.get_savepoint_path() is None


def test_a_file_system_storage_keeps_flinks_sizes():
    default = FileSystemCheckpointStorage("/tmp/c")
    assert default.get_min_file_size_threshold() == 20 * 1024  # Flink's 20 KiB
    assert default.get_write_buffer_size() == 4096
    sized = FileSystemCheckpointStorage("/tmp/c", file_state_size_threshold=0,
                                        write_buffer_size=1 << 16)
    assert (sized.get_min_file_size_threshold(), sized.get_write_buffer_size()) == (0, 65536)


@pytest.mark.parametrize("call,match", [
    (lambda: FileSystemCheckpointStorage(), "needs a checkpoint_path"),
    (lambda: FileSystemCheckpointStorage(""), "checkpoint_path"),
    (lambda: FileSystemCheckpointStorage("/tmp/c", write_buffer_size=0), "write_buffer_size"),
    (lambda: FileSystemCheckpointStorage("/tmp/c", j_filesystem_checkpoint_storage=object()),
     "Java checkpoint storage"),
    (lambda: CustomCheckpointStorage(object()), "CustomCheckpointStorage"),
    (lambda: JobManagerCheckpointStorage(max_state_size=0), "max_state_size"),
])
def test_bad_or_java_storages_are_refused(call, match):
    with pytest.raises(ConfigurationError, match=match):
        call()


def test_a_job_manager_storage_with_a_path_is_the_root_and_without_one_is_refused():
    config = StreamExecutionEnvironment.get_execution_environment().get_checkpoint_config()
    with_path = JobManagerCheckpointStorage("/tmp/jm")
    assert with_path.get_max_state_size() == 5 * 1024 * 1024  # Flink's default
    config.set_checkpoint_storage(with_path)
    assert config.get_checkpoint_storage_dir() == "/tmp/jm"
    with pytest.raises(ConfigurationError, match="set_checkpoint_storage"):
        config.set_checkpoint_storage(JobManagerCheckpointStorage())
    assert config.get_checkpoint_storage_dir() == "/tmp/jm"
