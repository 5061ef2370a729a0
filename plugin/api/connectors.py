"""PyFlink's source connectors on Spark: ``KafkaSource`` and its builder on Spark's Kafka
source, ``NumberSequenceSource`` on ``spark.range``, and ``SimpleStringSchema`` (the Kafka
sink: ``kafka_sink.py``).

A program builds them as in PyFlink and hands them to ``env.from_source(...)`` and
``ds.sink_to(...)``. A builder option Spark's Kafka connector cannot honour is refused with an
:class:`UnsupportedConnectorError` naming it; none is ignored.
"""

from __future__ import annotations

from typing import Any, NoReturn, Optional, Union

from ..state_store.exceptions import GraphBuildError
from .connector_checks import nonempty_text, require_utf8, unsupported_option
from .exceptions import UnsupportedConnectorError
from .formats import JsonRowDeserializationSchema
from .no_jvm import no_java_object
from .serialization import DeserializationSchema, SerializationSchema

__all__ = [
    "SimpleStringSchema",
    "KafkaTopicPartition",
    "KafkaOffsetsInitializer",
    "KafkaSource",
    "KafkaSourceBuilder",
    "NumberSequenceSource",
]

#: Flink's own KafkaSource options: they configure Flink's reader, which Spark replaces
_FLINK_SOURCE_PROPERTIES = ("client.id.prefix", "partition.discovery.interval.ms",
                            "register.consumer.metrics", "commit.offsets.on.checkpoint")
#: consumer settings Spark's Kafka source owns (it refuses them itself, but only when the job runs)
_SPARK_OWNED_PROPERTIES = ("auto.offset.reset", "key.deserializer", "value.deserializer",
                           "enable.auto.commit", "interceptor.classes")


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
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
        require_utf8("SimpleStringSchema", charset, "Kafka values are decoded and encoded as UTF-8")
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

    get_java_function = no_java_object("NumberSequenceSource.get_java_function", UnsupportedConnectorError)

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"


class KafkaTopicPartition:
    """One partition of a topic.

    Args:
        topic: The topic.
        partition: The partition number (>= 0).
    """

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = nonempty_text("KafkaTopicPartition", "topic", topic)
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
            raise unsupported_option("KafkaOffsetsInitializer.offsets", "offset_reset_strategy",
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
        raise unsupported_option("KafkaOffsetsInitializer", "committed_offsets()",
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

    get_java_function = no_java_object("KafkaSource.get_java_function", UnsupportedConnectorError)

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
        self._bootstrap = nonempty_text(self._WHAT, "bootstrap servers", bootstrap_servers)
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
        self._topics = [nonempty_text(self._WHAT, "topic", t) for t in topics]
        self._pattern = None
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        """Read every topic whose name matches this Java regular expression.

        Args:
            topic_pattern: The pattern.

        Returns:
            This builder.
        """
        self._pattern = nonempty_text(self._WHAT, "topic pattern", topic_pattern)
        self._topics = None
        return self

    def set_partitions(self, partitions: Any) -> NoReturn:
        """Not supported: use set_topics or set_topic_pattern.

        Args:
            partitions: PyFlink's set of KafkaTopicPartition (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_partitions(...)", "use set_topics or set_topic_pattern")

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        """The consumer group id (Spark's ``kafka.group.id``); offsets are not committed to it.

        Args:
            group_id: The group id.

        Returns:
            This builder.
        """
        self._group_id = nonempty_text(self._WHAT, "group id", group_id)
        return self

    def set_client_id_prefix(self, prefix: str) -> NoReturn:
        """Not supported: Spark names its consumers.

        Args:
            prefix: PyFlink's client id prefix (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_client_id_prefix(...)", "Spark names its consumers")

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
                      ) -> NoReturn:
        """Not supported: an unbounded source runs until the STREAMING job ends.

        Args:
            stopping_offsets_initializer: PyFlink's stopping offsets (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_unbounded(...)",
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
            raise unsupported_option(self._WHAT, f"set_bounded({stopping_offsets_initializer!r})",
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
            raise unsupported_option(self._WHAT, f"deserializer {deserialization_schema!r}",
                               "values are read with SimpleStringSchema() or a "
                               "JsonRowDeserializationSchema")
        self._deserializer = deserialization_schema
        return self

    def set_deserializer(self, deserializer: Any) -> NoReturn:
        """Not supported: use set_value_only_deserializer(SimpleStringSchema()).

        Args:
            deserializer: PyFlink's KafkaRecordDeserializationSchema (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_deserializer(...)",
                           "use set_value_only_deserializer(SimpleStringSchema())")

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer setting (``group.id`` is the group id).

        Args:
            key: The consumer config key.
            value: Its value.

        Returns:
            This builder.
        """
        key = nonempty_text(self._WHAT, "property key", key)
        if key == "group.id":
            return self.set_group_id(str(value))
        if key in _FLINK_SOURCE_PROPERTIES:
            raise unsupported_option(self._WHAT, f"property {key!r}",
                               "it configures Flink's reader, which Spark's Kafka source replaces")
        if key in _SPARK_OWNED_PROPERTIES:
            raise unsupported_option(self._WHAT, f"property {key!r}", "Spark's Kafka source sets it")
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
            raise unsupported_option(self._WHAT, "set_starting_offsets(latest()) with "
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
