"""The exactly-once Kafka writer's parts that need no broker: its ids, its settings check, and
an empty partition (which must not reach for Kafka at all). The writes themselves run against
a real broker in integration_tests/test_kafka.py and test_kafka_exactly_once.py."""

from __future__ import annotations

import pytest
from pyspark_datastream import ConfigurationError
from pyspark_datastream.runtime.kafka_transactions import (
    check_producer_config,
    marker_group,
    producer_config,
    transactional_id,
    write_partition,
)

#: nothing listens on port 1: a writer that tried to reach it would fail or hang
SPEC = {"topic": "out", "transactional_id_prefix": "orders",
        "producer": {"bootstrap.servers": "127.0.0.1:1", "linger.ms": "5"}}


def test_ids_are_stable_per_partition_and_the_marker_group_is_per_query():
    assert transactional_id("orders", 3) == "orders-3" == producer_config(SPEC, 3)["transactional.id"]
    assert producer_config(SPEC, 3)["linger.ms"] == "5"
    assert marker_group("orders", "q1", 3) != marker_group("orders", "q2", 3)
    assert marker_group("orders", "q1", 3) != marker_group("orders", "q1", 4)


def test_a_setting_the_client_refuses_is_a_configuration_error_naming_it():
    bad = {**SPEC, "producer": {**SPEC["producer"], "no.such.setting": "1"}}
    with pytest.raises(ConfigurationError, match="sink 'counts'.*no.such.setting"):
        check_producer_config(bad, "sink 'counts'")
    wrong = {**SPEC, "producer": {**SPEC["producer"], "enable.idempotence": "false"}}
    with pytest.raises(ConfigurationError, match="enable.idempotence"):
        check_producer_config(wrong, "sink 'counts'")
    check_producer_config(SPEC, "sink 'counts'")  # valid settings pass


def test_an_empty_partition_writes_nothing_and_opens_no_connection():
    assert write_partition(iter([]), SPEC, 0, "q1", 7) == 0
