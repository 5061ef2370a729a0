"""Operator contract shared by the runtime and the Spark plugin.

* ``Output(tag, value, timestamp)``: what every operator emits (``tag`` None for the
  main output, else the side output's ``tag_id``).
* ``OperatorConfig``: execution semantics of one operator instance (FLIP-134 runtime
  mode and processing-time options, subtask coordinates, job parameters).
* ``KeyedOperator``: the protocol a driver (``operators.driver`` or the Spark plugin)
  follows to run a keyed operator over a partition.
"""

from __future__ import annotations

import reprlib
import traceback
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Optional

from ..state_store.exceptions import ConfigurationError, DataStreamError, SerializationError
from ..state_store.keygroups import DEFAULT_MAX_PARALLELISM, check_max_parallelism
from .exceptions import JobExecutionError, OutputTypeError, UserFunctionError
from .modes import PROCESSING_TIME_ALLOW_VALUES, PROCESSING_TIME_END_OF_INPUT_VALUES, RuntimeMode

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend

__all__ = [
    "MIN_WATERMARK",
    "MAX_WATERMARK",
    "Output",
    "OperatorConfig",
    "KeyedOperator",
    "user_function_error",
]

#: Watermark before any event time has been seen (Flink's Long.MIN_VALUE).
MIN_WATERMARK = -(2**63)
#: Watermark at end of input: every event-time timer fires (Flink's Long.MAX_VALUE).
MAX_WATERMARK = 2**63 - 1



class Output(NamedTuple):
    """One emitted record: ``tag`` None = main output, else the side output's tag_id."""

    tag: str | None
    value: Any
    timestamp: int | None


def _choice(key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.upper() not in allowed:
        raise ConfigurationError(f"{key} must be one of {', '.join(allowed)}; got {value!r}")
    return value.upper()


@dataclass
class OperatorConfig:
    """Execution semantics of one operator instance.

    Build it with :meth:`for_mode` so the processing-time options get FLIP-134's
    defaults for the runtime mode (BATCH: FAIL / IGNORE, STREAMING: ALLOW /
    FIRE_AND_QUIESCE). ``operator_name`` appears in every runtime error message.
    """

    #: the runtime mode (a mode's name is accepted and parsed: ``RuntimeMode.parse``)
    mode: RuntimeMode = RuntimeMode.STREAMING
    processing_time_allow: str = "ALLOW"
    processing_time_end_of_input: str = "FIRE_AND_QUIESCE"
    subtask_index: int = 0
    parallelism: int = 1
    max_parallelism: int = DEFAULT_MAX_PARALLELISM
    operator_name: str = "operator"
    job_parameters: dict[str, Any] = field(default_factory=dict)
    #: STREAMING: where the instance's metrics are published for the driver's progress rows,
    #: (storage layer, folder) (``metrics.new_group``); None: logged only
    metrics_publish: Optional[tuple[Any, str]] = None
    #: the name the functions' metrics are reported under ("": ``operator_name``), e.g. a
    #: keyed operator's own name when later stages share its pass
    metrics_name: str = ""

    def __post_init__(self) -> None:
        self.mode = RuntimeMode.parse(self.mode)
        self.processing_time_allow = _choice(
            "pipeline.processing-time.allow", self.processing_time_allow, PROCESSING_TIME_ALLOW_VALUES
        )
        self.processing_time_end_of_input = _choice(
            "pipeline.processing-time.end-of-input",
            self.processing_time_end_of_input,
            PROCESSING_TIME_END_OF_INPUT_VALUES,
        )
        for name in ("subtask_index", "parallelism"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigurationError(f"OperatorConfig.{name} must be an int >= 0, got {value!r}")
        if self.parallelism < 1:
            raise ConfigurationError(f"OperatorConfig.parallelism must be >= 1, got {self.parallelism}")
        if self.subtask_index >= self.parallelism:
            raise ConfigurationError(
                f"OperatorConfig.subtask_index {self.subtask_index} is out of range for "
                f"parallelism {self.parallelism}"
            )
        try:
            check_max_parallelism(self.max_parallelism)
        except DataStreamError as exc:
            raise ConfigurationError(f"pipeline.max-parallelism: {exc}") from exc
        if not isinstance(self.operator_name, str) or not self.operator_name:
            raise ConfigurationError(
                f"OperatorConfig.operator_name must be a non-empty str, got {self.operator_name!r}"
            )
        if not isinstance(self.job_parameters, dict):
            raise ConfigurationError(
                f"OperatorConfig.job_parameters must be a dict, got {type(self.job_parameters).__name__}"
            )

    @classmethod
    def for_mode(cls, mode: RuntimeMode | str = RuntimeMode.STREAMING,
                 **overrides: Any) -> OperatorConfig:
        """Config for ``mode`` (or its name) with FLIP-134's processing-time defaults, then
        ``overrides``."""
        mode = RuntimeMode.parse(mode)
        unknown = set(overrides) - {f for f in cls.__dataclass_fields__ if f != "mode"}
        if unknown:
            raise ConfigurationError(
                f"OperatorConfig.for_mode: unknown option(s) {sorted(unknown)}; known: "
                f"{sorted(f for f in cls.__dataclass_fields__ if f != 'mode')}"
            )
        values: dict[str, Any] = dict(mode.processing_time_defaults)
        values.update(overrides)
        return cls(mode=mode, **values)

    @classmethod
    def from_dict(cls, config: Mapping[str, Any], **overrides: Any) -> OperatorConfig:
        """Config from the plain dict a translator ships to executors (``mode`` plus
        options), then ``overrides`` (the subtask index, the operator name)."""
        values = dict(config)
        mode = values.pop("mode", RuntimeMode.STREAMING)
        values.update(overrides)
        return cls.for_mode(mode, **values)

    def with_overrides(self, **overrides: Any) -> OperatorConfig:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **overrides)

    @property
    def is_batch(self) -> bool:
        """True in BATCH runtime mode."""
        return self.mode.is_batch


class KeyedOperator(ABC):
    """Protocol of a keyed operator, driven per partition.

    The driver sets the backend's current key before ``process_element``. The
    ``advance_*``/``end_*`` methods fire timers and therefore change the current
    key themselves. Methods returning an iterable of outputs may be lazy: iterate
    the result to completion before calling the operator again.
    """

    @abstractmethod
    def open(self, backend: KeyedStateBackend, config: OperatorConfig) -> None:
        """Bind to a keyed state backend and open the user function."""

    @abstractmethod
    def process_element(
        self, value: Any, timestamp: int | None, input_index: int = 0
    ) -> Iterable[Output]:
        """Process one record of the current key."""

    @abstractmethod
    def advance_watermark(self, watermark: int) -> Iterable[Output]:
        """Fire event-time timers <= ``watermark`` (all keys, in (timestamp, key) order)."""

    @abstractmethod
    def advance_processing_time(self, now: int) -> Iterable[Output]:
        """Set processing time to ``now`` and fire processing-time timers <= ``now``."""

    @abstractmethod
    def end_key(self) -> Iterable[Output]:
        """BATCH sorted input: the current key is complete (fire its timers, final results)."""

    @abstractmethod
    def end_input(self) -> Iterable[Output]:
        """No more input: watermark to MAX, processing-time timers per end-of-input option."""

    @abstractmethod
    def close(self) -> None:
        """Close the user function. The backend belongs to the caller and stays open."""


_short_repr = reprlib.Repr()
_short_repr.maxstring = 80
_short_repr.maxother = 80
_short_repr.maxtuple = 8
_short_repr.maxlist = 8
_short_repr.maxdict = 8


#: modules whose frames are the product's (or Spark's), not the user's
_OWN_MODULES = ("pyspark_datastream", "pyspark", "py4j")


def _is_own(frame: Any) -> bool:
    name = str(frame.f_globals.get("__name__") or "")
    return name.split(".", 1)[0] in _OWN_MODULES


def user_traceback(exc: BaseException) -> str:
    """The frames of ``exc`` that run user code, printed as Python prints a traceback (file,
    line, code), ending with the exception line; "" when no frame is the user's. A cause or
    context the user's code chained is printed before it, as Python does."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    chain: list[tuple[BaseException, str]] = []
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        link = ("The above exception was the direct cause of the following exception:"
                if current.__cause__ is not None else
                "During handling of the above exception, another exception occurred:"
                if current.__context__ is not None and not current.__suppress_context__ else "")
        chain.append((current, link))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    for error, link in reversed(chain):
        frames = [(f, line) for f, line in traceback.walk_tb(error.__traceback__) if not _is_own(f)]
        if not frames:
            continue
        if link and parts:  # the chained exception printed above leads to this one
            parts.append(f"\n{link}\n\n")
        stack = traceback.StackSummary.extract(frames)
        lines = "".join(traceback.format_exception_only(type(error), error))
        parts.append("Traceback (most recent call last):\n" + "".join(stack.format()) + lines)
    return "".join(parts).rstrip("\n")


def _failing_state(exc: BaseException) -> str | None:
    """The name of the innermost state whose method was running when ``exc`` was raised
    (a state object carries its ``descriptor``); None when no state was."""
    name = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        descriptor = getattr(frame.f_locals.get("self"), "descriptor", None)
        state_name = getattr(descriptor, "name", None)
        if isinstance(state_name, str):
            name = state_name
    return name


def raise_named_serialization_error(exc: SerializationError, operator_name: str,
                                    what: str = "", record: Any = None) -> NoReturn:
    """Raise ``exc`` (a value some state or output could not serialize) again, its message
    led by the operator, the state (found in the traceback) and, when given, the call and
    the record; as it is when it already names its operator. Call it in the handler."""
    if isinstance(exc, OutputTypeError) or str(exc).startswith("operator "):
        raise exc
    state = _failing_state(exc)
    where = f"operator {operator_name!r}" + (f", state {state!r}" if state else "")
    if what:
        where += f": {what} failed on {_short_repr.repr(record)}"
    raise type(exc)(f"{where}: {exc}") from exc


def user_function_error(operator_name: str, what: str, record: Any,
                        exc: BaseException) -> JobExecutionError:
    """A UserFunctionError naming the operator, the failing call and the record (first line),
    followed by the user function's own traceback frames."""
    frames = user_traceback(exc)
    return UserFunctionError(
        f"operator {operator_name!r}: {what} failed on {_short_repr.repr(record)}: "
        f"{type(exc).__name__}: {exc}" + (f"\n{frames}" if frames else "")
    )
