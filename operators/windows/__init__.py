"""Keyed windows: the user API (assigners, triggers, window functions) and the window operator.

The modules are split by who uses them:

* ``assigners``, ``triggers`` and ``functions``: what a program builds windows from;
* ``spec``: ``WindowSpec``, the checked, picklable window definition a job graph carries;
* ``operator``: ``WindowOperator``, which runs a ``WindowSpec`` on the executors.

Every public name is re-exported here, so ``from pyspark_datastream.operators.windows import
X`` works for all of them (and window definitions pickled under this module path still load).

No Spark imports: this package runs inside Spark's Python workers.
"""

from __future__ import annotations

from .assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EndOfStreamWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    WindowAssignerContext,
    to_window_millis,
)
from .continuous_triggers import ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger
from .functions import ProcessWindowFunction
from .operator import WindowOperator
from .spec import MERGING_WINDOWS_STATE, WINDOW_CONTENTS_STATE, WindowSpec
from .triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    OnMergeContext,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerContext,
    TriggerResult,
)

__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EndOfStreamWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "GlobalWindows",
    "MERGING_WINDOWS_STATE",
    "MergingWindowAssigner",
    "NeverTrigger",
    "OnMergeContext",
    "ProcessWindowFunction",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WINDOW_CONTENTS_STATE",
    "WindowAssigner",
    "WindowAssignerContext",
    "WindowOperator",
    "WindowSpec",
    "to_window_millis",
]
