"""Which staged keyed inputs of a STREAMING savepoint run get their upstream's watermark
forwarded (graph only, no Spark)."""

from __future__ import annotations

from pyspark_datastream import (
    Duration,
    StreamExecutionEnvironment,
    TimestampAssigner,
    Types,
    WatermarkStrategy,
)
from pyspark_datastream.translation.streaming.savepoint import (
    _watermark_forwarded,
    keyed_nodes_in_query,
)

T = Types.TUPLE([Types.STRING(), Types.LONG()])


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def _strategy():
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(5)).with_timestamp_assigner(Ts())


def test_watermark_forwarded_only_through_a_keyed_stage():
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.from_collection([("a", 1)], T).assign_timestamps_and_watermarks(_strategy())
    first = source.key_by(lambda r: r[0], key_type=Types.STRING())
    stage1 = first.reduce(lambda a, b: a).map(lambda r: r, output_type=T)
    # the second stage's watermark is stage 1's (Flink forwards it through the map)
    assert _watermark_forwarded(stage1.key_by(lambda r: r[0], key_type=Types.STRING())._key_node)
    # a strategy between the stages generates a new watermark: nothing is forwarded
    regenerated = stage1.assign_timestamps_and_watermarks(_strategy())
    assert not _watermark_forwarded(
        regenerated.key_by(lambda r: r[0], key_type=Types.STRING())._key_node)
    # the first stage reads the source's watermark directly
    assert not _watermark_forwarded(first._key_node)


def test_a_shared_keyed_stage_belongs_to_its_staging_query_only():
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.from_collection([("a", 1)], T)
    shared = source.key_by(lambda r: r[0], key_type=Types.STRING()).reduce(lambda a, b: a)
    second = shared.key_by(lambda r: r[1], key_type=Types.LONG()).reduce(lambda a, b: b)
    a, b = shared._node, second._node
    # each keyed stage runs in its own query: the walk stops at the first keyed operator
    assert [n.id for n in keyed_nodes_in_query(b)] == [b.id]
    assert [n.id for n in keyed_nodes_in_query(a)] == [a.id]
    staged = {a.id: "a-output"}
    # staged for several consumers: a consumer's query holds only its own stage, a query
    # rooted at the shared stage (a sink reading it) holds none, the staging query holds it
    assert [n.id for n in keyed_nodes_in_query(b, staged, "sink-0")] == [b.id]
    assert keyed_nodes_in_query(a, staged, "sink-1") == []
    assert [n.id for n in keyed_nodes_in_query(a, staged, "a-output")] == [a.id]
