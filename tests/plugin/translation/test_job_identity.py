"""Job identity of STREAMING jobs without Spark: graph fingerprints, default names and the
job folder's manifest (translation/job_identity.py)."""

from __future__ import annotations

import json
import os
import re

import pytest
from pyspark_datastream import (
    CheckpointMismatchError,
    CheckpointRootError,
    ConfigurationError,
    GraphBuildError,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
    Types,
)
from pyspark_datastream.plan.graph import reachable
from pyspark_datastream.translation.job_identity import (
    JobCheckpoint,
    default_job_name,
    describe_graph,
    fingerprint,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


class Count(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


class Other(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def _graph(data, function=Count, uid="count", double=False):
    env = StreamExecutionEnvironment()
    ds = env.from_collection(data, PAIR)
    if double:
        ds = ds.map(lambda r: (r[0], r[1] * 2), output_type=PAIR)
    ds.key_by(lambda r: r[0]).process(function(), output_type=PAIR).uid(uid).print()
    return reachable(env._sinks)


def test_the_fingerprint_is_the_graphs_structure_not_its_data_or_node_ids():
    a = describe_graph(_graph([("a", 1)]), 128, "hashmap")
    b = describe_graph(_graph([("b", 2), ("c", 3)]), 128, "hashmap")  # other data, node ids
    assert a == b and fingerprint(a) == fingerprint(b)
    json.dumps(a)  # it goes into the manifest
    for other in (describe_graph(_graph([("a", 1)], Other), 128, "hashmap"),
                  describe_graph(_graph([("a", 1)], uid="renamed"), 128, "hashmap"),
                  describe_graph(_graph([("a", 1)], double=True), 128, "hashmap"),
                  describe_graph(_graph([("a", 1)]), 64, "hashmap"),
                  describe_graph(_graph([("a", 1)]), 128, "rocksdb")):
        assert fingerprint(other) != fingerprint(a)
    assert describe_graph(_graph([]), 128, "heap") == a  # heap is the hashmap backend


def test_default_names_are_readable_and_differ_per_graph():
    name = default_job_name(_graph([("a", 1)]), 128, "hashmap")
    assert re.fullmatch(r"count-print-[0-9a-f]{10}", name)
    assert default_job_name(_graph([("z", 9)]), 128, "hashmap") == name
    assert default_job_name(_graph([("a", 1)], double=True), 128, "hashmap") != name


def test_a_job_folder_with_another_graph_is_refused_before_anything_is_created(tmp_path):
    root = str(tmp_path / "root")
    first = describe_graph(_graph([("a", 1)]), 128, "hashmap")
    job = JobCheckpoint("shared", root, "execution.checkpointing.dir", first)
    job.plan("never", "its checkpoints")
    folder = job.folder()
    assert folder == os.path.join(root, "shared")
    with open(os.path.join(folder, "_job.json")) as f:
        assert json.load(f)["fingerprint"] == fingerprint(first)
    JobCheckpoint("shared", root, "", first).plan("never", "x")  # same graph: resumes

    changed = describe_graph(_graph([("a", 1)], Other, uid="other", double=True), 128, "hashmap")
    other = JobCheckpoint("shared", root, "", changed)
    with pytest.raises(CheckpointMismatchError) as err:
        other.plan("never", "its checkpoints")
    assert isinstance(err.value, GraphBuildError)
    text = str(err.value)
    assert "'shared'" in text and folder in text
    assert "operators added: Map, other" in text and "operators removed: count" in text
    assert os.listdir(root) == ["shared"] and os.listdir(folder) == ["_job.json"]


def test_no_root_temporary_only_where_allowed(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    desc = describe_graph(_graph([("a", 1)]), 128, "hashmap")
    durable = JobCheckpoint("j", None, "", desc)
    durable.plan("never", "the checkpoints of its sinks' queries")
    with pytest.raises(CheckpointRootError, match="execution.checkpointing.dir") as err:
        durable.require()
    assert isinstance(err.value, ConfigurationError)
    assert os.listdir(tmp_path) == []
    temp = JobCheckpoint("j", None, "", desc)
    temp.plan("if-no-root", "x")
    folder = temp.folder()
    assert folder.startswith(str(tmp_path)) and os.path.isdir(folder)
    temp.release()
    assert os.listdir(tmp_path) == []
    # "always" (an unnamed collect) is temporary under a configured root too: in a folder
    # of its own there (storage every host reaches), removed when the job ends
    always = JobCheckpoint("j", str(tmp_path / "root"), "", desc)
    always.plan("always", "x")
    folder = always.folder()
    assert os.path.dirname(os.path.dirname(folder)) == str(tmp_path / "root")
    assert os.path.basename(os.path.dirname(folder)).startswith("_temporary-")
    assert os.listdir(folder) == ["_job.json"]
    always.release()
    assert os.listdir(tmp_path) == ["root"] and os.listdir(tmp_path / "root") == []
