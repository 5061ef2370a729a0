"""Runtime and process contexts handed to user functions.

``RuntimeContext`` is given to ``Function.open``: keyed state (delegated to the
operator's keyed backend, VOID namespace), subtask coordinates, job parameters.
The process contexts are reused objects: the operator sets the element
timestamp and the output buffer before each call, so a record costs no
context allocation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from ..state_store.exceptions import GraphBuildError, StateDescriptorError, StateError
from ..state_store.row import take_emitted
from .base import OperatorConfig, Output
from .functions import Context as _Context
from .functions import KeyedContext, OnTimerContext, OutputTag, TimeDomain, TimerService
from .metrics import MetricGroup, new_group

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend

__all__ = [
    "RuntimeContext",
    "ProcessContextImpl",
    "KeyedContextImpl",
    "OnTimerContextImpl",
]


#: Each public state getter: the descriptor class it takes and the keyed backend's method
#: that builds the state. One table, so a new kind of state is one line here and one method.
_STATE_GETTERS: dict[str, tuple[type, str]] = {
    "get_state": (ValueStateDescriptor, "get_state"),
    "get_list_state": (ListStateDescriptor, "get_state"),
    "get_map_state": (MapStateDescriptor, "get_state"),
    "get_reducing_state": (ReducingStateDescriptor, "get_state"),
    "get_aggregating_state": (AggregatingStateDescriptor, "get_state"),
    "get_binary_sorted_state": (BinarySortedStateDescriptor, "get_binary_sorted_state"),
    "get_temporal_value_state": (ValueStateDescriptor, "get_temporal_value_state"),
    "get_temporal_list_state": (ListStateDescriptor, "get_temporal_list_state"),
}


class KeyedStateStore(ABC):
    """Where a function's keyed state comes from (PyFlink's ``KeyedStateStore``): the
    :class:`RuntimeContext` is one."""

    @abstractmethod
    def get_state(self, state_descriptor: Any) -> Any:
        """The ValueState of ``state_descriptor``.

        Args:
            state_descriptor: A ValueStateDescriptor.

        Returns:
            The state.
        """

    @abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any:
        """The ListState of ``state_descriptor``.

        Args:
            state_descriptor: A ListStateDescriptor.

        Returns:
            The state.
        """

    @abstractmethod
    def get_map_state(self, state_descriptor: Any) -> Any:
        """The MapState of ``state_descriptor``.

        Args:
            state_descriptor: A MapStateDescriptor.

        Returns:
            The state.
        """

    @abstractmethod
    def get_reducing_state(self, state_descriptor: Any) -> Any:
        """The ReducingState of ``state_descriptor``.

        Args:
            state_descriptor: A ReducingStateDescriptor.

        Returns:
            The state.
        """

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        """The AggregatingState of ``state_descriptor``.

        Args:
            state_descriptor: An AggregatingStateDescriptor.

        Returns:
            The state.
        """


class RuntimeContext(KeyedStateStore):
    """Per operator instance: keyed state, subtask coordinates and job parameters. Passed to a
    function's ``open(runtime_context)`` (and reachable from its contexts); not constructed
    directly.
    """

    def __init__(self, config: OperatorConfig, backend: KeyedStateBackend | None = None,
                 metrics_name: str | None = None) -> None:
        self._config = config
        self._backend = backend
        #: the operator name its metrics are reported under (a fused stage's own name)
        self._metrics_name = metrics_name or config.metrics_name or config.operator_name
        self._metrics: MetricGroup | None = None
        #: Descriptors acquired through this context, by state name (read by the test harness).
        self.registered_descriptors: dict[str, Any] = {}
        #: ``name -> (method, descriptor)``: which getter acquired each state.
        self.registered_states: dict[str, tuple[str, Any]] = {}

    # -- keyed state ------------------------------------------------------------------

    def _keyed_backend(self, method: str) -> KeyedStateBackend:
        backend = self._backend
        if backend is None:
            raise StateError(
                f"operator {self._config.operator_name!r}: {method}() is keyed state, which "
                f"needs key_by(...) before this operator; non-keyed operators have no keyed state"
            )
        return backend

    def _check(self, method: str, descriptor: Any, expected: type) -> None:
        if not isinstance(descriptor, expected):
            raise StateDescriptorError(
                f"operator {self._config.operator_name!r}: {method}() needs a "
                f"{expected.__name__}, got {type(descriptor).__name__} {descriptor!r:.80}"
            )
        name: str = getattr(descriptor, "name")  # noqa: B009 - typed as Any on purpose
        self.registered_descriptors[name] = descriptor
        self.registered_states[name] = (method, descriptor)

    def _acquire(self, method: str, descriptor: Any) -> Any:
        """The state ``descriptor`` names, through the getter ``method`` of ``_STATE_GETTERS``."""
        expected, backend_method = _STATE_GETTERS[method]
        backend = self._keyed_backend(method)
        self._check(method, descriptor, expected)
        return getattr(backend, backend_method)(descriptor)

    def get_state(self, state_descriptor: ValueStateDescriptor) -> Any:
        """The ValueState of the current key.

        Args:
            state_descriptor: The ``ValueStateDescriptor`` (name, type, TTL).

        Returns:
            The ValueState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a ValueStateDescriptor.
        """
        return self._acquire("get_state", state_descriptor)

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> Any:
        """The ListState of the current key.

        Args:
            state_descriptor: The ``ListStateDescriptor`` (name, type, TTL).

        Returns:
            The ListState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a ListStateDescriptor.
        """
        return self._acquire("get_list_state", state_descriptor)

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> Any:
        """The MapState of the current key.

        Args:
            state_descriptor: The ``MapStateDescriptor`` (name, type, TTL).

        Returns:
            The MapState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a MapStateDescriptor.
        """
        return self._acquire("get_map_state", state_descriptor)

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> Any:
        """The ReducingState of the current key.

        Args:
            state_descriptor: The ``ReducingStateDescriptor`` (name, type, TTL).

        Returns:
            The ReducingState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a ReducingStateDescriptor.
        """
        return self._acquire("get_reducing_state", state_descriptor)

    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> Any:
        """The AggregatingState of the current key.

        Args:
            state_descriptor: The ``AggregatingStateDescriptor`` (name, type, TTL).

        Returns:
            The AggregatingState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a AggregatingStateDescriptor.
        """
        return self._acquire("get_aggregating_state", state_descriptor)

    def get_binary_sorted_state(self, state_descriptor: BinarySortedStateDescriptor) -> Any:
        """The BinarySortedState (FLIP-220) of the current key.

        Args:
            state_descriptor: The ``BinarySortedStateDescriptor`` (name, type, TTL).

        Returns:
            The BinarySortedState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a BinarySortedStateDescriptor.
        """
        return self._acquire("get_binary_sorted_state", state_descriptor)

    def get_temporal_value_state(self, state_descriptor: ValueStateDescriptor) -> Any:
        """A TemporalValueState (values by event time) of the current key.

        Args:
            state_descriptor: The ``ValueStateDescriptor`` (name, type, TTL).

        Returns:
            The TemporalValueState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a ValueStateDescriptor.
        """
        return self._acquire("get_temporal_value_state", state_descriptor)

    def get_temporal_list_state(self, state_descriptor: ListStateDescriptor) -> Any:
        """A TemporalListState (lists by event time) of the current key.

        Args:
            state_descriptor: The ``ListStateDescriptor`` (name, type, TTL).

        Returns:
            The TemporalListState, scoped to the key being processed.

        Raises:
            StateError: The operator is not keyed (no ``key_by`` before it).
            StateDescriptorError: ``state_descriptor`` is not a ListStateDescriptor.
        """
        return self._acquire("get_temporal_list_state", state_descriptor)

    # -- task information -------------------------------------------------------------

    def get_index_of_this_subtask(self) -> int:
        """0-based index of this parallel instance.

        Returns:
            The subtask index.
        """
        return self._config.subtask_index

    def get_number_of_parallel_subtasks(self) -> int:
        """Parallelism of the operator.

        Returns:
            The parallelism.
        """
        return self._config.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        """Max parallelism (number of key groups).

        Returns:
            The max parallelism.
        """
        return self._config.max_parallelism

    def get_task_name(self) -> str:
        """Name of the operator.

        Returns:
            The operator's name.
        """
        return self._config.operator_name

    def get_task_name_with_subtasks(self) -> str:
        """The operator's name with its subtask, as Flink writes it: ``name (i/n)#attempt``
        (``i`` counted from 1).

        Returns:
            The name, e.g. ``"Map (2/4)#0"``.
        """
        return (f"{self.get_task_name()} ({self.get_index_of_this_subtask() + 1}/"
                f"{self.get_number_of_parallel_subtasks()})#{self.get_attempt_number()}")

    def get_job_parameter(self, key: str, default_value: Any = None, **kwargs: Any) -> Any:
        """A job parameter (``env.set_job_parameter``-style), or ``default_value``.

        Args:
            key: The parameter's name.
            default_value: What to return when it is not set.
            **kwargs: ``default=`` (this package's earlier name of ``default_value``).

        Returns:
            The parameter's value, or the default.

        Raises:
            TypeError: Another keyword argument is given.
        """
        if kwargs:
            if set(kwargs) != {"default"}:
                raise TypeError(f"get_job_parameter() got unexpected keyword(s) {sorted(kwargs)}")
            default_value = kwargs["default"]
        return self._config.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        """This operator instance's metric group: counters, gauges, meters, distributions.

        Their values are logged (logger ``pyspark_datastream.metrics``, the executor's log
        by default) at the end of a BATCH task and every 10 s in STREAMING, and reach the
        job's progress rows; see docs/user-guide/progress-and-logs.md.

        Returns:
            The group (the same registry on every call in the instance).
        """
        if self._metrics is None:
            self._metrics = new_group(self._metrics_name, self._config.subtask_index,
                                      self._config.metrics_publish)
        return self._metrics

    def get_attempt_number(self) -> int:
        """Attempt number of this task (always 0: Spark retries re-run from the input).

        Returns:
            0.
        """
        return 0


def _check_tag(output_tag: Any, operator_name: str) -> str:
    if type(output_tag) is OutputTag or isinstance(output_tag, OutputTag):
        return output_tag.tag_id
    raise GraphBuildError(
        f"operator {operator_name!r}: ctx.output() needs an OutputTag as first argument, "
        f"got {type(output_tag).__name__} {output_tag!r:.60}"
    )


class ProcessContextImpl(_Context):
    """Context of a non-keyed ``ProcessFunction`` / ``CoProcessFunction``.

    The operator running the function sets ``element_timestamp`` and ``side_outputs`` (the
    list ``output`` appends to) before each call; the context classes are reused per record.
    """

    __slots__ = ("element_timestamp", "_timer_service", "side_outputs", "_operator_name")

    def __init__(self, timer_service: TimerService, operator_name: str) -> None:
        self.element_timestamp: int | None = None
        self._timer_service = timer_service
        self.side_outputs: list[Output] = []
        self._operator_name = operator_name

    def timestamp(self) -> int | None:
        return self.element_timestamp

    def timer_service(self) -> TimerService:
        return self._timer_service

    def output(self, output_tag: OutputTag, value: Any) -> None:
        self.side_outputs.append(Output(_check_tag(output_tag, self._operator_name), take_emitted(value), self.element_timestamp))


class KeyedContextImpl(KeyedContext):
    """Context of keyed ``process_element`` calls (current key from the backend)."""

    __slots__ = ("element_timestamp", "_timer_service", "side_outputs", "_operator_name", "_backend")

    def __init__(
        self, timer_service: TimerService, operator_name: str, backend: KeyedStateBackend
    ) -> None:
        self.element_timestamp: int | None = None
        self._timer_service = timer_service
        self.side_outputs: list[Output] = []
        self._operator_name = operator_name
        self._backend = backend

    def timestamp(self) -> int | None:
        return self.element_timestamp

    def timer_service(self) -> TimerService:
        return self._timer_service

    def get_current_key(self) -> Any:
        return self._backend.get_current_key()

    def output(self, output_tag: OutputTag, value: Any) -> None:
        self.side_outputs.append(Output(_check_tag(output_tag, self._operator_name), take_emitted(value), self.element_timestamp))


class OnTimerContextImpl(KeyedContextImpl, OnTimerContext):
    """Context of ``on_timer``: the timer's timestamp, key and time domain."""

    __slots__ = ("timer_domain",)

    def __init__(
        self, timer_service: TimerService, operator_name: str, backend: KeyedStateBackend
    ) -> None:
        super().__init__(timer_service, operator_name, backend)
        self.timer_domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self.timer_domain
