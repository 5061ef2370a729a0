"""Exactly-once Kafka writes (``DeliveryGuarantee.EXACTLY_ONCE``): each partition of a
micro-batch is one Kafka transaction, run on the executor that holds the partition.

Spark may run a micro-batch's sink again (its ``foreachBatch`` ran, its commit-log entry was
never written) and retries failed tasks. A partition's write is made idempotent by Kafka
itself: its transaction also commits the offset ``batch_id + 1`` for a consumer group of
its own (``<prefix>-<query>-<partition>``, never consumed from), atomically with the
records. A run that finds that group's committed offset past its batch id writes nothing.
The transactional id ``<prefix>-<partition>`` is stable across runs and retries, so
``init_transactions`` fences a zombie writer of the same partition and aborts its open
transaction before anything is checked or written.

Reading the marker group's committed offset asks the group coordinator, which a new broker
only has once it has created its offsets topic (about 1.5 s with Kafka's default 50
partitions): librdkafka answers ``NOT_COORDINATOR`` meanwhile and does not retry it, so
:func:`retry_transient` retries the coordinator and timeout errors within a bound.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Optional

from ..operators.exceptions import JobExecutionError
from ..state_store.exceptions import ConfigurationError
from .partition_writes import counting_writer, non_empty

__all__ = ["transactional_id", "marker_group", "producer_config", "check_producer_config",
           "write_partition", "partition_writer", "committed_batch", "retry_transient",
           "TRANSIENT_ERRORS"]

#: seconds a transaction call (init, offsets, commit) may take before the write fails
CALL_TIMEOUT_S = 60.0
#: the bound of :func:`retry_transient` for the committed-offset read: total seconds, attempts
RETRY_SECONDS = 60.0
RETRY_ATTEMPTS = 40
#: librdkafka error names retried: a group coordinator being elected or loading, and timeouts
TRANSIENT_ERRORS = frozenset({"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                              "COORDINATOR_NOT_AVAILABLE", "REQUEST_TIMED_OUT", "_TIMED_OUT",
                              "_WAIT_COORD"})


def transactional_id(prefix: str, partition: int) -> str:
    """The transactional id of ``partition`` of a sink: the same in every run.

    Args:
        prefix: The sink's ``set_transactional_id_prefix``.
        partition: The Spark partition index of the micro-batch.

    Returns:
        ``<prefix>-<partition>``.
    """
    return f"{prefix}-{partition}"


def marker_group(prefix: str, query_id: str, partition: int) -> str:
    """The consumer group whose committed offset records ``partition``'s last written batch.

    Args:
        prefix: The sink's transactional id prefix.
        query_id: The streaming query's id (a new checkpoint is a new query: batch ids
            start again at 0 under a new id).
        partition: The Spark partition index.

    Returns:
        The group id.
    """
    return f"{prefix}-{query_id}-{partition}"


def producer_config(spec: dict[str, Any], partition: int) -> dict[str, Any]:
    """The confluent-kafka producer settings of ``partition``'s transactional writer.

    Args:
        spec: The KafkaSink's spec (``producer``: the user's settings and the brokers;
            ``transactional_id_prefix``).
        partition: The Spark partition index.

    Returns:
        The settings.
    """
    return {**spec["producer"],
            "transactional.id": transactional_id(spec["transactional_id_prefix"], partition)}


def check_producer_config(spec: dict[str, Any], sink: str) -> None:
    """Fail now, on the driver, for settings the Kafka client refuses (an unknown key, a bad
    value), instead of in every executor's first write.

    Args:
        spec: The KafkaSink's spec.
        sink: The sink's description, for the message.

    Raises:
        ConfigurationError: The client refused a setting (its message names it).
    """
    from confluent_kafka import KafkaException, Producer

    try:
        Producer(producer_config(spec, 0))
    except (KafkaException, ValueError, TypeError) as exc:
        raise ConfigurationError(f"{sink}: the Kafka producer settings {spec['producer']!r} "
                                 f"are refused: {exc}") from exc


def _transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a KafkaException whose error is worth another attempt."""
    from confluent_kafka import KafkaError, KafkaException

    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(error, KafkaError) and (error.name() in TRANSIENT_ERRORS
                                              or bool(error.retriable()))


def retry_transient(call: Callable[[float], Any], what: str, *,
                    max_seconds: float = RETRY_SECONDS, max_attempts: int = RETRY_ATTEMPTS,
                    sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> Any:
    """``call(timeout)`` again while it raises a transient Kafka error (:data:`TRANSIENT_ERRORS`
    or one librdkafka marks retriable), backing off from 0.1 s up to 2 s between attempts,
    within ``max_seconds`` in all and ``max_attempts`` calls.

    Args:
        call: The client call; it gets the seconds left (at most ``CALL_TIMEOUT_S``).
        what: What is being done, for the error (the sink, transactional id, batch, call).
        max_seconds: The total time bound, the calls' own time included.
        max_attempts: The bound on calls.
        sleep: Sleeps between attempts (``time.sleep``).
        clock: A monotonic clock in seconds (``time.monotonic``).

    Returns:
        What ``call`` returned.

    Raises:
        JobExecutionError: A bound was reached; names ``what``, the attempts, the time and the
            last error.
        KafkaException: A non-transient error, at once.
    """
    start = clock()
    deadline = start + max_seconds
    backoff = 0.1
    attempts = 0
    while True:
        attempts += 1
        try:
            return call(max(0.1, min(CALL_TIMEOUT_S, deadline - clock())))
        except Exception as exc:
            if not _transient(exc):
                raise
            left = deadline - clock()
            if attempts >= max_attempts or left <= 0:
                error = exc.args[0]
                raise JobExecutionError(
                    f"{what}: Kafka still answered {error.name()} after {attempts} attempts in "
                    f"{clock() - start:.1f} s (bound: {max_attempts} attempts, {max_seconds:g} s); "
                    f"last error: {error}") from exc
            sleep(min(backoff, left))
            backoff = min(backoff * 2, 2.0)


def committed_batch(consumer: Any, topic: str, what: str) -> int:
    """The batch id the consumer's marker group recorded last, read with
    :func:`retry_transient` (a new broker has no group coordinator for its first second).

    Args:
        consumer: A confluent-kafka Consumer of the marker group.
        topic: The sink's topic (the group's offset is recorded on its partition 0).
        what: The sink, transactional id and micro-batch, for the error.

    Returns:
        The batch id, or -1 when the group has recorded none.

    Raises:
        JobExecutionError: The coordinator stayed unavailable past the retry bound.
        KafkaException: Kafka refused the read otherwise.
    """
    from confluent_kafka import KafkaException, TopicPartition

    def read(timeout: float) -> Any:
        (found,) = consumer.committed([TopicPartition(topic, 0)], timeout=timeout)
        if found.error is not None:
            raise KafkaException(found.error)
        return found

    found = retry_transient(read, f"{what}, reading the committed batch of its marker group")
    return found.offset - 1 if found.offset > 0 else -1


def _produce(producer: Any, topic: str, value: Optional[bytes]) -> None:
    while True:
        try:
            producer.produce(topic, value=value)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.05)


def write_partition(values: Iterable[Optional[str]], spec: dict[str, Any], partition: int,
                    query_id: str, batch_id: int) -> int:
    """Write ``values`` (one partition of micro-batch ``batch_id``) in one Kafka transaction,
    unless an earlier run of the same batch and partition committed it.

    Args:
        values: The records' strings (None: a record without value).
        spec: The KafkaSink's spec.
        partition: The Spark partition index.
        query_id: The streaming query's id (a BATCH job: its run's id).
        batch_id: The micro-batch id (a BATCH job: 0).

    Returns:
        The records written (0 when the batch was written before, or has no records here).

    Raises:
        JobExecutionError: Kafka refused a step (fenced by a newer run, broker gone, a
            transaction timed out); the transaction is aborted, nothing of it is visible to
            ``read_committed`` consumers, and Spark's retry of the task writes it again.
    """
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    records = non_empty(iter(values))
    if records is None:
        return 0
    topic, prefix = spec["topic"], spec["transactional_id_prefix"]
    config = producer_config(spec, partition)
    group = marker_group(prefix, query_id, partition)
    what = (f"Kafka sink {topic!r}, transactional id {config['transactional.id']!r}, "
            f"micro-batch {batch_id}")
    producer: Any = None
    consumer: Any = None
    try:
        consumer = Consumer({"bootstrap.servers": config["bootstrap.servers"],
                             "group.id": group, "enable.auto.commit": False})
        producer = Producer(config)
        # fences older writers of this partition; a new broker's transaction coordinator may
        # still be loading (COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE): retried in a bound,
        # as librdkafka allows after a retriable error
        retry_transient(producer.init_transactions, f"{what}, initializing its transactions")
        if committed_batch(consumer, topic, what) >= batch_id:
            for _ in records:  # written by an earlier run: consume the input, write nothing
                pass
            return 0
        producer.begin_transaction()
        written = 0
        for value in records:
            _produce(producer, topic, None if value is None else value.encode("utf-8"))
            written += 1
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, batch_id + 1)],
                                             consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
        producer.commit_transaction(CALL_TIMEOUT_S)
        return written
    except KafkaException as exc:
        _abort(producer)
        raise JobExecutionError(f"{what}: {exc.args[0] if exc.args else exc}") from exc
    finally:
        if consumer is not None:
            consumer.close()


def _abort(producer: Any) -> None:
    """Abort the open transaction if the producer can still do it (a fenced one cannot; the
    broker aborts it when the next writer of the id starts, or at its timeout)."""
    if producer is None:
        return
    with contextlib.suppress(Exception):  # the original error is the one to report
        producer.abort_transaction(CALL_TIMEOUT_S)


def partition_writer(spec: dict[str, Any], query_id: str, batch_id: int
                     ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function writing each partition of a micro-batch's ``value``
    column (:func:`~.partition_writes.counting_writer` around :func:`write_partition`).

    Args:
        spec: The KafkaSink's spec.
        query_id: The streaming query's id.
        batch_id: The micro-batch id.

    Returns:
        The function.
    """
    return counting_writer(
        lambda values, partition: write_partition(values, spec, partition, query_id, batch_id))
