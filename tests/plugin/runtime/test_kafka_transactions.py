"""The exactly-once Kafka writer's parts that need no broker: its ids, its settings check, and
an empty partition (which must not reach for Kafka at all). The writes themselves run against
a real broker in integration_tests/test_kafka.py and test_kafka_exactly_once.py."""

from __future__ import annotations

import pytest
from pyspark_datastream import ConfigurationError, JobExecutionError
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


class _Clock:
    """Time that passes only when the policy sleeps or a call takes ``call_s``."""

    def __init__(self, call_s: float = 0.0) -> None:
        self.now, self.call_s, self.sleeps = 100.0, call_s, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _failing(clock: _Clock, code: int, succeed_after: int | None = None):
    from confluent_kafka import KafkaError, KafkaException

    calls = []

    def call(timeout: float):
        calls.append(timeout)
        clock.now += clock.call_s
        if succeed_after is not None and len(calls) > succeed_after:
            return "offset"
        raise KafkaException(KafkaError(code))

    return call, calls


def test_a_transient_coordinator_error_is_retried_until_it_clears():
    from confluent_kafka import KafkaError
    from pyspark_datastream.runtime.kafka_transactions import retry_transient

    for code in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                 KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT):
        clock = _Clock()
        call, calls = _failing(clock, code, succeed_after=3)
        assert retry_transient(call, "sink", sleep=clock.sleep, clock=clock) == "offset"
        assert len(calls) == 4 and clock.sleeps == [0.1, 0.2, 0.4]


def test_the_retry_stops_at_its_attempt_bound_naming_the_sink_and_the_last_error():
    from confluent_kafka import KafkaError
    from pyspark_datastream.runtime.kafka_transactions import retry_transient

    clock = _Clock()
    call, calls = _failing(clock, KafkaError.NOT_COORDINATOR)
    what = "Kafka sink 'totals', transactional id 'i36-totals-0', micro-batch 0"
    with pytest.raises(JobExecutionError, match=r"Kafka sink 'totals', transactional id "
                       r"'i36-totals-0', micro-batch 0: Kafka still answered NOT_COORDINATOR "
                       r"after 5 attempts .*bound: 5 attempts, 60 s.*last error: .*NOT_COORD"):
        retry_transient(call, what, max_attempts=5, max_seconds=60, sleep=clock.sleep,
                        clock=clock)
    assert len(calls) == 5 and len(clock.sleeps) == 4


def test_the_retry_stops_at_its_time_bound_the_calls_own_time_included():
    from confluent_kafka import KafkaError
    from pyspark_datastream.runtime.kafka_transactions import retry_transient

    clock = _Clock(call_s=3.0)  # each call times out after 3 s
    start = clock.now
    call, calls = _failing(clock, KafkaError.REQUEST_TIMED_OUT)
    with pytest.raises(JobExecutionError, match=r"after \d+ attempts in 1\d\.\d s"):
        retry_transient(call, "sink", max_attempts=1000, max_seconds=10, sleep=clock.sleep,
                        clock=clock)
    assert clock.now - start <= 10 + 3.0  # at most one call started before the deadline runs on
    assert all(t <= 10 for t in calls)  # each call's timeout is the time left, at most


def test_any_other_kafka_error_is_raised_at_once():
    from confluent_kafka import KafkaError, KafkaException
    from pyspark_datastream.runtime.kafka_transactions import retry_transient

    clock = _Clock()
    call, calls = _failing(clock, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        retry_transient(call, "sink", sleep=clock.sleep, clock=clock)
    assert len(calls) == 1 and clock.sleeps == []
