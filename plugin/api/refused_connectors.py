"""PyFlink's connectors that Spark has no counterpart for here (JDBC, Kinesis, Pulsar,
Elasticsearch, RabbitMQ, Cassandra): a ported program gets an
:class:`UnsupportedConnectorError` at its first line that uses one (constructing it, or
calling any of its static builders), naming the connector and the Spark source or sink to
use with ``env.from_dataframe`` / ``ds.to_dataframe()`` instead.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, NoReturn, TypeVar

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
            raise cls._error(f"{cls.__name__}.{name}(...)")

        return refused


class RefusedApi(metaclass=_RefusedConnector):
    """Base of the PyFlink classes refused here: constructing one, or calling any of its
    methods, raises :class:`UnsupportedConnectorError` naming the call, the PyFlink module
    (``_PACKAGE``.``_MODULE``) and what to use instead (``_INSTEAD``).

    Args:
        *args: PyFlink's arguments (not used).
        **kwargs: PyFlink's keyword arguments (not used).

    Raises:
        UnsupportedConnectorError: Always.
    """

    _PACKAGE = "pyflink.datastream.connectors"
    _MODULE = ""
    _INSTEAD = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise type(self)._error(f"{type(self).__name__}(...)")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the constructor's parameters, documented where the class does not list them
        cls.__doc__ = _with_args(cls.__doc__ or "", ["*args", "**kwargs"])

    @classmethod
    def _error(cls, call: str) -> UnsupportedConnectorError:
        return UnsupportedConnectorError(
            f"{call}: PyFlink's {cls.__name__} ({cls._PACKAGE}.{cls._MODULE}) "
            f"is not supported; {cls._INSTEAD}")


_R = TypeVar("_R", bound=type)
_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _signature(params: str, static: bool) -> inspect.Signature:
    names = [] if static else ["self"]
    names += [p.strip() for p in params.split(",") if p.strip()]
    return inspect.Signature([
        inspect.Parameter(n.split("=")[0], _POSITIONAL,
                          **({"default": None} if "=" in n else {})) for n in names])


def refuses(*specs: str) -> Callable[[_R], _R]:
    """Class decorator: give a refused class PyFlink's methods, each with PyFlink's parameters
    (so a ported call binds) and each raising the class's :class:`UnsupportedConnectorError`.

    Args:
        *specs: One per method, as PyFlink declares it: ``"set_topics(topics)"``; a leading
            ``@`` marks a static method (``"@builder()"``), ``=None`` a parameter with a default.

    Returns:
        The decorator, which returns the class it was given.
    """

    def add(cls: _R) -> _R:
        for spec in specs:
            static = spec.startswith("@")
            name, _, params = spec.lstrip("@").partition("(")
            signature = _signature(params.rstrip(")"), static)
            setattr(cls, name, _refused_method(cls, name, signature, static))
            if name == "__init__":
                cls.__doc__ = _with_args(cls.__doc__ or "", _names(signature))
        return cls

    return add


def _names(signature: inspect.Signature) -> list[str]:
    return [p for p in signature.parameters if p != "self"]


_ANY_ARGS = "PyFlink's arguments (not used: the call is refused)."
_ONE_ARG = "PyFlink's argument (not used: the call is refused)."
_ARGS = "\n    Args:\n"


def _with_args(doc: str, names: list[str]) -> str:
    """``doc`` (a class docstring indented by four spaces) with ``names`` under ``Args:``.

    ``*args``/``**kwargs`` (the generic constructor) are added only where the class has no
    ``Args:`` of its own; PyFlink's parameter names replace the generic lines.
    """
    generic = names == ["*args", "**kwargs"]
    if generic and _ARGS in doc:
        return doc
    doc = "".join(line for line in doc.splitlines(keepends=True) if _ANY_ARGS not in line)
    lines = "".join(f"        {n}: {_ANY_ARGS if generic else _ONE_ARG}\n" for n in names)
    if _ARGS in doc:
        head, tail = doc.split(_ARGS, 1)
        if lines or tail.strip():
            return f"{head}{_ARGS}{lines}{tail}"
        return head.rstrip() + "\n    "
    return f"{doc.rstrip()}\n{_ARGS}{lines}    " if lines else doc


def _refused_method(cls: Any, name: str, signature: inspect.Signature, static: bool) -> Any:
    call = f"{cls.__name__}(...)" if name == "__init__" else f"{cls.__name__}.{name}(...)"

    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        raise cls._error(call)

    refused.__name__ = name
    refused.__qualname__ = f"{cls.__name__}.{name}"
    args = "".join(f"    {n}: PyFlink's argument (not used).\n" for n in _names(signature))
    refused.__doc__ = (f"Refused (UnsupportedConnectorError): PyFlink's ``{cls.__name__}`` "
                       f"({cls._PACKAGE}.{cls._MODULE}) is not supported here: {cls._INSTEAD}."
                       + (f"\n\nArgs:\n{args.rstrip()}" if args else "")
                       + "\n\nRaises:\n    UnsupportedConnectorError: Always, naming the call "
                         "and what to use instead.\n")
    # typeshed gives a function no __signature__; inspect reads it
    refused.__signature__ = signature  # type: ignore[attr-defined]  # typeshed: see above
    return staticmethod(refused) if static else refused


@refuses(
    "get_java_function()",
    "@sink(sql, type_info, jdbc_connection_options, jdbc_execution_options=None)",
)
class JdbcSink(RefusedApi):
    """PyFlink's ``JdbcSink`` (its ``jdbc`` connector): refused: constructing it or
    calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "jdbc"
    _INSTEAD = ("write with Spark's JDBC data source: `ds.to_dataframe()`, then "
                "`df.write.jdbc(...)` (BATCH) or `writeStream.foreachBatch` writing each batch with"
                " it (STREAMING)")


@refuses(
    "get_db_url()", "get_driver_name()", "get_password()", "get_user_name()",
)
class JdbcConnectionOptions(RefusedApi):
    """PyFlink's ``JdbcConnectionOptions`` (its ``jdbc`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "jdbc"
    _INSTEAD = ("configure Spark's JDBC data source (`url`, `driver`, `user`, `password` options) "
                "on the DataFrame of `ds.to_dataframe()`")


@refuses(
    "@builder()", "@defaults()", "get_batch_interval_ms()", "get_batch_size()",
    "get_max_retries()",
)
class JdbcExecutionOptions(RefusedApi):
    """PyFlink's ``JdbcExecutionOptions`` (its ``jdbc`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "jdbc"
    _INSTEAD = ("Spark's JDBC data source batches its writes itself (`batchsize` option) on the "
                "DataFrame of `ds.to_dataframe()`")


@refuses(
    "__init__(streams, deserializer, config_props)", "get_java_function()",
    "set_periodic_watermark_assigner(periodic_watermark_assigner)",
    "set_shard_assigner(shard_assigner)", "set_watermark_tracker(watermark_tracker)",
)
class FlinkKinesisConsumer(RefusedApi):
    """PyFlink's ``FlinkKinesisConsumer`` (its ``kinesis`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "kinesis"
    _INSTEAD = ("read the stream with a Spark Kinesis source (on Databricks "
                "`spark.readStream.format(\"kinesis\")`) and pass the DataFrame to "
                "`env.from_dataframe`")


@refuses(
    "@builder()", "get_java_function()",
)
class KinesisStreamsSink(RefusedApi):
    """PyFlink's ``KinesisStreamsSink`` (its ``kinesis`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "kinesis"
    _INSTEAD = ("write `ds.to_dataframe()` with a Spark Kinesis sink or a `foreachBatch` writer")


@refuses(
    "@builder()", "get_java_function()",
)
class KinesisFirehoseSink(RefusedApi):
    """PyFlink's ``KinesisFirehoseSink`` (its ``kinesis`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "kinesis"
    _INSTEAD = ("write `ds.to_dataframe()` with a `foreachBatch` writer that puts each batch to "
                "Firehose")


@refuses(
    "@builder()", "get_java_function()",
)
class PulsarSource(RefusedApi):
    """PyFlink's ``PulsarSource`` (its ``pulsar`` connector): refused: constructing
    it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "pulsar"
    _INSTEAD = ("read the topic with Spark's Pulsar connector "
                "(`spark.readStream.format(\"pulsar\")`) and pass the DataFrame to "
                "`env.from_dataframe`")


@refuses(
    "@builder()", "get_java_function()",
)
class PulsarSink(RefusedApi):
    """PyFlink's ``PulsarSink`` (its ``pulsar`` connector): refused: constructing
    it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "pulsar"
    _INSTEAD = ("write `ds.to_dataframe()` with Spark's Pulsar connector "
                "(`writeStream.format(\"pulsar\")`)")


#: PyFlink's methods of both Elasticsearch sink builders (6 and 7)
_ELASTICSEARCH_BUILDER = (
    "__init__()", "build()", "get_http_host_class()",
    "set_bulk_flush_backoff_strategy(flush_backoff_type, max_retries, delay_millis)",
    "set_bulk_flush_interval(interval_millis)", "set_bulk_flush_max_actions(num_max_actions)",
    "set_bulk_flush_max_size_mb(max_size_mb)", "set_connection_password(password)",
    "set_connection_path_prefix(prefix)", "set_connection_request_timeout(timeout)",
    "set_connection_timeout(timeout)", "set_connection_username(username)",
    "set_delivery_guarantee(delivery_guarantee)", "set_emitter(emitter)", "set_hosts(hosts)",
    "set_socket_timeout(timeout)",
)


@refuses(*_ELASTICSEARCH_BUILDER)
class Elasticsearch6SinkBuilder(RefusedApi):
    """PyFlink's ``Elasticsearch6SinkBuilder`` (its ``elasticsearch`` connector):
    refused: constructing it or calling any of its builders raises
    :class:`UnsupportedConnectorError`."""

    _MODULE = "elasticsearch"
    _INSTEAD = ("write `ds.to_dataframe()` with the elasticsearch-spark connector "
                "(`format(\"es\")`)")


@refuses(*_ELASTICSEARCH_BUILDER)
class Elasticsearch7SinkBuilder(RefusedApi):
    """PyFlink's ``Elasticsearch7SinkBuilder`` (its ``elasticsearch`` connector):
    refused: constructing it or calling any of its builders raises
    :class:`UnsupportedConnectorError`."""

    _MODULE = "elasticsearch"
    _INSTEAD = ("write `ds.to_dataframe()` with the elasticsearch-spark connector "
                "(`format(\"es\")`)")


@refuses(
    "__init__(connection_config, queue_name, use_correlation_id, deserialization_schema)",
    "get_java_function()",
)
class RMQSource(RefusedApi):
    """PyFlink's ``RMQSource`` (its ``rabbitmq`` connector): refused: constructing
    it or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "rabbitmq"
    _INSTEAD = ("Spark has no RabbitMQ source: read the queue with a Spark data source of your own "
                "and pass the DataFrame to `env.from_dataframe`")


@refuses(
    "__init__(connection_config, queue_name, serialization_schema)", "get_java_function()",
)
class RMQSink(RefusedApi):
    """PyFlink's ``RMQSink`` (its ``rabbitmq`` connector): refused: constructing it
    or calling any of its builders raises :class:`UnsupportedConnectorError`.

    Args:

    Raises:
        UnsupportedConnectorError: Always, saying what to use instead.
    """

    _MODULE = "rabbitmq"
    _INSTEAD = ("write `ds.to_dataframe()` with a `foreachBatch` writer that publishes each batch")


@refuses(
    "get_connection_timeout()", "get_host()", "get_network_recovery_interval()", "get_password()",
    "get_port()", "get_requested_channel_max()", "get_requested_frame_max()",
    "get_requested_heartbeat()", "get_uri()", "get_user_name()", "get_virtual_host()",
    "is_automatic_recovery()", "is_topology_recovery()",
)
class RMQConnectionConfig(RefusedApi):
    """PyFlink's ``RMQConnectionConfig`` (its ``rabbitmq`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "rabbitmq"
    _INSTEAD = ("configure the RabbitMQ client of your own Spark source or `foreachBatch` writer")


@refuses(
    "@add_sink(input)", "disable_chaining()", "name(name)", "set_parallelism(parallelism)",
    "set_uid_hash(uid_hash)", "slot_sharing_group(slot_sharing_group)", "uid(uid)",
)
class CassandraSink(RefusedApi):
    """PyFlink's ``CassandraSink`` (its ``cassandra`` connector): refused:
    constructing it or calling any of its builders raises :class:`UnsupportedConnectorError`."""

    _MODULE = "cassandra"
    _INSTEAD = ("write `ds.to_dataframe()` with the Spark Cassandra connector "
                "(`format(\"org.apache.spark.sql.cassandra\")`)")
