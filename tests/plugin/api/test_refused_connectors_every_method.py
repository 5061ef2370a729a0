"""Every method of every PyFlink class refused here (no Spark): the classes of the connectors
and formats without a Spark counterpart (Pulsar, Kinesis, dynamic Kafka, Cassandra,
Elasticsearch, JDBC, RabbitMQ, hybrid source; Avro, ORC and Parquet bulk writers and Avro
schemas), each with PyFlink's recorded methods (docs/pyflink_api.json), each method raising
UnsupportedConnectorError naming the call and the PyFlink module the snapshot records it in,
and listed as refused in the porting reference.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys

import pyspark_datastream as pds
import pytest
from pyspark_datastream import UnsupportedConnectorError
from pyspark_datastream.api.refused_connectors import RefusedApi

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs")
with open(os.path.join(DOCS, "pyflink_api.json"), encoding="utf-8") as _f:
    SNAPSHOT = json.load(_f)


def _gen_porting():
    spec = importlib.util.spec_from_file_location("gen_porting",
                                                  os.path.join(DOCS, "gen_porting.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _refused_members() -> list[tuple[str, str, dict]]:
    """(class, PyFlink module that defines it, member) of every refused class's methods."""
    out = {}
    for module in SNAPSHOT["modules"].values():
        for cls, info in module.items():
            ours = getattr(pds, cls, None)
            if not (inspect.isclass(ours) and issubclass(ours, RefusedApi)):
                continue
            for member in info["members"]:
                if member["kind"] == "method":
                    out[(cls, member["name"])] = (info["defined_in"], member)
    return [(cls, where, member) for (cls, _), (where, member) in sorted(out.items())]


REFUSED = _refused_members()


def test_the_refused_classes_cover_the_connectors_and_formats_without_a_counterpart():
    modules = {where for _, where, _ in REFUSED}
    assert modules == {f"pyflink.datastream.connectors.{m}" for m in (
        "cassandra", "dynamic_kafka", "elasticsearch", "hybrid_source", "jdbc", "kinesis",
        "pulsar", "rabbitmq")} | {f"pyflink.datastream.formats.{m}" for m in (
            "avro", "orc", "parquet")}
    assert len(REFUSED) == 241


@pytest.mark.parametrize("cls_name,where,member", REFUSED,
                         ids=[f"{c}.{m['name']}" for c, _, m in REFUSED])
def test_every_method_of_a_refused_class_raises_naming_the_call_and_its_module(cls_name, where,
                                                                                member):
    cls = getattr(pds, cls_name)
    name = member["name"]
    raw = inspect.getattr_static(cls, name)
    args = [None] * sum(1 for p in member["params"] or [] if not p["name"].startswith("*"))
    with pytest.raises(UnsupportedConnectorError) as raised:
        if name == "__init__":
            cls(*args)
        elif isinstance(raw, (staticmethod, classmethod)):
            getattr(cls, name)(*args)
        else:  # an instance method: on an instance made without the refused constructor
            getattr(cls, name)(object.__new__(cls), *args)
    call = f"{cls_name}(...)" if name == "__init__" else f"{cls_name}.{name}(...)"
    text = str(raised.value)
    assert text.startswith(f"{call}: PyFlink's {cls_name} ({where}) is not supported; ")
    assert len(text) > len(call) + 60  # and what to use instead


def test_the_porting_reference_lists_every_member_of_a_refused_class_as_refused():
    gen = _gen_porting()
    for module in gen.sections(SNAPSHOT).values():
        for cls, info in module.items():
            ours = getattr(pds, cls, None)
            if inspect.isclass(ours) and issubclass(ours, RefusedApi):
                rows = gen.class_rows(cls, info)
                assert [r.name for r in rows if r.status != gen.REFUSED] == [], cls
