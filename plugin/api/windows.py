"""Windowed streams: ``KeyedStream.window(...)`` and FLIP-380 ``full_window_partition()``.

* :class:`WindowedStream` (``keyed.window(assigner)``) records a keyed window as
  ``KeyedNode(op="window", function=WindowSpec)``; both translators run it as
  any keyed operator (``passes._make_keyed_operator`` builds the WindowOperator).
* :class:`PartitionWindowedStream` (``stream.full_window_partition()``) records a
  ``FullPartitionNode``: BATCH only. When the job's runtime mode is explicitly
  STREAMING the API call fails at once; otherwise (mode set later, AUTOMATIC)
  the environment refuses the job when it is translated in STREAMING.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..operators.functions import OutputTag
from ..operators.partition import MapPartitionFunction, Order, PartitionOp
from ..operators.window_functions import as_process_window_function
from ..operators.windows import (
    ProcessWindowFunction,
    Trigger,
    WindowAssigner,
    WindowSpec,
)
from ..plan.graph import FullPartitionNode, KeyByNode, KeyedNode
from ..state_store.errors import GraphBuildError
from ..state_store.functions import AggregateFunction

if TYPE_CHECKING:
    from ..state_store.typeinfo import TypeInformation
    from .datastream import DataStream, KeyedStream

__all__ = [
    "WindowedStream",
    "AllWindowedStream",
    "PartitionWindowedStream",
    "full_window_streaming_error",
    "check_full_window_mode",
]


def _check_type(output_type: Any, where: str) -> Any:
    from .datastream import _check_type as check

    return check(output_type, where)


def _name(fn: Any, default: str) -> str:
    from .datastream import _fn_name

    return _fn_name(fn, default)


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
        from .datastream import DataStream

        spec = WindowSpec(self._assigner, kind, function, trigger=self._trigger,
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
        return self._build("reduce", reduce_function, _name(reduce_function, "WindowReduce"),
                           out_t, self._window_function(window_function, "reduce(window_function)"))

    def aggregate(self, aggregate_function: AggregateFunction, window_function: Any = None,
                  accumulator_type: Optional[TypeInformation] = None,
                  output_type: Optional[TypeInformation] = None) -> DataStream:
        """Incrementally aggregate each window (AggregatingState); optional window_function."""
        acc_t = _check_type(accumulator_type, "aggregate accumulator_type")
        return self._build("aggregate", aggregate_function,
                           _name(aggregate_function, "WindowAggregate"),
                           _check_type(output_type, "aggregate"),
                           self._window_function(window_function, "aggregate(window_function)"),
                           acc_t)

    def apply(self, window_function: Any,
              output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a (All)WindowFunction over all elements of each fired window (ListState)."""
        what = "apply()" if self._keyed else "window_all(...).apply()"
        function = self._window_function(window_function, what)
        return self._build("process", function, _name(window_function, "WindowApply"),
                           _check_type(output_type, "apply"))

    def process(self, process_window_function: Any,
                output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run a Process(All)WindowFunction over all elements of each fired window (ListState)."""
        what = "process()" if self._keyed else "window_all(...).process()"
        function = self._window_function(process_window_function, what)
        return self._build("process", function, _name(process_window_function, "WindowProcess"),
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


# -- FLIP-380 -----------------------------------------------------------------------------


def full_window_streaming_error(what: str) -> GraphBuildError:
    """The error for full-window processing in STREAMING mode."""
    return GraphBuildError(
        f"{what}: full-window processing (full_window_partition) needs BATCH execution "
        f"(execution.runtime-mode = BATCH): a partition's window ends only when the input "
        f"ends, which an unbounded STREAMING job never reaches"
    )


def check_full_window_mode(nodes: list[Any], mode: str) -> None:
    """Raise the STREAMING error when ``nodes`` hold full-window nodes and mode is not BATCH."""
    if mode == "BATCH":
        return
    for node in nodes:
        if isinstance(node, FullPartitionNode):
            raise full_window_streaming_error(node.describe())


class PartitionWindowedStream:
    """All records of each partition (or key) as one window (FLIP-380)."""

    def __init__(self, stream: DataStream) -> None:
        from .datastream import KeyedStream

        self._stream = stream
        self._keyed = isinstance(stream, KeyedStream)
        env = stream.get_execution_environment()
        config = env.get_config()
        if config.contains_key("execution.runtime-mode") and \
                str(config.get_string("execution.runtime-mode")).upper() == "STREAMING":
            raise full_window_streaming_error("full_window_partition()")

    def _build(self, op: PartitionOp, name: str, output_type: Any) -> DataStream:
        from .datastream import DataStream

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
        name = _name(map_partition_func, default) if isinstance(
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
        return self._build(op, _name(aggregate_function, "PartitionAggregate"),
                           _check_type(output_type, "aggregate"))

    def reduce(self, reduce_function: Any,
               output_type: Optional[TypeInformation] = None) -> DataStream:
        """The records of each non-empty partition folded into one."""
        op = PartitionOp("reduce", reduce_function)
        out_t = _check_type(output_type, "reduce") if output_type is not None \
            else self._stream.get_type()
        return self._build(op, _name(reduce_function, "PartitionReduce"), out_t)


def _field_name(field: Any) -> str:
    if isinstance(field, (int, str)):
        return repr(field)
    return _name(field, "key_selector")
