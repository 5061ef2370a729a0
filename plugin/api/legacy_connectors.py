"""PyFlink's legacy connector names (``SourceFunction``/``SinkFunction`` and the connectors
built on them) and the connector helpers this project has no use for.

- :class:`StreamingFileSink` is a :class:`FileSink` written with ``ds.add_sink`` (or
  ``sink_to``): the same row format, bucket assigner, rolling policy and file names.
- :class:`FlinkKafkaProducer` is a :class:`KafkaSink` built from its topic, schema and
  producer config (``Semantic`` onto ``DeliveryGuarantee``).
- A ``SourceFunction``/``SinkFunction``/``Source``/``Sink`` wrapping a Java class, a
  ``FlinkKafkaConsumer`` (use ``KafkaSource``), a ``BulkFormat``, ``CsvBulkWriters``, the CSV
  row schemas and file compaction are refused with an :class:`UnsupportedConnectorError`
  naming what to use instead. Flink 2 removed the Java classes behind the legacy ones.
"""

from __future__ import annotations

import enum
from typing import Any, NoReturn

from .connector_checks import unsupported_option
from .exceptions import UnsupportedConnectorError
from .file_connectors import FileSink, FileSinkRowFormatBuilder
from .kafka_sink import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink
from .no_jvm import no_java_object

__all__ = [
    "BulkFormat", "CsvBulkWriters", "CsvRowDeserializationSchema", "CsvRowSerializationSchema",
    "FileCompactStrategy", "FileCompactor", "FileEnumeratorProvider",
    "FileSplitAssignerProvider", "FlinkKafkaConsumer", "FlinkKafkaProducer",
    "KafkaOffsetResetStrategy", "KafkaTopicSelector", "Semantic", "Sink", "SinkFunction",
    "Source", "SourceFunction", "StreamingFileSink",
]


def _java(what: str, instead: str) -> UnsupportedConnectorError:
    return UnsupportedConnectorError(
        f"{what}: a Java Flink class cannot run on Spark (there is no Flink JVM); {instead}")


_SOURCES = ("use env.from_source with a KafkaSource, FileSource or NumberSequenceSource, "
            "env.from_collection, or env.from_dataframe over any Spark source")
_SINKS = "use ds.sink_to with a KafkaSink or FileSink, ds.sink_to_delta or ds.to_dataframe()"


class SourceFunction:
    """PyFlink's wrapper of a Java ``SourceFunction``: refused when constructed.

    Args:
        source_func: the Java class name or object.

    Raises:
        UnsupportedConnectorError: always, naming what to use instead.
    """

    def __init__(self, source_func: Any) -> None:
        raise _java(f"SourceFunction({source_func!r:.60})", _SOURCES)

    get_java_function = no_java_object("SourceFunction.get_java_function",
                                       UnsupportedConnectorError)


class SinkFunction:
    """PyFlink's wrapper of a Java ``SinkFunction``: refused when constructed (the sinks this
    project writes, :class:`StreamingFileSink` and :class:`FlinkKafkaProducer`, are
    accepted by ``ds.add_sink``).

    Args:
        sink_func: the Java class name or object.

    Raises:
        UnsupportedConnectorError: always, naming what to use instead.
    """

    def __init__(self, sink_func: Any) -> None:
        raise _java(f"SinkFunction({sink_func!r:.60})", _SINKS)

    get_java_function = no_java_object("SinkFunction.get_java_function",
                                       UnsupportedConnectorError)


class Source:
    """PyFlink's wrapper of a Java ``Source`` (``pyflink.datastream.connectors.base``):
    refused when constructed.

    Args:
        source: the Java class name or object.

    Raises:
        UnsupportedConnectorError: always.
    """

    def __init__(self, source: Any) -> None:
        raise _java(f"Source({source!r:.60})", _SOURCES)

    get_java_function = no_java_object("Source.get_java_function", UnsupportedConnectorError)


class Sink:
    """PyFlink's wrapper of a Java ``Sink`` (``pyflink.datastream.connectors.base``):
    refused when constructed.

    Args:
        sink: the Java class name or object.

    Raises:
        UnsupportedConnectorError: always.
    """

    def __init__(self, sink: Any) -> None:
        raise _java(f"Sink({sink!r:.60})", _SINKS)

    get_java_function = no_java_object("Sink.get_java_function", UnsupportedConnectorError)


# -- file system --------------------------------------------------------------------------


class StreamingFileSinkRowFormatBuilder(FileSinkRowFormatBuilder):
    """PyFlink's ``StreamingFileSink.DefaultRowFormatBuilder``: a FileSink's row builder."""

    _WHAT = "StreamingFileSink"

    def build(self) -> StreamingFileSink:
        """The StreamingFileSink.

        Returns:
            The sink.
        """
        return StreamingFileSink(super().build().spec)


class StreamingFileSink(FileSink):
    """PyFlink's legacy file sink: a :class:`FileSink` (row format), written with
    ``ds.add_sink(sink)`` or ``ds.sink_to(sink)``. Built by
    ``StreamingFileSink.for_row_format(base_path, encoder).build()``.

    Args:
        spec: The sink's settings (as the builder makes them).
    """

    @staticmethod
    def for_row_format(base_path: str, encoder: Any) -> StreamingFileSinkRowFormatBuilder:
        """A builder of a sink writing each record as a line of part files under
        ``base_path`` (as ``FileSink.for_row_format``).

        Args:
            base_path: The folder (local path or URI).
            encoder: ``Encoder.simple_string_encoder()``.

        Returns:
            The builder.
        """
        FileSink.for_row_format(base_path, encoder)  # checks both
        return StreamingFileSinkRowFormatBuilder(base_path)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> NoReturn:
        """Refused as ``FileSink.for_bulk_format``: Spark writes bulk formats itself.

        Args:
            base_path: The folder.
            writer_factory: PyFlink's bulk writer factory.

        Raises:
            UnsupportedConnectorError: always.
        """
        raise unsupported_option("StreamingFileSink", "for_bulk_format(...)",
                                 "write Parquet or other formats with ds.to_dataframe() and "
                                 "Spark's writer, or use sink_to_delta")

    get_java_function = no_java_object("StreamingFileSink.get_java_function",
                                       UnsupportedConnectorError)

    def __repr__(self) -> str:
        return f"StreamingFileSink({self.spec['base_path']!r})"


class BulkFormat:
    """PyFlink's wrapper of a Java bulk format: refused when constructed (the bulk format
    read here is ``ParquetColumnarRowInputFormat``).

    Args:
        j_bulk_format: the Java object.

    Raises:
        UnsupportedConnectorError: always.
    """

    def __init__(self, j_bulk_format: Any) -> None:
        raise _java("BulkFormat(...)", "read Parquet with ParquetColumnarRowInputFormat, or "
                    "any format with a Spark reader and env.from_dataframe")


_COMPACT = ("part files roll at every micro-batch; compact a Delta table with OPTIMIZE "
            "(ds.sink_to_delta) or rewrite the files with Spark")


class FileCompactStrategy:
    """Flink's file compaction: refused (see ``builder``)."""

    @staticmethod
    def builder() -> NoReturn:
        """Refused: the file sink compacts nothing here.

        Raises:
            UnsupportedConnectorError: always, naming what to do instead.
        """
        raise unsupported_option("FileSink", "FileCompactStrategy.builder()", _COMPACT)

    get_java_object = no_java_object("FileCompactStrategy.get_java_object",
                                     UnsupportedConnectorError)


class FileCompactor:
    """Flink's file compactors: refused (see ``concat_file_compactor``)."""

    @staticmethod
    def concat_file_compactor(file_delimiter: bytes = b"\n") -> NoReturn:
        """Refused: the file sink compacts nothing here.

        Args:
            file_delimiter: the delimiter between concatenated files.

        Raises:
            UnsupportedConnectorError: always.
        """
        raise unsupported_option("FileSink", "FileCompactor.concat_file_compactor()", _COMPACT)

    @staticmethod
    def identical_file_compactor() -> NoReturn:
        """Refused: the file sink compacts nothing here.

        Raises:
            UnsupportedConnectorError: always.
        """
        raise unsupported_option("FileSink", "FileCompactor.identical_file_compactor()", _COMPACT)

    get_java_object = no_java_object("FileCompactor.get_java_object", UnsupportedConnectorError)


class FileEnumeratorProvider:
    """Flink's file enumerators; ``FileSource.builder(...).set_file_enumerator`` refuses
    them (Spark lists the files).

    Args:
        kind: The enumerator's name.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def default_splittable_file_enumerator() -> FileEnumeratorProvider:
        """Flink's recursive enumerator of splittable files.

        Returns:
            The provider (refused by ``set_file_enumerator``).
        """
        return FileEnumeratorProvider("default_splittable_file_enumerator")

    @staticmethod
    def default_non_splittable_file_enumerator() -> FileEnumeratorProvider:
        """Flink's recursive enumerator of non-splittable files.

        Returns:
            The provider (refused by ``set_file_enumerator``).
        """
        return FileEnumeratorProvider("default_non_splittable_file_enumerator")

    def __repr__(self) -> str:
        return f"FileEnumeratorProvider.{self.kind}()"


class FileSplitAssignerProvider:
    """Flink's split assigners; ``FileSource.builder(...).set_split_assigner`` refuses them
    (Spark assigns the files).

    Args:
        kind: The assigner's name.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def locality_aware_split_assigner() -> FileSplitAssignerProvider:
        """Flink's locality-aware assigner.

        Returns:
            The provider (refused by ``set_split_assigner``).
        """
        return FileSplitAssignerProvider("locality_aware_split_assigner")

    def __repr__(self) -> str:
        return f"FileSplitAssignerProvider.{self.kind}()"


# -- CSV ---------------------------------------------------------------------------------


class CsvBulkWriters:
    """Flink's CSV bulk writer: refused as ``FileSink.for_bulk_format``."""

    @staticmethod
    def for_schema(schema: Any) -> NoReturn:
        """Refused: Spark writes CSV itself.

        Args:
            schema: the CsvSchema.

        Raises:
            UnsupportedConnectorError: always.
        """
        raise unsupported_option("CsvBulkWriters", "for_schema(...)",
                                 "write CSV with ds.to_dataframe() and Spark's CSV writer")


class _RefusedSchema:
    _INSTEAD = ""

    def _refuse(self) -> NoReturn:
        raise unsupported_option(type(self).__name__, "construction", self._INSTEAD)

    class Builder:
        """PyFlink's builder; refused when built."""

        _OWNER = ""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise unsupported_option(self._OWNER, "Builder(...)", "see its docstring")


class CsvRowDeserializationSchema(_RefusedSchema):
    """PyFlink's CSV Kafka value deserializer: refused; read the values with
    ``SimpleStringSchema`` and parse each line in a ``map``, or with Spark's ``from_csv``
    over ``env.from_dataframe``.

    Args:
        j_deserialization_schema: PyFlink's Java object.

    Raises:
        UnsupportedConnectorError: always (and its ``Builder``).
    """

    _INSTEAD = ("read Kafka values with SimpleStringSchema and parse each line in a map, or "
                "use Spark's from_csv on env.from_dataframe")

    def __init__(self, j_deserialization_schema: Any = None) -> None:
        self._refuse()

    class Builder(_RefusedSchema.Builder):
        """Refused, see :class:`CsvRowDeserializationSchema`."""

        _OWNER = "CsvRowDeserializationSchema"


class CsvRowSerializationSchema(_RefusedSchema):
    """PyFlink's CSV Kafka value serializer: refused; format each record as a CSV line in a
    ``map`` and write it with ``SimpleStringSchema``.

    Args:
        j_csv_row_serialization_schema: PyFlink's Java object.

    Raises:
        UnsupportedConnectorError: always (and its ``Builder``).
    """

    _INSTEAD = "format each record as a CSV line in a map and write it with SimpleStringSchema"

    def __init__(self, j_csv_row_serialization_schema: Any = None) -> None:
        self._refuse()

    class Builder(_RefusedSchema.Builder):
        """Refused, see :class:`CsvRowSerializationSchema`."""

        _OWNER = "CsvRowSerializationSchema"


# -- Kafka -------------------------------------------------------------------------------


class KafkaOffsetResetStrategy(enum.Enum):
    """Where a consumer without committed offsets starts (used by
    ``KafkaOffsetsInitializer.committed_offsets``, which is refused here)."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


class Semantic(enum.Enum):
    """``FlinkKafkaProducer``'s guarantee, mapped onto :class:`DeliveryGuarantee`."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


class KafkaTopicSelector:
    """Chooses a record's topic; subclass it. ``set_topic_selector`` refuses it here (one
    topic per sink)."""

    def apply(self, data: Any) -> str:
        """The topic of ``data``.

        Args:
            data: a record.

        Returns:
            The topic.
        """
        raise NotImplementedError


class FlinkKafkaConsumer:
    """PyFlink's legacy Kafka consumer (a ``SourceFunction``): refused; use ``KafkaSource``.

    Args:
        topics: the topic(s).
        deserialization_schema: the value schema.
        properties: the consumer config.

    Raises:
        UnsupportedConnectorError: always, naming the KafkaSource calls to use.
    """

    def __init__(self, topics: Any, deserialization_schema: Any, properties: dict[str, Any]
                 ) -> None:
        raise self._refused("FlinkKafkaConsumer(...)")

    @staticmethod
    def _refused(call: str) -> UnsupportedConnectorError:
        return unsupported_option(
            "FlinkKafkaConsumer", call,
            "use KafkaSource.builder().set_bootstrap_servers(...).set_topics(...)"
            ".set_value_only_deserializer(...).set_starting_offsets(...).build() with "
            "env.from_source (Flink 2 removed FlinkKafkaConsumer too)")

    def set_commit_offsets_on_checkpoints(self, commit_on_checkpoints: bool) -> NoReturn:
        """Refused, see the class.

        Args:
            commit_on_checkpoints: PyFlink's flag.
        """
        raise self._refused("set_commit_offsets_on_checkpoints")

    def set_start_from_earliest(self) -> NoReturn:
        """Refused, see the class (``KafkaOffsetsInitializer.earliest()``)."""
        raise self._refused("set_start_from_earliest")

    def set_start_from_latest(self) -> NoReturn:
        """Refused, see the class (``KafkaOffsetsInitializer.latest()``)."""
        raise self._refused("set_start_from_latest")

    def set_start_from_timestamp(self, startup_offsets_timestamp: int) -> NoReturn:
        """Refused, see the class (``KafkaOffsetsInitializer.timestamp(...)``).

        Args:
            startup_offsets_timestamp: PyFlink's start time (ms).
        """
        raise self._refused("set_start_from_timestamp")

    def set_start_from_group_offsets(self) -> NoReturn:
        """Refused, see the class."""
        raise self._refused("set_start_from_group_offsets")

    def disable_filter_restored_partitions_with_subscribed_topics(self) -> NoReturn:
        """Refused, see the class."""
        raise self._refused("disable_filter_restored_partitions_with_subscribed_topics")

    def get_produced_type(self) -> NoReturn:
        """Refused, see the class."""
        raise self._refused("get_produced_type")

    get_java_function = no_java_object("FlinkKafkaConsumer.get_java_function",
                                       UnsupportedConnectorError)


_GUARANTEES = {Semantic.EXACTLY_ONCE: DeliveryGuarantee.EXACTLY_ONCE,
               Semantic.AT_LEAST_ONCE: DeliveryGuarantee.AT_LEAST_ONCE,
               Semantic.NONE: DeliveryGuarantee.NONE}


class FlinkKafkaProducer(KafkaSink):
    """PyFlink's legacy Kafka producer, as a :class:`KafkaSink`: written with
    ``ds.add_sink(producer)`` (or ``sink_to``).

    Args:
        topic: The topic.
        serialization_schema: ``SimpleStringSchema()`` or a ``JsonRowSerializationSchema``.
        producer_config: Kafka producer settings; ``bootstrap.servers`` is required, and
            ``transactional.id`` (the transactional id prefix) with ``Semantic.EXACTLY_ONCE``.
        kafka_producer_pool_size: Flink's pool of transactional producers; kept, no effect.
        semantic: ``Semantic.AT_LEAST_ONCE`` (default), ``EXACTLY_ONCE`` or ``NONE``.

    Raises:
        GraphBuildError: a missing ``bootstrap.servers`` or a bad argument (as KafkaSink's
            builder).
    """

    def __init__(self, topic: str, serialization_schema: Any, producer_config: dict[str, Any],
                 kafka_producer_pool_size: int = 5,
                 semantic: Semantic = Semantic.AT_LEAST_ONCE) -> None:
        if not isinstance(producer_config, dict) or "bootstrap.servers" not in producer_config:
            raise unsupported_option("FlinkKafkaProducer", f"producer_config {producer_config!r:.80}",
                                     "give a dict with 'bootstrap.servers'")
        if not isinstance(semantic, Semantic):
            raise unsupported_option("FlinkKafkaProducer", f"semantic {semantic!r}",
                                     "use Semantic.AT_LEAST_ONCE, EXACTLY_ONCE or NONE")
        config = {k: str(v) for k, v in producer_config.items()}
        builder = KafkaSink.builder().set_bootstrap_servers(config.pop("bootstrap.servers"))
        prefix = config.pop("transactional.id", None)
        if prefix is not None:
            builder.set_transactional_id_prefix(prefix)
        for key, value in config.items():
            builder.set_property(key, value)
        builder.set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic(topic)
            .set_value_serialization_schema(serialization_schema).build())
        builder.set_delivery_guarantee(_GUARANTEES[semantic])
        super().__init__(builder.build().spec)

    def set_flush_on_checkpoint(self, flush_on_checkpoint: bool) -> FlinkKafkaProducer:
        """Flink's flush before a checkpoint: True is what runs here (a micro-batch's writes
        complete before it commits); False is refused (it gives up at-least-once).

        Args:
            flush_on_checkpoint: a bool.

        Returns:
            This producer.

        Raises:
            UnsupportedConnectorError: False.
        """
        if flush_on_checkpoint is not True:
            raise unsupported_option("FlinkKafkaProducer",
                                     f"set_flush_on_checkpoint({flush_on_checkpoint!r})",
                                     "a micro-batch's writes always complete before it commits")
        return self

    def set_log_failures_only(self, log_failures_only: bool) -> FlinkKafkaProducer:
        """False is what runs here (a failed write fails the job); True (log and drop the
        record) is refused.

        Args:
            log_failures_only: a bool.

        Returns:
            This producer.

        Raises:
            UnsupportedConnectorError: True.
        """
        if log_failures_only is not False:
            raise unsupported_option("FlinkKafkaProducer",
                                     f"set_log_failures_only({log_failures_only!r})",
                                     "a failed write fails the micro-batch, which is retried")
        return self

    def set_write_timestamp_to_kafka(self, write_timestamp_to_kafka: bool) -> FlinkKafkaProducer:
        """False is what runs here (Kafka stamps the records); True is refused: records carry
        no event timestamp into the sink.

        Args:
            write_timestamp_to_kafka: a bool.

        Returns:
            This producer.

        Raises:
            UnsupportedConnectorError: True.
        """
        if write_timestamp_to_kafka is not False:
            raise unsupported_option("FlinkKafkaProducer",
                                     f"set_write_timestamp_to_kafka({write_timestamp_to_kafka!r})",
                                     "records are written with the broker's timestamps")
        return self

    def ignore_failures_after_transaction_timeout(self) -> FlinkKafkaProducer:
        """Kept, no effect: a restarted job fences the transactions of the run it replaces
        (``EXACTLY_ONCE``), there is no timed-out transaction to commit.

        Returns:
            This producer.
        """
        return self

    get_java_function = no_java_object("FlinkKafkaProducer.get_java_function",
                                       UnsupportedConnectorError)

    def __repr__(self) -> str:
        return f"FlinkKafkaProducer({self.spec['topic']!r})"
