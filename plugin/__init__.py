"""pyspark-datastream: Flink-style DataStream programs on Apache Spark.

Everything a PyFlink DataStream program imports is importable from here, so a
program ports by changing its imports::

    from pyspark_datastream import (StreamExecutionEnvironment, RuntimeExecutionMode, Types,
        WatermarkStrategy, KeyedProcessFunction, ValueStateDescriptor, Duration)
"""

from __future__ import annotations

from .config import Configuration, RuntimeExecutionMode
from .datastream import CloseableIterator, ConnectedStreams, DataStream, DataStreamSink, KeyedStream
from .environment import JobExecutionResult, StreamExecutionEnvironment
from .job_client import JobClient, JobStatus
from .operators.context import RuntimeContext
from .operators.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessFunction,
    ReduceFunction,
    TimeDomain,
    TimestampAssigner,
)
from .operators.harness import (
    KeyedCoProcessFunctionTestHarness,
    KeyedOperatorTestHarness,
    KeyedProcessFunctionTestHarness,
)
from .state_backends import EmbeddedRocksDBStateBackend, HashMapStateBackend, StateBackend
from .state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from .state_store.errors import (
    CheckpointMismatchError,
    CheckpointRootError,
    ConfigurationError,
    DataStreamError,
    GraphBuildError,
    IncompatibleStateError,
    JobExecutionError,
    KeyGroupError,
    OutputTypeError,
    ProcessingTimeError,
    SavepointConflictError,
    SavepointError,
    SavepointFormatError,
    SavepointNotFoundError,
    SerializationError,
    SourceSchemaError,
    StateBackendError,
    StateDescriptorError,
    StateError,
    UnclaimedStateError,
    UserFunctionError,
)
from .state_store.namespaces import TimeWindow
from .state_store.row import Row
from .state_store.serializers import (
    LexicographicalTypeSerializer,
    LexicographicBooleanSerializer,
    LexicographicByteSerializer,
    LexicographicBytesSerializer,
    LexicographicDoubleSerializer,
    LexicographicFloatSerializer,
    LexicographicIntSerializer,
    LexicographicLongSerializer,
    LexicographicShortSerializer,
    LexicographicStringSerializer,
    LexicographicTimestampSerializer,
    LexicographicTupleSerializer,
    TypeSerializer,
)
from .state_store.state import (
    AggregatingState,
    BinarySortedState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)
from .state_store.temporal import TemporalListState, TemporalValue, TemporalValueState
from .state_store.typeinfo import TypeInformation, Types
from .time import Duration, Time
from .watermarks import WatermarkStrategy

# isort: split
# -- keyed windows and FLIP-380 full-window processing (plugin/windows.py) ---------------
from .operators.count_windows import CountSlidingWindowAssigner, CountTumblingWindowAssigner
from .operators.partition import MapPartitionFunction, Order
from .operators.window_functions import (
    AllWindowFunction,
    ProcessAllWindowFunction,
    WindowFunction,
)
from .operators.windows import (
    CountTrigger,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EndOfStreamWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    ProcessWindowFunction,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from .state_store.namespaces import CountWindow, GlobalWindow
from .windows import AllWindowedStream, PartitionWindowedStream, WindowedStream

__version__ = "0.1.0"

__all__ = [
    "AggregateFunction", "AggregatingState", "AggregatingStateDescriptor", "BinarySortedState",
    "BinarySortedStateDescriptor", "CloseableIterator", "CoFlatMapFunction", "CoMapFunction",
    "CoProcessFunction", "Configuration", "ConfigurationError", "ConnectedStreams", "DataStream",
    "DataStreamError", "DataStreamSink", "Duration", "EmbeddedRocksDBStateBackend",
    "FilterFunction", "FlatMapFunction", "Function", "GraphBuildError", "HashMapStateBackend",
    "IncompatibleStateError", "JobExecutionError", "JobExecutionResult", "KeyGroupError",
    "KeySelector", "KeyedCoProcessFunction", "KeyedCoProcessFunctionTestHarness",
    "KeyedOperatorTestHarness", "KeyedProcessFunctionTestHarness", "KeyedProcessFunction", "KeyedStream",
    "LexicographicBooleanSerializer", "LexicographicByteSerializer",
    "LexicographicBytesSerializer", "LexicographicDoubleSerializer",
    "LexicographicFloatSerializer", "LexicographicIntSerializer", "LexicographicLongSerializer",
    "LexicographicShortSerializer", "LexicographicStringSerializer",
    "LexicographicTimestampSerializer", "LexicographicTupleSerializer",
    "LexicographicalTypeSerializer", "ListState", "ListStateDescriptor", "MapFunction", "MapState",
    "MapStateDescriptor", "OutputTag", "ProcessFunction", "ProcessingTimeError", "ReduceFunction",
    "ReducingState", "ReducingStateDescriptor", "Row", "RuntimeContext", "RuntimeExecutionMode",
    "SavepointConflictError", "SavepointError", "SavepointFormatError", "SavepointNotFoundError",
    "SerializationError", "StateBackend", "StateBackendError", "StateDescriptor",
    "StateDescriptorError", "StateError", "StreamExecutionEnvironment", "TemporalListState",
    "TemporalValue", "TemporalValueState", "Time", "TimeDomain", "TimeWindow", "TimestampAssigner",
    "TypeInformation", "TypeSerializer", "Types", "UnclaimedStateError", "ValueState",
    "ValueStateDescriptor", "WatermarkStrategy",
]
__all__ += [
    "CountTrigger", "EndOfStreamWindows", "EventTimeSessionWindows", "EventTimeTrigger",
    "GlobalWindow", "GlobalWindows", "MapPartitionFunction", "MergingWindowAssigner", "Order",
    "PartitionWindowedStream", "ProcessWindowFunction", "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger", "PurgingTrigger", "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows", "Trigger", "TriggerResult", "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows", "WindowAssigner", "WindowedStream",
]
__all__ += [
    "AllWindowFunction", "AllWindowedStream", "CountSlidingWindowAssigner",
    "CountTumblingWindowAssigner", "CountWindow", "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows", "ProcessAllWindowFunction",
    "SessionWindowTimeGapExtractor", "WindowFunction",
]
__all__ += ["JobClient", "JobStatus"]
__all__ += ["CheckpointMismatchError", "CheckpointRootError", "OutputTypeError",
            "SourceSchemaError", "UserFunctionError"]
