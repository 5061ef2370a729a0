"""Ready-made event-time functions on BinarySortedState (FLIP-220): temporal sort and join.

Both are ordinary keyed functions; use them like any other::

    from pyspark_datastream.temporal_functions import TemporalJoin, TemporalSort

    in_time_order = events.key_by(key_of).process(TemporalSort(EVENT_TYPE), output_type=EVENT_TYPE)
    converted = (orders.connect(rates)
                 .key_by(lambda o: o[1], lambda r: r[0], key_type=Types.STRING())
                 .process(TemporalJoin(ORDER_TYPE, RATE_TYPE, convert), output_type=OUT_TYPE))

:class:`TemporalSort` is the pattern of Flink's ``RowTimeSortOperator``: per key, elements
are buffered in a sorted state keyed by their event time (``LexicographicLongSerializer``, so
byte order is time order), with one event-time timer per timestamp; the timer emits
``read_range_until(timestamp, True)`` and drops what it emitted with
``clear_range_until(timestamp, True)``. Elements at the same timestamp keep their arrival
order (in BATCH the input reaches the operator sorted by key and time by Spark, so the arrival
order of ties is unspecified there). Elements that are already late when they arrive
(timestamp <= current watermark) are dropped, as Flink's operator does; their number is kept in
a ValueState (``dropped_late``) so the drop is visible.

:class:`TemporalJoin` is an event-time temporal join (``FOR SYSTEM_TIME AS OF`` in SQL terms):
each element of input 1 (say, an order) is joined with the input-2 element (say, a currency
rate) that is valid at the input-1 element's event time, the one with the greatest timestamp
``<=`` it. As in Flink's ``TemporalRowTimeJoinOperator``, the two sorted states are named
``left`` and ``right``.

* an input-1 element waits in a sorted state keyed by its event time, with an event-time timer
  at that time, until the watermark passes it (later input-2 versions might still arrive);
* an input-2 element is stored in a sorted state keyed by its event time (one version per
  timestamp: the latest update wins), with a timer too, so old versions are pruned even when
  no input-1 element comes;
* a timer at ``t`` joins the input-1 elements due (``read_range_until(t, True)``) with the
  version valid at their time (``last_entry(time)``; one lookup at ``t`` serves every due
  element not older than that version) and drops them (``clear_range_until(t, True)``);
* when a version becomes valid (the timer at its own time), every older version is pruned
  (``clear_range_until(t, False)``): no input-1 element that can still come
  (time ``> watermark >= t``) needs them.

It is an inner join: an input-1 element with no version at or before its time produces
nothing. Input-1 elements that arrive already late (time <= watermark) are dropped, since the
version they need may have been pruned.

Both functions run unchanged in BATCH and STREAMING with the same results. This module is part
of the public API layer: the runtime (``operators``, ``state_store``) does not import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .operators.functions import KeyedCoProcessFunction, KeyedProcessFunction
from .state_store.descriptors import BinarySortedStateDescriptor, ValueStateDescriptor
from .state_store.serializers import LexicographicLongSerializer
from .state_store.typeinfo import TypeInformation
from .state_store.types import Types

__all__ = ["TemporalJoin", "TemporalSort"]


class TemporalSort(KeyedProcessFunction):
    """Emits each key's elements in event-time order once the watermark passes them.

    ``element_type`` is the type of the elements (and of the output): the buffered elements
    are stored with its serializer.
    """

    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = element_type

    def open(self, runtime_context: Any) -> None:
        self.buffer = runtime_context.get_binary_sorted_state(
            BinarySortedStateDescriptor(
                "buffer", LexicographicLongSerializer.INSTANCE, self.element_type)
        )
        self.dropped_late = runtime_context.get_state(
            ValueStateDescriptor("dropped_late", Types.LONG())
        )

    def process_element(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        timers = ctx.timer_service()
        if timestamp <= timers.current_watermark():
            self.dropped_late.update((self.dropped_late.value() or 0) + 1)
            return
        # appends under the timestamp without reading what is already there
        self.buffer.add(timestamp, value)
        timers.register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        buffer = self.buffer
        elements: list[Any] = []
        for _, values in buffer.read_range_until(timestamp, True):
            elements.extend(values)
        # right after reading the same range: the backend drops the rows it just read
        buffer.clear_range_until(timestamp, True)
        return iter(elements)


class TemporalJoin(KeyedCoProcessFunction):
    """Joins each input-1 element with the input-2 element valid at its event time.

    ``join(left, right)`` builds one output record from an input-1 element and the input-2
    element valid at its time; ``left_type`` and ``right_type`` are the two inputs' types
    (their elements are stored with those serializers).
    """

    def __init__(self, left_type: TypeInformation, right_type: TypeInformation,
                 join: Callable[[Any, Any], Any]) -> None:
        self.left_type = left_type
        self.right_type = right_type
        self.join = join

    def open(self, runtime_context: Any) -> None:
        lex_long = LexicographicLongSerializer.INSTANCE
        self.pending = runtime_context.get_binary_sorted_state(
            BinarySortedStateDescriptor("left", lex_long, self.left_type)
        )
        self.versions = runtime_context.get_binary_sorted_state(
            BinarySortedStateDescriptor("right", lex_long, self.right_type)
        )

    def process_element1(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        timers = ctx.timer_service()
        if timestamp <= timers.current_watermark():
            return  # late: the version valid then may already be pruned
        self.pending.add(timestamp, value)
        timers.register_event_time_timer(timestamp)

    def process_element2(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        self.versions.put(timestamp, [value])
        ctx.timer_service().register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        # the version valid at the timer's time is also the one valid for every due element
        # at or after it; only an element older than that version needs its own lookup
        valid = self.versions.last_entry(timestamp)
        join = self.join
        out: list[Any] = []
        due = list(self.pending.read_range_until(timestamp, True))
        for left_time, lefts in due:
            if valid is None:
                break  # no version at or before any due element
            entry = valid if valid[0] <= left_time else self.versions.last_entry(left_time)
            if entry is None:
                continue
            right = entry[1][-1]
            out.extend(join(left, right) for left in lefts)
        if due:
            self.pending.clear_range_until(timestamp, True)
        if valid is not None and valid[0] == timestamp:
            # a version became valid: no element still to come (time > watermark >= timestamp)
            # can need an older one
            self.versions.clear_range_until(timestamp, False)
        return iter(out)
