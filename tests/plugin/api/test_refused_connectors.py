"""PyFlink's connectors without a Spark counterpart here (no Spark): a ported program's first
line that uses one, constructing it or calling any of its builders, raises
UnsupportedConnectorError naming the connector, its PyFlink module and what to use instead."""

from __future__ import annotations

import pyspark_datastream as pds
import pytest
from pyspark_datastream import GraphBuildError, UnsupportedConnectorError

REFUSED = {  # name -> (PyFlink module, a word of what to use instead)
    "JdbcSink": ("jdbc", "df.write.jdbc"),
    "JdbcConnectionOptions": ("jdbc", "JDBC data source"),
    "JdbcExecutionOptions": ("jdbc", "batchsize"),
    "FlinkKinesisConsumer": ("kinesis", "from_dataframe"),
    "KinesisStreamsSink": ("kinesis", "to_dataframe"),
    "KinesisFirehoseSink": ("kinesis", "foreachBatch"),
    "PulsarSource": ("pulsar", 'format("pulsar")'),
    "PulsarSink": ("pulsar", 'format("pulsar")'),
    "Elasticsearch6SinkBuilder": ("elasticsearch", 'format("es")'),
    "Elasticsearch7SinkBuilder": ("elasticsearch", 'format("es")'),
    "RMQSource": ("rabbitmq", "from_dataframe"),
    "RMQSink": ("rabbitmq", "foreachBatch"),
    "RMQConnectionConfig": ("rabbitmq", "RabbitMQ client"),
    "CassandraSink": ("cassandra", "org.apache.spark.sql.cassandra"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_constructing_a_refused_connector_names_it_and_the_alternative(name):
    module, instead = REFUSED[name]
    assert name in pds.__all__
    cls = getattr(pds, name)
    with pytest.raises(UnsupportedConnectorError) as raised:
        cls("broker:9092", topic="t")
    text = str(raised.value)
    assert text.startswith(f"{name}(...): PyFlink's {name} "
                           f"(pyflink.datastream.connectors.{module}) is not supported; ")
    assert instead in text
    assert isinstance(raised.value, GraphBuildError)  # under the package's one root


@pytest.mark.parametrize("call", [
    lambda: pds.JdbcSink.sink("INSERT INTO t VALUES (?)", None, None),
    lambda: pds.PulsarSource.builder().set_service_url("pulsar://x"),
    lambda: pds.KinesisStreamsSink.builder(),
    lambda: pds.JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url("jdbc:x"),
    lambda: pds.CassandraSink.add_sink(None),
])
def test_a_refused_connectors_static_builders_raise_at_the_call(call):
    with pytest.raises(UnsupportedConnectorError, match=r"\.\w+\(\.\.\.\): PyFlink's "):
        call()


def test_private_and_special_attributes_stay_plain_attribute_errors():
    # introspection (hasattr, copy, pickle, doc tools) sees an ordinary class
    assert not hasattr(pds.JdbcSink, "_no_such_thing")
    assert not hasattr(pds.JdbcSink, "__wrapped__")
    assert pds.JdbcSink.__doc__ and "UnsupportedConnectorError" in pds.JdbcSink.__doc__
