"""The calls of the windowed streams (PyFlink's ``WindowedStream``/``AllWindowedStream``,
FLIP-380's ``PartitionWindowedStream``) as base classes: the stream classes in
``datastream`` give them their input node and wrap the nodes they build into DataStreams.
"""

from __future__ import annotations

from typing import Any, Optional

from ..operators.functions import OutputTag
from ..operators.partition import MapPartitionFunction, Order, PartitionOp
from ..operators.window_functions import as_process_window_function
from ..operators.windows import ProcessWindowFunction, Trigger, WindowAssigner, WindowSpec
from ..plan.graph import KeyedNode
from ..state_store.exceptions import GraphBuildError
from ..state_store.functions import AggregateFunction
from ..state_store.typeinfo import TypeInformation
from .arguments import check_output_type, function_name

__all__ = ["WindowCalls", "PartitionCalls"]


class WindowCalls:
    """What keyed and non-keyed windowed streams share: trigger, lateness, functions.

    ``WindowedStream`` and ``AllWindowedStream`` (``pyspark_datastream.api.datastream``) give
    these calls their input node and wrap the node they build into a DataStream.
    """

    #: False for ``window_all``: functions take no key (AllWindowFunction, ...)
    _keyed = True

    def __init__(self, keyed_stream: Any, window_assigner: WindowAssigner) -> None:
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
        """The environment of the windowed stream.

        Returns:
            The StreamExecutionEnvironment.
        """
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> Any:
        """The type of the records entering the windows.

        Returns:
            The ``TypeInformation``, or None when records travel pickled.
        """
        return self._keyed_stream.get_type()

    def trigger(self, trigger: Trigger) -> Any:
        """Replace the assigner's default trigger.

        Args:
            trigger: The ``Trigger``.

        Returns:
            This windowed stream.

        Raises:
            GraphBuildError: ``trigger`` is not a Trigger, or the assigner merges windows and
                the trigger cannot merge.
        """
        if not isinstance(trigger, Trigger):
            raise GraphBuildError(f"trigger() needs a Trigger, got {trigger!r:.80}")
        if self._assigner.is_merging() and not trigger.can_merge():
            raise GraphBuildError(
                f"trigger {trigger!r} cannot merge windows, but {self._assigner!r} merges them"
            )
        self._trigger = trigger
        return self

    def allowed_lateness(self, time_ms: Any) -> Any:
        """Keep windows ``time_ms`` past their end for late data.

        Args:
            time_ms: The lateness: int ms, ``Time`` or ``Duration``, >= 0.

        Returns:
            This windowed stream.

        Raises:
            GraphBuildError: ``time_ms`` is of another type or negative, or is > 0 on a
                processing-time assigner.
        """
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
        """Send dropped late elements to ``output_tag`` (read it with ``get_side_output``).

        Args:
            output_tag: The ``OutputTag`` of the late elements.

        Returns:
            This windowed stream.

        Raises:
            GraphBuildError: ``output_tag`` is not an OutputTag.
        """
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"side_output_late_data() needs an OutputTag, got {output_tag!r}")
        self._late_tag = output_tag
        return self

    def _build(self, kind: str, function: Any, name: str, output_type: Any,
               window_function: Any = None, state_type: Any = None) -> Any:
        trigger = self._trigger
        if trigger is None:  # PyFlink's WindowAssigner.get_default_trigger(env)
            trigger = self._assigner.get_default_trigger(
                self._keyed_stream.get_execution_environment())
        spec = WindowSpec(self._assigner, kind, function, trigger=trigger,
                          allowed_lateness=self._allowed_lateness, late_output_tag=self._late_tag,
                          window_function=window_function, state_type=state_type)
        node = KeyedNode(name=name, inputs=[self._input_node()], output_type=output_type,
                         op="window", function=spec)
        return self._derive(node)

    def _input_node(self) -> Any:
        """The keyed stream's key node, the windows' input (given by the stream class)."""
        raise NotImplementedError

    def _derive(self, node: KeyedNode) -> Any:
        """The DataStream of ``node`` (given by the stream class)."""
        raise NotImplementedError

    def _window_function(self, function: Any, what: str) -> Optional[ProcessWindowFunction]:
        if function is None:
            return None
        return as_process_window_function(function, what, keyed=self._keyed)

    def reduce(self, reduce_function: Any, window_function: Any = None,
               output_type: Optional[TypeInformation] = None) -> Any:
        """Incrementally reduce each window (ReducingState); optional window_function after.

        Args:
            reduce_function: A ``ReduceFunction`` or a callable ``(a, b) -> reduced``.
            window_function: A (Process)(All)WindowFunction given the reduced value, or None.
            output_type: The output ``TypeInformation``; None keeps the input type without a
                window function, or sends records pickled with one.

        Returns:
            The stream of window results.

        Raises:
            GraphBuildError: ``window_function`` is not a window function, or ``output_type`` is
                not a ``TypeInformation``.
        """
        in_type = self._keyed_stream.get_type()
        out_t = check_output_type(output_type, "reduce") if output_type is not None else (
            in_type if window_function is None else None)
        return self._build("reduce", reduce_function, function_name(reduce_function, "WindowReduce"),
                           out_t, self._window_function(window_function, "reduce(window_function)"))

    def aggregate(self, aggregate_function: AggregateFunction, window_function: Any = None,
                  accumulator_type: Optional[TypeInformation] = None,
                  output_type: Optional[TypeInformation] = None) -> Any:
        """Incrementally aggregate each window (AggregatingState); optional window_function.

        Args:
            aggregate_function: The ``AggregateFunction``.
            window_function: A (Process)(All)WindowFunction given the aggregate result, or None.
            accumulator_type: The accumulator's ``TypeInformation``, or None (pickled).
            output_type: The output ``TypeInformation``, or None (pickled).

        Returns:
            The stream of window results.

        Raises:
            GraphBuildError: ``window_function`` is not a window function, or a type is not a
                ``TypeInformation``.
        """
        acc_t = check_output_type(accumulator_type, "aggregate accumulator_type")
        return self._build("aggregate", aggregate_function,
                           function_name(aggregate_function, "WindowAggregate"),
                           check_output_type(output_type, "aggregate"),
                           self._window_function(window_function, "aggregate(window_function)"),
                           acc_t)

    def apply(self, window_function: Any,
              output_type: Optional[TypeInformation] = None) -> Any:
        """Run a (All)WindowFunction over all elements of each fired window (ListState).

        Args:
            window_function: The ``WindowFunction`` (``AllWindowFunction`` after ``window_all``).
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The stream of window results.

        Raises:
            GraphBuildError: ``window_function`` is not a window function of the stream's kind, or
                ``output_type`` is not a ``TypeInformation``.
        """
        what = "apply()" if self._keyed else "window_all(...).apply()"
        function = self._window_function(window_function, what)
        return self._build("process", function, function_name(window_function, "WindowApply"),
                           check_output_type(output_type, "apply"))

    def process(self, process_window_function: Any,
                output_type: Optional[TypeInformation] = None) -> Any:
        """Run a Process(All)WindowFunction over all elements of each fired window (ListState).

        Args:
            process_window_function: The ``ProcessWindowFunction`` (``ProcessAllWindowFunction``
                after ``window_all``).
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The stream of window results.

        Raises:
            GraphBuildError: The function is not a window function of the stream's kind, or
                ``output_type`` is not a ``TypeInformation``.
        """
        what = "process()" if self._keyed else "window_all(...).process()"
        function = self._window_function(process_window_function, what)
        return self._build("process", function, function_name(process_window_function, "WindowProcess"),
                           check_output_type(output_type, "process"))


class PartitionCalls:
    """The calls of a ``PartitionWindowedStream`` (FLIP-380): each builds a full-partition
    operator through the stream class's ``_build``."""

    _stream: Any

    def _build(self, op: PartitionOp, name: str, output_type: Any) -> Any:
        """The DataStream of the operator running ``op`` (given by the stream class)."""
        raise NotImplementedError

    def map_partition(self, map_partition_func: Any,
                      output_type: Optional[TypeInformation] = None) -> Any:
        """Call the function once per partition with an iterator over its records.

        Args:
            map_partition_func: A ``MapPartitionFunction`` or a callable taking an iterator and
                returning an iterable.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``output_type`` is not a ``TypeInformation``.
        """
        op = PartitionOp("map_partition", map_partition_func)
        default = "MapPartition"
        name = function_name(map_partition_func, default) if isinstance(
            map_partition_func, MapPartitionFunction) else default
        return self._build(op, name, check_output_type(output_type, "map_partition"))

    def sort_partition(self, field: Any, order: Order = Order.ASCENDING,
                       output_type: Optional[TypeInformation] = None) -> Any:
        """Sort each partition by ``field`` (position, field name or key selector).

        Args:
            field: A field position (int), name (str) or a key selector.
            order: ``Order.ASCENDING`` or ``Order.DESCENDING``.
            output_type: The output ``TypeInformation``; None keeps the input type.

        Returns:
            The sorted stream.

        Raises:
            GraphBuildError: ``field`` names no field or is out of range of the typed stream, or
                ``output_type`` is not a ``TypeInformation``.
        """
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
        out_t = check_output_type(output_type, "sort_partition") if output_type is not None else t
        return self._build(op, f"SortPartition({_field_name(field)}, {order.name})", out_t)

    def aggregate(self, aggregate_function: AggregateFunction,
                  output_type: Optional[TypeInformation] = None) -> Any:
        """One AggregateFunction result per non-empty partition.

        Args:
            aggregate_function: The ``AggregateFunction``.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The stream of results.

        Raises:
            GraphBuildError: ``output_type`` is not a ``TypeInformation``.
        """
        op = PartitionOp("aggregate", aggregate_function)
        return self._build(op, function_name(aggregate_function, "PartitionAggregate"),
                           check_output_type(output_type, "aggregate"))

    def reduce(self, reduce_function: Any,
               output_type: Optional[TypeInformation] = None) -> Any:
        """The records of each non-empty partition folded into one.

        Args:
            reduce_function: A ``ReduceFunction`` or a callable ``(a, b) -> reduced``.
            output_type: The output ``TypeInformation``; None keeps the input type.

        Returns:
            The stream of results.

        Raises:
            GraphBuildError: ``output_type`` is not a ``TypeInformation``.
        """
        op = PartitionOp("reduce", reduce_function)
        out_t = check_output_type(output_type, "reduce") if output_type is not None \
            else self._stream.get_type()
        return self._build(op, function_name(reduce_function, "PartitionReduce"), out_t)


def _field_name(field: Any) -> str:
    if isinstance(field, (int, str)):
        return repr(field)
    return function_name(field, "key_selector")
