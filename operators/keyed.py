"""Keyed operators: process functions with state and timers, and the reduce operator.

``AbstractKeyedOperator`` holds everything common: the clock (watermark,
processing time, FLIP-134 processing-time rules), the two timer queues of the
backend (``"event"`` and ``"processing"``, part of snapshots), and timer firing
for ``advance_watermark`` / ``advance_processing_time`` / ``end_key`` /
``end_input``. Subclasses implement ``process_element`` and the timer hooks.

Time semantics:

* STREAMING: ``current_watermark()`` is the last watermark the driver advanced
  to (initially ``MIN_WATERMARK``); event timers fire when it passes them, across
  keys in ``(timestamp, key)`` order. ``end_input`` moves it to ``MAX_WATERMARK``.
* BATCH (FLIP-134/140): watermarks from the driver are ignored; each key sees a
  perfect watermark: ``MIN_WATERMARK`` while its elements are processed and
  ``MAX_WATERMARK`` while its timers fire at ``end_key`` (sorted input) or at
  ``end_input`` (hash input), in timestamp order; timers registered while firing
  fire too.
* Processing-time timers fire on ``advance_processing_time`` (STREAMING) and, under
  ``processing_time_end_of_input = FIRE_AND_QUIESCE``, at end of key (BATCH) / end
  of input (both), with new registrations ignored while quiescing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..state_store.exceptions import DataStreamError
from ..state_store.namespaces import VOID_NAMESPACE_SERIALIZER
from ..state_store.row import Row, take_emitted
from ..state_store.ttl import ttl_time_provider
from .base import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    KeyedOperator,
    OperatorConfig,
    Output,
)
from .context import RuntimeContext
from .exceptions import JobExecutionError
from .functions import (
    OutputTag,
    TimeDomain,
)
from .timers import EVENT_TIME_QUEUE, PROCESSING_TIME_QUEUE, OperatorClock

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend
    from ..state_store.serializers import TypeSerializer
    from ..state_store.timer_queue import Timer

__all__ = [
    "REDUCE_STATE_NAME",
    "AbstractKeyedOperator",
    "TimerListener",
    "collect_outputs",
]

#: Name of the ReduceOperator's internal ValueState.
REDUCE_STATE_NAME = "_reduce"

#: ``listener(timestamp, key, time_domain)``, called before each timer fires.
TimerListener = Callable[[int, Any, TimeDomain], None]

_EMPTY: tuple[Output, ...] = ()
#: ``_new_tuple(Output, (tag, value, ts))`` builds an Output in C (``Output(...)`` and
#: ``Output._make`` are Python calls; an output is built per record)
_new_tuple = tuple.__new__
_EVENT_TIME = TimeDomain.EVENT_TIME
_PROCESSING_TIME = TimeDomain.PROCESSING_TIME


def collect_outputs(result: Any, out: list[Output], ts: int | None) -> None:
    """Append a user function's yielded items to ``out`` at timestamp ``ts``: an item
    ``(OutputTag, v)`` goes to that side output, anything else to the main output."""
    append = out.append
    for item in result:
        if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
            append(Output(item[0].tag_id, take_emitted(item[1]), ts))
        else:
            if isinstance(item, Row):  # taken when emitted (see take_emitted)
                item = take_emitted(item)
            append(_new_tuple(Output, (None, item, ts)))


class AbstractKeyedOperator(KeyedOperator):
    """Lifecycle, clocks and timer firing shared by the keyed operators.

    Subclasses implement :meth:`process_element`, :meth:`on_event_time` and
    :meth:`on_processing_time` (each returning a list of outputs for one call), and
    may override :meth:`open_operator` / :meth:`close_operator`. Timer namespaces
    use ``timer_namespace_serializer`` (void by default; window operators use the
    window serializer).
    """

    timer_namespace_serializer: TypeSerializer = VOID_NAMESPACE_SERIALIZER

    #: BATCH stop-with-savepoint (set by the driver before running, not pickled): when not
    #: None, ``end_key``/``end_input`` fire only the event timers <= this watermark (the
    #: final watermark a STREAMING run would have reached) and never processing timers;
    #: later timers stay pending so that the key's snapshot holds them. None: default
    #: BATCH behaviour (watermark MAX).
    savepoint_watermark: int | None = None

    #: STREAMING (set by the key group runtime, not pickled): the long-lived parallel
    #: instance (operators/instances.py) whose functions and RuntimeContext this call uses;
    #: its functions are opened once for the run and closed when the run ends. None: the
    #: operator opens and closes its functions itself (BATCH, tests).
    instance: Any = None

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        #: Optional ``listener(timestamp, key, time_domain)`` called before each timer fires.
        self.timer_listener: TimerListener | None = None
        self._opened = False

    # -- pickling: only the definition travels, never the runtime bindings ----------------

    def _definition(self) -> dict[str, Any]:
        """Constructor arguments (what is pickled)."""
        return {"name": self.name}

    def __getstate__(self) -> dict[str, Any]:
        return self._definition()

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, **state)  # unpickled: __init__ runs again

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """True between :meth:`open` and :meth:`close`."""
        return self._opened

    def open(self, backend: KeyedStateBackend, config: OperatorConfig) -> None:
        if self._opened:
            raise JobExecutionError(f"operator {config.operator_name!r} is already open")
        self.backend = backend
        self.config = config
        self.operator_name = config.operator_name
        self.batch = config.is_batch
        self.clock = OperatorClock(config)
        ttl_time_provider(backend).use(self.clock.state_ttl_time)  # state TTL reads this clock
        ns_ser = self.timer_namespace_serializer
        self.event_queue = backend.timer_queue(EVENT_TIME_QUEUE, ns_ser)
        self.processing_queue = backend.timer_queue(PROCESSING_TIME_QUEUE, ns_ser)
        instance = self.instance
        if instance is None:
            self.runtime_context = RuntimeContext(config, backend)
        else:  # a long-lived instance: its states follow this call's backend
            instance.context.bind(backend)
            self.runtime_context = instance.context
        self._fire_processing_at_end = config.processing_time_end_of_input == "FIRE_AND_QUIESCE"
        if self.batch and getattr(backend, "holds_one_key", False):
            backend.add_key_change_listener(self._check_key_ended)
        self._opened = True
        try:
            self.open_operator()
        except DataStreamError:
            self._opened = False
            raise
        except Exception as exc:
            self._opened = False
            raise JobExecutionError(
                f"operator {self.operator_name!r}: open() failed: {type(exc).__name__}: {exc}"
            ) from exc

    def open_operator(self) -> None:
        """Hook: open user functions (:meth:`open_function`), acquire internal state."""

    def open_function(self, function: Any, runtime_context: Any = None) -> None:
        """Open a user function: now, or once per long-lived instance (``instance``)."""
        context = self.runtime_context if runtime_context is None else runtime_context
        if self.instance is None:
            function.open(context)
        else:
            self.instance.open(function, context)

    def close_function(self, function: Any) -> None:
        """Close a user function, unless a long-lived instance closes it when its run ends."""
        if self.instance is None:
            function.close()

    def _check_key_ended(self, new_key: Any, new_key_bytes: bytes) -> None:
        """Single-key backend, BATCH: refuse to drop a key whose timers never fired."""
        if not self._opened or self.savepoint_watermark is not None:
            return  # stop-with-savepoint: pending timers were snapshotted at end of key
        pending = len(self.event_queue)
        if self._fire_processing_at_end:
            pending += len(self.processing_queue)
        if pending:
            raise JobExecutionError(
                f"operator {self.operator_name!r}: the current key still has {pending} pending "
                f"timer(s) but the single-key backend is switching to key {new_key!r:.60}; the "
                f"driver must call end_key() (and consume its outputs) before the next key"
            )

    def close(self) -> None:
        if not self._opened:
            return
        self._opened = False
        self.close_operator()

    def close_operator(self) -> None:
        """Hook: close user functions."""

    # -- timer hooks --------------------------------------------------------------------

    def on_event_time(self, timestamp: int, namespace: Any) -> list[Output] | tuple[Output, ...]:
        """An event-time timer of the current key fired."""
        return _EMPTY

    def on_processing_time(self, timestamp: int, namespace: Any) -> list[Output] | tuple[Output, ...]:
        """A processing-time timer of the current key fired."""
        return _EMPTY

    # -- timer firing -------------------------------------------------------------------

    def _switch_key(self, timer: Timer) -> None:
        """Make the timer's key current (no-op when it already is)."""
        backend = self.backend
        key_bytes = timer.key_bytes
        if backend.current_key_and_bytes()[1] != key_bytes:
            backend.set_current_key(timer.key, key_bytes)

    def _fire_event_timers(self, up_to: int) -> Iterator[Output]:
        listener = self.timer_listener
        switch = self._switch_key
        on_event_time = self.on_event_time
        for timer in self.event_queue.poll_until(up_to):
            switch(timer)
            ts, key, namespace, _ = timer
            if listener is not None:
                listener(ts, key, _EVENT_TIME)
            yield from on_event_time(ts, namespace)

    def _fire_processing_timers(self, up_to: int) -> Iterator[Output]:
        listener = self.timer_listener
        switch = self._switch_key
        clock = self.clock
        on_processing_time = self.on_processing_time
        for timer in self.processing_queue.poll_until(up_to):
            switch(timer)
            ts, key, namespace, _ = timer
            now = clock.processing_time
            if now is None or ts > now:
                clock.processing_time = ts
            if listener is not None:
                listener(ts, key, _PROCESSING_TIME)
            yield from on_processing_time(ts, namespace)

    def _drain_all(self) -> Iterator[Output]:
        """Watermark MAX: fire every event timer, then processing timers per end-of-input."""
        clock = self.clock
        clock.watermark = MAX_WATERMARK
        event_queue = self.event_queue
        processing_queue = self.processing_queue
        while True:
            yield from self._fire_event_timers(MAX_WATERMARK)
            if not self._fire_processing_at_end or processing_queue.peek_timestamp() is None:
                return
            clock.quiescing = True
            yield from self._fire_processing_timers(MAX_WATERMARK)
            if event_queue.peek_timestamp() is None:
                return

    def advance_watermark(self, watermark: int) -> Iterable[Output]:
        """Fire event timers <= ``watermark`` (iterate the result; eager unless a timer
        listener watches them fire). BATCH: ignored."""
        if self.batch:
            return _EMPTY
        clock = self.clock
        if watermark <= clock.watermark:
            return _EMPTY
        clock.watermark = watermark
        return self._event_timers_up_to(watermark)

    def advance_processing_time(self, now: int) -> Iterable[Output]:
        """Set processing time; STREAMING: fire processing timers <= ``now`` (lazy)."""
        clock = self.clock
        if clock.processing_time is not None and now < clock.processing_time:
            return _EMPTY
        clock.processing_time = now
        if self.batch or clock.quiescing:
            return _EMPTY
        return self._fire_processing_timers(now)

    def end_key(self) -> Iterable[Output]:
        """BATCH: the current key is complete; fire its timers with watermark MAX (eager)."""
        if not self.batch:
            return _EMPTY
        if self.savepoint_watermark is not None:
            return self._end_key_for_savepoint(self.savepoint_watermark)
        event_queue = self.event_queue
        if not event_queue and not (self._fire_processing_at_end and self.processing_queue):
            return _EMPTY
        clock = self.clock
        try:
            if not self.processing_queue and self.timer_listener is None:
                # the common case: only event-time timers (e.g. the reduce operator's)
                clock.watermark = MAX_WATERMARK
                out: list[Output] = []
                self._fire_all_event_timers(out)
                if not self.processing_queue:
                    return out
                out.extend(self._drain_all())
                return out
            return list(self._drain_all())
        finally:
            clock.watermark = MIN_WATERMARK
            clock.quiescing = False

    def _event_timers_up_to(self, up_to: int) -> Iterable[Output]:
        """Fire the event timers up to ``up_to``: eagerly in the operator's own loop
        (:meth:`_fire_all_event_timers`), or one at a time (lazy) when a timer listener
        watches them fire."""
        if self.timer_listener is not None:
            return self._fire_event_timers(up_to)
        out: list[Output] = []
        self._fire_all_event_timers(out, up_to)
        return out

    def _fire_all_event_timers(self, out: list[Output], up_to: int = MAX_WATERMARK) -> None:
        """Fire the event timers up to ``up_to`` (the clock's watermark) in order into
        ``out`` (a BATCH key's end, a STREAMING watermark); timers registered while firing
        fire too when due. Without a timer listener."""
        switch = self._switch_key
        on_event_time = self.on_event_time
        extend = out.extend
        for timer in self.event_queue.poll_until(up_to):
            switch(timer)
            extend(on_event_time(timer[0], timer[2]))

    def end_input(self) -> Iterable[Output]:
        """End of input: watermark MAX, fire all remaining timers (lazy: iterate the result).

        BATCH with ``savepoint_watermark``: only event timers <= it fire (stop-with-savepoint
        without drain); the others stay pending."""
        if self.batch and self.savepoint_watermark is not None:
            return self._end_key_for_savepoint(self.savepoint_watermark)
        self.clock.watermark = MAX_WATERMARK
        return self._drain_all()

    def _end_key_for_savepoint(self, watermark: int) -> list[Output]:
        """Fire event timers <= ``watermark`` (eager); processing timers and later ones stay."""
        if not self.event_queue:
            return []
        clock = self.clock
        clock.watermark = watermark
        try:
            return list(self._event_timers_up_to(watermark))
        finally:
            clock.watermark = MIN_WATERMARK

    def on_restored_key(self) -> Iterable[Output]:
        """Hook: the current key's state was just restored from a savepoint (before its
        records, if any). Default: nothing."""
        return _EMPTY
