"""The package root's exports against PyFlink 2.3's recorded DataStream API
(docs/pyflink_api.json), so that no PyFlink name goes missing again.

Every recorded class must be importable from ``pyspark_datastream`` as a class; every
recorded method must exist on it, and bind every call written to PyFlink's parameters the
same way, unless ``DIFFERENT_PARAMETERS`` lists it with the reason. A listed method whose
parameters came to match must leave the list. Compatibility is the porting reference's
(docs/gen_porting.py ``compare``: names, order, defaults, ``*``/``**``).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys

import pyspark_datastream
import pytest

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")

#: PyFlink methods whose parameters differ here, with why (each still exists)
DIFFERENT_PARAMETERS: dict[str, str] = {
    "BroadcastStream.__init__": "built by ds.broadcast(...), never by a program",
    "BroadcastConnectedStream.__init__": "built by ds.connect(broadcast_stream)",
    "ConnectedStreams.__init__": "built by ds.connect(other)",
    "Time.__init__": "named millis, its field (positional calls bind; Time.seconds(...) and the "
                     "other factories are how programs make one)",
    "MapState.put_all": "named mapping in every backend's state (positional calls bind)",
    **{f"{cls}.{m}": "serializers work on bytes, not on Flink's Java streams"
       for cls in ("CountWindowSerializer", "GlobalWindowSerializer", "TimeWindowSerializer",
                   "TypeSerializer") for m in ("serialize", "deserialize")},
}


def _gen_porting():
    spec = importlib.util.spec_from_file_location("gen_porting",
                                                  os.path.join(DOCS, "gen_porting.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


GEN = _gen_porting()
with open(os.path.join(DOCS, "pyflink_api.json"), encoding="utf-8") as _f:
    SNAPSHOT = json.load(_f)
CLASSES = sorted({(cls, json.dumps(info["members"], sort_keys=True))
                  for module in SNAPSHOT["modules"].values() for cls, info in module.items()})


def _methods() -> list[tuple[str, dict]]:
    out = {}
    for module in SNAPSHOT["modules"].values():
        for cls, info in module.items():
            for member in info["members"]:
                if member["kind"] == "method" and not GEN._internal_init(member):
                    out[f"{cls}.{member['name']}"] = member
    return sorted(out.items())


METHODS = _methods()


#: the snapshot's size: every public class of pyflink.datastream, pyflink.common and their
#: submodules (docs/pyflink_snapshot.py), each once, and their public methods
N_CLASSES = 232
N_METHODS = 1072


def test_the_snapshot_is_pyflink_2_3_and_all_of_its_datastream_api():
    assert SNAPSHOT["pyflink_version"] == "2.3.0"
    assert len({c for c, _ in CLASSES}) == N_CLASSES
    assert len(METHODS) == N_METHODS
    assert not SNAPSHOT["not_importable"]
    modules = set(SNAPSHOT["modules"])
    for submodule in ("pyflink.datastream.connectors.pulsar", "pyflink.datastream.formats.avro",
                      "pyflink.datastream.async_retry_strategies", "pyflink.common.serialization"):
        assert submodule in modules


def test_at_least_95_percent_of_the_methods_bind_pyflink_calls():
    assert len(METHODS) - len(DIFFERENT_PARAMETERS) >= 0.95 * len(METHODS)


@pytest.mark.parametrize("name", sorted({c for c, _ in CLASSES}))
def test_every_pyflink_class_is_exported_as_a_class(name):
    assert name in pyspark_datastream.__all__, f"{name} is not in pyspark_datastream.__all__"
    assert inspect.isclass(getattr(pyspark_datastream, name))


def _our_params(cls: type, method: str):
    raw = inspect.getattr_static(cls, method)
    if method == "__init__" and raw is object.__init__:
        return GEN._constructor_params(cls)
    assert not isinstance(raw, property), f"{cls.__name__}.{method} is a property here"
    return GEN._our_params(getattr(cls, method))


@pytest.mark.parametrize("label,member", METHODS, ids=[m for m, _ in METHODS])
def test_every_pyflink_method_exists_with_compatible_parameters_or_is_listed(label, member):
    cls_name, method = label.split(".", 1)
    cls = getattr(pyspark_datastream, cls_name)
    assert inspect.getattr_static(cls, method, None) is not None, f"{label} is missing"
    differs = GEN.compare(GEN._public_params(member), _our_params(cls, method))
    if label in DIFFERENT_PARAMETERS:
        assert differs, f"{label} now binds as PyFlink's: remove it from DIFFERENT_PARAMETERS"
    else:
        assert not differs, f"{label}: {'; '.join(differs)}"


def test_the_listed_differences_are_pyflink_methods():
    assert set(DIFFERENT_PARAMETERS) <= {m for m, _ in METHODS}


def test_the_porting_reference_lists_nothing_missing():
    statuses = [row.status for module in GEN.sections(SNAPSHOT).values()
                for cls, info in module.items() for row in GEN.class_rows(cls, info)]
    assert len(statuses) == N_CLASSES + len(METHODS) + sum(  # classes, methods, properties
        1 for module in GEN.sections(SNAPSHOT).values() for info in module.values()
        for m in info["members"] if m["kind"] == "property")
    assert GEN.MISSING not in statuses
