"""The sink calls of a DataStream (``print``, ``sink_to_delta``, ``sink_to``, ``to_dataframe``,
``execute_and_collect``) and ``DataStreamSink``, the handle a declared sink returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from ..plan.graph import SinkNode, Transformation, check_uid
from ..state_store.exceptions import GraphBuildError
from .hints import SchedulingHints

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..state_store.typeinfo import TypeInformation
    from .file_connectors import FileSink
    from .kafka_sink import KafkaSink

__all__ = ["DataStreamSink", "SinkCalls"]


class DataStreamSink(SchedulingHints):
    """Handle on a declared sink (``uid``/``name`` as in PyFlink). Returned by ``ds.sink_to``,
    ``ds.sink_to_delta`` and the other sink calls; not constructed directly.
    """

    def __init__(self, node: SinkNode) -> None:
        self._node = node

    def uid(self, uid: str) -> DataStreamSink:
        """Stable sink id (as ``DataStream.uid``).

        Args:
            uid: A non-empty string.

        Returns:
            This sink.

        Raises:
            GraphBuildError: ``uid`` is not a non-empty string.
        """
        self._node.uid = check_uid(uid)
        return self

    def name(self, name: str) -> DataStreamSink:
        """Name the sink.

        Args:
            name: The name.

        Returns:
            This sink.
        """
        self._node.name = str(name)
        return self


class SinkCalls:
    """What a DataStream writes to, and how its records are read back."""

    _node: Transformation
    _env: Any

    if TYPE_CHECKING:  # what the stream class this mixes into (DataStream) defines
        def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> Any: ...

    def print(self, sink_identifier: Optional[str] = None) -> DataStreamSink:
        """Print each record when the job runs (PyFlink's ``print``).

        Args:
            sink_identifier: A prefix for the printed lines, or None.

        Returns:
            The sink.
        """
        node = SinkNode(name="Print", inputs=[self._node], kind="print",
                        options={"identifier": sink_identifier})
        self._env.add_sink_node(node)
        return DataStreamSink(node)

    def sink_to_delta(self, path: str, mode: str = "append") -> DataStreamSink:
        """Write the stream to a Delta table at ``path`` when ``env.execute()`` runs.

        Args:
            path: The table path (local, ``s3a://``, ...).
            mode: ``"append"`` or ``"overwrite"``.

        Returns:
            The sink.

        Raises:
            GraphBuildError: ``mode`` or ``path`` is invalid, or the stream is not typed with a
                Spark-mappable ``output_type``.
        """
        if mode not in ("append", "overwrite"):
            raise GraphBuildError(f"sink_to_delta mode must be 'append' or 'overwrite', got {mode!r}")
        if not isinstance(path, str) or not path:
            raise GraphBuildError(f"sink_to_delta needs a table path, got {path!r}")
        self._require_typed("sink_to_delta()")
        node = SinkNode(name=f"DeltaSink({path})", inputs=[self._node], kind="delta",
                        options={"path": path, "mode": mode})
        self._env.add_sink_node(node)
        return DataStreamSink(node)

    def sink_to(self, sink: Union[KafkaSink, FileSink]) -> DataStreamSink:
        """Write the stream to a connector sink (a :class:`KafkaSink` or a
        :class:`FileSink`) when the job runs.

        Args:
            sink: The KafkaSink (its SimpleStringSchema needs a ``Types.STRING()`` stream, a
                JsonRowSerializationSchema a stream of its ROW type) or the FileSink (a
                ``Types.STRING()`` stream).

        Returns:
            The DataStreamSink.

        Raises:
            UnsupportedConnectorError: For another sink.
            GraphBuildError: When the stream is not declared with the type the sink writes.
        """
        from ..state_store.types import Types
        from .exceptions import UnsupportedConnectorError
        from .file_connectors import FileSink
        from .kafka_sink import KafkaSink

        if not isinstance(sink, (KafkaSink, FileSink)):
            raise UnsupportedConnectorError(
                f"sink_to: {type(sink).__name__} is not supported; the supported sinks are "
                "KafkaSink and FileSink (or sink_to_delta, print)")
        t = self._node.output_type
        json = sink.spec["json"] if isinstance(sink, KafkaSink) else None
        writes = "Encoder.simple_string_encoder()" if isinstance(sink, FileSink) else \
            "SimpleStringSchema"
        source = self._node
        if json is not None:
            if t != json.type_info:
                raise GraphBuildError(
                    f"sink_to({sink!r}): {json!r} writes Rows of {json.type_info!r}, but "
                    f"{self._node.describe()} has {'no output_type' if t is None else repr(t)}; "
                    "pass that output_type to the operator that produces it")
            source = self.map(json.formatter(), output_type=Types.STRING()).name(
                f"{sink!r}: {json!r}")._node
        elif getattr(t, "type_name", None) != "STRING":
            raise GraphBuildError(
                f"sink_to({sink!r}): {writes} writes str records, but "
                f"{self._node.describe()} has {'no output_type' if t is None else repr(t)}; "
                "pass output_type=Types.STRING() to the operator that produces it")
        if isinstance(sink, FileSink):
            node = SinkNode(name=f"FileSink({sink.spec['base_path']})", inputs=[source],
                            kind="files", options=dict(sink.spec))
        else:
            node = SinkNode(name=f"KafkaSink({sink.spec['topic']})", inputs=[source],
                            kind="kafka", options=dict(sink.spec))
        self._env.add_sink_node(node)
        return DataStreamSink(node)

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """PyFlink's legacy sink call: a ``StreamingFileSink`` or ``FlinkKafkaProducer`` (or
        any FileSink or KafkaSink) is written as :meth:`sink_to` writes it.

        Args:
            sink_func: The sink.

        Returns:
            The DataStreamSink.

        Raises:
            UnsupportedConnectorError: Another sink (a Java ``SinkFunction`` cannot run here).
            GraphBuildError: As :meth:`sink_to`.
        """
        from .exceptions import UnsupportedConnectorError
        from .file_connectors import FileSink
        from .kafka_sink import KafkaSink

        if not isinstance(sink_func, (KafkaSink, FileSink)):
            raise UnsupportedConnectorError(
                f"add_sink({type(sink_func).__name__}): only StreamingFileSink and "
                f"FlinkKafkaProducer (or a FileSink or KafkaSink) are written here; a Java "
                f"SinkFunction cannot run on Spark. Use sink_to, sink_to_delta or to_dataframe()")
        return self.sink_to(sink_func)

    def get_execution_config(self) -> Any:
        """The environment's ExecutionConfig (as ``env.get_config()``).

        Returns:
            The ExecutionConfig.
        """
        return self._env.get_config()

    def _require_typed(self, what: str) -> None:
        from ..runtime.spark_types import is_spark_mappable

        t = self._node.output_type
        if t is None or not is_spark_mappable(t):
            raise GraphBuildError(
                f"{what} needs a typed stream but {self._node.describe()} has "
                f"{'no output_type' if t is None else 'output_type ' + repr(t)}; records travel "
                "pickled. Pass output_type=Types.ROW_NAMED([...], [...]) (or Types.TUPLE([...])) "
                f"to the operator that produces it"
            )

    def to_dataframe(self) -> DataFrame:
        """This stream as a Spark DataFrame (streaming in STREAMING mode).

        Returns:
            The DataFrame.

        Raises:
            GraphBuildError: The stream is not typed with a Spark-mappable ``output_type``.
        """
        self._require_typed("to_dataframe()")
        return self._env.dataframe_of(self._node)

    def execute_and_collect(self, job_execution_name: Optional[str] = None,
                            limit: Optional[int] = None) -> Any:
        """Run the job and iterate its records (a list when ``limit`` is given).

        Args:
            job_execution_name: The job's name, or None for the default.
            limit: Collect at most this many records into a list; None iterates them all.

        Returns:
            A ``CloseableIterator`` over the records, or a list when ``limit`` is given.
        """
        it = self._env.collect_node(self._node, job_execution_name)
        if limit is None:
            return it
        out: list[Any] = []
        with it:
            for record in it:
                if len(out) >= limit:
                    break
                out.append(record)
        return out
