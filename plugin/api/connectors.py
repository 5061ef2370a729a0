"""PyFlink's connector API on Spark: the Kafka connector (``KafkaSource``, ``KafkaSink`` and
their builders) on Spark's Kafka source and sink, and ``NumberSequenceSource`` on
``spark.range``.

A program builds them as in PyFlink and hands them to ``env.from_source(...)`` and
``ds.sink_to(...)``. A builder option Spark's Kafka connector cannot honour is refused with an
:class:`UnsupportedConnectorError` naming it; none is ignored.
"""

from __future__ import annotations

import enum
from typing import Any, Optional, Union

from ..state_store.exceptions import GraphBuildError
from .exceptions import UnsupportedConnectorError
from .formats import JsonRowDeserializationSchema, JsonRowSerializationSchema

__all__ = [
    "SimpleStringSchema",
    "DeliveryGuarantee",
    "KafkaTopicPartition",
    "KafkaOffsetsInitializer",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "NumberSequenceSource",
]

#: Flink's own KafkaSource options: they configure Flink's reader, which Spark replaces
_FLINK_SOURCE_PROPERTIES = ("client.id.prefix", "partition.discovery.interval.ms",
                            "register.consumer.metrics", "commit.offsets.on.checkpoint")
#: consumer settings Spark's Kafka source owns (it refuses them itself, but only when the job runs)
_SPARK_OWNED_PROPERTIES = ("auto.offset.reset", "key.deserializer", "value.deserializer",
                           "enable.auto.commit", "interceptor.classes")
#: producer settings Spark's Kafka sink owns
_SPARK_OWNED_SINK_PROPERTIES = ("key.serializer", "value.serializer", "transactional.id")


def _unsupported(what: str, option: str, supported: str) -> UnsupportedConnectorError:
    return UnsupportedConnectorError(f"{what}: {option} is not supported; {supported}")


def _text(what: str, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise GraphBuildError(f"{what}: {name} must be a non-empty string, got {value!r}")
    return value


class SimpleStringSchema:
    """Records as strings: Kafka values decoded as text, strings written encoded.

    Args:
        charset: The character set; only ``UTF-8`` (Spark's string cast decodes UTF-8).

    Raises:
        UnsupportedConnectorError: For another charset.

    Example:
        >>> SimpleStringSchema().charset
        'UTF-8'
    """

    def __init__(self, charset: str = "UTF-8") -> None:
        if str(charset).upper().replace("_", "-") not in ("UTF-8", "UTF8"):
            raise _unsupported("SimpleStringSchema", f"charset {charset!r}",
                               "Kafka values are decoded and encoded as UTF-8")
        self.charset = "UTF-8"

    def __repr__(self) -> str:
        return "SimpleStringSchema()"


class NumberSequenceSource:
    """A bounded source of every long from ``start`` to ``end``, both included, each once
    (PyFlink's ``NumberSequenceSource``); ``env.from_source`` reads it with ``spark.range``,
    in parallel, so records arrive in no particular order across parallel instances.

    Args:
        start: The first number (an int).
        end: The last number (an int, at least ``start``).

    Raises:
        GraphBuildError: When a bound is not an int or ``end`` is below ``start``.

    Example:
        >>> NumberSequenceSource(1, 3)
        NumberSequenceSource(1, 3)
    """

    def __init__(self, start: int, end: int) -> None:
        for name, value in (("start", start), ("end", end)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise GraphBuildError(f"NumberSequenceSource: {name} must be an int, got {value!r}")
        if end < start:
            raise GraphBuildError(f"NumberSequenceSource: end ({end}) is below start ({start})")
        if end >= 2**63 - 1 or start < -2**63:
            raise GraphBuildError(f"NumberSequenceSource({start}, {end}): the bounds must be "
                                  "longs, with end below 2**63 - 1")
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"


class DeliveryGuarantee(enum.Enum):
    """How a sink delivers records across failures (PyFlink's ``DeliveryGuarantee``)."""

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"
    NONE = "none"


class KafkaTopicPartition:
    """One partition of a topic.

    Args:
        topic: The topic.
        partition: The partition number (>= 0).
    """

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = _text("KafkaTopicPartition", "topic", topic)
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise GraphBuildError(f"KafkaTopicPartition: partition must be an int >= 0, "
                                  f"got {partition!r}")
        self.partition = partition

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, KafkaTopicPartition) and
                (self.topic, self.partition) == (other.topic, other.partition))

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __repr__(self) -> str:
        return f"KafkaTopicPartition({self.topic!r}, {self.partition})"


class KafkaOffsetsInitializer:
    """Where a KafkaSource starts (or, bounded, stops) reading each partition. Made by
    ``earliest()``, ``latest()``, ``timestamp(ms)``, ``offsets(...)`` or
    ``committed_offsets()``; not constructed directly.
    """

    def __init__(self, kind: str, value: Any = None) -> None:
        self.kind = kind
        self.value = value

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        """Each partition's earliest offset.

        Returns:
            The initializer.
        """
        return KafkaOffsetsInitializer("earliest")

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        """Each partition's latest offset (when the job starts).

        Returns:
            The initializer.
        """
        return KafkaOffsetsInitializer("latest")

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first offset of each partition whose record timestamp is >= ``timestamp``.

        Args:
            timestamp: Epoch milliseconds.

        Returns:
            The initializer.
        """
        if not isinstance(timestamp, int) or isinstance(timestamp, bool) or timestamp < 0:
            raise GraphBuildError(f"KafkaOffsetsInitializer.timestamp: timestamp must be epoch "
                                  f"milliseconds (an int >= 0), got {timestamp!r}")
        return KafkaOffsetsInitializer("timestamp", timestamp)

    @staticmethod
    def offsets(offsets: dict[KafkaTopicPartition, int],
                offset_reset_strategy: Any = None) -> KafkaOffsetsInitializer:
        """Explicit offsets per partition; Spark needs one for every partition it reads.

        Args:
            offsets: Offset per KafkaTopicPartition.
            offset_reset_strategy: Not supported (Spark fails on an out-of-range offset).

        Returns:
            The initializer.
        """
        if offset_reset_strategy is not None:
            raise _unsupported("KafkaOffsetsInitializer.offsets", "offset_reset_strategy",
                               "Spark's Kafka source has no reset strategy for explicit offsets")
        if not isinstance(offsets, dict) or not offsets or not all(
                isinstance(k, KafkaTopicPartition) and isinstance(v, int) and v >= 0
                for k, v in offsets.items()):
            raise GraphBuildError("KafkaOffsetsInitializer.offsets needs a non-empty dict of "
                                  f"KafkaTopicPartition -> offset (int >= 0), got {offsets!r}")
        return KafkaOffsetsInitializer("offsets", dict(offsets))

    @staticmethod
    def committed_offsets(offset_reset_strategy: Any = None) -> KafkaOffsetsInitializer:
        """Not supported: Spark's Kafka source keeps its offsets in its checkpoint.

        Args:
            offset_reset_strategy: PyFlink's reset strategy (not used).

        Returns:
            Nothing: it always raises.

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported("KafkaOffsetsInitializer", "committed_offsets()",
                           "a STREAMING job resumes from the offsets in its own checkpoint; "
                           "use earliest(), latest(), timestamp(...) or offsets(...)")

    def spark_offsets(self, edge: str) -> dict[str, str]:
        """The Spark source option for this initializer as the ``edge`` ('starting'/'ending').

        Args:
            edge: ``starting`` or ``ending``.

        Returns:
            Spark Kafka source options.
        """
        import json

        if self.kind in ("earliest", "latest"):
            return {f"{edge}Offsets": self.kind}
        if self.kind == "timestamp":
            return {f"{edge}Timestamp": str(self.value)}
        by_topic: dict[str, dict[str, int]] = {}
        for tp, offset in self.value.items():
            by_topic.setdefault(tp.topic, {})[str(tp.partition)] = offset
        return {f"{edge}Offsets": json.dumps(by_topic, sort_keys=True)}

    def __repr__(self) -> str:
        return f"KafkaOffsetsInitializer.{self.kind}({'' if self.value is None else self.value})"


class KafkaSource:
    """A Kafka source; ``env.from_source`` reads it. Built by ``KafkaSource.builder()``; not
    constructed directly.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        """A builder of a KafkaSource.

        Returns:
            A new KafkaSourceBuilder.
        """
        return KafkaSourceBuilder()

    @property
    def bounded(self) -> bool:
        """Whether ``set_bounded`` gave the source an end."""
        return bool(self.spec["bounded"])

    def __repr__(self) -> str:
        where = self.spec.get("topics") or self.spec.get("topic_pattern")
        return f"KafkaSource({where!r}, bounded={self.bounded})"


class KafkaSourceBuilder:
    """PyFlink's ``KafkaSourceBuilder``: every ``set_*`` returns the builder.

    Example:
        >>> source = (KafkaSource.builder().set_bootstrap_servers("localhost:9092")
        ...           .set_topics("words").set_value_only_deserializer(SimpleStringSchema())
        ...           .build())
    """

    _WHAT = "KafkaSource"

    def __init__(self) -> None:
        self._bootstrap: Optional[str] = None
        self._topics: Optional[list[str]] = None
        self._pattern: Optional[str] = None
        self._group_id: Optional[str] = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._bounded = False
        self._deserializer: Optional[Union[SimpleStringSchema, JsonRowDeserializationSchema]] = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        """The brokers' ``host:port`` list.

        Args:
            bootstrap_servers: Comma-separated ``host:port``.

        Returns:
            This builder.
        """
        self._bootstrap = _text(self._WHAT, "bootstrap servers", bootstrap_servers)
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        """Read these topics (every partition).

        Args:
            *topics: Topic names.

        Returns:
            This builder.
        """
        if not topics:
            raise GraphBuildError("KafkaSource: set_topics needs at least one topic")
        self._topics = [_text(self._WHAT, "topic", t) for t in topics]
        self._pattern = None
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        """Read every topic whose name matches this Java regular expression.

        Args:
            topic_pattern: The pattern.

        Returns:
            This builder.
        """
        self._pattern = _text(self._WHAT, "topic pattern", topic_pattern)
        self._topics = None
        return self

    def set_partitions(self, partitions: Any) -> KafkaSourceBuilder:
        """Not supported: use set_topics or set_topic_pattern.

        Args:
            partitions: PyFlink's set of KafkaTopicPartition (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_partitions(...)", "use set_topics or set_topic_pattern")

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        """The consumer group id (Spark's ``kafka.group.id``); offsets are not committed to it.

        Args:
            group_id: The group id.

        Returns:
            This builder.
        """
        self._group_id = _text(self._WHAT, "group id", group_id)
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        """Not supported: Spark names its consumers.

        Args:
            prefix: PyFlink's client id prefix (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_client_id_prefix(...)", "Spark names its consumers")

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer
                             ) -> KafkaSourceBuilder:
        """Where a new job starts (a STREAMING job that resumes uses its checkpoint's offsets).

        Args:
            starting_offsets_initializer: earliest(), latest(), timestamp(...) or offsets(...).

        Returns:
            This builder.
        """
        if not isinstance(starting_offsets_initializer, KafkaOffsetsInitializer):
            raise GraphBuildError("KafkaSource: set_starting_offsets needs a "
                                  f"KafkaOffsetsInitializer, got {starting_offsets_initializer!r}")
        self._starting = starting_offsets_initializer
        return self

    def set_unbounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer
                      ) -> KafkaSourceBuilder:
        """Not supported: an unbounded source runs until the STREAMING job ends.

        Args:
            stopping_offsets_initializer: PyFlink's stopping offsets (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_unbounded(...)",
                           "leave the source unbounded, or set_bounded(latest()) for BATCH")

    def set_bounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer
                    ) -> KafkaSourceBuilder:
        """Make the source bounded: it reads up to each partition's latest offset at the start.

        Args:
            stopping_offsets_initializer: ``KafkaOffsetsInitializer.latest()`` (the only one).

        Returns:
            This builder.
        """
        if not isinstance(stopping_offsets_initializer, KafkaOffsetsInitializer) or \
                stopping_offsets_initializer.kind != "latest":
            raise _unsupported(self._WHAT, f"set_bounded({stopping_offsets_initializer!r})",
                               "a bounded source stops at KafkaOffsetsInitializer.latest()")
        self._bounded = True
        return self

    def set_value_only_deserializer(
            self, deserialization_schema: Union[SimpleStringSchema, JsonRowDeserializationSchema]
    ) -> KafkaSourceBuilder:
        """How record values become records: ``SimpleStringSchema()`` gives str, a
        ``JsonRowDeserializationSchema`` Rows of its type.

        Args:
            deserialization_schema: A SimpleStringSchema or JsonRowDeserializationSchema.

        Returns:
            This builder.
        """
        if not isinstance(deserialization_schema,
                          (SimpleStringSchema, JsonRowDeserializationSchema)):
            raise _unsupported(self._WHAT, f"deserializer {deserialization_schema!r}",
                               "values are read with SimpleStringSchema() or a "
                               "JsonRowDeserializationSchema")
        self._deserializer = deserialization_schema
        return self

    def set_deserializer(self, deserializer: Any) -> KafkaSourceBuilder:
        """Not supported: use set_value_only_deserializer(SimpleStringSchema()).

        Args:
            deserializer: PyFlink's KafkaRecordDeserializationSchema (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_deserializer(...)",
                           "use set_value_only_deserializer(SimpleStringSchema())")

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer setting (``group.id`` is the group id).

        Args:
            key: The consumer config key.
            value: Its value.

        Returns:
            This builder.
        """
        key = _text(self._WHAT, "property key", key)
        if key == "group.id":
            return self.set_group_id(str(value))
        if key in _FLINK_SOURCE_PROPERTIES:
            raise _unsupported(self._WHAT, f"property {key!r}",
                               "it configures Flink's reader, which Spark's Kafka source replaces")
        if key in _SPARK_OWNED_PROPERTIES:
            raise _unsupported(self._WHAT, f"property {key!r}", "Spark's Kafka source sets it")
        self._properties[key] = str(value)
        return self

    def set_properties(self, props: dict[str, str]) -> KafkaSourceBuilder:
        """Several :meth:`set_property` at once.

        Args:
            props: Key -> value.

        Returns:
            This builder.
        """
        for key, value in dict(props).items():
            self.set_property(key, value)
        return self

    def build(self) -> KafkaSource:
        """The KafkaSource.

        Returns:
            The source.

        Raises:
            GraphBuildError: When the bootstrap servers, the topics or the deserializer are missing.
        """
        missing = [name for name, v in (("set_bootstrap_servers", self._bootstrap),
                                        ("set_topics or set_topic_pattern",
                                         self._topics or self._pattern),
                                        ("set_value_only_deserializer", self._deserializer))
                   if not v]
        if missing:
            raise GraphBuildError(f"KafkaSource.builder().build(): call {', '.join(missing)} first")
        if self._bounded and self._starting.kind == "latest":
            raise _unsupported(self._WHAT, "set_starting_offsets(latest()) with "
                               "set_bounded(latest())",
                               "Spark's bounded Kafka read cannot start at the latest offsets")
        options = {"kafka.bootstrap.servers": self._bootstrap}
        if self._topics:
            options["subscribe"] = ",".join(self._topics)
        else:
            options["subscribePattern"] = str(self._pattern)
        if self._group_id:
            options["kafka.group.id"] = self._group_id
        options.update({f"kafka.{k}": v for k, v in self._properties.items()})
        options.update(self._starting.spark_offsets("starting"))
        if self._bounded:
            options["endingOffsets"] = "latest"
        json = self._deserializer if isinstance(
            self._deserializer, JsonRowDeserializationSchema) else None
        return KafkaSource({"topics": self._topics, "topic_pattern": self._pattern,
                            "bounded": self._bounded, "value": "string", "json": json,
                            "options": options})


class KafkaRecordSerializationSchema:
    """How a KafkaSink turns a record into a Kafka record (topic and value). Built by
    ``KafkaRecordSerializationSchema.builder()``; not constructed directly.
    """

    def __init__(self, topic: str,
                 value_schema: Union[SimpleStringSchema, JsonRowSerializationSchema]) -> None:
        self.topic = topic
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        """A builder of a KafkaRecordSerializationSchema.

        Returns:
            A new builder.
        """
        return KafkaRecordSerializationSchemaBuilder()


class KafkaRecordSerializationSchemaBuilder:
    """PyFlink's ``KafkaRecordSerializationSchemaBuilder``: a topic and a value schema."""

    _WHAT = "KafkaRecordSerializationSchema"

    def __init__(self) -> None:
        self._topic: Optional[str] = None
        self._value: Optional[Union[SimpleStringSchema, JsonRowSerializationSchema]] = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        """Write every record to this topic.

        Args:
            topic: The topic.

        Returns:
            This builder.
        """
        self._topic = _text(self._WHAT, "topic", topic)
        return self

    def set_topic_selector(self, topic_selector: Any) -> KafkaRecordSerializationSchemaBuilder:
        """Not supported: one topic per sink.

        Args:
            topic_selector: PyFlink's topic selector (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_topic_selector(...)", "use set_topic (one topic)")

    def set_key_serialization_schema(self, key_serialization_schema: Any
                                     ) -> KafkaRecordSerializationSchemaBuilder:
        """Not supported: records are written without keys.

        Args:
            key_serialization_schema: PyFlink's key schema (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_key_serialization_schema(...)",
                           "records are written without keys")

    def set_partitioner(self, partitioner: Any) -> KafkaRecordSerializationSchemaBuilder:
        """Not supported: Kafka's default partitioner places the records.

        Args:
            partitioner: PyFlink's partitioner (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_partitioner(...)",
                           "Kafka's default partitioner places the records")

    def set_value_serialization_schema(
            self, value_serialization_schema: Union[SimpleStringSchema, JsonRowSerializationSchema]
    ) -> KafkaRecordSerializationSchemaBuilder:
        """How a record becomes the Kafka value: ``SimpleStringSchema()`` writes str as UTF-8,
        a ``JsonRowSerializationSchema`` Rows as JSON objects.

        Args:
            value_serialization_schema: A SimpleStringSchema or JsonRowSerializationSchema.

        Returns:
            This builder.
        """
        if not isinstance(value_serialization_schema,
                          (SimpleStringSchema, JsonRowSerializationSchema)):
            raise _unsupported(self._WHAT, f"value schema {value_serialization_schema!r}",
                               "values are written with SimpleStringSchema() or a "
                               "JsonRowSerializationSchema")
        self._value = value_serialization_schema
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        """The schema.

        Returns:
            The KafkaRecordSerializationSchema.

        Raises:
            GraphBuildError: When the topic or the value schema is missing.
        """
        if self._topic is None or self._value is None:
            raise GraphBuildError("KafkaRecordSerializationSchema.builder().build(): call "
                                  "set_topic and set_value_serialization_schema first")
        return KafkaRecordSerializationSchema(self._topic, self._value)


class KafkaSink:
    """A Kafka sink; ``ds.sink_to`` writes to it. Built by ``KafkaSink.builder()``; not
    constructed directly.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        """A builder of a KafkaSink.

        Returns:
            A new KafkaSinkBuilder.
        """
        return KafkaSinkBuilder()

    def __repr__(self) -> str:
        return f"KafkaSink({self.spec['topic']!r})"


class KafkaSinkBuilder:
    """PyFlink's ``KafkaSinkBuilder``; the guarantee defaults to ``DeliveryGuarantee.NONE``.

    Example:
        >>> sink = (KafkaSink.builder().set_bootstrap_servers("localhost:9092")
        ...         .set_record_serializer(KafkaRecordSerializationSchema.builder()
        ...             .set_topic("counts").set_value_serialization_schema(SimpleStringSchema())
        ...             .build())
        ...         .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE).build())
    """

    _WHAT = "KafkaSink"

    def __init__(self) -> None:
        self._bootstrap: Optional[str] = None
        self._serializer: Optional[KafkaRecordSerializationSchema] = None
        self._guarantee = DeliveryGuarantee.NONE
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        """The brokers' ``host:port`` list.

        Args:
            bootstrap_servers: Comma-separated ``host:port``.

        Returns:
            This builder.
        """
        self._bootstrap = _text(self._WHAT, "bootstrap servers", bootstrap_servers)
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema
                              ) -> KafkaSinkBuilder:
        """The topic and value schema of the records written.

        Args:
            record_serializer: A KafkaRecordSerializationSchema.

        Returns:
            This builder.
        """
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise GraphBuildError("KafkaSink: set_record_serializer needs a "
                                  f"KafkaRecordSerializationSchema, got {record_serializer!r}")
        self._serializer = record_serializer
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        """AT_LEAST_ONCE or NONE; EXACTLY_ONCE (Kafka transactions) is refused.

        Args:
            delivery_guarantee: A DeliveryGuarantee.

        Returns:
            This builder.

        Raises:
            UnsupportedConnectorError: For EXACTLY_ONCE.
        """
        if delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            raise _unsupported(self._WHAT, "DeliveryGuarantee.EXACTLY_ONCE",
                               "Spark's Kafka sink writes without transactions: use "
                               "DeliveryGuarantee.AT_LEAST_ONCE (or NONE)")
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise GraphBuildError("KafkaSink: set_delivery_guarantee needs a DeliveryGuarantee, "
                                  f"got {delivery_guarantee!r}")
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        """Not supported: only EXACTLY_ONCE uses transactions, and it is not supported.

        Args:
            transactional_id_prefix: PyFlink's prefix (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise _unsupported(self._WHAT, "set_transactional_id_prefix(...)",
                           "it serves DeliveryGuarantee.EXACTLY_ONCE, which is not supported")

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        """A Kafka producer setting.

        Args:
            key: The producer config key.
            value: Its value.

        Returns:
            This builder.
        """
        key = _text(self._WHAT, "property key", key)
        if key in _SPARK_OWNED_SINK_PROPERTIES:
            raise _unsupported(self._WHAT, f"property {key!r}", "Spark's Kafka sink sets it")
        self._properties[key] = str(value)
        return self

    def build(self) -> KafkaSink:
        """The KafkaSink.

        Returns:
            The sink.

        Raises:
            GraphBuildError: When the bootstrap servers or the record serializer are missing.
        """
        if self._bootstrap is None or self._serializer is None:
            raise GraphBuildError("KafkaSink.builder().build(): call set_bootstrap_servers and "
                                  "set_record_serializer first")
        options = {"kafka.bootstrap.servers": self._bootstrap, "topic": self._serializer.topic}
        options.update({f"kafka.{k}": v for k, v in self._properties.items()})
        value = self._serializer.value_schema
        return KafkaSink({"topic": self._serializer.topic, "options": options,
                          "guarantee": self._guarantee.name,
                          "json": value if isinstance(value, JsonRowSerializationSchema) else None})
