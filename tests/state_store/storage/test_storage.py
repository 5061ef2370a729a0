"""The storage layer (state_store/storage): which roots it serves, how it refuses the
others, complete-only writes, and the RocksDB key-group metadata read without pickle."""

from __future__ import annotations

import os
import pickle

import pytest
from pyspark_datastream import ConfigurationError, SavepointFormatError
from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import VersionPointer
from pyspark_datastream.state_store.storage import Storage, StorageOptions, normalize_uri


@pytest.mark.parametrize("uri, expected", [
    ("file:/data/ckpt", "/data/ckpt"),
    ("file:///data/ckpt", "/data/ckpt"),
    ("file://localhost/data/ckpt", "/data/ckpt"),
    ("/Volumes/main/default/vol/ckpt", "/Volumes/main/default/vol/ckpt"),
    ("/dbfs/tmp/ckpt/", "/dbfs/tmp/ckpt"),
    ("s3a://bucket/ckpt/", "s3a://bucket/ckpt"),
    ("s3://bucket/a/b", "s3://bucket/a/b"),
    ("gs://bucket/ckpt", "gs://bucket/ckpt"),
    ("hdfs://nn:8020/ckpt", "hdfs://nn:8020/ckpt"),
])
def test_roots_it_serves(uri, expected):
    assert normalize_uri(uri, "execution.checkpointing.dir") == expected


def test_a_relative_path_is_made_absolute_where_the_job_is_built(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert normalize_uri("ckpt", "k") == str(tmp_path / "ckpt")


@pytest.mark.parametrize("uri, scheme", [
    ("abfss://c@acct.dfs.core.windows.net/ckpt", "abfss:"),
    ("wasbs://c@acct.blob.core.windows.net/ckpt", "wasbs:"),
    ("dbfs:/tmp/ckpt", "dbfs:"),
    ("ftp://host/ckpt", "ftp:"),
])
def test_an_unserved_scheme_is_a_configuration_error_naming_key_scheme_and_choices(uri, scheme):
    with pytest.raises(ConfigurationError) as info:
        normalize_uri(uri, "execution.checkpointing.dir")
    text = str(info.value)
    assert "execution.checkpointing.dir" in text and repr(scheme) in text
    assert "s3a://" in text and "gs://" in text


def test_a_bucket_less_uri_and_a_remote_file_uri_are_refused():
    with pytest.raises(ConfigurationError, match="s3a://<bucket"):
        normalize_uri("s3a://", "k")
    with pytest.raises(ConfigurationError, match="host"):
        normalize_uri("file://otherhost/x", "k")


def test_a_local_write_is_visible_only_complete(tmp_path):
    storage = Storage()
    target = str(tmp_path / "sub" / "file.bin")

    with pytest.raises(RuntimeError), storage.open_output(target) as f:
        f.write(b"half")
        raise RuntimeError("the writer died")
    assert not os.path.exists(target) and os.listdir(tmp_path / "sub") == []

    storage.write_bytes(target, b"whole")
    assert storage.read_bytes(target) == b"whole"
    assert storage.list_names(str(tmp_path / "sub")) == ["file.bin"]
    storage.delete_file(target)
    storage.delete_file(target)  # a second delete is a no-op
    assert not storage.exists(target)
    assert storage.list_names(str(tmp_path / "absent")) == []


def test_options_pickle_without_handles_and_hide_secrets():
    storage = Storage(StorageOptions(s3_endpoint="http://127.0.0.1:9", s3_access_key="AK",
                                     s3_secret_key="SK", s3_path_style=True, s3_ssl=False))
    storage.resolve("/tmp")  # a cached filesystem handle is not pickled
    clone = pickle.loads(pickle.dumps(storage))
    assert clone == storage and clone.options.s3_secret_key == "SK"
    assert "SK" not in repr(storage.options) and "AK" not in repr(storage.options)
    kw = storage.options.s3_kwargs()
    assert kw["endpoint_override"] == "127.0.0.1:9" and kw["scheme"] == "http"


def test_s3_arguments_are_ones_the_installed_pyarrow_takes():
    import pyarrow
    import pyarrow.fs as pafs

    major = int(pyarrow.__version__.split(".")[0])
    options = StorageOptions(s3_endpoint="http://127.0.0.1:9", s3_access_key="AK",
                             s3_secret_key="SK", s3_path_style=True)
    kw = options.s3_kwargs()
    assert ("allow_delayed_open" in kw) == (major >= 20)  # pyarrow 20 added it
    pafs.S3FileSystem(**kw)  # a keyword this pyarrow lacks would be a TypeError
    virtual = StorageOptions(s3_endpoint="http://127.0.0.1:9", s3_path_style=False)
    if major < 16:  # no force_virtual_addressing yet: refused, naming both
        with pytest.raises(ConfigurationError, match=r"s3\.path\.style\.access = false .*"
                                                     r"pyarrow 16 or newer"):
            virtual.s3_kwargs()
    else:
        assert virtual.s3_kwargs()["force_virtual_addressing"] is True
        pafs.S3FileSystem(**virtual.s3_kwargs())


def test_the_version_pointer_is_json_and_a_crafted_pickle_runs_nothing(tmp_path):
    pointer = VersionPointer(3, ("000000000001-abc.base", "000000000003-def.delta"), (10, 4))
    data = pointer.to_bytes()
    assert data.startswith(b"{") and b"rocksdb-pointer/v2" in data
    assert VersionPointer.from_bytes(data) == pointer

    # a v1 pointer of plain values (what earlier versions kept) still reads
    legacy = pickle.dumps(("pyspark-datastream/rocksdb-pointer/v1", 2, ("000000000002-a.base",),
                           (7,)))
    assert VersionPointer.from_bytes(legacy).files == ("000000000002-a.base",)

    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    with pytest.raises(SavepointFormatError):
        VersionPointer.from_bytes(pickle.dumps(Exploit()))
    assert not marker.exists()
    with pytest.raises(SavepointFormatError, match="bad files"):
        VersionPointer.from_bytes(b'{"format":"pyspark-datastream/rocksdb-pointer/v2",'
                                  b'"seq":1,"files":["../../etc/x"],"sizes":[1]}')


def test_a_crafted_version_file_header_runs_nothing(tmp_path):
    import struct

    from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import RocksDBKeyGroupStore
    from pyspark_datastream.state_store.serializers import GenericKeySerializer

    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    header = pickle.dumps(Exploit())
    folder = tmp_path / "state" / "kg-00001"
    folder.mkdir(parents=True)
    name = "000000000001-crafted.base"
    (folder / name).write_bytes(b"PDSKGV1\n" + struct.pack(">I", len(header)) + header)
    store = RocksDBKeyGroupStore(str(tmp_path / "state"), GenericKeySerializer.INSTANCE, 8,
                                 local_dir=str(tmp_path / "local"))
    pointer = VersionPointer(1, (name,), ((folder / name).stat().st_size,)).to_bytes()
    with pytest.raises(SavepointFormatError, match="refusing to load"):
        store.acquire(1, pointer)
    assert not marker.exists()


def test_an_unreachable_store_is_a_storage_error_naming_the_uri(tmp_path):
    import socket

    from pyspark_datastream.state_store.exceptions import DataStreamError, StorageError

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    storage = Storage(StorageOptions(s3_endpoint=f"http://127.0.0.1:{port}",
                                     s3_access_key="a", s3_secret_key="b"))
    uri = "s3a://bucket/job/_job.json"
    for call in (lambda: storage.write_bytes(uri, b"{}"), lambda: storage.read_bytes(uri),
                 lambda: storage.exists(uri)):
        with pytest.raises(StorageError, match="s3a://bucket/job/_job.json") as caught:
            call()
        assert isinstance(caught.value, DataStreamError) and isinstance(caught.value, OSError)
    # a missing local file stays FileNotFoundError
    with pytest.raises(FileNotFoundError):
        Storage().read_bytes(str(tmp_path / "missing"))
