"""The exactly-once Kafka writer on a broker that has just started: its first read of a
marker group's committed offset meets a group coordinator that does not exist yet (the
broker creates its offsets topic on the first group request; librdkafka answers
NOT_COORDINATOR meanwhile and does not retry it). The writer retries within its bound and the
write goes through, exactly once.

The broker here has 200 offsets-topic partitions (Kafka's default is 50, the suite's shared
broker 2), which keeps that window open for about half a second more, so that the writer's
first read reliably falls into it.
"""

from __future__ import annotations

import pytest
from kafka_broker import KafkaBroker, consume_all


class _FreshBroker(KafkaBroker):
    """A broker of its own with many offsets-topic partitions (a longer coordinator window)."""

    def _properties(self) -> str:
        path = super()._properties()
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("offsets.topic.num.partitions=2",
                                 "offsets.topic.num.partitions=200"))
        return path


@pytest.fixture
def fresh_broker(tmp_path):
    folder = tmp_path / "kafka"
    folder.mkdir()
    broker = _FreshBroker(str(folder)).start()
    try:
        yield broker
    finally:
        broker.stop()


def test_the_first_exactly_once_write_on_a_fresh_broker_goes_through(fresh_broker):
    """First the marker groups' committed offsets, read right after the broker started (each
    read meets NOT_COORDINATOR until the offsets topic is loaded; none was committed: -1),
    then exactly-once writes of two partitions, one of them repeated (written once)."""
    from confluent_kafka import Consumer
    from pyspark_datastream.runtime.kafka_transactions import committed_batch, write_partition

    for group in range(4):
        consumer = Consumer({"bootstrap.servers": fresh_broker.bootstrap_servers,
                             "group.id": f"fresh-q0-{group}", "enable.auto.commit": False})
        try:
            assert committed_batch(consumer, "totals", f"Kafka sink 'totals', group {group}") == -1
        finally:
            consumer.close()
    topic = "totals"
    fresh_broker.create_topic(topic, 1)
    spec = {"topic": topic, "transactional_id_prefix": "fresh",
            "producer": {"bootstrap.servers": fresh_broker.bootstrap_servers}}
    assert write_partition(iter(["a", "b", "c"]), spec, 0, "q1", 0) == 3
    assert write_partition(iter(["a", "b", "c"]), spec, 0, "q1", 0) == 0  # the same batch again
    assert write_partition(iter(["d"]), spec, 1, "q1", 0) == 1  # another partition's group
    assert sorted(consume_all(fresh_broker.bootstrap_servers, topic)) == ["a", "b", "c", "d"]
