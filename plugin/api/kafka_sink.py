"""PyFlink's Kafka sink on Spark: ``KafkaSink``, its record serialization schema and
``DeliveryGuarantee``. ``NONE``/``AT_LEAST_ONCE`` write through Spark's Kafka sink;
``EXACTLY_ONCE`` through Kafka transactions, one per partition of each micro-batch
(``runtime/kafka_transactions.py``). An option neither can honour is refused with an
:class:`UnsupportedConnectorError` naming it.
"""

from __future__ import annotations

import enum
import importlib.util
from typing import Any, NoReturn, Optional, Union

from ..state_store.exceptions import ConfigurationError, GraphBuildError
from .connector_checks import nonempty_text, unsupported_option
from .connectors import SimpleStringSchema
from .exceptions import UnsupportedConnectorError
from .formats import JsonRowSerializationSchema
from .no_jvm import no_java_object

__all__ = [
    "DeliveryGuarantee",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
]

#: producer settings the sink owns (Spark's sink and the transactional writer set them)
_OWNED_PROPERTIES = ("key.serializer", "value.serializer", "transactional.id")


class DeliveryGuarantee(enum.Enum):
    """How a sink delivers records across failures (PyFlink's ``DeliveryGuarantee``)."""

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"
    NONE = "none"


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
        self._topic = nonempty_text(self._WHAT, "topic", topic)
        return self

    def set_topic_selector(self, topic_selector: Any) -> NoReturn:
        """Not supported: one topic per sink.

        Args:
            topic_selector: PyFlink's topic selector (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_topic_selector(...)", "use set_topic (one topic)")

    def set_key_serialization_schema(self, key_serialization_schema: Any
                                     ) -> NoReturn:
        """Not supported: records are written without keys.

        Args:
            key_serialization_schema: PyFlink's key schema (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_key_serialization_schema(...)",
                           "records are written without keys")

    def set_partitioner(self, partitioner: Any) -> NoReturn:
        """Not supported: Kafka's default partitioner places the records.

        Args:
            partitioner: PyFlink's partitioner (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_partitioner(...)",
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
            raise unsupported_option(self._WHAT, f"value schema {value_serialization_schema!r}",
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

    get_java_function = no_java_object("KafkaSink.get_java_function", UnsupportedConnectorError)
    get_transformer = no_java_object("KafkaSink.get_transformer", UnsupportedConnectorError)

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
        self._prefix: Optional[str] = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        """The brokers to write to.

        Args:
            bootstrap_servers: The brokers' ``host:port``, comma-separated.

        Returns:
            This builder.
        """
        self._bootstrap = nonempty_text(self._WHAT, "bootstrap servers", bootstrap_servers)
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
        """The guarantee: ``NONE`` and ``AT_LEAST_ONCE`` write through Spark's Kafka sink (a
        micro-batch retried after a failure is written again); ``EXACTLY_ONCE`` writes each
        micro-batch in Kafka transactions (``set_transactional_id_prefix`` is then required),
        so ``read_committed`` consumers see every record once.

        Args:
            delivery_guarantee: A DeliveryGuarantee.

        Returns:
            This builder.

        Raises:
            GraphBuildError: For something other than a DeliveryGuarantee.
        """
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise GraphBuildError("KafkaSink: set_delivery_guarantee needs a DeliveryGuarantee, "
                                  f"got {delivery_guarantee!r}")
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        """The prefix of the sink's Kafka transactional ids (``EXACTLY_ONCE``): each partition
        of a micro-batch writes as ``<prefix>-<partition>``, so a restarted job fences the
        producers of the run it replaces. Unique per sink among the jobs writing to one cluster.

        Args:
            transactional_id_prefix: The prefix.

        Returns:
            This builder.
        """
        self._prefix = nonempty_text(self._WHAT, "transactional id prefix",
                                     transactional_id_prefix)
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        """A Kafka producer setting (Spark's sink takes it as ``kafka.<key>``; the
        ``EXACTLY_ONCE`` writer passes it to its producers).

        Args:
            key: The producer config key.
            value: Its value.

        Returns:
            This builder.

        Raises:
            UnsupportedConnectorError: For a setting the sink owns (serializers, transactional id).
        """
        key = nonempty_text(self._WHAT, "property key", key)
        if key in _OWNED_PROPERTIES:
            raise unsupported_option(self._WHAT, f"property {key!r}", "the sink sets it")
        self._properties[key] = str(value)
        return self

    def build(self) -> KafkaSink:
        """The KafkaSink.

        Returns:
            The sink.

        Raises:
            GraphBuildError: When the bootstrap servers or the record serializer are missing,
                or ``EXACTLY_ONCE`` has no transactional id prefix.
            ConfigurationError: ``EXACTLY_ONCE`` without the ``confluent-kafka`` package.
        """
        if self._bootstrap is None or self._serializer is None:
            raise GraphBuildError("KafkaSink.builder().build(): call set_bootstrap_servers and "
                                  "set_record_serializer first")
        exactly_once = self._guarantee is DeliveryGuarantee.EXACTLY_ONCE
        if exactly_once and self._prefix is None:
            raise GraphBuildError(
                "KafkaSink: DeliveryGuarantee.EXACTLY_ONCE needs set_transactional_id_prefix(...), "
                "a prefix unique to this sink among the jobs writing to the Kafka cluster")
        if exactly_once and importlib.util.find_spec("confluent_kafka") is None:
            raise ConfigurationError(
                "KafkaSink: DeliveryGuarantee.EXACTLY_ONCE writes with the confluent-kafka "
                "package, which is not installed: pip install 'pyspark-datastream[kafka]' "
                "(on the driver and the executors)")
        options = {"kafka.bootstrap.servers": self._bootstrap, "topic": self._serializer.topic}
        options.update({f"kafka.{k}": v for k, v in self._properties.items()})
        value = self._serializer.value_schema
        return KafkaSink({"topic": self._serializer.topic, "options": options,
                          "guarantee": self._guarantee.name,
                          "transactional_id_prefix": self._prefix if exactly_once else None,
                          "producer": {"bootstrap.servers": self._bootstrap, **self._properties},
                          "json": value if isinstance(value, JsonRowSerializationSchema) else None})
