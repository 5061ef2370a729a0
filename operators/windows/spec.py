"""``WindowSpec``: one keyed window definition, checked when the job graph is built.

It bundles the assigner, trigger, allowed lateness, late-data tag and window function,
validates them together (e.g. a merging assigner needs a trigger that can merge) and is
the picklable ``function`` a window node carries to the executors, where
``operator.WindowOperator`` runs it. It also names the window operator's internal states.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from typing import Any

from ...state_store.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
)
from ...state_store.exceptions import GraphBuildError
from ...state_store.functions import AggregateFunction
from ...state_store.serializers import PickleSerializer
from ..functions import OutputTag, as_reduce_function
from .assigners import WindowAssigner
from .functions import ProcessWindowFunction
from .triggers import Trigger

__all__ = ["WINDOW_CONTENTS_STATE", "MERGING_WINDOWS_STATE", "WindowSpec"]

#: Internal state holding each window's contents (namespace: the window).
WINDOW_CONTENTS_STATE = "_window_contents"
#: Internal state (void namespace) of merging assigners: the key's live windows.
MERGING_WINDOWS_STATE = "_merging_windows"

_KINDS = ("reduce", "aggregate", "process")


class WindowSpec:
    """A keyed window definition: assigner, trigger, lateness, late tag and function.

    ``kind`` is ``reduce`` (``function`` a ReduceFunction or callable), ``aggregate``
    (an AggregateFunction) or ``process`` (a ProcessWindowFunction).
    ``window_function`` (a ProcessWindowFunction) optionally post-processes the
    reduce/aggregate result. ``state_type`` types the stored contents (the
    element type for reduce/process, the accumulator type for aggregate; default
    pickled). Picklable: this is the ``function`` of a ``KeyedNode(op="window")``.
    """

    def __init__(
        self,
        assigner: WindowAssigner,
        kind: str,
        function: Any,
        *,
        trigger: Trigger | None = None,
        allowed_lateness: int = 0,
        late_output_tag: OutputTag | None = None,
        window_function: ProcessWindowFunction | None = None,
        state_type: Any = None,
    ) -> None:
        if not isinstance(assigner, WindowAssigner):
            raise GraphBuildError(f"window(): assigner must be a WindowAssigner, got {assigner!r:.80}")
        if kind not in _KINDS:
            raise GraphBuildError(f"window function kind must be one of {_KINDS}, got {kind!r}")
        if kind == "reduce":
            function = as_reduce_function(function, "reduce_function")
        elif kind == "aggregate":
            if not isinstance(function, AggregateFunction):
                raise GraphBuildError(
                    f"WindowedStream.aggregate() needs an AggregateFunction (create_accumulator, "
                    f"add, get_result, merge), got {type(function).__name__} {function!r:.80}"
                )
        elif not isinstance(function, ProcessWindowFunction):
            raise GraphBuildError(
                f"WindowedStream.process() needs a ProcessWindowFunction, got "
                f"{type(function).__name__} {function!r:.80}"
            )
        if window_function is not None and not isinstance(window_function, ProcessWindowFunction):
            raise GraphBuildError(
                f"window_function must be a ProcessWindowFunction, got {window_function!r:.80}"
            )
        if trigger is None:
            trigger = assigner.get_default_trigger(None)  # no environment at this level
        if not isinstance(trigger, Trigger):
            raise GraphBuildError(f"trigger(): needs a Trigger, got {trigger!r:.80}")
        if assigner.is_merging() and not trigger.can_merge():
            raise GraphBuildError(
                f"trigger {trigger!r} cannot merge windows, but {assigner!r} is a merging "
                f"assigner (sessions)"
            )
        if isinstance(allowed_lateness, bool) or not isinstance(allowed_lateness, int) \
                or allowed_lateness < 0:
            raise GraphBuildError(
                f"allowed_lateness must be an int >= 0 (ms), got {allowed_lateness!r}"
            )
        if allowed_lateness and not assigner.is_event_time():
            raise GraphBuildError(
                f"allowed_lateness applies to event-time windows only; {assigner!r} is not "
                f"event time"
            )
        if late_output_tag is not None and not isinstance(late_output_tag, OutputTag):
            raise GraphBuildError(
                f"side_output_late_data(): needs an OutputTag, got {late_output_tag!r:.80}"
            )
        self.assigner = assigner
        self.kind = kind
        self.function = function
        self.trigger = trigger
        self.allowed_lateness = allowed_lateness
        self.late_output_tag = late_output_tag
        self.window_function = window_function
        self.state_type = state_type

    def replace(self, **changes: Any) -> WindowSpec:
        """A copy with some fields changed (validated again)."""
        values = {
            "trigger": self.trigger,
            "allowed_lateness": self.allowed_lateness,
            "late_output_tag": self.late_output_tag,
            "window_function": self.window_function,
            "state_type": self.state_type,
        }
        values.update(changes)
        return WindowSpec(self.assigner, self.kind, self.function, **values)

    def contents_descriptor(self) -> StateDescriptor:
        """The descriptor of the window contents state for this kind."""
        type_info = self.state_type if self.state_type is not None else PickleSerializer.INSTANCE
        if self.kind == "reduce":
            return ReducingStateDescriptor(
                WINDOW_CONTENTS_STATE, self.function, type_info, _internal=True
            )
        if self.kind == "aggregate":
            return AggregatingStateDescriptor(
                WINDOW_CONTENTS_STATE, self.function, type_info, _internal=True
            )
        return ListStateDescriptor(WINDOW_CONTENTS_STATE, type_info, _internal=True)

    def __repr__(self) -> str:
        return (
            f"WindowSpec({self.assigner!r}, {self.kind}, {self.function!r}, trigger="
            f"{self.trigger!r}, allowed_lateness={self.allowed_lateness}, "
            f"late_output_tag={self.late_output_tag!r})"
        )
