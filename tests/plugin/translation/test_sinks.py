"""The sink table: every sink kind is one entry, and a kind with none is a typed error."""

from __future__ import annotations

import pytest
from pyspark_datastream.plan.graph import SinkNode
from pyspark_datastream.state_store.exceptions import GraphBuildError
from pyspark_datastream.translation.sinks import SINK_KINDS, SinkKind, sink_kind


def test_each_sink_kind_has_its_entry() -> None:
    assert set(SINK_KINDS) == {"print", "delta", "kafka", "files"}
    assert sink_kind(SinkNode(name="Print", inputs=[], kind="print")) is SINK_KINDS["print"]
    assert sink_kind(SinkNode(name="DeltaSink(/t)", inputs=[], kind="delta")) is SINK_KINDS["delta"]
    assert all(isinstance(k, SinkKind) and callable(k.batch) and callable(k.streaming)
               for k in SINK_KINDS.values())


def test_print_needs_no_checkpoint_root_and_delta_does() -> None:
    # print() output is gone once written, so a print-only STREAMING job may run on a
    # temporary checkpoint; a Delta table outlives the run and needs the Delta writer
    printing, delta = SINK_KINDS["print"], SINK_KINDS["delta"]
    assert (printing.durable, printing.writes_delta) == (False, False)
    assert (delta.durable, delta.writes_delta) == (True, True)
    kafka = SINK_KINDS["kafka"]  # a topic outlives the run too, and is no Delta table
    assert (kafka.durable, kafka.writes_delta) == (True, False)
    files = SINK_KINDS["files"]  # so do part files
    assert (files.durable, files.writes_delta) == (True, False)


@pytest.mark.parametrize("kind", ["console", "PRINT", "", "collect"])
def test_an_unknown_kind_is_a_graph_error_naming_the_sink_and_kind(kind: str) -> None:
    sink = SinkNode(name="MySink", inputs=[], kind=kind)
    with pytest.raises(GraphBuildError) as err:
        sink_kind(sink)
    message = str(err.value)
    assert "'MySink'" in message and repr(kind) in message
    assert "delta, files, kafka, print" in message  # the kinds there are
