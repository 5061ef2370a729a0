"""DataStream API with PyFlink's names: DataStream, KeyedStream, ConnectedStreams and the
windowed streams (WindowedStream, AllWindowedStream, FLIP-380's PartitionWindowedStream).

Methods only record transformations and validate their arguments; nothing runs
until ``execute``/``execute_and_collect``/``to_dataframe``. A keyed window is recorded as
``KeyedNode(op="window", function=WindowSpec)`` and runs as any keyed operator; a
full-window partition is a ``FullPartitionNode``, BATCH only: when the runtime mode is
explicitly STREAMING the API call fails at once, otherwise (mode set later, AUTOMATIC) the
environment refuses the job when it is planned in STREAMING. The windowed streams live here
with the streams they come from, so neither needs the other's private members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

from ..operators import aggregations as _aggs
from ..operators.broadcast_functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from ..operators.count_windows import CountSlidingWindowAssigner, CountTumblingWindowAssigner
from ..operators.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    as_filter_function,
    as_flat_map_function,
    as_key_selector,
    as_map_function,
    as_reduce_function,
)
from ..operators.partition import MapPartitionFunction, Order, PartitionOp
from ..operators.window_functions import as_process_window_function
from ..operators.windows import ProcessWindowFunction, Trigger, WindowAssigner, WindowSpec
from ..plan.config import Configuration, RuntimeMode, configured_runtime_mode
from ..plan.graph import (
    BroadcastNode,
    ChainNode,
    CoChainNode,
    CoKeyedNode,
    FullPartitionNode,
    KeyByNode,
    KeyedNode,
    SideOutputNode,
    SinkNode,
    Transformation,
    UnionNode,
    check_uid,
    full_window_streaming_error,
)
from ..results import CloseableIterator
from ..state_store.descriptors import MapStateDescriptor
from ..state_store.exceptions import GraphBuildError
from ..state_store.functions import AggregateFunction, Function
from ..state_store.serializers import GenericKeySerializer
from ..state_store.typeinfo import TypeInformation
from .hints import SchedulingHints
from .partitioning import KeyedPartitioning, Partitioning
from .stream_extras import StreamExtras
from .watermarks import WatermarkStrategy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .connectors import KafkaSink


__all__ = [
    "DataStream", "KeyedStream", "ConnectedStreams", "DataStreamSink", "WindowedStream",
    "AllWindowedStream", "PartitionWindowedStream", "BroadcastStream", "BroadcastConnectedStream",
]


class StreamEnvironment(Protocol):
    """What a stream needs from the StreamExecutionEnvironment that created it (typed
    structurally, so this module does not import the environment, which imports it)."""

    def get_config(self) -> Configuration: ...

    def add_sink_node(self, node: SinkNode) -> None: ...

    def dataframe_of(self, node: Transformation) -> DataFrame: ...

    def collect_node(self, node: Transformation, job_name: Optional[str]) -> CloseableIterator: ...


def _check_type(output_type: Any, where: str) -> Optional[TypeInformation]:
    if output_type is None or isinstance(output_type, TypeInformation):
        return output_type
    raise GraphBuildError(
        f"output_type of {where} must be a TypeInformation such as Types.TUPLE([...]), "
        f"got {output_type!r}"
    )


def _count_assigner(size: int, slide: int) -> Any:
    """PyFlink's ``count_window(size, slide)`` assigner: tumbling when ``slide`` is 0."""
    if isinstance(slide, bool) or not isinstance(slide, int) or slide < 0:
        raise GraphBuildError(f"count_window(size, slide): slide must be an int >= 0, got {slide!r}")
    if slide == 0:
        return CountTumblingWindowAssigner.of(size)
    return CountSlidingWindowAssigner.of(size, slide)


def _fn_name(fn: Any, default: str) -> str:
    if fn is None:
        return default
    if isinstance(fn, type):
        return fn.__name__
    name = getattr(fn, "__name__", None)
    if name and name != "<lambda>":
        return name
    cls = type(fn).__name__
    return cls if cls not in ("function", "builtin_function_or_method") else default


class DataStream(SchedulingHints, Partitioning, StreamExtras):
    """A stream of records of one type."""

    def __init__(self, env: StreamEnvironment, node: Transformation) -> None:
        self._env = env
        self._node = node

    def _stream_of(self, node: Transformation) -> DataStream:
        return DataStream(self._env, node)

    # -- naming -------------------------------------------------------------
    def uid(self, uid: str) -> DataStream:
        """Stable operator id; savepoint state is matched to operators by it."""
        self._node.uid = check_uid(uid)
        return self

    def name(self, name: str) -> DataStream:
        self._node.name = str(name)
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise GraphBuildError(f"parallelism must be a positive int, got {parallelism!r}")
        self._node.parallelism = parallelism
        return self

    def get_name(self) -> str:
        return self._node.name

    def get_type(self) -> Optional[TypeInformation]:
        """The declared record type, or None when records travel pickled."""
        return self._node.output_type

    def get_execution_environment(self) -> Any:
        """The StreamExecutionEnvironment that created this stream."""
        return self._env

    # -- one-input transformations -----------------------------------------
    def _chain(self, stage: str, function: Any, output_type: Any, name: str, **kw: Any) -> DataStream:
        node = ChainNode(name=name, inputs=[self._node], output_type=output_type,
                         stage=stage, function=function, **kw)
        return DataStream(self._env, node)

    def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        f = as_map_function(func)
        return self._chain("map", f, _check_type(output_type, "map"), _fn_name(func, "Map"))

    def flat_map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        f = as_flat_map_function(func)
        return self._chain("flat_map", f, _check_type(output_type, "flat_map"),
                           _fn_name(func, "FlatMap"))

    def filter(self, func: Any) -> DataStream:
        f = as_filter_function(func)
        return self._chain("filter", f, self._node.output_type, _fn_name(func, "Filter"))

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        name = _fn_name(func, "Process")
        if isinstance(func, (KeyedProcessFunction, KeyedCoProcessFunction)):
            raise GraphBuildError(
                f"operator '{name}': a {type(func).__bases__[0].__name__} needs a keyed stream; "
                "call key_by(...) before process(...)"
            )
        if not isinstance(func, ProcessFunction):
            raise GraphBuildError(
                f"operator '{name}': process() needs a ProcessFunction, got {func!r}"
            )
        return self._chain("process", func, _check_type(output_type, "process"), name)

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise GraphBuildError(
                "assign_timestamps_and_watermarks needs a WatermarkStrategy, "
                f"got {watermark_strategy!r}"
            )
        return self._chain("timestamps", watermark_strategy.timestamp_assigner,
                           self._node.output_type, "Timestamps/Watermarks",
                           watermark_strategy=watermark_strategy)

    def key_by(self, key_selector: Any, key_type: Optional[TypeInformation] = None) -> KeyedStream:
        selector = as_key_selector(key_selector)
        name = f"KeyBy({_fn_name(key_selector, 'key_selector')})"
        if key_type is not None:
            _check_type(key_type, "key_by")
            if not key_type.is_deterministic():
                raise GraphBuildError(
                    f"operator '{name}': key type {key_type!r} has no deterministic serializer; "
                    "keys are grouped and sorted by their bytes, so use a basic type, a "
                    "TUPLE/ROW of basic types, or omit key_type"
                )
            serializer = key_type.key_serializer()
        else:
            serializer = GenericKeySerializer()
        node = KeyByNode(name=name, inputs=[self._node], output_type=self._node.output_type,
                         key_selector=selector, key_type=key_type, key_serializer=serializer)
        return KeyedStream(self._env, node)

    def union(self, *streams: DataStream) -> DataStream:
        for s in streams:
            if not isinstance(s, DataStream):
                raise GraphBuildError(f"union() takes DataStreams, got {s!r}")
        types = {repr(self._node.output_type)} | {repr(s._node.output_type) for s in streams}
        out_type = self._node.output_type if len(types) == 1 else None
        node = UnionNode(name="Union", inputs=[self._node] + [s._node for s in streams],
                         output_type=out_type)
        return DataStream(self._env, node)

    def connect(self, ds: Union[DataStream, BroadcastStream]) -> Any:
        """ConnectedStreams with another DataStream; a BroadcastConnectedStream with a
        BroadcastStream (``ds.broadcast(descriptor, ...)``)."""
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self._env, self, ds)
        if not isinstance(ds, DataStream):
            raise GraphBuildError(f"connect() takes a DataStream or a BroadcastStream, got {ds!r}")
        return ConnectedStreams(self._env, self, ds)

    def broadcast(self, broadcast_state_descriptor: Optional[MapStateDescriptor] = None,
                  *other_broadcast_state_descriptors: MapStateDescriptor
                  ) -> Union[DataStream, BroadcastStream]:
        """Every record goes to every parallel instance of the next operator.

        Args:
            broadcast_state_descriptor: none for plain broadcast partitioning; else the first
                MapStateDescriptor of the broadcast state pattern.
            *other_broadcast_state_descriptors: more broadcast states.

        Returns:
            Without descriptors, a DataStream whose next operator sees every record in each
            of its instances; with them, a BroadcastStream to ``connect`` to, whose operator
            keeps the broadcast states they declare.

        Raises:
            GraphBuildError: a descriptor is not a MapStateDescriptor, or two share a name.
        """
        descriptors = [broadcast_state_descriptor, *other_broadcast_state_descriptors]
        if broadcast_state_descriptor is None:
            if other_broadcast_state_descriptors:
                raise GraphBuildError(
                    f"broadcast() of {self._node.describe()}: the first broadcast state "
                    "descriptor is None but others are given")
            if isinstance(self, KeyedPartitioning):
                raise self._refuse("broadcast()")
            return self._partitioned("broadcast", "Broadcast")  # type: ignore[no-any-return]
        for d in descriptors:
            if not isinstance(d, MapStateDescriptor):
                raise GraphBuildError(
                    f"broadcast() of {self._node.describe()}: broadcast state descriptors must "
                    f"be MapStateDescriptors, got {type(d).__name__} {d!r:.80}")
        names = [d.name for d in descriptors]  # type: ignore[union-attr]
        if len(set(names)) != len(names):
            raise GraphBuildError(
                f"broadcast() of {self._node.describe()}: broadcast state names must be "
                f"distinct, got {names}")
        return BroadcastStream(self, tuple(descriptors))

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"get_side_output needs an OutputTag, got {output_tag!r}")
        node = SideOutputNode(name=f"SideOutput({output_tag.tag_id})", inputs=[self._node],
                              output_type=getattr(output_tag, "type_info", None),
                              tag_id=output_tag.tag_id)
        return DataStream(self._env, node)

    # -- sinks ----------------------------------------------------------------
    def print(self, sink_identifier: Optional[str] = None) -> DataStreamSink:
        node = SinkNode(name="Print", inputs=[self._node], kind="print",
                        options={"identifier": sink_identifier})
        self._env.add_sink_node(node)
        return DataStreamSink(node)

    def sink_to_delta(self, path: str, mode: str = "append") -> DataStreamSink:
        """Write the stream to a Delta table at ``path`` when ``env.execute()`` runs."""
        if mode not in ("append", "overwrite"):
            raise GraphBuildError(f"sink_to_delta mode must be 'append' or 'overwrite', got {mode!r}")
        if not isinstance(path, str) or not path:
            raise GraphBuildError(f"sink_to_delta needs a table path, got {path!r}")
        self._require_typed("sink_to_delta()")
        node = SinkNode(name=f"DeltaSink({path})", inputs=[self._node], kind="delta",
                        options={"path": path, "mode": mode})
        self._env.add_sink_node(node)
        return DataStreamSink(node)

    def sink_to(self, sink: KafkaSink) -> DataStreamSink:
        """Write the stream to a connector sink (a :class:`KafkaSink`) when the job runs.

        Args:
            sink: The KafkaSink; its SimpleStringSchema needs a ``Types.STRING()`` stream.

        Returns:
            The DataStreamSink.

        Raises:
            UnsupportedConnectorError: For a sink other than a KafkaSink.
            GraphBuildError: When the stream is not declared ``Types.STRING()``.
        """
        from .connectors import KafkaSink, UnsupportedConnectorError

        if not isinstance(sink, KafkaSink):
            raise UnsupportedConnectorError(
                f"sink_to: {type(sink).__name__} is not supported; the supported sink is "
                "KafkaSink (or sink_to_delta, print)")
        t = self._node.output_type
        if getattr(t, "type_name", None) != "STRING":
            raise GraphBuildError(
                f"sink_to({sink!r}): SimpleStringSchema writes str records, but "
                f"{self._node.describe()} has {'no output_type' if t is None else repr(t)}; "
                "pass output_type=Types.STRING() to the operator that produces it")
        node = SinkNode(name=f"KafkaSink({sink.spec['topic']})", inputs=[self._node],
                        kind="kafka", options=dict(sink.spec))
        self._env.add_sink_node(node)
        return DataStreamSink(node)

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
        """This stream as a Spark DataFrame (streaming in STREAMING mode)."""
        self._require_typed("to_dataframe()")
        return self._env.dataframe_of(self._node)

    def execute_and_collect(self, job_execution_name: Optional[str] = None,
                            limit: Optional[int] = None) -> Any:
        """Run the job and iterate its records (a list when ``limit`` is given)."""
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

    # -- non-keyed windows ---------------------------------------------------------
    def window_all(self, window_assigner: Any) -> Any:
        """Cut the whole stream into windows (one task, as in Flink); an AllWindowedStream."""
        return AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int = 0) -> Any:
        """``window_all`` over windows of ``size`` elements (every ``slide`` when > 0)."""
        return self.window_all(_count_assigner(size, slide))

    # -- full-window partition processing (FLIP-380) ------------------------------
    def full_window_partition(self) -> Any:
        """All records of each partition as one window (FLIP-380; BATCH only).

        On a KeyedStream each key is one partition. Returns a PartitionWindowedStream.
        """
        return PartitionWindowedStream(self)


class DataStreamSink(SchedulingHints):
    """Handle on a declared sink (``uid``/``name`` as in PyFlink)."""

    def __init__(self, node: SinkNode) -> None:
        self._node = node

    def uid(self, uid: str) -> DataStreamSink:
        self._node.uid = check_uid(uid)
        return self

    def name(self, name: str) -> DataStreamSink:
        self._node.name = str(name)
        return self


def _opens(function: Any) -> bool:
    """Whether ``function`` (a Function) defines its own ``open(runtime_context)``: the
    only way a map, flat_map or filter function reaches keyed state."""
    return type(function).open is not Function.open


class KeyedStream(KeyedPartitioning, DataStream):
    """A stream partitioned by key; keyed operators see per-key state and timers."""

    def __init__(self, env: StreamEnvironment, node: KeyByNode) -> None:
        super().__init__(env, node)
        self._key_node = node

    def _keyed(self, op: str, function: Any, output_type: Any, name: str) -> DataStream:
        node = KeyedNode(name=name, inputs=[self._key_node], output_type=output_type,
                         op=op, function=function)
        return DataStream(self._env, node)

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        name = _fn_name(func, "KeyedProcess")
        if isinstance(func, KeyedCoProcessFunction) or not isinstance(
            func, (KeyedProcessFunction, ProcessFunction)
        ):
            raise GraphBuildError(
                f"operator '{name}': KeyedStream.process needs a KeyedProcessFunction, got {func!r}"
            )
        return self._keyed("process", func, _check_type(output_type, "process"), name)

    # A map, flat_map or filter function object after key_by runs keyed, as in Flink: the
    # runtime context its open() receives reads the current key's state. Only a function
    # with its own open() can reach that context; every other one (lambdas included) stays
    # a stateless step, which needs no shuffle or sort.
    def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        f = as_map_function(func)
        if not _opens(f):
            return super().map(func, output_type)
        return self._keyed("process", f, _check_type(output_type, "map"), _fn_name(func, "Map"))

    def flat_map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        f = as_flat_map_function(func)
        if not _opens(f):
            return super().flat_map(func, output_type)
        return self._keyed("process", f, _check_type(output_type, "flat_map"),
                           _fn_name(func, "FlatMap"))

    def filter(self, func: Any) -> DataStream:
        f = as_filter_function(func)
        if not _opens(f):
            return super().filter(func)
        return self._keyed("process", f, self._key_node.output_type, _fn_name(func, "Filter"))

    def reduce(self, func: Any) -> DataStream:
        f = as_reduce_function(func)
        return self._keyed("reduce", f, self._key_node.output_type, _fn_name(func, "Reduce"))

    def _agg(self, kind: str, field: Union[int, str]) -> DataStream:
        if not isinstance(field, (int, str)) or isinstance(field, bool):
            raise GraphBuildError(f"{kind}() needs a field position (int) or name (str), got {field!r}")
        t = self._key_node.output_type
        if isinstance(field, str) and t is not None and hasattr(t, "get_field_names"):
            names = list(t.get_field_names())
            if field not in names:
                raise GraphBuildError(f"{kind}('{field}'): no such field; the stream's fields are {names}")
        f = getattr(_aggs, kind)(field)
        return self._keyed("reduce", f, t, f"{kind.capitalize()}({field})")

    def sum(self, position_to_sum: Union[int, str] = 0) -> DataStream:
        return self._agg("sum", position_to_sum)

    def min(self, position_to_min: Union[int, str] = 0) -> DataStream:
        return self._agg("min", position_to_min)

    def max(self, position_to_max: Union[int, str] = 0) -> DataStream:
        return self._agg("max", position_to_max)

    def min_by(self, position_to_min_by: Union[int, str] = 0) -> DataStream:
        return self._agg("min_by", position_to_min_by)

    def max_by(self, position_to_max_by: Union[int, str] = 0) -> DataStream:
        return self._agg("max_by", position_to_max_by)

    # -- keyed windows -------------------------------------------------------------
    def window(self, window_assigner: Any) -> Any:
        """Cut the keyed stream into windows; returns a WindowedStream."""
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> Any:
        """Windows of ``size`` elements per key, every ``slide`` elements when ``slide`` > 0
        (a window fires once it holds ``size`` elements)."""
        return self.window(_count_assigner(size, slide))


class ConnectedStreams:
    """Two streams processed together (``a.connect(b)``)."""

    def __init__(self, env: StreamEnvironment, first: DataStream, second: DataStream):
        self._env = env
        self.first = first
        self.second = second

    def key_by(self, key_selector1: Any, key_selector2: Any,
               key_type: Optional[TypeInformation] = None) -> ConnectedStreams:
        return ConnectedStreams(self._env, self.first.key_by(key_selector1, key_type),
                                self.second.key_by(key_selector2, key_type))

    def _is_keyed(self) -> bool:
        return isinstance(self.first, KeyedStream) and isinstance(self.second, KeyedStream)

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        name = _fn_name(func, "CoProcess")
        out_t = _check_type(output_type, "process")
        if isinstance(func, KeyedCoProcessFunction):
            if not self._is_keyed():
                raise GraphBuildError(
                    f"operator '{name}': a KeyedCoProcessFunction needs keyed inputs; "
                    "call connect(...).key_by(key1, key2) first"
                )
            keyed_node = CoKeyedNode(name=name, inputs=[self.first._node, self.second._node],
                                     output_type=out_t, function=func)
            return DataStream(self._env, keyed_node)
        if isinstance(func, CoProcessFunction):
            node = CoChainNode(name=name, inputs=[self.first._node, self.second._node],
                               output_type=out_t, stage="co_process", function=func)
            return DataStream(self._env, node)
        raise GraphBuildError(
            f"operator '{name}': ConnectedStreams.process needs a KeyedCoProcessFunction or "
            f"CoProcessFunction, got {func!r}"
        )

    def map(self, func: CoMapFunction, output_type: Optional[TypeInformation] = None) -> DataStream:
        if not isinstance(func, CoMapFunction):
            raise GraphBuildError(f"ConnectedStreams.map needs a CoMapFunction, got {func!r}")
        node = CoChainNode(name=_fn_name(func, "CoMap"), inputs=[self.first._node, self.second._node],
                           output_type=_check_type(output_type, "map"), stage="co_map", function=func)
        return DataStream(self._env, node)

    def flat_map(self, func: CoFlatMapFunction,
                 output_type: Optional[TypeInformation] = None) -> DataStream:
        if not isinstance(func, CoFlatMapFunction):
            raise GraphBuildError(f"ConnectedStreams.flat_map needs a CoFlatMapFunction, got {func!r}")
        node = CoChainNode(name=_fn_name(func, "CoFlatMap"),
                           inputs=[self.first._node, self.second._node],
                           output_type=_check_type(output_type, "flat_map"), stage="co_flat_map",
                           function=func)
        return DataStream(self._env, node)


class BroadcastStream:
    """A stream whose records reach every parallel instance of the operator it is connected
    to, with the broadcast states it declares (``ds.broadcast(descriptor, ...)``)."""

    def __init__(self, stream: DataStream, descriptors: tuple[MapStateDescriptor, ...]) -> None:
        self._stream = stream
        self.broadcast_state_descriptors = descriptors

    def get_execution_environment(self) -> Any:
        return self._stream.get_execution_environment()

    def get_type(self) -> Optional[TypeInformation]:
        return self._stream.get_type()


class BroadcastConnectedStream:
    """A stream connected with a BroadcastStream (``stream.connect(broadcast_stream)``)."""

    def __init__(self, env: StreamEnvironment, non_broadcast: DataStream,
                 broadcast: BroadcastStream) -> None:
        self._env = env
        self.non_broadcast_stream = non_broadcast
        self.broadcast_stream = broadcast

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a KeyedBroadcastProcessFunction (keyed stream) or a BroadcastProcessFunction
        (non-keyed stream) over both inputs."""
        keyed = isinstance(self.non_broadcast_stream, KeyedStream)
        name = _fn_name(func, "BroadcastProcess")
        expected = KeyedBroadcastProcessFunction if keyed else BroadcastProcessFunction
        if not isinstance(func, expected):
            other = "" if keyed else "; a KeyedBroadcastProcessFunction needs key_by(...) first"
            raise GraphBuildError(
                f"operator '{name}': process() on a {'keyed' if keyed else 'non-keyed'} stream "
                f"connected with a broadcast stream needs a {expected.__name__}, got "
                f"{type(func).__name__} {func!r:.80}{other}")
        main = self.non_broadcast_stream
        inputs = [main._key_node if isinstance(main, KeyedStream) else main._node,
                  self.broadcast_stream._stream._node]
        node = BroadcastNode(name=name, inputs=inputs, output_type=_check_type(output_type,
                                                                               "process"),
                             function=func,
                             descriptors=self.broadcast_stream.broadcast_state_descriptors,
                             keyed=keyed)
        return DataStream(self._env, node)


# -- windowed streams: keyed.window(...), window_all(...) -------------------------------


class _Windowed:
    """What keyed and non-keyed windowed streams share: trigger, lateness, functions."""

    #: False for ``window_all``: functions take no key (AllWindowFunction, ...)
    _keyed = True

    def __init__(self, keyed_stream: KeyedStream, window_assigner: WindowAssigner) -> None:
        if not isinstance(window_assigner, WindowAssigner):
            raise GraphBuildError(
                f"window() needs a WindowAssigner such as TumblingEventTimeWindows.of(...), "
                f"got {type(window_assigner).__name__} {window_assigner!r:.80}"
            )
        self._keyed_stream = keyed_stream
        self._assigner = window_assigner
        self._trigger: Optional[Trigger] = None
        self._allowed_lateness = 0
        self._late_tag: Optional[OutputTag] = None

    def get_execution_environment(self) -> Any:
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> Any:
        return self._keyed_stream.get_type()

    def trigger(self, trigger: Trigger) -> Any:
        """Replace the assigner's default trigger."""
        if not isinstance(trigger, Trigger):
            raise GraphBuildError(f"trigger() needs a Trigger, got {trigger!r:.80}")
        if self._assigner.is_merging() and not trigger.can_merge():
            raise GraphBuildError(
                f"trigger {trigger!r} cannot merge windows, but {self._assigner!r} merges them"
            )
        self._trigger = trigger
        return self

    def allowed_lateness(self, time_ms: Any) -> Any:
        """Keep windows ``time_ms`` (int ms, Time or Duration) past their end for late data."""
        from ..operators.windows import to_window_millis

        millis = to_window_millis(time_ms, "allowed_lateness")
        if millis < 0:
            raise GraphBuildError(f"allowed_lateness must be >= 0 ms, got {millis}")
        if millis and not self._assigner.is_event_time():
            raise GraphBuildError(
                f"allowed_lateness applies to event-time windows only; {self._assigner!r} "
                f"is not event time"
            )
        self._allowed_lateness = millis
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Any:
        """Send dropped late elements to ``output_tag`` (read it with ``get_side_output``)."""
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"side_output_late_data() needs an OutputTag, got {output_tag!r}")
        self._late_tag = output_tag
        return self

    def _build(self, kind: str, function: Any, name: str, output_type: Any,
               window_function: Any = None, state_type: Any = None) -> DataStream:
        trigger = self._trigger
        if trigger is None:  # PyFlink's WindowAssigner.get_default_trigger(env)
            trigger = self._assigner.get_default_trigger(self._keyed_stream._env)
        spec = WindowSpec(self._assigner, kind, function, trigger=trigger,
                          allowed_lateness=self._allowed_lateness, late_output_tag=self._late_tag,
                          window_function=window_function, state_type=state_type)
        key_node = self._keyed_stream._key_node
        node = KeyedNode(name=name, inputs=[key_node], output_type=output_type, op="window",
                         function=spec)
        return DataStream(self._keyed_stream._env, node)

    def _window_function(self, function: Any, what: str) -> Optional[ProcessWindowFunction]:
        if function is None:
            return None
        return as_process_window_function(function, what, keyed=self._keyed)

    def reduce(self, reduce_function: Any, window_function: Any = None,
               output_type: Optional[TypeInformation] = None) -> DataStream:
        """Incrementally reduce each window (ReducingState); optional window_function after."""
        in_type = self._keyed_stream.get_type()
        out_t = _check_type(output_type, "reduce") if output_type is not None else (
            in_type if window_function is None else None)
        return self._build("reduce", reduce_function, _fn_name(reduce_function, "WindowReduce"),
                           out_t, self._window_function(window_function, "reduce(window_function)"))

    def aggregate(self, aggregate_function: AggregateFunction, window_function: Any = None,
                  accumulator_type: Optional[TypeInformation] = None,
                  output_type: Optional[TypeInformation] = None) -> DataStream:
        """Incrementally aggregate each window (AggregatingState); optional window_function."""
        acc_t = _check_type(accumulator_type, "aggregate accumulator_type")
        return self._build("aggregate", aggregate_function,
                           _fn_name(aggregate_function, "WindowAggregate"),
                           _check_type(output_type, "aggregate"),
                           self._window_function(window_function, "aggregate(window_function)"),
                           acc_t)

    def apply(self, window_function: Any,
              output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a (All)WindowFunction over all elements of each fired window (ListState)."""
        what = "apply()" if self._keyed else "window_all(...).apply()"
        function = self._window_function(window_function, what)
        return self._build("process", function, _fn_name(window_function, "WindowApply"),
                           _check_type(output_type, "apply"))

    def process(self, process_window_function: Any,
                output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a Process(All)WindowFunction over all elements of each fired window (ListState)."""
        what = "process()" if self._keyed else "window_all(...).process()"
        function = self._window_function(process_window_function, what)
        return self._build("process", function, _fn_name(process_window_function, "WindowProcess"),
                           _check_type(output_type, "process"))


class WindowedStream(_Windowed):
    """A keyed stream cut into windows (PyFlink's ``WindowedStream``)."""


def _all_key(value: Any) -> int:
    """``window_all``'s key selector: every record has the one key 0."""
    return 0


class AllWindowedStream(_Windowed):
    """A non-keyed stream cut into windows (PyFlink's ``AllWindowedStream``,
    ``ds.window_all(assigner)``): all records share one key, so the windows run in one
    task (one Spark partition; in STREAMING, one key group), as in Flink."""

    _keyed = False

    def __init__(self, data_stream: DataStream, window_assigner: WindowAssigner) -> None:
        super().__init__(data_stream.key_by(_all_key), window_assigner)


# -- FLIP-380 full-window partition processing ----------------------------------------


class PartitionWindowedStream:
    """All records of each partition (or key) as one window (FLIP-380)."""

    def __init__(self, stream: DataStream) -> None:
        self._stream = stream
        self._keyed = isinstance(stream, KeyedStream)
        env = stream.get_execution_environment()
        config = env.get_config()
        if config.contains_key("execution.runtime-mode") and \
                configured_runtime_mode(config) is RuntimeMode.STREAMING:
            raise full_window_streaming_error("full_window_partition()")

    def _build(self, op: PartitionOp, name: str, output_type: Any) -> DataStream:
        node_in = self._stream._node
        if self._keyed:
            assert isinstance(node_in, KeyByNode)
        node = FullPartitionNode(name=name, inputs=[node_in], output_type=output_type,
                                 partition_op=op, keyed=self._keyed)
        return DataStream(self._stream._env, node)

    def map_partition(self, map_partition_func: Any,
                      output_type: Optional[TypeInformation] = None) -> DataStream:
        """Call the function once per partition with an iterator over its records."""
        op = PartitionOp("map_partition", map_partition_func)
        default = "MapPartition"
        name = _fn_name(map_partition_func, default) if isinstance(
            map_partition_func, MapPartitionFunction) else default
        return self._build(op, name, _check_type(output_type, "map_partition"))

    def sort_partition(self, field: Any, order: Order = Order.ASCENDING,
                       output_type: Optional[TypeInformation] = None) -> DataStream:
        """Sort each partition by ``field`` (position, field name or key selector)."""
        t = self._stream.get_type()
        if isinstance(field, str) and t is not None and hasattr(t, "get_field_names"):
            names = list(t.get_field_names())
            if field not in names:
                raise GraphBuildError(
                    f"sort_partition({field!r}): no such field; the stream's fields are {names}"
                )
        if isinstance(field, int) and not isinstance(field, bool) and t is not None \
                and hasattr(t, "get_field_types") and field >= len(t.get_field_types()):
            raise GraphBuildError(
                f"sort_partition({field}): position out of range for {len(t.get_field_types())} "
                f"fields"
            )
        op = PartitionOp("sort_partition", field=field, order=order)
        out_t = _check_type(output_type, "sort_partition") if output_type is not None else t
        return self._build(op, f"SortPartition({_field_name(field)}, {order.name})", out_t)

    def aggregate(self, aggregate_function: AggregateFunction,
                  output_type: Optional[TypeInformation] = None) -> DataStream:
        """One AggregateFunction result per non-empty partition."""
        op = PartitionOp("aggregate", aggregate_function)
        return self._build(op, _fn_name(aggregate_function, "PartitionAggregate"),
                           _check_type(output_type, "aggregate"))

    def reduce(self, reduce_function: Any,
               output_type: Optional[TypeInformation] = None) -> DataStream:
        """The records of each non-empty partition folded into one."""
        op = PartitionOp("reduce", reduce_function)
        out_t = _check_type(output_type, "reduce") if output_type is not None \
            else self._stream.get_type()
        return self._build(op, _fn_name(reduce_function, "PartitionReduce"), out_t)


def _field_name(field: Any) -> str:
    if isinstance(field, (int, str)):
        return repr(field)
    return _fn_name(field, "key_selector")
