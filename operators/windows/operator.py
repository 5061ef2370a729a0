"""``WindowOperator``: runs a ``WindowSpec`` on a keyed stream (the runtime side of windows).

How windows run:

* Window contents live in keyed state with the window as namespace:
  ReducingState for ``reduce``, AggregatingState for ``aggregate``, ListState for
  ``process``. Window and trigger timers are ordinary timers of the operator's
  timer queues (namespace = the window), so a window snapshots and restores like
  any other state.
* An element is added to each window the assigner gives it; windows whose
  ``max_timestamp() + allowed_lateness <= watermark`` are late and skipped. An
  element skipped by every window and itself late goes to the late side output
  (when one is set) or is dropped.
* The trigger decides when a window fires (emits its result, timestamped
  ``window.max_timestamp()``) and/or purges. The cleanup timer at
  ``max_timestamp() + allowed_lateness`` (event time) or ``max_timestamp()``
  (processing time) clears the window's contents and trigger state.
* Merging assigners (sessions) keep the key's live windows in a ValueState;
  a new window that overlaps live windows merges them (contents, trigger state
  and timers move to the covering window), including a late "bridge" element
  that joins two sessions.
* BATCH: each key sees watermark MIN while its elements arrive and MAX when
  its timers fire (end of key), so each window fires once with its final
  contents. Processing-time windows follow ``pipeline.processing-time.*``
  (BATCH default FAIL: using one raises ``ProcessingTimeError``).


The operator binds the user API (assigner, trigger, window function) to the keyed
backend through the contexts below; programs never import this module.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...state_store.descriptors import StateDescriptor, ValueStateDescriptor
from ...state_store.exceptions import DataStreamError, GraphBuildError, StateError
from ...state_store.namespaces import MAX_LONG, TimeWindow
from ...state_store.row import take_emitted
from ...state_store.serializers import PickleSerializer
from ...state_store.state import ValueState
from ..base import Output, user_function_error
from ..exceptions import JobExecutionError
from ..functions import OutputTag
from ..keyed import AbstractKeyedOperator, collect_outputs
from .assigners import WindowAssignerContext
from .functions import ProcessWindowFunction
from .spec import MERGING_WINDOWS_STATE, WindowSpec
from .triggers import OnMergeContext, TriggerResult

__all__ = ["WindowOperator"]


class _PassThroughWindowFunction(ProcessWindowFunction):
    """Emits the single pre-aggregated value of a window as it is."""

    def process(self, key: Any, context: ProcessWindowFunction.Context,
                elements: Iterable[Any]) -> Iterable[Any]:
        return elements

    def __repr__(self) -> str:
        return "PassThrough"


#: stateless, so one serves every window operator (a long-lived instance opens it once)
_PASS_THROUGH = _PassThroughWindowFunction()


class _WindowTriggerContext(OnMergeContext):
    """Trigger context bound to the operator; ``window`` is set before each call."""

    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator
        self.window: Any = None
        self.merged_windows: list[Any] = []

    def get_current_processing_time(self) -> int:
        return self.op.clock.current_processing_time()

    def get_current_watermark(self) -> int:
        return self.op.clock.watermark

    def register_processing_time_timer(self, time: int) -> None:
        if self.op.clock.accepts_processing_timer():
            self.op.processing_queue.add(time, self.window)

    def register_event_time_timer(self, time: int) -> None:
        self.op.event_queue.add(time, self.window)

    def delete_processing_time_timer(self, time: int) -> None:
        self.op.processing_queue.delete(time, self.window)

    def delete_event_time_timer(self, time: int) -> None:
        self.op.event_queue.delete(time, self.window)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        state = self.op.backend.get_state(state_descriptor, self.op.window_serializer)
        state.set_current_namespace(self.window)
        return state

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if not self.merged_windows:
            return
        state = self.op.backend.get_state(state_descriptor, self.op.window_serializer)
        if not hasattr(state, "merge_namespaces"):
            raise StateError(
                f"operator {self.op.operator_name!r}: trigger state {state_descriptor.name!r} "
                f"cannot be merged (only list, reducing and aggregating state can)"
            )
        state.set_current_namespace(self.window)
        state.merge_namespaces(self.window, self.merged_windows)


class _WindowStateStore:
    """``context.window_state()``: keyed state scoped to the current window."""

    def __init__(self, operator: WindowOperator, window: Any) -> None:
        self._op = operator
        self._window = window

    def _get(self, descriptor: StateDescriptor) -> Any:
        state = self._op.backend.get_state(descriptor, self._op.window_serializer)
        state.set_current_namespace(self._window)
        return state

    get_state = _get
    get_list_state = _get
    get_map_state = _get
    get_reducing_state = _get
    get_aggregating_state = _get


class _ProcessWindowContext(ProcessWindowFunction.Context):
    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator
        self._window: Any = None
        self._out: list[Output] = []

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self.op.clock.current_processing_time()

    def current_watermark(self) -> int:
        return self.op.clock.watermark

    def window_state(self) -> Any:
        return _WindowStateStore(self.op, self._window)

    def global_state(self) -> Any:
        return self.op.runtime_context

    def output(self, output_tag: OutputTag, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(
                f"operator {self.op.operator_name!r}: context.output() needs an OutputTag, "
                f"got {output_tag!r:.60}"
            )
        self._out.append(Output(output_tag.tag_id, take_emitted(value), self._window.max_timestamp()))


class _AssignerContext(WindowAssignerContext):
    def __init__(self, operator: WindowOperator) -> None:
        self.op = operator

    def get_current_processing_time(self) -> int:
        return self.op.clock.current_processing_time()

    def get_runtime_context(self) -> Any:
        return self.op.runtime_context


def _cleanup_time(window: Any, lateness: int, event_time: bool) -> int:
    """When a window's state is removed for good (MAX_LONG: never)."""
    max_ts = window.max_timestamp()
    if not event_time:
        return max_ts
    cleanup = max_ts + lateness
    return MAX_LONG if cleanup >= MAX_LONG else cleanup


class WindowOperator(AbstractKeyedOperator):
    """Runs a :class:`WindowSpec` on a keyed stream (see the module doc for semantics)."""

    def __init__(self, spec: WindowSpec, name: str | None = None) -> None:
        super().__init__(name)
        if not isinstance(spec, WindowSpec):
            raise GraphBuildError(f"WindowOperator needs a WindowSpec, got {spec!r:.80}")
        self.spec = spec
        self.window_serializer = spec.assigner.get_window_serializer()
        #: window state and timers are namespaced by the window
        self.timer_namespace_serializer = self.window_serializer

    def _definition(self) -> dict[str, Any]:
        return {"spec": self.spec, "name": self.name}

    def __repr__(self) -> str:
        return f"WindowOperator({self.spec!r}, name={self.name!r})"

    # -- lifecycle -----------------------------------------------------------------------

    def open_operator(self) -> None:
        spec = self.spec
        self.assigner = spec.assigner
        self.trigger = spec.trigger
        self.lateness = spec.allowed_lateness
        self.event_time = spec.assigner.is_event_time()
        self.merging = spec.assigner.is_merging()
        self.late_tag = spec.late_output_tag.tag_id if spec.late_output_tag is not None else None
        self.contents = self.backend.get_state(spec.contents_descriptor(), self.window_serializer)
        if self.merging:  # the windows of the current key (only merging assigners have it)
            self.merging_state: ValueState[list[tuple[int, int]] | None] = self.backend.get_state(
                ValueStateDescriptor(MERGING_WINDOWS_STATE, PickleSerializer.INSTANCE, _internal=True)
            )
        self.window_function = (
            spec.function if spec.kind == "process"
            else spec.window_function or _PASS_THROUGH
        )
        self.trigger_ctx = _WindowTriggerContext(self)
        self.process_ctx = _ProcessWindowContext(self)
        self.assigner_ctx = _AssignerContext(self)
        self.open_function(self.trigger)
        if spec.kind != "process":
            self.open_function(spec.function)
        self.open_function(self.window_function)

    def close_operator(self) -> None:
        closed: list[Any] = []  # a process window's function is also the spec's: close it once
        for function in (self.window_function, self.spec.function, self.trigger):
            if not any(function is done for done in closed):
                closed.append(function)
                self.close_function(function)

    # -- helpers -------------------------------------------------------------------------

    def _is_window_late(self, window: Any) -> bool:
        return self.event_time and _cleanup_time(window, self.lateness, True) <= self.clock.watermark

    def _is_element_late(self, timestamp: int | None) -> bool:
        return (
            self.event_time
            and timestamp is not None
            and timestamp + self.lateness <= self.clock.watermark
        )

    def _register_cleanup(self, window: Any) -> None:
        cleanup = _cleanup_time(window, self.lateness, self.event_time)
        if cleanup == MAX_LONG:
            return  # the window never ends (global): nothing to clean up
        if self.event_time:
            self.event_queue.add(cleanup, window)
        elif self.clock.accepts_processing_timer():
            self.processing_queue.add(cleanup, window)

    def _delete_cleanup(self, window: Any) -> None:
        cleanup = _cleanup_time(window, self.lateness, self.event_time)
        if cleanup == MAX_LONG:
            return
        if self.event_time:
            self.event_queue.delete(cleanup, window)
        else:
            self.processing_queue.delete(cleanup, window)

    def _trigger_call(self, what: str, window: Any, call: Any, *args: Any) -> Any:
        ctx = self.trigger_ctx
        ctx.window = window
        try:
            return call(*args, ctx)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, f"trigger {what}", window, exc
            ) from exc

    def _live_windows(self) -> list[TimeWindow]:
        raw = self.merging_state.value()
        return [TimeWindow(s, e) for s, e in raw] if raw else []

    def _store_windows(self, windows: list[TimeWindow]) -> None:
        self.merging_state.update(
            sorted((w.start, w.end) for w in windows) if windows else None
        )

    # -- elements ------------------------------------------------------------------------

    def process_element(
        self, value: Any, timestamp: int | None, input_index: int = 0
    ) -> list[Output]:
        try:
            windows = list(self.assigner.assign_windows(value, timestamp, self.assigner_ctx))
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(self.operator_name, "assign_windows", value, exc) from exc
        out: list[Output] = []
        skipped = True
        for window in windows:
            if self.merging:
                window = self._merge_into_live(window)
            if self._is_window_late(window):
                if self.merging:
                    self._retire(window)
                continue
            skipped = False
            contents = self.contents
            contents.set_current_namespace(window)
            try:
                contents.add(value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(self.operator_name, "window add", value, exc) from exc
            result = self._trigger_call(
                "on_element", window, self.trigger.on_element, value, timestamp, window
            )
            self._apply(result, window, out)
            self._register_cleanup(window)
        if skipped and self._is_element_late(timestamp) and self.late_tag is not None:
            out.append(Output(self.late_tag, value, timestamp))
        return out

    def _merge_into_live(self, new_window: TimeWindow) -> TimeWindow:
        """Add ``new_window`` to the key's live sessions, merging overlaps; the result window."""
        live = self._live_windows()
        merged = new_window
        members: list[TimeWindow] = []
        changed = True
        while changed:
            changed = False
            for window in live:
                if window not in members and window.intersects(merged):
                    members.append(window)
                    merged = merged.cover(window)
                    changed = True
        if not members:
            live.append(new_window)
            self._store_windows(live)
            return new_window
        if members == [merged]:
            return merged  # the new window lies inside a live session
        if self.event_time and _cleanup_time(merged, self.lateness, True) <= self.clock.watermark:
            raise JobExecutionError(
                f"operator {self.operator_name!r}: merging {members} into {merged} would end "
                f"the window before the current watermark {self.clock.watermark}"
            )
        sources = [w for w in members if w != merged]
        ctx = self.trigger_ctx
        ctx.merged_windows = sources
        try:
            self._trigger_call("on_merge", merged, self.trigger.on_merge, merged)
        finally:
            ctx.merged_windows = []
        for window in sources:
            self._trigger_call("clear", window, self.trigger.clear, window)
            self._delete_cleanup(window)
        self.contents.set_current_namespace(merged)  # merge_namespaces restores the current one
        self.contents.merge_namespaces(merged, sources)
        live = [w for w in live if w not in members] + [merged]
        self._store_windows(live)
        return merged

    def _retire(self, window: TimeWindow) -> None:
        live = [w for w in self._live_windows() if w != window]
        self._store_windows(live)

    # -- firing --------------------------------------------------------------------------

    def _apply(self, result: TriggerResult, window: Any, out: list[Output]) -> None:
        if not isinstance(result, TriggerResult):
            raise JobExecutionError(
                f"operator {self.operator_name!r}: trigger {self.trigger!r} returned "
                f"{result!r:.60}, not a TriggerResult"
            )
        if result.is_fire():
            self._emit(window, out)
        if result.is_purge():
            self.contents.set_current_namespace(window)
            self.contents.clear()

    def _emit(self, window: Any, out: list[Output]) -> None:
        contents = self.contents
        contents.set_current_namespace(window)
        value = contents.get()
        if self.spec.kind == "process":
            if not value:
                return
            elements: Any = value
        else:
            if value is None:
                return
            elements = [value]
        ctx = self.process_ctx
        ctx._window = window
        ctx._out = out
        ts = window.max_timestamp()
        try:
            result = self.window_function.process(
                self.backend.get_current_key(), ctx, elements
            )
            if result is not None:
                collect_outputs(result, out, ts)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, "window function process", window, exc
            ) from exc

    def _clear_all(self, window: Any) -> None:
        contents = self.contents
        contents.set_current_namespace(window)
        contents.clear()
        if self.merging:
            self._retire(window)
        self._trigger_call("clear", window, self.trigger.clear, window)
        ctx = self.process_ctx
        ctx._window = window
        try:
            self.window_function.clear(ctx)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(
                self.operator_name, "window function clear", window, exc
            ) from exc

    def _window_is_live(self, window: Any) -> bool:
        return not self.merging or window in self._live_windows()

    def on_event_time(self, timestamp: int, namespace: Any) -> list[Output]:
        window = namespace
        out: list[Output] = []
        if not self._window_is_live(window):
            return out  # merged away: its timers were moved to the covering window
        result = self._trigger_call(
            "on_event_time", window, self.trigger.on_event_time, timestamp, window
        )
        self._apply(result, window, out)
        if self.event_time and timestamp == _cleanup_time(window, self.lateness, True):
            self._clear_all(window)
        return out

    def on_processing_time(self, timestamp: int, namespace: Any) -> list[Output]:
        window = namespace
        out: list[Output] = []
        if not self._window_is_live(window):
            return out
        result = self._trigger_call(
            "on_processing_time", window, self.trigger.on_processing_time, timestamp, window
        )
        self._apply(result, window, out)
        if not self.event_time and timestamp == _cleanup_time(window, self.lateness, False):
            self._clear_all(window)
        return out
