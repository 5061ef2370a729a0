"""PyFlink's legacy connector names: StreamingFileSink and FlinkKafkaProducer are a FileSink
and a KafkaSink that ``ds.add_sink`` declares as ``sink_to`` does (the files written by a
real job are checked in integration_tests/test_pyflink_rest_of_api.py); the Java wrappers,
the legacy consumer and the helpers Spark has no use for raise UnsupportedConnectorError
naming the call."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    BucketAssigner,
    BulkFormat,
    CsvBulkWriters,
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
    DeliveryGuarantee,
    Encoder,
    FileCompactor,
    FileCompactStrategy,
    FileEnumeratorProvider,
    FileSink,
    FileSource,
    FileSplitAssignerProvider,
    FlinkKafkaConsumer,
    FlinkKafkaProducer,
    GraphBuildError,
    KafkaRecordSerializationSchema,
    KafkaSink,
    OutputFileConfig,
    Semantic,
    SimpleStringSchema,
    Sink,
    SinkFunction,
    Source,
    SourceFunction,
    StreamExecutionEnvironment,
    StreamFormat,
    StreamingFileSink,
    Types,
    UnsupportedConnectorError,
)


def _strings(env):
    return env.from_collection(["a", "b"], Types.STRING())


def test_a_streaming_file_sink_is_a_file_sink_declared_by_add_sink(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    sink = (StreamingFileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig("events", ".txt"))
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    assert isinstance(sink, FileSink)
    handle = _strings(env).add_sink(sink)
    node = env._sinks[-1]
    assert handle._node is node and node.kind == "files"
    assert (node.options["base_path"], node.options["prefix"], node.options["suffix"]) == \
        (str(tmp_path), "events", ".txt")
    with pytest.raises(UnsupportedConnectorError, match="for_bulk_format"):
        StreamingFileSink.for_bulk_format(str(tmp_path), object())


def test_a_flink_kafka_producer_is_a_kafka_sink_of_its_topic_config_and_semantic():
    producer = FlinkKafkaProducer("events", SimpleStringSchema(),
                                  {"bootstrap.servers": "localhost:9092", "acks": "all"})
    assert isinstance(producer, KafkaSink)
    assert producer.spec["topic"] == "events"
    assert producer.spec["guarantee"] == DeliveryGuarantee.AT_LEAST_ONCE.name  # Flink's default
    assert producer.spec["options"]["kafka.bootstrap.servers"] == "localhost:9092"
    assert producer.spec["options"]["kafka.acks"] == "all"
    none = FlinkKafkaProducer("t", SimpleStringSchema(), {"bootstrap.servers": "h:1"},
                              semantic=Semantic.NONE)
    assert none.spec["guarantee"] == "NONE"
    env = StreamExecutionEnvironment.get_execution_environment()
    _strings(env).add_sink(producer)
    assert env._sinks[-1].kind == "kafka" and env._sinks[-1].options["topic"] == "events"
    assert producer.set_flush_on_checkpoint(True) is producer
    assert producer.set_log_failures_only(False) is producer
    assert producer.set_write_timestamp_to_kafka(False) is producer


def test_exactly_once_takes_the_transactional_id_as_its_prefix():
    pytest.importorskip("confluent_kafka")
    producer = FlinkKafkaProducer("t", SimpleStringSchema(),
                                  {"bootstrap.servers": "h:1", "transactional.id": "job-a"},
                                  semantic=Semantic.EXACTLY_ONCE)
    assert producer.spec["guarantee"] == "EXACTLY_ONCE"
    assert producer.spec["transactional_id_prefix"] == "job-a"


@pytest.mark.parametrize("call,match", [
    (lambda: FlinkKafkaProducer("t", SimpleStringSchema(), {}), "bootstrap.servers"),
    (lambda: FlinkKafkaProducer("t", SimpleStringSchema(), {"bootstrap.servers": "h:1"},
                                semantic="EXACTLY_ONCE"), "semantic"),
    (lambda: FlinkKafkaProducer("t", SimpleStringSchema(), {"bootstrap.servers": "h:1"})
     .set_log_failures_only(True), "set_log_failures_only"),
    (lambda: FlinkKafkaProducer("t", SimpleStringSchema(), {"bootstrap.servers": "h:1"})
     .set_flush_on_checkpoint(False), "set_flush_on_checkpoint"),
    (lambda: FlinkKafkaProducer("t", SimpleStringSchema(), {"bootstrap.servers": "h:1"})
     .set_write_timestamp_to_kafka(True), "set_write_timestamp_to_kafka"),
    (lambda: FlinkKafkaConsumer("t", SimpleStringSchema(), {}), "FlinkKafkaConsumer.*KafkaSource"),
    (lambda: SourceFunction("org.example.MySource"), "SourceFunction"),
    (lambda: SinkFunction("org.example.MySink"), "SinkFunction"),
    (lambda: Source("org.example.MySource"), "Source"),
    (lambda: Sink("org.example.MySink"), "Sink"),
    (lambda: BulkFormat(object()), "BulkFormat"),
    (lambda: CsvBulkWriters.for_schema(object()), "CsvBulkWriters"),
    (lambda: CsvRowDeserializationSchema(), "CsvRowDeserializationSchema"),
    (lambda: CsvRowSerializationSchema.Builder(Types.ROW([Types.INT()])),
     "CsvRowSerializationSchema"),
    (lambda: FileCompactStrategy.builder(), "FileCompactStrategy"),
    (lambda: FileCompactor.concat_file_compactor(), "concat_file_compactor"),
    (lambda: FileCompactor.identical_file_compactor(), "identical_file_compactor"),
])
def test_what_cannot_run_on_spark_is_refused_naming_the_call(call, match):
    with pytest.raises(UnsupportedConnectorError, match=match):
        call()


def test_add_sink_refuses_any_other_sink():
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(UnsupportedConnectorError, match="add_sink.*SinkFunction"):
        _strings(env).add_sink(object())


def test_the_file_source_refuses_the_enumerator_and_assigner_providers():
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/tmp/in")
    with pytest.raises(UnsupportedConnectorError):
        builder.set_file_enumerator(FileEnumeratorProvider.default_splittable_file_enumerator())
    with pytest.raises(UnsupportedConnectorError):
        builder.set_split_assigner(FileSplitAssignerProvider.locality_aware_split_assigner())


@pytest.mark.parametrize("obj,method", [
    (lambda: FileSink.for_row_format("/tmp/o", Encoder.simple_string_encoder()).build(),
     "get_java_function"),
    (lambda: KafkaSink.builder().set_bootstrap_servers("h:1").set_record_serializer(
        KafkaRecordSerializationSchema.builder().set_topic("t")
        .set_value_serialization_schema(SimpleStringSchema()).build()).build(),
     "get_transformer"),
    (lambda: OutputFileConfig(), "get_java_object"),
    (lambda: BucketAssigner.base_path_bucket_assigner(), "get_java_object"),
])
def test_the_java_accessors_raise_a_typed_error(obj, method):
    with pytest.raises(GraphBuildError, match=method):
        getattr(obj(), method)()
