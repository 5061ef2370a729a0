"""The RocksDB backend's host copies of its key group version files (version_cache.py),
with the checkpoint on the suite's S3 server.

Spark hands a partition's task to any idle Python worker of its executor; a worker that does
not hold a key group's working copy rebuilds it from the files of the committed version.
Each role below is its own process (``keygroup_child.py``), a host being the executor
scratch it is given (``SPARK_LOCAL_DIRS``): a worker writes three micro-batches of eight
key groups; a second worker of the same host rebuilds them without reading a byte from S3;
a worker of another host reads them all from S3; a damaged copy is read from S3 instead.
What proves where the bytes came from does
not rely on the store's own counter: with the files deleted from S3, the same host's
workers still rebuild every key group, and another host's worker, or one with the cache
off, fails naming the missing file. Expected values come from the writes' rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = 3


def _child(host, args: dict) -> dict:
    env = dict(os.environ, SPARK_LOCAL_DIRS=str(host))
    done = subprocess.run([sys.executable, os.path.join(HERE, "keygroup_child.py"),
                           json.dumps(args)], capture_output=True, text=True, env=env,
                          cwd=str(host), timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected() -> dict[str, int]:
    """The writes' rule: the last batch's value of every key."""
    from keygroup_child import KEYS

    return {key: 100 * (BATCHES - 1) + i for i, key in enumerate(KEYS)}


def _copies(host) -> dict[str, int]:
    """The version file copies under a host's scratch: name -> size."""
    root = host / "pyspark-datastream-cache"
    return {name: os.path.getsize(os.path.join(d, name))
            for d, _, names in os.walk(root) for name in names}


def test_workers_of_a_host_rebuild_key_groups_from_its_copies_not_from_s3(s3_server,
                                                                          tmp_path):
    host_a, host_b = tmp_path / "host-a", tmp_path / "host-b"
    host_a.mkdir(), host_b.mkdir()
    prefix = "version-cache/ckpt"
    common = {"checkpoint": f"s3://{s3_server.bucket}/{prefix}",
              "endpoint": s3_server.endpoint}

    wrote = _child(host_a, {**common, "write": BATCHES})
    pointers = wrote["pointers"]
    assert len(pointers) == 8 and wrote["storage_bytes_read"] == 0
    on_s3 = {k.rsplit("/", 1)[1]: k for k in s3_server.keys(prefix + "/")}
    listing = s3_server.client().get_paginator("list_objects_v2").paginate(
        Bucket=s3_server.bucket, Prefix=prefix + "/")
    sizes = {o["Key"].rsplit("/", 1)[1]: o["Size"]
             for page in listing for o in page.get("Contents", [])}
    chains = {g: json.loads(bytes.fromhex(p))["files"] for g, p in pointers.items()}
    read_by_pointers = {name for files in chains.values() for name in files}
    assert all(len(files) == BATCHES for files in chains.values()), chains  # base + 2 deltas
    # the writer left a copy of every file it wrote on its host, each of the file's size
    assert _copies(host_a) == sizes and set(sizes) == set(on_s3) >= read_by_pointers

    # another worker of the same host: every key group from the copies, nothing from S3
    same_host = _child(host_a, {**common, "read": pointers})
    assert same_host == {"values": _expected(), "storage_bytes_read": 0}
    # a worker of another host: every byte the pointers name, from S3; copies made there
    other_host = _child(host_b, {**common, "read": pointers})
    assert other_host["values"] == _expected()
    assert other_host["storage_bytes_read"] == sum(sizes[n] for n in read_by_pointers)
    assert _copies(host_b) == {n: sizes[n] for n in read_by_pointers}

    # a copy of the wrong size (a disk that lost its end) is not read: that file comes from
    # S3 again and its copy is replaced
    damaged = sorted(read_by_pointers)[0]
    path = next(os.path.join(d, damaged) for d, _, names in os.walk(host_a) if damaged in names)
    with open(path, "r+b") as f:
        f.truncate(sizes[damaged] - 3)
    repaired = _child(host_a, {**common, "read": pointers})
    assert repaired == {"values": _expected(), "storage_bytes_read": sizes[damaged]}
    assert os.path.getsize(path) == sizes[damaged]
    # ... and so is one of the right size that does not read as a version file
    with open(path, "rb") as f:
        good = f.read()
    with open(path, "r+b") as f:
        f.write(b"garbage!")
    repaired = _child(host_a, {**common, "read": pointers})
    assert repaired == {"values": _expected(), "storage_bytes_read": sizes[damaged]}
    with open(path, "rb") as f:
        assert f.read() == good

    # the files gone from S3: both hosts' workers still rebuild every key group from their
    # copies, which proves they read none of it from S3 ...
    s3_server.client().delete_objects(Bucket=s3_server.bucket, Delete={
        "Objects": [{"Key": k} for k in on_s3.values()]})
    assert not s3_server.keys(prefix + "/")
    for host in (host_a, host_b):
        assert _child(host, {**common, "read": pointers}) == {
            "values": _expected(), "storage_bytes_read": 0}
    # ... and a host without copies, or a worker with the cache off, reads S3 and fails
    # naming the missing file
    for host, cache in ((tmp_path / "host-c", True), (host_a, False)):
        host.mkdir(exist_ok=True)
        failed = _child(host, {**common, "read": pointers, "version_cache": cache})
        assert "is missing or unreadable" in failed["error"], failed
        assert f"{prefix}/kg-" in failed["error"], failed

