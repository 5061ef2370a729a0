"""PyFlink's Pulsar, Kinesis and dynamic-Kafka connector classes beyond the sources and sinks
themselves (builders, cursors, subscribers, partition-key generators): each is refused as its
connector is, with PyFlink's methods present and each raising :class:`UnsupportedConnectorError`
naming the call and the Spark source or sink to use instead.
"""

from __future__ import annotations

from .refused_connectors import (
    FlinkKinesisConsumer,
    KinesisFirehoseSink,
    KinesisStreamsSink,
    PulsarSink,
    PulsarSource,
    RefusedApi,
    refuses,
)

__all__ = [
    "StartCursor",
    "StopCursor",
    "RangeGenerator",
    "PulsarSourceBuilder",
    "MessageDelayer",
    "TopicRoutingMode",
    "PulsarSinkBuilder",
    "KinesisShardAssigner",
    "KinesisDeserializationSchema",
    "WatermarkTracker",
    "PartitionKeyGenerator",
    "KinesisStreamsSinkBuilder",
    "KinesisFirehoseSinkBuilder",
    "DynamicKafkaSource",
    "DynamicKafkaSourceBuilder",
    "KafkaMetadataService",
    "SingleClusterTopicMetadataService",
    "KafkaStreamSubscriber",
    "KafkaStreamSetSubscriber",
    "StreamPatternSubscriber",
    "KafkaRecordDeserializationSchema",
]

_KINESIS_SINK = KinesisStreamsSink._INSTEAD
_FIREHOSE_SINK = KinesisFirehoseSink._INSTEAD
_DYNAMIC_KAFKA = ("Spark has no Kafka metadata service to follow streams across clusters: read each "
                  "cluster's topics with `KafkaSource` (`set_topics` or `set_topic_pattern`) and "
                  "`union` the streams")


@refuses(
    "__init__(_j_start_cursor)", "@default_start_cursor()", "@earliest()",
    "@from_message_id(message_id, inclusive=None)", "@from_publish_time(timestamp)", "@latest()",
)
class StartCursor(RefusedApi):
    """PyFlink's Pulsar ``StartCursor``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSource._INSTEAD


@refuses(
    "__init__(_j_stop_cursor)", "@after_event_time(timestamp)", "@after_message_id(message_id)",
    "@after_publish_time(timestamp)", "@at_event_time(timestamp)", "@at_message_id(message_id)",
    "@at_publish_time(timestamp)", "@default_stop_cursor()", "@latest()", "@never()",
)
class StopCursor(RefusedApi):
    """PyFlink's Pulsar ``StopCursor``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSource._INSTEAD


@refuses(
    "@fixed_key(support_null_key=None, keys=None, key_bytes=None, ordering_key_bytes=None)",
    "@full()",
)
class RangeGenerator(RefusedApi):
    """PyFlink's Pulsar ``RangeGenerator``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSource._INSTEAD


@refuses(
    "__init__()", "build()", "set_admin_url(admin_url)",
    "set_authentication(auth_plugin_class_name, auth_params_string)",
    "set_bounded_stop_cursor(stop_cursor)", "set_config(key, value)",
    "set_config_with_dict(config)", "set_consumer_name(consumer_name)",
    "set_deserialization_schema(deserialization_schema)", "set_properties(config)",
    "set_range_generator(range_generator)", "set_service_url(service_url)",
    "set_start_cursor(start_cursor)", "set_subscription_name(subscription_name)",
    "set_topic_pattern(topic_pattern)", "set_topics(topics)",
    "set_unbounded_stop_cursor(stop_cursor)",
)
class PulsarSourceBuilder(RefusedApi):
    """PyFlink's Pulsar ``PulsarSourceBuilder``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSource._INSTEAD


@refuses(
    "__init__(_j_message_delayer)", "@fixed(duration)", "@never()",
)
class MessageDelayer(RefusedApi):
    """PyFlink's Pulsar ``MessageDelayer``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSink._INSTEAD


class TopicRoutingMode(RefusedApi):
    """PyFlink's Pulsar ``TopicRoutingMode``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSink._INSTEAD


@refuses(
    "__init__()", "build()", "delay_sending_message(message_delayer)", "set_admin_url(admin_url)",
    "set_authentication(auth_plugin_class_name, auth_params_string)", "set_config(key, value)",
    "set_delivery_guarantee(delivery_guarantee)", "set_producer_name(producer_name)",
    "set_properties(config)", "set_serialization_schema(serialization_schema)",
    "set_service_url(service_url)", "set_topic_router(topic_router_class_name)",
    "set_topic_routing_mode(topic_routing_mode)", "set_topics(topics)",
)
class PulsarSinkBuilder(RefusedApi):
    """PyFlink's Pulsar ``PulsarSinkBuilder``: refused when constructed or called, as the Pulsar
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "pulsar"
    _INSTEAD = PulsarSink._INSTEAD


@refuses(
    "@default_shard_assigner()", "@uniform_shard_assigner()",
)
class KinesisShardAssigner(RefusedApi):
    """PyFlink's Kinesis ``KinesisShardAssigner``: refused when constructed or called, as the Kinesis
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "kinesis"
    _INSTEAD = FlinkKinesisConsumer._INSTEAD


class KinesisDeserializationSchema(RefusedApi):
    """PyFlink's Kinesis ``KinesisDeserializationSchema``: refused when constructed or called, as the Kinesis
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "kinesis"
    _INSTEAD = FlinkKinesisConsumer._INSTEAD


@refuses(
    "@job_manager_watermark_tracker(aggregate_name, log_accumulator_interval_millis=None)",
)
class WatermarkTracker(RefusedApi):
    """PyFlink's Kinesis ``WatermarkTracker``: refused when constructed or called, as the Kinesis
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "kinesis"
    _INSTEAD = FlinkKinesisConsumer._INSTEAD


@refuses(
    "@fixed()", "@random()",
)
class PartitionKeyGenerator(RefusedApi):
    """PyFlink's Kinesis ``PartitionKeyGenerator``: refused when constructed or called, as the Kinesis
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "kinesis"
    _INSTEAD = _KINESIS_SINK


@refuses(
    "__init__()", "build()", "set_fail_on_error(fail_on_error)",
    "set_kinesis_client_properties(kinesis_client_properties)",
    "set_max_batch_size(max_batch_size)", "set_max_batch_size_in_bytes(max_batch_size_in_bytes)",
    "set_max_buffered_requests(max_buffered_requests)",
    "set_max_in_flight_requests(max_in_flight_requests)",
    "set_max_record_size_in_bytes(max_record_size_in_bytes)",
    "set_max_time_in_buffer_ms(max_time_in_buffer_ms)",
    "set_partition_key_generator(partition_key_generator)",
    "set_serialization_schema(serialization_schema)", "set_stream_name(stream_name)",
)
class KinesisStreamsSinkBuilder(RefusedApi):
    """PyFlink's Kinesis ``KinesisStreamsSinkBuilder``: refused when constructed or called, as the Kinesis
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "kinesis"
    _INSTEAD = _KINESIS_SINK


@refuses(
    "__init__()", "build()", "set_delivery_stream_name(delivery_stream_name)",
    "set_fail_on_error(fail_on_error)",
    "set_firehose_client_properties(firehose_client_properties)",
    "set_max_batch_size(max_batch_size)", "set_max_batch_size_in_bytes(max_batch_size_in_bytes)",
    "set_max_buffered_requests(max_buffered_requests)",
    "set_max_in_flight_requests(max_in_flight_requests)",
    "set_max_record_size_in_bytes(max_record_size_in_bytes)",
    "set_max_time_in_buffer_ms(max_time_in_buffer_ms)",
    "set_serialization_schema(serialization_schema)",
)
class KinesisFirehoseSinkBuilder(RefusedApi):
    """PyFlink's Kinesis ``KinesisFirehoseSinkBuilder``: refused when constructed or called, as the Kinesis
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "kinesis"
    _INSTEAD = _FIREHOSE_SINK


@refuses(
    "@builder()", "get_java_function()",
)
class DynamicKafkaSource(RefusedApi):
    """PyFlink's dynamic Kafka ``DynamicKafkaSource``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


@refuses(
    "__init__()", "build()", "set_bounded(stopping_offsets_initializer)",
    "set_client_id_prefix(prefix)", "set_deserializer(deserializer)", "set_group_id(group_id)",
    "set_kafka_metadata_service(kafka_metadata_service)",
    "set_kafka_stream_subscriber(kafka_stream_subscriber)", "set_properties(props)",
    "set_property(key, value)", "set_starting_offsets(starting_offsets_initializer)",
    "set_stream_ids(stream_ids)", "set_stream_pattern(stream_pattern)",
    "set_value_only_deserializer(deserialization_schema)",
)
class DynamicKafkaSourceBuilder(RefusedApi):
    """PyFlink's dynamic Kafka ``DynamicKafkaSourceBuilder``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


class KafkaMetadataService(RefusedApi):
    """PyFlink's dynamic Kafka ``KafkaMetadataService``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


@refuses(
    "__init__(kafka_cluster_id, properties)",
)
class SingleClusterTopicMetadataService(RefusedApi):
    """PyFlink's dynamic Kafka ``SingleClusterTopicMetadataService``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


class KafkaStreamSubscriber(RefusedApi):
    """PyFlink's dynamic Kafka ``KafkaStreamSubscriber``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


@refuses(
    "__init__(stream_ids)",
)
class KafkaStreamSetSubscriber(RefusedApi):
    """PyFlink's dynamic Kafka ``KafkaStreamSetSubscriber``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


@refuses(
    "__init__(stream_pattern)",
)
class StreamPatternSubscriber(RefusedApi):
    """PyFlink's dynamic Kafka ``StreamPatternSubscriber``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA


@refuses(
    "@value_only(deserialization_schema)",
)
class KafkaRecordDeserializationSchema(RefusedApi):
    """PyFlink's dynamic Kafka ``KafkaRecordDeserializationSchema``: refused when constructed or called, as the dynamic Kafka
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "dynamic_kafka"
    _INSTEAD = _DYNAMIC_KAFKA
