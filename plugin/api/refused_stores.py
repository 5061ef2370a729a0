"""PyFlink's Cassandra, Elasticsearch and hybrid-source classes beyond the sinks themselves
(emitters, mapper options, committers, the hybrid source and its builder): each is refused as
its connector is, with PyFlink's methods present and each raising
:class:`UnsupportedConnectorError` naming the call and what to use instead.
"""

from __future__ import annotations

from .refused_connectors import CassandraSink, Elasticsearch7SinkBuilder, RefusedApi, refuses

__all__ = [
    "CassandraCommitter",
    "CassandraFailureHandler",
    "ClusterBuilder",
    "ConsistencyLevel",
    "MapperOptions",
    "ElasticsearchEmitter",
    "ElasticsearchSink",
    "FlushBackoffType",
    "HybridSource",
    "HybridSourceBuilder",
]

_HYBRID = ("a source that switches from one source to the next when the first ends has no Spark "
           "counterpart: run the bounded part as its own BATCH job first, or read both sources "
           "and `union` the streams (their records then interleave)")


@refuses(
    "@default_checkpoint_committer(builder, key_space=None)",
)
class CassandraCommitter(RefusedApi):
    """PyFlink's Cassandra ``CassandraCommitter``: refused when constructed or called, as the Cassandra
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "cassandra"
    _INSTEAD = CassandraSink._INSTEAD


@refuses(
    "@no_op()",
)
class CassandraFailureHandler(RefusedApi):
    """PyFlink's Cassandra ``CassandraFailureHandler``: refused when constructed or called, as the Cassandra
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "cassandra"
    _INSTEAD = CassandraSink._INSTEAD


class ClusterBuilder(RefusedApi):
    """PyFlink's Cassandra ``ClusterBuilder``: refused when constructed or called, as the Cassandra
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "cassandra"
    _INSTEAD = CassandraSink._INSTEAD


class ConsistencyLevel(RefusedApi):
    """PyFlink's Cassandra ``ConsistencyLevel``: refused when constructed or called, as the Cassandra
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "cassandra"
    _INSTEAD = CassandraSink._INSTEAD


@refuses(
    "__init__()", "consistency_level(cl)", "if_not_exists(enabled)", "save_null_fields(enabled)",
    "timestamp(timestamp)", "tracing(enabled)", "ttl(ttl)",
)
class MapperOptions(RefusedApi):
    """PyFlink's Cassandra ``MapperOptions``: refused when constructed or called, as the Cassandra
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "cassandra"
    _INSTEAD = CassandraSink._INSTEAD


@refuses(
    "@dynamic_index(index_field, key_field=None, doc_type=None)",
    "@static_index(index, key_field=None, doc_type=None)",
)
class ElasticsearchEmitter(RefusedApi):
    """PyFlink's Elasticsearch ``ElasticsearchEmitter``: refused when constructed or called, as the Elasticsearch
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "elasticsearch"
    _INSTEAD = Elasticsearch7SinkBuilder._INSTEAD


@refuses(
    "get_java_function()",
)
class ElasticsearchSink(RefusedApi):
    """PyFlink's Elasticsearch ``ElasticsearchSink``: refused when constructed or called, as the Elasticsearch
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "elasticsearch"
    _INSTEAD = Elasticsearch7SinkBuilder._INSTEAD


class FlushBackoffType(RefusedApi):
    """PyFlink's Elasticsearch ``FlushBackoffType``: refused when constructed or called, as the Elasticsearch
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "elasticsearch"
    _INSTEAD = Elasticsearch7SinkBuilder._INSTEAD


@refuses(
    "@builder(first_source)", "get_java_function()",
)
class HybridSource(RefusedApi):
    """PyFlink's hybrid ``HybridSource``: refused when constructed or called, as the hybrid
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "hybrid_source"
    _INSTEAD = _HYBRID


@refuses(
    "add_source(source)", "build()",
)
class HybridSourceBuilder(RefusedApi):
    """PyFlink's hybrid ``HybridSourceBuilder``: refused when constructed or called, as the hybrid
    connector is; each of PyFlink's methods raises :class:`UnsupportedConnectorError` naming the
    call and what to use instead."""

    _MODULE = "hybrid_source"
    _INSTEAD = _HYBRID
