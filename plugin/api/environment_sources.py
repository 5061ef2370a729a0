"""``StreamExecutionEnvironment``'s sources (PyFlink names): a collection, a Spark DataFrame,
a connector source, a cached stream. Each adds a ``SourceNode`` to the environment's graph."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union, cast

from ..plan.config import RuntimeMode, configured_runtime_mode
from ..plan.graph import SourceNode
from ..state_store.exceptions import GraphBuildError
from ..state_store.row import Row
from ..state_store.typeinfo import FieldsTypeInfo, TypeInformation
from .cached import CachedDataStream
from .datastream import DataStream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .checkpointing import ExecutionConfig
    from .connectors import KafkaSource, NumberSequenceSource
    from .datastream import StreamEnvironment
    from .file_connectors import FileSource
    from .watermarks import WatermarkStrategy

__all__ = ["EnvironmentSources", "unbounded_in_batch"]


def unbounded_in_batch(node: SourceNode) -> str:
    """Flink's refusal of an unbounded source in a BATCH job, naming the source.

    Args:
        node: The unbounded source.

    Returns:
        The message.
    """
    return (f"source {node.describe()} is unbounded (a KafkaSource without set_bounded, a "
            "FileSource with monitor_continuously) and execution.runtime-mode is BATCH: a BATCH "
            "job needs bounded sources. Call set_bounded(KafkaOffsetsInitializer.latest()) on "
            "a KafkaSource's builder (leave out a FileSource's monitor_continuously), or run in "
            "STREAMING")


def _as_row(element: Any, index: int, type_info: TypeInformation) -> Row:
    """An element of a ``Types.ROW``/``ROW_NAMED`` collection as a named Row (as PyFlink
    gives them: ``value.info`` and ``value[1]`` both work)."""
    if not isinstance(type_info, FieldsTypeInfo):
        raise GraphBuildError(f"from_collection: {type_info!r} has no fields")
    names = list(type_info.get_field_names())
    if isinstance(element, Row) and element.get_field_names() == names:
        return element
    if isinstance(element, dict):
        values = [element.get(n) for n in names]
    elif isinstance(element, (tuple, list)) and len(element) == len(names):
        values = list(element)
    else:
        raise GraphBuildError(
            f"from_collection element {index} {element!r:.80} does not fit {type_info!r}: "
            f"a Row, tuple or list of {len(names)} values, or a dict, is needed")
    return Row.from_fields(names, values)


class EnvironmentSources:
    """The source calls of :class:`~.environment.StreamExecutionEnvironment`."""

    _config: ExecutionConfig
    _sources: list[SourceNode]

    def _stream(self, node: SourceNode) -> DataStream:
        """The stream of ``node``, a source just added (this is a StreamExecutionEnvironment)."""
        self._sources.append(node)
        return DataStream(cast("StreamEnvironment", self), node)

    @property
    def spark(self) -> SparkSession:
        """The environment's SparkSession (``StreamExecutionEnvironment.spark``)."""
        raise NotImplementedError

    def from_collection(self, collection: Iterable[Any],
                        type_info: Optional[TypeInformation] = None) -> DataStream:
        """A bounded stream of the given elements.

        Args:
            collection: The elements (picklable).
            type_info: Their ``TypeInformation``; with ``Types.ROW``/``ROW_NAMED`` elements become
                ``Row``s. None sends them pickled.

        Returns:
            The stream.

        Raises:
            GraphBuildError: ``type_info`` is not a ``TypeInformation``, an element does not fit a
                ROW type, or the elements cannot be pickled.
        """
        data = list(collection)
        if type_info is not None and not isinstance(type_info, TypeInformation):
            raise GraphBuildError(f"from_collection type_info must be a TypeInformation, got {type_info!r}")
        if type_info is not None and type_info.type_name == "ROW":
            data = [_as_row(e, i, type_info) for i, e in enumerate(data)]
        try:
            pickle.dumps(data[:1])
        except Exception as exc:  # noqa: BLE001
            raise GraphBuildError(f"from_collection elements must be picklable: {exc}") from exc
        node = SourceNode(name="Collection Source", inputs=[], output_type=type_info,
                          kind="collection", payload=data, bounded=True)
        return self._stream(node)

    def from_dataframe(self, df: DataFrame, type_info: Optional[TypeInformation] = None) -> DataStream:
        """A stream of a Spark DataFrame's rows.

        Records are named Rows of the schema's field names (``Types.ROW_NAMED``, in column
        order; tuples with a ``Types.TUPLE`` ``type_info``); batch DataFrames are bounded,
        streaming ones not.

        Args:
            df: The DataFrame (batch or streaming).
            type_info: The records' type; None derives ``ROW_NAMED`` from the schema.

        Returns:
            The stream.

        Raises:
            GraphBuildError: ``df`` is not a Spark DataFrame.
        """
        from ..spark_io.schema import type_info_from_schema

        if not hasattr(df, "schema") or not hasattr(df, "isStreaming"):
            raise GraphBuildError(f"from_dataframe needs a Spark DataFrame, got {type(df).__name__}")
        t = type_info if type_info is not None else type_info_from_schema(df.schema)
        node = SourceNode(name="DataFrame Source", inputs=[], output_type=t, kind="dataframe",
                          payload=df, bounded=not df.isStreaming,
                          batch_runs_unbounded=True)
        return self._stream(node)

    def from_source(self, source: Union[KafkaSource, NumberSequenceSource, FileSource],
                    watermark_strategy: WatermarkStrategy, source_name: str,
                    type_info: Optional[TypeInformation] = None) -> DataStream:
        """A stream of a connector source (a :class:`KafkaSource`, a
        :class:`NumberSequenceSource` or a :class:`FileSource`), as in PyFlink.

        Kafka records carry their Kafka timestamps; a strategy other than
        ``WatermarkStrategy.no_watermarks()`` is applied as by
        ``assign_timestamps_and_watermarks``. A KafkaSource without ``set_bounded`` and a
        FileSource with ``monitor_continuously`` are unbounded: a BATCH job refuses them. A
        NumberSequenceSource is bounded; its records, and a FileSource's, have no timestamps.

        Args:
            source: The KafkaSource, NumberSequenceSource or FileSource.
            watermark_strategy: How event time and watermarks are derived.
            source_name: The operator's name.
            type_info: ``Types.STRING()`` for a KafkaSource read with SimpleStringSchema or a
                FileSource of text lines, the format's row type for a FileSource of CSV or
                Parquet, the schema's ROW type for a KafkaSource read with a
                JsonRowDeserializationSchema, ``Types.LONG()`` for a NumberSequenceSource, or
                None.

        Returns:
            The stream of the source's records (str for SimpleStringSchema and text lines,
            Rows for a JsonRowDeserializationSchema, int for a NumberSequenceSource).

        Raises:
            UnsupportedConnectorError: For a source other than these.
            GraphBuildError: For a bad strategy, name or type, or an unbounded source when the
                runtime mode is BATCH.
        """
        from ..state_store.types import Types
        from .connectors import KafkaSource, NumberSequenceSource
        from .exceptions import UnsupportedConnectorError
        from .file_connectors import FileSource
        from .watermarks import WatermarkStrategy

        if not isinstance(source, (KafkaSource, NumberSequenceSource, FileSource)):
            raise UnsupportedConnectorError(
                f"from_source: {type(source).__name__} is not supported; the supported sources "
                "are KafkaSource, NumberSequenceSource and FileSource (read other sources with "
                "Spark and use from_dataframe)")
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise GraphBuildError(f"from_source({source_name!r}) needs a WatermarkStrategy, "
                                  f"got {watermark_strategy!r}")
        if not isinstance(source_name, str) or not source_name:
            raise GraphBuildError(f"from_source needs a source name, got {source_name!r}")
        json = source.spec["json"] if isinstance(source, KafkaSource) else None
        if json is not None:
            gives, by = json.type_info, repr(json)
        elif isinstance(source, KafkaSource):
            gives, by = Types.STRING(), "SimpleStringSchema"
        elif isinstance(source, FileSource):
            gives = source.type_info
            by = ("StreamFormat.text_line_format()" if source.file_format is None
                  else repr(source.file_format))
        else:
            gives, by = Types.LONG(), "NumberSequenceSource"
        if type_info is not None and type_info != gives:
            raise GraphBuildError(f"from_source({source_name!r}): {by} gives {gives!r} "
                                  f"records, got type_info {type_info!r}")
        if isinstance(source, KafkaSource):
            node = SourceNode(name=source_name, inputs=[], output_type=Types.STRING(),
                              kind="kafka", payload=source.spec, bounded=source.bounded)
        elif isinstance(source, FileSource):
            node = SourceNode(name=source_name, inputs=[], output_type=gives, kind="dataframe",
                              payload=source.dataframe(self.spark), bounded=source.bounded)
        else:
            node = SourceNode(name=source_name, inputs=[], output_type=gives, kind="dataframe",
                              payload=self.spark.range(source.start, source.end + 1),
                              bounded=True)
        if not node.bounded and configured_runtime_mode(self._config) is RuntimeMode.BATCH:
            raise GraphBuildError(unbounded_in_batch(node))
        stream = self._stream(node)
        if json is not None:  # Kafka values read as JSON Rows (skipped or failing as set)
            stream = stream.flat_map(json.parser(), output_type=json.type_info).name(
                f"{source_name}: {json!r}")
        if watermark_strategy.kind != "none" or watermark_strategy.timestamp_assigner is not None:
            stream = stream.assign_timestamps_and_watermarks(watermark_strategy)
        return stream

    def cached_stream(self, df: DataFrame, type_info: TypeInformation) -> CachedDataStream:
        """A stream of the records of ``df``, a cached DataFrame of another stream
        (``DataStream.cache``).

        Args:
            df: the cached DataFrame (its columns are the stream's record type).
            type_info: the record type.

        Returns:
            The :class:`CachedDataStream`.
        """
        node = SourceNode(name="Cached Source", inputs=[], output_type=type_info,
                          kind="dataframe", payload=df, bounded=True)
        self._sources.append(node)
        return CachedDataStream(self, node, df)
