"""The host copies of RocksDB key group version files (version_cache.py): a copy appears
under its name only whole, a wrong-sized one is never read, pruning keeps what a committed
version reads, and the option is a bool."""

from __future__ import annotations

import io
import os

import pytest
from pyspark_datastream.state_store.backends.registry import get_backend
from pyspark_datastream.state_store.backends.rocksdb.version_cache import (
    TeeReader,
    VersionCache,
    cache_root,
)
from pyspark_datastream.state_store.exceptions import ConfigurationError
from pyspark_datastream.state_store.serializers import GenericKeySerializer


def _cache(tmp_path) -> VersionCache:
    return VersionCache(str(tmp_path / "root"), "s3://bucket/job/state/stage")


def test_the_root_is_the_jobs_local_dir_else_the_executor_scratch(monkeypatch, tmp_path):
    assert cache_root(str(tmp_path)) == str(tmp_path / "pyspark-datastream-cache")
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    assert cache_root(None) == str(tmp_path / "a" / "pyspark-datastream-cache")
    # each checkpoint folder has copies of its own
    other = VersionCache(str(tmp_path / "root"), "s3://bucket/job/state/other")
    assert _cache(tmp_path).folder != other.folder


def test_a_copy_is_visible_only_when_whole_and_of_the_recorded_size(tmp_path):
    cache = _cache(tmp_path)
    name = "000000000001-abc.base"
    writer = cache.writer(3, name)
    writer.write(b"x" * 10)
    assert cache.open(3, name, 10) is None  # not published yet: no half-written copy
    writer.finish(11)  # the file written had 11 bytes: the copy is not it
    assert cache.open(3, name, 10) is None and os.listdir(os.path.dirname(cache.path(3, name))) == []
    writer = cache.writer(3, name)
    writer.write(b"y" * 11)
    writer.finish(11)
    with cache.open(3, name, 11) as f:
        assert f.read() == b"y" * 11
    # a pointer recording another size: the copy is deleted, not read
    assert cache.open(3, name, 12) is None and not os.path.exists(cache.path(3, name))


def test_a_file_read_whole_from_storage_leaves_a_copy_and_one_read_in_part_none(tmp_path):
    cache = _cache(tmp_path)
    with TeeReader(io.BytesIO(b"0123456789"), cache.writer(1, "1-a.delta"), 10) as f:
        assert f.read(4) == b"0123" and f.read() == b"456789"
    assert cache.open(1, "1-a.delta", 10).read() == b"0123456789"
    with TeeReader(io.BytesIO(b"0123456789"), cache.writer(1, "2-b.delta"), 10) as f:
        f.read(4)  # the reader stopped short (a failure while rebuilding)
    assert cache.open(1, "2-b.delta", 10) is None
    with pytest.raises(RuntimeError):
        with TeeReader(io.BytesIO(b"0123456789"), cache.writer(1, "3-c.delta"), 10) as f:
            f.read()
            raise RuntimeError("rebuild failed")
    assert cache.open(1, "3-c.delta", 10) is None
    assert sorted(os.listdir(os.path.dirname(cache.path(1, "x")))) == ["1-a.delta"]


def test_prune_keeps_the_committed_versions_files_and_newer_ones(tmp_path):
    cache = _cache(tmp_path)
    names = ["000000000001-a.base", "000000000002-b.delta", "000000000003-c.base",
             "000000000004-d.delta", "000000000005-e.delta"]
    for name in names:
        writer = cache.writer(0, name)
        writer.write(b"z")
        writer.finish(1)
    cache.prune(0, {"000000000003-c.base", "000000000004-d.delta"}, below=4)
    assert sorted(os.listdir(os.path.dirname(cache.path(0, "x")))) == names[2:]


@pytest.mark.parametrize("value", ["false", 0, None])
def test_the_version_cache_option_takes_a_bool_only(value):
    backend = get_backend("rocksdb")
    with pytest.raises(ConfigurationError, match=f"version_cache takes True or False, got "
                                                 f"{type(value).__name__} {value!r}"):
        backend.create_key_group_store("s3://bucket/ckpt", GenericKeySerializer.INSTANCE, 8,
                                       None, {"version_cache": value})
    with pytest.raises(ConfigurationError, match="version_cache"):
        backend.create(GenericKeySerializer.INSTANCE, 8, version_cache=value)
