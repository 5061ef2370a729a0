"""User-function instances that live for a whole STREAMING run, one per parallel instance.

Flink creates a keyed operator's function once per parallel instance (subtask) and calls its
``open()`` once before the first record and ``close()`` once at the end; attributes a function
sets on itself are per subtask. A STREAMING job here runs one call per key group per
micro-batch, each on the key group's own backend. So that the function behaves as in Flink,
each Python worker keeps, per operator and run, one :class:`SubtaskInstance` per subtask (a copy
of the shipped function, made once): the calls of that subtask's key groups, in every
micro-batch, use it; its functions are opened the first time and never again; the state
handles they took in ``open()`` follow the backend of the current call
(:class:`InstanceContext`). The instances of a run are closed when a later run of the same
operator reaches the worker (:func:`run_instances`), by :func:`end_run`, or when the worker
process exits.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

import atexit
import copy
from typing import TYPE_CHECKING, Any, Optional

from ..state_store.exceptions import StateError
from . import metrics
from .base import OperatorConfig
from .context import RuntimeContext

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend

__all__ = ["InstanceContext", "SubtaskInstance", "run_instances", "end_run", "subtask_of"]


def subtask_of(key_group: int, parallelism: int, max_parallelism: int) -> int:
    """Flink's operator index of a key group (KeyGroupRangeAssignment)."""
    return key_group * parallelism // max_parallelism


#: PyFlink's state methods (and this product's sorted/temporal ones) bound at each call
_METHODS = ("value", "update", "clear", "get", "add", "add_all", "put", "put_all", "remove",
            "contains", "keys", "values", "items", "is_empty", "first_entry", "last_entry")


class _StateHandle:
    """A state taken by a long-lived function: each use reads the state of the backend the
    current call runs on (rebound by :meth:`InstanceContext.bind`)."""

    __slots__ = ("_method", "_descriptor", "_state", "__dict__")

    def __init__(self, method: str, descriptor: Any) -> None:
        self._method = method
        self._descriptor = descriptor
        self._state: Any = None

    def _bind(self, backend: Any) -> None:
        self._state = state = getattr(backend, self._method)(self._descriptor)
        # the state's common methods as attributes of the handle: a call costs what a call
        # on the state costs (anything else goes through __getattr__)
        methods = self.__dict__
        methods.clear()
        for name in _METHODS:
            method = getattr(state, name, None)
            if method is not None:
                methods[name] = method

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)

    def __contains__(self, item: Any) -> bool:
        return item in self._state

    def __getitem__(self, item: Any) -> Any:
        return self._state[item]

    def __setitem__(self, item: Any, value: Any) -> None:
        self._state[item] = value

    def __delitem__(self, item: Any) -> None:
        del self._state[item]

    def __iter__(self) -> Any:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def __bool__(self) -> bool:
        return bool(self._state)

    def __repr__(self) -> str:
        return repr(self._state)


class _Handles:
    """What :class:`RuntimeContext` calls its keyed backend: hands out state handles."""

    __slots__ = ("_context",)

    def __init__(self, context: InstanceContext) -> None:
        self._context = context

    def _handle(self, method: str, descriptor: Any) -> _StateHandle:
        handles = self._context.handles
        key = (method, getattr(descriptor, "name", None))
        handle = handles.get(key)
        if handle is None or handle._descriptor is not descriptor:
            handle = _StateHandle(method, descriptor)
            handles[key] = handle
        handle._bind(self._context.backend)
        return handle

    def get_state(self, descriptor: Any) -> Any:
        return self._handle("get_state", descriptor)

    def get_binary_sorted_state(self, descriptor: Any) -> Any:
        return self._handle("get_binary_sorted_state", descriptor)

    def get_temporal_value_state(self, descriptor: Any) -> Any:
        return self._handle("get_temporal_value_state", descriptor)

    def get_temporal_list_state(self, descriptor: Any) -> Any:
        return self._handle("get_temporal_list_state", descriptor)


class InstanceContext(RuntimeContext):
    """The RuntimeContext of a long-lived subtask instance: its keyed states are handles
    bound, at each call, to that call's backend."""

    def __init__(self, config: OperatorConfig) -> None:
        super().__init__(config, None)
        self.backend: Optional[KeyedStateBackend] = None
        self.handles: dict[tuple[str, Any], _StateHandle] = {}

    def bind(self, backend: KeyedStateBackend) -> None:
        """Make every handle (and every state taken from now on) read ``backend``."""
        self.backend = backend
        for handle in self.handles.values():
            handle._bind(backend)

    def _keyed_backend(self, method: str) -> Any:
        if self.backend is None:
            raise StateError(
                f"operator {self.get_task_name()!r}: {method}() is keyed state, which is "
                f"only available while the operator runs (in open() or a call of the function)")
        return _Handles(self)


class SubtaskInstance:
    """One parallel instance of an operator's function(s) in this worker, for one run."""

    def __init__(self, template: Any, config: OperatorConfig) -> None:
        #: the operator's function (or window / broadcast spec), this subtask's own copy
        self.function = copy.deepcopy(template)
        self.config = config
        self.context = InstanceContext(config)
        self._opened: list[Any] = []  # in the order opened (kept alive: ids stay unique)
        self._opened_ids: set[int] = set()
        self.closed = False
        #: the metric groups made after this are its functions' (and, of this subtask index,
        #: other live instances'; reporting those too only repeats current values)
        self._metrics_mark = metrics.mark()

    def open(self, function: Any, runtime_context: Any) -> None:
        """``function.open(runtime_context)`` the first time this instance runs it only."""
        if id(function) in self._opened_ids:
            return
        function.open(runtime_context)
        self._opened_ids.add(id(function))
        self._opened.append(function)

    def close(self) -> None:
        """Close every opened function, last opened first (once); the first error is raised
        after all were closed."""
        if self.closed:
            return
        self.closed = True
        error: Optional[BaseException] = None
        for function in reversed(self._opened):
            try:
                function.close()
            except Exception as exc:  # noqa: BLE001 - every function gets its close()
                error = error or exc
        self._opened.clear()
        # the run's last report of each function's group (fused stages keep their own names)
        metrics.report_since(self._metrics_mark, self.config.subtask_index, forget=False)
        if error is not None:
            raise error


#: operator identity -> (run id, {subtask index: instance}) in this process
_RUNS: dict[str, tuple[str, dict[int, SubtaskInstance]]] = {}


def run_instances(operator_key: str, run_id: str) -> dict[int, SubtaskInstance]:
    """The subtask instances of ``operator_key`` in run ``run_id`` (made on first use); those
    of an earlier run of the same operator are closed first."""
    entry = _RUNS.get(operator_key)
    if entry is not None and entry[0] != run_id:
        end_run(operator_key)
        entry = None
    if entry is None:
        entry = (run_id, {})
        _RUNS[operator_key] = entry
    return entry[1]


def end_run(operator_key: str) -> None:
    """Close and forget the instances of ``operator_key`` in this process."""
    entry = _RUNS.pop(operator_key, None)
    if entry is None:
        return
    error: Optional[BaseException] = None
    for instance in entry[1].values():
        try:
            instance.close()
        except Exception as exc:  # noqa: BLE001 - every instance gets its close()
            error = error or exc
    if error is not None:
        raise error


def _end_all() -> None:
    for key in list(_RUNS):
        try:
            end_run(key)
        except Exception:  # noqa: BLE001, S110 - the worker is exiting: nothing to report to
            pass


atexit.register(_end_all)
