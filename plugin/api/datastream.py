"""DataStream API with PyFlink's names: DataStream, KeyedStream, ConnectedStreams and the
windowed streams (WindowedStream, AllWindowedStream, FLIP-380's PartitionWindowedStream).

Methods only record transformations and validate their arguments; nothing runs until
``execute``/``execute_and_collect``/``to_dataframe``. The calls of the windowed, connected and
keyed-aggregation streams are defined in base classes (``windowed``, ``connected``,
``keyed_aggregations``); the classes here give them their graph nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

from ..operators.count_windows import CountSlidingWindowAssigner, CountTumblingWindowAssigner
from ..operators.functions import (
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
from ..operators.partition import PartitionOp
from ..operators.windows import WindowAssigner
from ..plan.config import Configuration, RuntimeMode, configured_runtime_mode
from ..plan.graph import (
    ChainNode,
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
from ..state_store.serializers import GenericKeySerializer
from ..state_store.typeinfo import TypeInformation
from .arguments import check_output_type as _check_type
from .arguments import function_name as _fn_name
from .arguments import opens
from .async_stream import AsyncCalls
from .connected import BroadcastConnectedCalls, ConnectedCalls
from .hints import SchedulingHints
from .keyed_aggregations import KeyedAggregations
from .keyed_settings import KeyedStreamSettings
from .partitioning import KeyedPartitioning, Partitioning
from .sink_calls import DataStreamSink, SinkCalls
from .stream_extras import StreamExtras
from .watermarks import WatermarkStrategy
from .windowed import PartitionCalls, WindowCalls

if TYPE_CHECKING:
    from pyspark.sql import DataFrame



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


def _count_assigner(size: int, slide: int) -> Any:
    """PyFlink's ``count_window(size, slide)`` assigner: tumbling when ``slide`` is 0."""
    if isinstance(slide, bool) or not isinstance(slide, int) or slide < 0:
        raise GraphBuildError(f"count_window(size, slide): slide must be an int >= 0, got {slide!r}")
    if slide == 0:
        return CountTumblingWindowAssigner.of(size)
    return CountSlidingWindowAssigner.of(size, slide)


class DataStream(SchedulingHints, Partitioning, StreamExtras, SinkCalls, AsyncCalls):
    """A stream of records of one type. Built by ``env.from_collection``/``env.from_source``
    (and the other sources) and by ``DataStream`` methods; not constructed directly.
    """

    def __init__(self, env: StreamEnvironment, node: Transformation) -> None:
        self._env = env
        self._node = node

    def _stream_of(self, node: Transformation) -> DataStream:
        return DataStream(self._env, node)

    # -- naming -------------------------------------------------------------
    def uid(self, uid: str) -> DataStream:
        """Stable operator id; savepoint state is matched to operators by it.

        Args:
            uid: A non-empty string, unique in the job.

        Returns:
            This stream.

        Raises:
            GraphBuildError: ``uid`` is not a non-empty string.
        """
        self._node.uid = check_uid(uid)
        return self

    def name(self, name: str) -> DataStream:
        """Name the operator (shown in progress rows and Spark's UI).

        Args:
            name: The name.

        Returns:
            This stream.
        """
        self._node.name = str(name)
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        """Set the operator's parallelism (recorded on the operator, as in PyFlink).

        Args:
            parallelism: A positive int.

        Returns:
            This stream.

        Raises:
            GraphBuildError: ``parallelism`` is not a positive int.
        """
        if not isinstance(parallelism, int) or parallelism < 1:
            raise GraphBuildError(f"parallelism must be a positive int, got {parallelism!r}")
        self._node.parallelism = parallelism
        return self

    def get_name(self) -> str:
        """The operator's name.

        Returns:
            The name given by ``name()`` or derived from the function.
        """
        return self._node.name

    def get_type(self) -> Optional[TypeInformation]:
        """The declared record type, or None when records travel pickled.

        Returns:
            The stream's ``TypeInformation`` or None.
        """
        return self._node.output_type

    def get_execution_environment(self) -> Any:
        """The StreamExecutionEnvironment that created this stream.

        Returns:
            The environment.
        """
        return self._env

    # -- one-input transformations -----------------------------------------
    def _chain(self, stage: str, function: Any, output_type: Any, name: str, **kw: Any
              ) -> DataStream:
        node = ChainNode(name=name, inputs=[self._node], output_type=output_type,
                         stage=stage, function=function, **kw)
        return DataStream(self._env, node)

    def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """One output per record (PyFlink's ``map``).

        Args:
            func: A ``MapFunction`` or a callable taking a record.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The mapped stream.

        Raises:
            GraphBuildError: ``func`` is neither a MapFunction nor callable (or is the class
                itself), or ``output_type`` is not a ``TypeInformation``.
        """
        f = as_map_function(func)
        return self._chain("map", f, _check_type(output_type, "map"), _fn_name(func, "Map"))

    def flat_map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Zero or more outputs per record (PyFlink's ``flat_map``).

        Args:
            func: A ``FlatMapFunction`` or a callable returning an iterable (or a generator).
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The flat-mapped stream.

        Raises:
            GraphBuildError: ``func`` is neither a FlatMapFunction nor callable, or
                ``output_type`` is not a ``TypeInformation``.
        """
        f = as_flat_map_function(func)
        return self._chain("flat_map", f, _check_type(output_type, "flat_map"),
                           _fn_name(func, "FlatMap"))

    def filter(self, func: Any) -> DataStream:
        """Keep the records for which ``func`` is true.

        Args:
            func: A ``FilterFunction`` or a callable returning a bool.

        Returns:
            The filtered stream (same type).

        Raises:
            GraphBuildError: ``func`` is neither a FilterFunction nor callable.
        """
        f = as_filter_function(func)
        return self._chain("filter", f, self._node.output_type, _fn_name(func, "Filter"))

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a ``ProcessFunction`` over each record (non-keyed: no state or timers).

        Args:
            func: The ``ProcessFunction``.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``func`` is a keyed function (call ``key_by`` first) or not a
                ProcessFunction, or ``output_type`` is not a ``TypeInformation``.
        """
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
        """Give records event timestamps and emit watermarks (PyFlink's call of the same name).

        Args:
            watermark_strategy: The ``WatermarkStrategy`` (timestamp assigner, out-of-orderness,
                idleness).

        Returns:
            The stream with timestamps (same type).

        Raises:
            GraphBuildError: ``watermark_strategy`` is not a ``WatermarkStrategy``.
        """
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise GraphBuildError(
                "assign_timestamps_and_watermarks needs a WatermarkStrategy, "
                f"got {watermark_strategy!r}"
            )
        return self._chain("timestamps", watermark_strategy.timestamp_assigner,
                           self._node.output_type, "Timestamps/Watermarks",
                           watermark_strategy=watermark_strategy)

    def key_by(self, key_selector: Any, key_type: Optional[TypeInformation] = None) -> KeyedStream:
        """Partition the stream by key: keyed state, timers and keyed windows follow.

        Args:
            key_selector: A ``KeySelector`` or a callable taking a record.
            key_type: The key's ``TypeInformation``; it must have a deterministic serializer
                (keys are grouped and sorted by their bytes). None serializes keys generically.

        Returns:
            The keyed stream.

        Raises:
            GraphBuildError: ``key_selector`` is not callable, or ``key_type`` is not a
                ``TypeInformation`` or has no deterministic serializer.

        Example:
            >>> env = StreamExecutionEnvironment.get_execution_environment()
            >>> keyed = env.from_collection([("a", 1), ("b", 2)]).key_by(lambda r: r[0])
        """
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
        """This stream and ``streams`` as one stream.

        Args:
            *streams: DataStreams to merge in.

        Returns:
            The union; it keeps the record type when all inputs declare the same one, else
            records travel pickled.

        Raises:
            GraphBuildError: An argument is not a DataStream.
        """
        for s in streams:
            if not isinstance(s, DataStream):
                raise GraphBuildError(f"union() takes DataStreams, got {s!r}")
        types = {repr(self._node.output_type)} | {repr(s._node.output_type) for s in streams}
        out_type = self._node.output_type if len(types) == 1 else None
        node = UnionNode(name="Union", inputs=[self._node] + [s._node for s in streams],
                         output_type=out_type)
        return DataStream(self._env, node)

    def connect(self, ds: Union[DataStream, BroadcastStream]) -> Any:
        """Connect this stream with another for two-input processing.

        Args:
            ds: A DataStream, or a BroadcastStream (``other.broadcast(descriptor, ...)``).

        Returns:
            ``ConnectedStreams`` for a DataStream, ``BroadcastConnectedStream`` for a
            BroadcastStream.

        Raises:
            GraphBuildError: ``ds`` is neither.
        """
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
            return self._partitioned("broadcast", "Broadcast")
        checked: list[MapStateDescriptor] = []
        for d in descriptors:
            if not isinstance(d, MapStateDescriptor):
                raise GraphBuildError(
                    f"broadcast() of {self._node.describe()}: broadcast state descriptors must "
                    f"be MapStateDescriptors, got {type(d).__name__} {d!r:.80}")
            checked.append(d)
        names = [d.name for d in checked]
        if len(set(names)) != len(names):
            raise GraphBuildError(
                f"broadcast() of {self._node.describe()}: broadcast state names must be "
                f"distinct, got {names}")
        return BroadcastStream(self, tuple(checked))

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records the operator sent to ``output_tag`` (``ctx.output(tag, value)``).

        Args:
            output_tag: The ``OutputTag``; its type info, if any, types the stream.

        Returns:
            The side-output stream.

        Raises:
            GraphBuildError: ``output_tag`` is not an OutputTag.
        """
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"get_side_output needs an OutputTag, got {output_tag!r}")
        node = SideOutputNode(name=f"SideOutput({output_tag.tag_id})", inputs=[self._node],
                              output_type=getattr(output_tag, "type_info", None),
                              tag_id=output_tag.tag_id)
        return DataStream(self._env, node)

    # -- non-keyed windows ---------------------------------------------------------
    def window_all(self, window_assigner: Any) -> Any:
        """Cut the whole stream into windows (one task, as in Flink).

        Args:
            window_assigner: A ``WindowAssigner`` such as ``TumblingEventTimeWindows.of(...)``.

        Returns:
            An ``AllWindowedStream``.

        Raises:
            GraphBuildError: ``window_assigner`` is not a WindowAssigner.
        """
        return AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int = 0) -> Any:
        """``window_all`` over windows of ``size`` elements (every ``slide`` when > 0).

        Args:
            size: Elements per window.
            slide: Elements between window starts; 0 makes tumbling windows.

        Returns:
            An ``AllWindowedStream``.

        Raises:
            GraphBuildError: ``slide`` is not an int >= 0, or ``size`` is invalid.
        """
        return self.window_all(_count_assigner(size, slide))

    # -- full-window partition processing (FLIP-380) ------------------------------
    def full_window_partition(self) -> Any:
        """All records of each partition as one window (FLIP-380; BATCH only).

        On a KeyedStream each key is one partition.

        Returns:
            A ``PartitionWindowedStream``.

        Raises:
            GraphBuildError: The runtime mode is explicitly STREAMING (a job planned in
                STREAMING later, from AUTOMATIC, is refused when it runs).
        """
        return PartitionWindowedStream(self)


_opens = opens  # whether a map, flat_map or filter function can reach keyed state


class KeyedStream(KeyedStreamSettings, KeyedPartitioning, KeyedAggregations, DataStream):
    """A stream partitioned by key; keyed operators see per-key state and timers. Built by
    ``ds.key_by(selector)``; not constructed directly.
    """

    def __init__(self, env: StreamEnvironment, node: KeyByNode) -> None:
        super().__init__(env, node)
        self._key_node = node

    def _keyed(self, op: str, function: Any, output_type: Any, name: str) -> DataStream:
        node = KeyedNode(name=name, inputs=[self._key_node], output_type=output_type,
                         op=op, function=function)
        return DataStream(self._env, node)

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a ``KeyedProcessFunction`` with per-key state and timers.

        Args:
            func: The ``KeyedProcessFunction`` (a ``ProcessFunction`` is accepted too).
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``func`` is not a KeyedProcessFunction/ProcessFunction (or is a
                KeyedCoProcessFunction), or ``output_type`` is not a ``TypeInformation``.
        """
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
        """Rolling reduce per key (ReducingState; BATCH emits the final result per key).

        Args:
            func: A ``ReduceFunction`` or a callable ``(a, b) -> reduced``.

        Returns:
            The stream of running results (same type).

        Raises:
            GraphBuildError: ``func`` is neither a ReduceFunction nor callable.
        """
        f = as_reduce_function(func)
        return self._keyed("reduce", f, self._key_node.output_type, _fn_name(func, "Reduce"))

    # -- keyed windows -------------------------------------------------------------
    def window(self, window_assigner: Any) -> Any:
        """Cut the keyed stream into windows.

        Args:
            window_assigner: A ``WindowAssigner`` such as ``TumblingEventTimeWindows.of(...)``.

        Returns:
            A ``WindowedStream``.

        Raises:
            GraphBuildError: ``window_assigner`` is not a WindowAssigner.
        """
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> Any:
        """Windows of ``size`` elements per key, every ``slide`` elements when ``slide`` > 0
        (a window fires once it holds ``size`` elements).

        Args:
            size: Elements per window.
            slide: Elements between window starts; 0 makes tumbling windows.

        Returns:
            A ``WindowedStream``.

        Raises:
            GraphBuildError: ``slide`` is not an int >= 0, or ``size`` is invalid.
        """
        return self.window(_count_assigner(size, slide))


class ConnectedStreams(ConnectedCalls):
    """Two streams processed together. Built by ``a.connect(b)``; not constructed directly."""

    def __init__(self, env: StreamEnvironment, first: DataStream, second: DataStream):
        self._env = env
        self.first = first
        self.second = second

    def _connect(self, first: Any, second: Any) -> ConnectedStreams:
        return ConnectedStreams(self._env, first, second)

    def _is_keyed(self) -> bool:
        return isinstance(self.first, KeyedStream) and isinstance(self.second, KeyedStream)

    def _input_nodes(self) -> list[Transformation]:
        return [self.first._node, self.second._node]

    def _derive(self, node: Transformation) -> DataStream:
        return DataStream(self._env, node)


class BroadcastStream:
    """A stream whose records reach every parallel instance of the operator it is connected
    to, with the broadcast states it declares. Built by ``ds.broadcast(descriptor, ...)``;
    not constructed directly.
    """

    def __init__(self, stream: DataStream, descriptors: tuple[MapStateDescriptor, ...]) -> None:
        self._stream = stream
        self.broadcast_state_descriptors = descriptors

    def get_execution_environment(self) -> Any:
        """The environment of the broadcast stream.

        Returns:
            The StreamExecutionEnvironment.
        """
        return self._stream.get_execution_environment()

    def get_type(self) -> Optional[TypeInformation]:
        """The broadcast records' type.

        Returns:
            The ``TypeInformation``, or None when records travel pickled.
        """
        return self._stream.get_type()


class BroadcastConnectedStream(BroadcastConnectedCalls):
    """A stream connected with a BroadcastStream. Built by ``stream.connect(broadcast_stream)``;
    not constructed directly.
    """

    def __init__(self, env: StreamEnvironment, non_broadcast: DataStream,
                 broadcast: BroadcastStream) -> None:
        self._env = env
        self.non_broadcast_stream = non_broadcast
        self.broadcast_stream = broadcast

    def _is_keyed(self) -> bool:
        return isinstance(self.non_broadcast_stream, KeyedStream)

    def _input_nodes(self) -> list[Transformation]:
        main = self.non_broadcast_stream
        return [main._key_node if isinstance(main, KeyedStream) else main._node,
                self.broadcast_stream._stream._node]

    def _derive(self, node: Transformation) -> DataStream:
        return DataStream(self._env, node)


# -- windowed streams: keyed.window(...), window_all(...) -------------------------------


class _Windowed(WindowCalls):
    """Gives the window calls the keyed stream's key node and wraps their nodes."""

    def _input_node(self) -> KeyByNode:
        return self._keyed_stream._key_node

    def _derive(self, node: KeyedNode) -> DataStream:
        return DataStream(self._keyed_stream._env, node)


class WindowedStream(_Windowed):
    """A keyed stream cut into windows (PyFlink's ``WindowedStream``). Built by
    ``keyed.window(assigner)`` or ``keyed.count_window(...)``; not constructed directly.
    """


def _all_key(value: Any) -> int:
    """``window_all``'s key selector: every record has the one key 0."""
    return 0


class AllWindowedStream(_Windowed):
    """A non-keyed stream cut into windows (PyFlink's ``AllWindowedStream``): all records share
    one key, so the windows run in one task (one Spark partition; in STREAMING, one key
    group), as in Flink. Built by ``ds.window_all(assigner)`` or
    ``ds.count_window_all(...)``; not constructed directly.
    """

    _keyed = False

    def __init__(self, data_stream: DataStream, window_assigner: WindowAssigner) -> None:
        super().__init__(data_stream.key_by(_all_key), window_assigner)


# -- FLIP-380 full-window partition processing ----------------------------------------


class PartitionWindowedStream(PartitionCalls):
    """All records of each partition (or key) as one window (FLIP-380). Built by
    ``ds.full_window_partition()``; not constructed directly.
    """

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
