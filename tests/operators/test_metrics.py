"""Metric groups (PyFlink's API), their registry per operator instance and the log line."""

from __future__ import annotations

import logging

import pytest
from pyspark_datastream import KeyedProcessFunction, KeyedProcessFunctionTestHarness
from pyspark_datastream.operators import metrics
from pyspark_datastream.state_store.exceptions import GraphBuildError


def test_counter_meter_distribution_and_gauge_values():
    group = metrics.new_group("op", 0)
    c = group.counter("seen")
    c.inc()
    c.inc(4)
    c.dec(2)
    m = group.add_group("io").meter("calls", time_span_in_seconds=5)
    m.mark_event()
    m.mark_event(9)
    d = group.add_group("shard", "3").distribution("size")
    for v in (4, 1, 10):
        d.update(v)
    group.gauge("queue", lambda: 7)
    assert group.counter("seen") is c  # the same name gives the same counter, as in Flink
    values = metrics.snapshot("op", 0)
    assert values["seen"] == 3
    assert values["io.calls"]["count"] == 10 and 0 < values["io.calls"]["rate"] <= 10 / 5
    assert values["shard.3.size"] == {"count": 3, "sum": 15, "min": 1, "max": 10, "mean": 5.0}
    assert values["queue"] == 7


def test_a_failing_gauge_is_reported_not_raised_and_names_are_checked():
    group = metrics.new_group("op", 1)
    group.gauge("broken", lambda: 1 / 0)
    assert metrics.snapshot("op", 1)["broken"].startswith("<gauge failed: ZeroDivisionError")
    with pytest.raises(GraphBuildError, match="without '.'"):
        group.counter("a.b")
    with pytest.raises(GraphBuildError, match="obj must be a function"):
        group.gauge("g", 3)
    with pytest.raises(GraphBuildError, match="time_span_in_seconds must be a positive int"):
        group.meter("m", 0)


def test_report_logs_one_line_and_report_since_forgets(caplog):
    since = metrics.mark()
    metrics.new_group("logged", 2).counter("n").inc(5)
    with caplog.at_level(logging.INFO, logger="pyspark_datastream.metrics"):
        assert metrics.report("logged", 2) == {"n": 5}
        assert metrics.report("logged", 2, force=False) is None  # not due yet
        metrics.report_since(since)  # reports again, then forgets the instance
    assert caplog.text.count("metrics of operator 'logged' subtask 2: {'n': 5}") == 2
    assert metrics.snapshot("logged", 2) == {} and metrics.report("logged", 2) is None
    assert metrics.new_group("logged", 2).counter("n").get_count() == 0  # a new instance


def test_merge_combines_instances_as_flink_sums_subtasks():
    records = []
    for subtask, values in enumerate(([3, 1, 5], [10], [])):
        group = metrics.new_group("merged", subtask)
        group.counter("n").inc(len(values))
        meter = group.meter("m")
        d = group.distribution("d")
        for v in values:
            meter.mark_event()
            d.update(v)
        group.gauge("g", lambda s=subtask: s * 10)
        records.append({"operator": "merged", "subtask": subtask,
                        "metrics": metrics.snapshot("merged", subtask),
                        "kinds": metrics.kinds("merged", subtask)})
    records.append(dict(records[0], operator="other"))
    merged = metrics.merge(records + [records[1]])  # a repeated report counts once
    assert sorted(merged) == ["merged", "other"]
    got = merged["merged"]
    assert got["n"] == 4 and got["m"]["count"] == 4
    assert got["d"] == {"count": 4, "sum": 19, "min": 1, "max": 10, "mean": 19 / 4}
    assert got["g"] == {0: 0, 1: 10, 2: 20}  # a gauge has no sum: by subtask
    assert merged["other"]["n"] == 3
    # the same subtask in two processes (STREAMING's per-process instances) adds up
    twice = [dict(records[1], process="a"), dict(records[1], process="b")]
    assert metrics.merge(twice)["merged"]["n"] == 2


def test_published_reports_are_read_back(tmp_path):
    from pyspark_datastream.state_store.storage import Storage

    storage = Storage()
    folder = str(tmp_path / "metrics")
    group = metrics.new_group("published op/1", 0, (storage, folder))
    group.counter("n").inc(7)
    group.distribution("d").update(2)
    assert metrics.report("published op/1", 0) is not None
    (tmp_path / "metrics" / "torn.json").write_text("{")  # a file mid-write is skipped
    got = metrics.read_published(storage, folder)
    assert [(r["operator"], r["subtask"], r["metrics"]["n"]) for r in got] == [
        ("published op/1", 0, 7)]
    assert metrics.merge(got)["published op/1"]["d"]["count"] == 1
    assert metrics.read_published(storage, str(tmp_path / "none")) == []


def test_a_failing_publish_is_logged_once_and_never_raised(caplog, tmp_path):
    from pyspark_datastream.state_store.storage import Storage

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    metrics.new_group("unpublishable", 0, (Storage(), str(blocker))).counter("n").inc()
    with caplog.at_level(logging.INFO, logger="pyspark_datastream.metrics"):
        assert metrics.report("unpublishable", 0) == {"n": 1}
        assert metrics.report("unpublishable", 0) == {"n": 1}
    assert caplog.text.count("cannot be published to") == 1


class Counting(KeyedProcessFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group()
        self.records = group.counter("records")
        self.values = group.distribution("values")
        self.keys = 0
        group.gauge("keys_seen", lambda: self.keys)

    def process_element(self, value, ctx):
        self.records.inc()
        self.values.update(value[1])
        yield value


def test_the_harness_shows_a_functions_metrics():
    with KeyedProcessFunctionTestHarness(Counting(), key_selector=lambda v: v[0]) as h:
        for v in [("a", 3), ("b", 5), ("a", 1)]:
            h.process_element(v, 0)
        got = h.get_metrics()
    assert got["records"] == 3
    assert got["values"] == {"count": 3, "sum": 9, "min": 1, "max": 5, "mean": 3.0}
    assert got["keys_seen"] == 0
    with KeyedProcessFunctionTestHarness(Counting(), key_selector=lambda v: v[0]) as h:
        assert h.get_metrics()["records"] == 0  # a new instance starts from zero


def test_closing_an_instance_reports_every_group_made_for_its_subtask(caplog):
    """A STREAMING instance runs fused stages, each with its own operator name: the end of
    the run reports every group of its subtask, not only the pass's own name."""
    from pyspark_datastream.operators.base import OperatorConfig
    from pyspark_datastream.operators.instances import SubtaskInstance

    config = OperatorConfig.for_mode("STREAMING", subtask_index=1, parallelism=2,
                                     operator_name="fused pass")
    instance = SubtaskInstance(None, config)
    metrics.new_group("fused-a", 1).counter("n").inc(2)
    metrics.new_group("fused-b", 1).counter("n").inc(3)
    metrics.new_group("fused-a", 0).counter("n").inc(9)  # another subtask's instance
    with caplog.at_level(logging.INFO, logger="pyspark_datastream.metrics"):
        instance.close()
    assert "metrics of operator 'fused-a' subtask 1: {'n': 2}" in caplog.text
    assert "metrics of operator 'fused-b' subtask 1: {'n': 3}" in caplog.text
    assert "subtask 0" not in caplog.text
    assert metrics.snapshot("fused-a", 1) == {"n": 2}  # still registered: not forgotten
