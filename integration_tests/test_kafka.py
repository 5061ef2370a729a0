"""Kafka word count as a PyFlink program writes it (KafkaSource -> flat_map -> key_by -> reduce
-> KafkaSink) against a real broker, in BATCH and in STREAMING across two runs; the refusals
of what the connector does not support. Expected outputs come from plain Python over the
lines produced."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter

import pytest
from helpers import drop_last_commit, env_for, last_commit
from kafka_broker import consume_all, produce
from pyspark_datastream import (
    ConfigurationError,
    DeliveryGuarantee,
    GraphBuildError,
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
    Row,
    RuntimeExecutionMode,
    SimpleStringSchema,
    Types,
    UnsupportedConnectorError,
    WatermarkStrategy,
)

WORDS = ["flink", "spark", "kafka", "state", "window", "key", "topic", "offset"]


def _lines(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)  # keys in no order, words repeated within and across lines
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def _topics(broker, partitions_in: int = 3, partitions_out: int = 2) -> tuple[str, str]:
    name = uuid.uuid4().hex[:8]
    broker.create_topic(f"lines-{name}", partitions_in)
    broker.create_topic(f"counts-{name}", partitions_out)
    return f"lines-{name}", f"counts-{name}"


def _produce_lines(broker, topic: str, lines: list[str], start: int) -> None:
    # the record keys spread the lines over every partition of the topic
    produce(broker.bootstrap_servers, topic, [(str(start + i), line) for i, line in enumerate(lines)])


def _word_count(env, source: KafkaSource, sink: KafkaSink, job_name: str) -> None:
    """The program a PyFlink user writes (only the imports differ)."""
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka Source")
    (ds.flat_map(lambda line: [(w, 1) for w in line.split()],
                 output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
       .key_by(lambda t: t[0])
       .reduce(lambda a, b: (a[0], a[1] + b[1]))
       .map(lambda t: f"{t[0]}:{t[1]}", output_type=Types.STRING())
       .sink_to(sink))
    env.execute(job_name)


def _source(broker, topic: str, bounded: bool) -> KafkaSource:
    builder = (KafkaSource.builder()
               .set_bootstrap_servers(broker.bootstrap_servers)
               .set_topics(topic)
               .set_group_id("word-count")
               .set_starting_offsets(KafkaOffsetsInitializer.earliest())
               .set_value_only_deserializer(SimpleStringSchema()))
    if bounded:
        builder = builder.set_bounded(KafkaOffsetsInitializer.latest())
    return builder.build()


def _sink(broker, topic: str, guarantee: str = "AT_LEAST_ONCE") -> KafkaSink:
    builder = (KafkaSink.builder()
               .set_bootstrap_servers(broker.bootstrap_servers)
               .set_record_serializer(KafkaRecordSerializationSchema.builder()
                                      .set_topic(topic)
                                      .set_value_serialization_schema(SimpleStringSchema())
                                      .build())
               .set_delivery_guarantee(DeliveryGuarantee[guarantee]))
    if guarantee == "EXACTLY_ONCE":
        builder = builder.set_transactional_id_prefix(f"word-count-{topic}")
    return builder.build()


def _totals(lines: list[str]) -> Counter:
    return Counter(w for line in lines for w in line.split())


@pytest.mark.parametrize("guarantee", ["AT_LEAST_ONCE", "EXACTLY_ONCE"])
def test_word_count_batch_reads_a_bounded_source_to_its_latest_offsets(
        kafka_broker, env_factory, tmp_path, guarantee):
    lines_topic, counts_topic = _topics(kafka_broker)
    lines = _lines(1, 60)
    _produce_lines(kafka_broker, lines_topic, lines, 0)
    env = env_for(env_factory, tmp_path, "BATCH", "kafka-batch")
    _word_count(env, _source(kafka_broker, lines_topic, bounded=True),
                _sink(kafka_broker, counts_topic, guarantee), "kafka-word-count-batch")
    # BATCH: reduce emits one final count per word (Flink's BATCH semantics)
    expected = sorted(f"{w}:{n}" for w, n in _totals(lines).items())
    assert sorted(consume_all(kafka_broker.bootstrap_servers, counts_topic)) == expected


@pytest.mark.compat  # make test-compat: every Spark line with a Kafka connector
@pytest.mark.parametrize("guarantee", ["AT_LEAST_ONCE", "EXACTLY_ONCE"])
def test_word_count_streaming_second_run_continues_from_the_checkpoint(
        kafka_broker, env_factory, tmp_path, guarantee):
    lines_topic, counts_topic = _topics(kafka_broker)
    first, second = _lines(2, 40), _lines(3, 30)
    _produce_lines(kafka_broker, lines_topic, first, 0)
    _word_count(env_for(env_factory, tmp_path, "STREAMING", "kafka"),
                _source(kafka_broker, lines_topic, bounded=False),
                _sink(kafka_broker, counts_topic, guarantee), "kafka-word-count-streaming")
    # STREAMING: reduce emits every running count, 1..n per word
    after_first = sorted(f"{w}:{i}" for w, n in _totals(first).items() for i in range(1, n + 1))
    assert sorted(consume_all(kafka_broker.bootstrap_servers, counts_topic)) == after_first

    _produce_lines(kafka_broker, lines_topic, second, len(first))
    _word_count(env_for(env_factory, tmp_path, "STREAMING", "kafka"),
                _source(kafka_broker, lines_topic, bounded=False),
                _sink(kafka_broker, counts_topic, guarantee), "kafka-word-count-streaming")
    # the second run reads only the new lines (offsets from the checkpoint) and continues
    # the counts kept in state: re-read lines would push counts past the totals
    total = _totals(first + second)
    expected = sorted(f"{w}:{i}" for w, n in total.items() for i in range(1, n + 1))
    assert sorted(consume_all(kafka_broker.bootstrap_servers, counts_topic)) == expected


@pytest.mark.parametrize("guarantee", ["EXACTLY_ONCE", "AT_LEAST_ONCE"])
def test_streaming_replay_of_a_written_batch_writes_it_again_unless_exactly_once(
        kafka_broker, env_factory, tmp_path, guarantee):
    """Spark runs a micro-batch again when its commit-log entry is missing; the
    transactional sink finds the batch committed in Kafka (per partition) and skips it,
    while AT_LEAST_ONCE writes it twice (what the transactions prevent)."""
    lines = _lines(4, 50)
    expected = sorted(f"{w}:{i}" for w, n in _totals(lines).items() for i in range(1, n + 1))
    lines_topic, counts_topic = _topics(kafka_broker)
    _produce_lines(kafka_broker, lines_topic, lines, 0)
    config = {"execution.checkpointing.dir": str(tmp_path / "ckpt")}
    source = _source(kafka_broker, lines_topic, bounded=False)
    sink = _sink(kafka_broker, counts_topic, guarantee)
    _word_count(env_factory("STREAMING", config), source, sink, "kafka-replay")
    assert sorted(consume_all(kafka_broker.bootstrap_servers, counts_topic)) == expected
    replayed = drop_last_commit(tmp_path / "ckpt")
    _word_count(env_factory("STREAMING", config), source, sink, "kafka-replay")
    got = sorted(consume_all(kafka_broker.bootstrap_servers, counts_topic))
    assert last_commit(tmp_path / "ckpt") == replayed  # Spark did run that batch again
    if guarantee == "EXACTLY_ONCE":
        assert got == expected
    else:  # the only data batch ran twice: every count twice
        assert got == sorted(expected * 2)


def test_exactly_once_needs_a_transactional_id_prefix_and_owns_the_transactional_id():
    builder = (KafkaSink.builder().set_bootstrap_servers("127.0.0.1:1")
               .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic("t")
                                      .set_value_serialization_schema(SimpleStringSchema())
                                      .build())
               .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE))
    with pytest.raises(GraphBuildError, match="EXACTLY_ONCE needs set_transactional_id_prefix"):
        builder.build()
    with pytest.raises(UnsupportedConnectorError, match="'transactional.id'"):
        builder.set_property("transactional.id", "mine")
    with pytest.raises(GraphBuildError, match="transactional id prefix must be a non-empty"):
        builder.set_transactional_id_prefix("")
    sink = builder.set_transactional_id_prefix("orders").build()
    assert sink.spec["guarantee"] == "EXACTLY_ONCE"
    assert sink.spec["transactional_id_prefix"] == "orders"


def test_exactly_once_producer_settings_the_client_refuses_fail_before_the_job_runs(
        kafka_broker, env_factory, tmp_path):
    lines_topic, counts_topic = _topics(kafka_broker)
    sink = (KafkaSink.builder().set_bootstrap_servers(kafka_broker.bootstrap_servers)
            .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic(counts_topic)
                                   .set_value_serialization_schema(SimpleStringSchema()).build())
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .set_transactional_id_prefix("bad-settings")
            .set_property("no.such.setting", "1").build())
    env = env_for(env_factory, tmp_path, "STREAMING", "bad-settings")
    ds = env.from_source(_source(kafka_broker, lines_topic, bounded=False),
                         WatermarkStrategy.no_watermarks(), "Kafka Source")
    ds.map(lambda s: s, output_type=Types.STRING()).sink_to(sink)
    with pytest.raises(ConfigurationError, match="KafkaSink.*no.such.setting"):
        env.execute("bad-settings")


def test_unbounded_source_in_batch_is_refused(kafka_broker, env_factory, tmp_path):
    source = _source(kafka_broker, "never-read", bounded=False)
    # the mode is BATCH when the source is added: refused at once
    env = env_for(env_factory, tmp_path, "BATCH", "unbounded")
    with pytest.raises(GraphBuildError, match="'Kafka Source'.*unbounded.*BATCH"):
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka Source")
    # the mode becomes BATCH after the source was added: refused when the job is planned
    env = env_for(env_factory, tmp_path, "STREAMING", "unbounded-later")
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka Source")
    ds.map(lambda s: s, output_type=Types.STRING()).sink_to(_sink(kafka_broker, "never-written"))
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    with pytest.raises(GraphBuildError, match="'Kafka Source'.*unbounded.*BATCH"):
        env.execute("unbounded-in-batch")


def test_unsupported_builder_options_are_refused_by_name():
    with pytest.raises(UnsupportedConnectorError, match="set_bounded"):
        KafkaSource.builder().set_bounded(KafkaOffsetsInitializer.earliest())
    with pytest.raises(UnsupportedConnectorError, match="partition.discovery.interval.ms"):
        KafkaSource.builder().set_property("partition.discovery.interval.ms", "1000")
    with pytest.raises(UnsupportedConnectorError, match="committed_offsets"):
        KafkaOffsetsInitializer.committed_offsets()


def test_starting_offsets_by_timestamp_and_explicit_offsets_on_a_topic_pattern(
        kafka_broker, env_factory, tmp_path):
    import time

    name = uuid.uuid4().hex[:8]
    topic = f"starts-{name}"
    kafka_broker.create_topic(topic, 2)
    produce(kafka_broker.bootstrap_servers, topic, [("a", f"old{i}") for i in range(3)],
            partition_of={"a": 0})
    time.sleep(1.0)
    middle = int(time.time() * 1000)
    time.sleep(0.5)
    produce(kafka_broker.bootstrap_servers, topic,
            [("a", "new0"), ("a", "new1"), ("b", "newb")], partition_of={"a": 0, "b": 1})

    def read(start: KafkaOffsetsInitializer) -> list[str]:
        source = (KafkaSource.builder().set_bootstrap_servers(kafka_broker.bootstrap_servers)
                  .set_topic_pattern(f"starts-{name}.*").set_starting_offsets(start)
                  .set_bounded(KafkaOffsetsInitializer.latest())
                  .set_value_only_deserializer(SimpleStringSchema()).build())
        env = env_for(env_factory, tmp_path, "BATCH", "starts")
        ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka Source")
        return sorted(ds.execute_and_collect(limit=100))

    # Flink's semantics: the first record at or after the timestamp; the given offsets
    assert read(KafkaOffsetsInitializer.timestamp(middle)) == ["new0", "new1", "newb"]
    assert read(KafkaOffsetsInitializer.offsets({
        KafkaTopicPartition(topic, 0): 2, KafkaTopicPartition(topic, 1): 0})) == [
        "new0", "new1", "newb", "old2"]


ORDER = Types.ROW_NAMED(["user", "amount", "note"], [Types.STRING(), Types.LONG(), Types.STRING()])
TOTAL = Types.ROW_NAMED(["user", "total"], [Types.STRING(), Types.LONG()])


def _json_source(broker, topic: str, bounded: bool, **flags: bool) -> KafkaSource:
    schema = JsonRowDeserializationSchema.builder().type_info(ORDER)
    if flags.get("ignore"):
        schema = schema.ignore_parse_errors()
    builder = (KafkaSource.builder().set_bootstrap_servers(broker.bootstrap_servers)
               .set_topics(topic).set_starting_offsets(KafkaOffsetsInitializer.earliest())
               .set_value_only_deserializer(schema.build()))
    return (builder.set_bounded(KafkaOffsetsInitializer.latest()) if bounded else builder).build()


def _json_sink(broker, topic: str) -> KafkaSink:
    value = JsonRowSerializationSchema.builder().with_type_info(TOTAL).build()
    return (KafkaSink.builder().set_bootstrap_servers(broker.bootstrap_servers)
            .set_record_serializer(KafkaRecordSerializationSchema.builder().set_topic(topic)
                                   .set_value_serialization_schema(value).build())
            .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE).build())


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_json_rows_in_and_out_with_parse_errors_skipped(kafka_broker, env_factory, tmp_path, mode):
    """Orders as JSON objects (extra members, a missing ``note``, and values that are not
    orders, which ignore_parse_errors skips) summed per user and written as JSON objects."""
    orders_topic, totals_topic = _topics(kafka_broker)
    rng = random.Random(7)
    orders, values = [], []
    for i in range(80):
        user, amount = f"u{rng.randrange(6)}", rng.randint(1, 500)
        order = {"user": user, "amount": amount, "extra": [i]}
        if i % 3:
            order["note"] = f"n{i}"
        orders.append((user, amount))
        values.append(json.dumps(order))
        if i % 17 == 0:  # not orders: not JSON, a JSON array, a string amount
            values += ["{not json", "[1, 2]", json.dumps({"user": user, "amount": "12"})]
    produce(kafka_broker.bootstrap_servers, orders_topic, [(str(i), v) for i, v in enumerate(values)])
    env = env_for(env_factory, tmp_path, mode, f"json-{mode}")
    (env.from_source(_json_source(kafka_broker, orders_topic, mode == "BATCH", ignore=True),
                     WatermarkStrategy.no_watermarks(), "Orders")
        .map(lambda r: (r.user, r.amount), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .key_by(lambda t: t[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda t: Row(user=t[0], total=t[1]), output_type=TOTAL)
        .sink_to(_json_sink(kafka_broker, totals_topic)))
    env.execute(f"json-orders-{mode}")

    written = [json.loads(v) for v in consume_all(kafka_broker.bootstrap_servers, totals_topic)]
    assert all(set(w) == {"user", "total"} for w in written)
    expected: dict[str, int] = {}
    for user, amount in orders:
        expected[user] = expected.get(user, 0) + amount
    final: dict[str, int] = {}
    for w in written:  # the totals only grow: the largest per user is the final one
        final[w["user"]] = max(final.get(w["user"], 0), w["total"])
    assert final == expected
    # BATCH: one final total per user; STREAMING: one running total per order
    assert len(written) == (len(expected) if mode == "BATCH" else len(orders))


def test_a_value_that_is_not_a_row_fails_the_job_naming_the_field(
        kafka_broker, env_factory, tmp_path):
    orders_topic, _ = _topics(kafka_broker)
    produce(kafka_broker.bootstrap_servers, orders_topic,
            [("a", json.dumps({"user": "a", "amount": 3})),
             ("b", json.dumps({"user": "b", "amount": "three"}))])
    env = env_for(env_factory, tmp_path, "BATCH", "json-error")
    orders = env.from_source(_json_source(kafka_broker, orders_topic, True),
                             WatermarkStrategy.no_watermarks(), "Orders")
    with pytest.raises(Exception, match=r'JsonRowDeserializationSchema: field amount: "three" '
                                        r"is not a Types.LONG\(\) value"):
        list(orders.execute_and_collect())
