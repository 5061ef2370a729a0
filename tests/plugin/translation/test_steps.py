"""The two translators stand apart, and the steps they share work without a SparkSession."""

from __future__ import annotations

import pytest
from pyspark_datastream.plan.config import Configuration, RuntimeMode
from pyspark_datastream.plan.graph import ChainNode, SideOutputNode, SourceNode, consumers
from pyspark_datastream.runtime.encoding import PICKLED
from pyspark_datastream.state_store.exceptions import GraphBuildError
from pyspark_datastream.translation.batch.translator import BatchTranslator
from pyspark_datastream.translation.steps import (
    by_source_kind,
    fan_out,
    needs_pass,
    operator_config,
    side_output_tags,
)
from pyspark_datastream.translation.stream import Stream
from pyspark_datastream.translation.streaming.queries import as_dict, progress_row
from pyspark_datastream.translation.streaming.translator import StreamingTranslator


def test_operator_config_per_mode() -> None:
    cfg = Configuration({"pipeline.processing-time.allow": "IGNORE"})
    batch = operator_config(cfg, RuntimeMode.BATCH, 2, 128)
    streaming = operator_config(cfg, RuntimeMode.STREAMING, 2, 128)
    assert batch["mode"] is RuntimeMode.BATCH and streaming["mode"] is RuntimeMode.STREAMING
    assert batch["processing_time_allow"] == streaming["processing_time_allow"] == "IGNORE"
    assert batch["processing_time_end_of_input"] == "IGNORE"
    assert streaming["processing_time_end_of_input"] == "FIRE_AND_QUIESCE"
    assert (batch["parallelism"], batch["max_parallelism"]) == (2, 128)


def test_side_output_tags_and_fan_out() -> None:
    source = SourceNode("source", [])
    mapped = ChainNode("map", [source])
    late = SideOutputNode("late", [mapped], tag_id="late")
    early = SideOutputNode("early", [mapped], tag_id="early")
    other = ChainNode("other", [mapped])
    nodes = [source, mapped, late, early, other]
    assert side_output_tags(nodes) == {mapped.id: frozenset({"late", "early"})}
    readers = consumers(nodes)
    assert fan_out(readers, mapped) == 1  # side outputs do not count
    assert fan_out(readers, source) == 1
    assert fan_out(readers, other) == 0


def test_needs_pass() -> None:
    idle = Stream(None, PICKLED)
    assert not needs_pass(idle, PICKLED, None, frozenset(), False)
    assert needs_pass(idle, PICKLED, None, frozenset(), True)
    assert needs_pass(idle, PICKLED, None, frozenset({"late"}), False)
    assert needs_pass(idle, PICKLED, ("key", "serializer"), frozenset(), False)
    assert needs_pass(Stream(None, PICKLED, chain=(("map", len),)), PICKLED, None, frozenset(),
                      False)


def test_progress_row() -> None:
    progress = as_dict('{"batchId": 3, "numInputRows": 10, "sink": {"numOutputRows": 4}, '
                       '"stateOperators": [{"numRowsTotal": 7, "numRowsUpdated": 2}], '
                       '"eventTime": {"watermark": "2024-01-01T00:00:00.000Z"}, '
                       '"durationMs": {"triggerExecution": 50}}')
    row = progress_row("sink-0", progress)
    assert row["query"] == "sink-0" and row["batch"] == 3
    assert (row["rows_in"], row["rows_out"]) == (10, 4)
    assert (row["key_groups_with_state"], row["key_groups_updated"]) == (7, 2)
    assert row["watermark"] == "2024-01-01T00:00:00.000Z" and row["duration_ms"] == 50


def test_the_translators_tables_hold_node_kinds_and_a_kind_without_a_method_is_refused() -> None:
    import pytest
    from pyspark_datastream.plan import graph
    from pyspark_datastream.state_store.exceptions import GraphBuildError
    from pyspark_datastream.translation.steps import by_kind

    kinds = {c for c in vars(graph).values()
             if isinstance(c, type) and issubclass(c, graph.Transformation)
             and c is not graph.Transformation}
    for translator in (BatchTranslator, StreamingTranslator):
        assert set(translator._BY_KIND) <= kinds
    source = SourceNode("source", [])
    with pytest.raises(GraphBuildError, match=r"source.* is not supported in STREAMING mode"):
        by_kind({ChainNode: lambda t, n: None}, object(), source, RuntimeMode.STREAMING)
    assert by_kind({SourceNode: lambda t, n: ("translated", n)}, object(), source, RuntimeMode.BATCH) == (
        "translated", source)


def test_a_source_kind_dispatches_to_its_method_and_an_unknown_one_is_a_graph_error() -> None:
    table = {"collection": lambda t, node: ("collection", t, node.name)}
    assert by_source_kind(table, "t", SourceNode(name="S", inputs=[], kind="collection"),
                          RuntimeMode.BATCH) == ("collection", "t", "S")
    with pytest.raises(GraphBuildError) as err:
        by_source_kind(table, "t", SourceNode(name="Events", inputs=[], kind="socket"),
                       RuntimeMode.STREAMING)
    message = str(err.value)
    assert "Events" in message and "'socket'" in message and "STREAMING" in message
    assert "collection" in message  # the kinds there are
