"""PyFlink's connectors that Spark has no counterpart for here (JDBC, Kinesis, Pulsar,
Elasticsearch, RabbitMQ, Cassandra): a ported program gets an
:class:`UnsupportedConnectorError` at its first line that uses one (constructing it, or
calling any of its static builders), naming the connector and the Spark source or sink to
use with ``env.from_dataframe`` / ``ds.to_dataframe()`` instead.
"""

from __future__ import annotations

from typing import Any, NoReturn

from .exceptions import UnsupportedConnectorError

__all__ = [
    "JdbcSink",
    "JdbcConnectionOptions",
    "JdbcExecutionOptions",
    "FlinkKinesisConsumer",
    "KinesisStreamsSink",
    "KinesisFirehoseSink",
    "PulsarSource",
    "PulsarSink",
    "Elasticsearch6SinkBuilder",
    "Elasticsearch7SinkBuilder",
    "RMQSource",
    "RMQSink",
    "RMQConnectionConfig",
    "CassandraSink",
]


class _RefusedConnector(type):
    """Metaclass: any public attribute of the class (``JdbcSink.sink``, ``PulsarSource.builder``,
    a nested builder class) is a callable that raises the connector's error."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def refused(*args: Any, **kwargs: Any) -> NoReturn:
            raise cls._error(f"{cls.__name__}.{name}(...)")  # type: ignore[attr-defined]

        return refused


class _Refused(metaclass=_RefusedConnector):
    _MODULE = ""
    _INSTEAD = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise type(self)._error(f"{type(self).__name__}(...)")

    @classmethod
    def _error(cls, call: str) -> UnsupportedConnectorError:
        return UnsupportedConnectorError(
            f"{call}: PyFlink's {cls.__name__} (pyflink.datastream.connectors.{cls._MODULE}) "
            f"is not supported; {cls._INSTEAD}")


class JdbcSink(_Refused):
    """PyFlink's ``JdbcSink`` (``pyflink.datastream.connectors.jdbc``), refused: constructing it or
    calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "jdbc"
    _INSTEAD = ("write with Spark's JDBC data source: `ds.to_dataframe()`, then "
                "`df.write.jdbc(...)` (BATCH) or `writeStream.foreachBatch` writing each batch with"
                " it (STREAMING)")


class JdbcConnectionOptions(_Refused):
    """PyFlink's ``JdbcConnectionOptions`` (``pyflink.datastream.connectors.jdbc``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "jdbc"
    _INSTEAD = ("configure Spark's JDBC data source (`url`, `driver`, `user`, `password` options) "
                "on the DataFrame of `ds.to_dataframe()`")


class JdbcExecutionOptions(_Refused):
    """PyFlink's ``JdbcExecutionOptions`` (``pyflink.datastream.connectors.jdbc``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "jdbc"
    _INSTEAD = ("Spark's JDBC data source batches its writes itself (`batchsize` option) on the "
                "DataFrame of `ds.to_dataframe()`")


class FlinkKinesisConsumer(_Refused):
    """PyFlink's ``FlinkKinesisConsumer`` (``pyflink.datastream.connectors.kinesis``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "kinesis"
    _INSTEAD = ("read the stream with a Spark Kinesis source (on Databricks "
                "`spark.readStream.format(\"kinesis\")`) and pass the DataFrame to "
                "`env.from_dataframe`")


class KinesisStreamsSink(_Refused):
    """PyFlink's ``KinesisStreamsSink`` (``pyflink.datastream.connectors.kinesis``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "kinesis"
    _INSTEAD = ("write `ds.to_dataframe()` with a Spark Kinesis sink or a `foreachBatch` writer")


class KinesisFirehoseSink(_Refused):
    """PyFlink's ``KinesisFirehoseSink`` (``pyflink.datastream.connectors.kinesis``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "kinesis"
    _INSTEAD = ("write `ds.to_dataframe()` with a `foreachBatch` writer that puts each batch to "
                "Firehose")


class PulsarSource(_Refused):
    """PyFlink's ``PulsarSource`` (``pyflink.datastream.connectors.pulsar``), refused: constructing
    it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "pulsar"
    _INSTEAD = ("read the topic with Spark's Pulsar connector "
                "(`spark.readStream.format(\"pulsar\")`) and pass the DataFrame to "
                "`env.from_dataframe`")


class PulsarSink(_Refused):
    """PyFlink's ``PulsarSink`` (``pyflink.datastream.connectors.pulsar``), refused: constructing
    it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "pulsar"
    _INSTEAD = ("write `ds.to_dataframe()` with Spark's Pulsar connector "
                "(`writeStream.format(\"pulsar\")`)")


class Elasticsearch6SinkBuilder(_Refused):
    """PyFlink's ``Elasticsearch6SinkBuilder`` (``pyflink.datastream.connectors.elasticsearch``),
    refused: constructing it or calling any of its builders raises
    :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "elasticsearch"
    _INSTEAD = ("write `ds.to_dataframe()` with the elasticsearch-spark connector "
                "(`format(\"es\")`)")


class Elasticsearch7SinkBuilder(_Refused):
    """PyFlink's ``Elasticsearch7SinkBuilder`` (``pyflink.datastream.connectors.elasticsearch``),
    refused: constructing it or calling any of its builders raises
    :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "elasticsearch"
    _INSTEAD = ("write `ds.to_dataframe()` with the elasticsearch-spark connector "
                "(`format(\"es\")`)")


class RMQSource(_Refused):
    """PyFlink's ``RMQSource`` (``pyflink.datastream.connectors.rabbitmq``), refused: constructing
    it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "rabbitmq"
    _INSTEAD = ("Spark has no RabbitMQ source: read the queue with a Spark data source of your own "
                "and pass the DataFrame to `env.from_dataframe`")


class RMQSink(_Refused):
    """PyFlink's ``RMQSink`` (``pyflink.datastream.connectors.rabbitmq``), refused: constructing it
    or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "rabbitmq"
    _INSTEAD = ("write `ds.to_dataframe()` with a `foreachBatch` writer that publishes each batch")


class RMQConnectionConfig(_Refused):
    """PyFlink's ``RMQConnectionConfig`` (``pyflink.datastream.connectors.rabbitmq``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "rabbitmq"
    _INSTEAD = ("configure the RabbitMQ client of your own Spark source or `foreachBatch` writer")


class CassandraSink(_Refused):
    """PyFlink's ``CassandraSink`` (``pyflink.datastream.connectors.cassandra``), refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "cassandra"
    _INSTEAD = ("write `ds.to_dataframe()` with the Spark Cassandra connector "
                "(`format(\"org.apache.spark.sql.cassandra\")`)")
