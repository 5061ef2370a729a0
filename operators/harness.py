"""Test harnesses for users' keyed functions - no Spark needed.

Modelled on Flink's operator test harnesses and PySpark's ``TwsTester``: push
records, watermarks and processing time in, read outputs, side outputs, state
and timers back. The harness drives the very operator, backend and key
extraction code that runs on Spark (``KeyedProcessOperator`` /
``KeyedCoProcessOperator`` over a real keyed backend). Backends and the order
timers fire in: the "Testing with the harness" guide.

Example::

    harness = KeyedProcessFunctionTestHarness(Sessionize(), lambda e: e[0])
    harness.process_element(("alice", "click", 1_000), 1_000)
    harness.process_watermark(40_000)
    assert harness.get_output() == [("alice", 1_000)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Optional

from ..state_store.backend import KeyedStateBackend
from ..state_store.backends import get_backend
from ..state_store.descriptors import StateDescriptor
from ..state_store.entries import StateKind
from ..state_store.exceptions import ConfigurationError, StateError
from ..state_store.serializers import GenericKeySerializer, TypeSerializer
from .base import OperatorConfig, Output
from .chain import KeyExtractor
from .exceptions import JobExecutionError
from .functions import OutputTag, TimeDomain
from .keyed import AbstractKeyedOperator
from .keyed_process import KeyedCoProcessOperator, KeyedProcessOperator
from .metrics import snapshot as metrics_snapshot
from .modes import RuntimeMode

__all__ = [
    "TimestampedValue",
    "FiredTimer",
    "create_backend",
    "KeyedOperatorTestHarness",
    "KeyedProcessFunctionTestHarness",
    "KeyedCoProcessFunctionTestHarness",
]

class TimestampedValue(NamedTuple):
    """A main-output value with its timestamp (None when it has none)."""

    value: Any
    timestamp: int | None


class FiredTimer(NamedTuple):
    """A timer that fired: its timestamp, key and time domain."""

    timestamp: int
    key: Any
    time_domain: TimeDomain


def create_backend(
    backend: str | KeyedStateBackend | Callable[..., KeyedStateBackend],
    key_serializer: TypeSerializer,
    max_parallelism: int,
    **options: Any,
) -> KeyedStateBackend:
    """A keyed backend by registered name (``hashmap``/``heap``, ``rocksdb``, ``single_key``,
    a ``"module:attr"`` path), instance or factory.

    A factory is called as ``factory(key_serializer, max_parallelism, **options)``.

    Args:
        backend: the name, instance or factory.
        key_serializer: the keys' serializer.
        max_parallelism: the number of key groups.
        **options: backend options.
    Returns:
        the backend.
    """
    if isinstance(backend, KeyedStateBackend):
        return backend
    if isinstance(backend, str):
        return get_backend(backend).create(key_serializer, max_parallelism, **options)
    if callable(backend):
        return backend(key_serializer, max_parallelism, **options)
    raise ConfigurationError(
        f"backend must be a registered name, a KeyedStateBackend or a "
        f"factory, got {backend!r:.80}"
    )


def _key_serializer_for(key_type: Any) -> TypeSerializer:
    if key_type is None:
        return GenericKeySerializer.INSTANCE
    if isinstance(key_type, TypeSerializer):
        return key_type
    make = getattr(key_type, "key_serializer", None)
    if callable(make):
        return make()
    raise ConfigurationError(
        f"key_type must be a TypeInformation (e.g. Types.STRING()) or a TypeSerializer, "
        f"got {key_type!r:.80}"
    )

#: what a harness's ``backend`` argument may be: a registered name or ``"module:attr"``
#: path, an instance, or a factory
BackendSpec = str | KeyedStateBackend | Callable[..., KeyedStateBackend]


class KeyedOperatorTestHarness:
    """Drives any keyed operator (``KeyedProcessOperator``, ``ReduceOperator``, ...).

    Args:
        operator: The keyed operator under test.
        key_selectors: One key selector per input, or one for all inputs.
        key_type: The key's type: a TypeInformation (``Types.STRING()``) or a TypeSerializer;
            None serializes keys generically.
        backend: The keyed state backend: a registered name (``"hashmap"``, ``"rocksdb"``,
            ``"single_key"`` (BATCH only), a ``"module:attr"`` path), an instance, or a
            factory called as ``factory(key_serializer, max_parallelism, **options)``.
        mode: The runtime mode, or its name (``"STREAMING"``, ``"BATCH"``); FLIP-134's
            processing-time defaults per mode.
        backend_options: Options passed to the backend's constructor, or None.
        **config: ``OperatorConfig`` fields (``processing_time_allow``, ``max_parallelism``,
            ``job_parameters``, ...).

    Raises:
        ConfigurationError: An unknown ``mode``, config field or ``key_type``, or the
            ``single_key`` backend outside BATCH.
    """

    def __init__(
        self,
        operator: AbstractKeyedOperator,
        key_selectors: Any,
        key_type: Any = None,
        backend: BackendSpec = "hashmap",
        mode: RuntimeMode | str = RuntimeMode.STREAMING,
        backend_options: dict[str, Any] | None = None,
        **config: Any,
    ) -> None:
        if not isinstance(key_selectors, (list, tuple)):
            key_selectors = [key_selectors]
        config.setdefault("operator_name", type(operator).__name__)
        self.config = OperatorConfig.for_mode(mode, **config)
        self.key_serializer = _key_serializer_for(key_type)
        self._extractors = [
            KeyExtractor(selector, self.key_serializer, self.config.max_parallelism,
                         self.config.operator_name)
            for selector in key_selectors
        ]
        self._owns_backend = not isinstance(backend, KeyedStateBackend)
        self.backend = create_backend(
            backend, self.key_serializer, self.config.max_parallelism, **(backend_options or {})
        )
        self.sorted_mode = getattr(self.backend, "holds_one_key", False)
        if self.sorted_mode and not self.config.is_batch:
            raise ConfigurationError(
                "the single_key backend is BATCH-only (sorted execution, FLIP-140); "
                "use mode='BATCH' or the heap / rocksdb backend"
            )
        self.operator = operator
        self._outputs: list[Output] = []
        self._fired: list[FiredTimer] = []
        self._seen_keys: set[bytes] = set()
        self._current_key_bytes: bytes | None = None
        self._ended = False
        operator.timer_listener = self._on_timer_fired
        operator.open(self.backend, self.config)
        self._collect(operator.advance_processing_time(0))

    # -- plumbing -------------------------------------------------------------------------

    def _on_timer_fired(self, timestamp: int, key: Any, domain: TimeDomain) -> None:
        self._fired.append(FiredTimer(timestamp, key, domain))

    def _collect(self, outputs: Iterable[Output]) -> list[Output]:
        collected = list(outputs)
        self._outputs.extend(collected)
        return collected

    def _check_running(self) -> None:
        if self._ended:
            raise JobExecutionError(
                f"harness of {self.config.operator_name!r}: end_input() was called; "
                "no more input is accepted"
            )

    def _process(self, value: Any, timestamp: int | None, input_index: int) -> list[Output]:
        self._check_running()
        if not 0 <= input_index < 2:
            raise JobExecutionError(f"input_index must be 0 or 1, got {input_index!r}")
        extractor = self._extractors[input_index if input_index < len(self._extractors) else 0]
        _, key_bytes = extractor.extract(value)
        collected: list[Output] = []
        if key_bytes != self._current_key_bytes:
            if self.sorted_mode:
                if key_bytes in self._seen_keys:
                    raise StateError(
                        f"harness of {self.config.operator_name!r}: sorted execution (single_key "
                        f"backend) needs the records of a key to be contiguous, but key "
                        f"{self.key_serializer.deserialize(key_bytes)!r:.60} came back after "
                        f"another key"
                    )
                if self._current_key_bytes is not None:
                    collected += self._collect(self.operator.end_key())
                self._seen_keys.add(key_bytes)
            self.backend.set_current_key(self.key_serializer.deserialize(key_bytes), key_bytes)
            self._current_key_bytes = key_bytes
        collected += self._collect(self.operator.process_element(value, timestamp, input_index))
        return collected

    # -- input ----------------------------------------------------------------------------

    def process_element(
        self, value: Any, timestamp: int | None = None, input_index: int = 0
    ) -> list[Output]:
        """Push one record (of input ``input_index``); returns the outputs it caused.

        Args:
            value: The record.
            timestamp: The record's event timestamp in ms, or None.
            input_index: 0 for the first input, 1 for the second (two-input functions).

        Returns:
            The ``Output`` records it caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        return self._process(value, timestamp, input_index)

    def process_watermark(self, watermark: int) -> list[Output]:
        """Advance the event-time watermark (ignored in BATCH mode); returns fired outputs.

        Args:
            watermark: The new watermark in ms.

        Returns:
            The ``Output`` records fired timers caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        return self._fire(self.operator.advance_watermark, watermark)

    def _fire(self, advance: Callable[[int], Iterable[Output]], time: int) -> list[Output]:
        self._check_running()
        if not self.sorted_mode:  # firing timers switches keys (sorted mode fires at end_key)
            self._current_key_bytes = None
        return self._collect(advance(time))

    def set_processing_time(self, timestamp: int) -> list[Output]:
        """Advance processing time; returns the outputs of fired processing-time timers.

        State TTL reads this clock too (it starts at 0), so this is how a test makes state
        expire. BATCH fires no timers here (FLIP-134); sorted BATCH (single_key) applies no
        TTL, as Flink's BATCH state backend does not.

        Args:
            timestamp: The new processing time in ms.

        Returns:
            The ``Output`` records fired timers caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        return self._fire(self.operator.advance_processing_time, timestamp)

    def advance_processing_time(self, millis: int) -> list[Output]:
        """Move processing time ``millis`` forward (see :meth:`set_processing_time`).

        Args:
            millis: How far to move, in ms.

        Returns:
            The ``Output`` records fired timers caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        return self.set_processing_time(self.get_processing_time() + millis)

    def get_processing_time(self) -> int:
        """The current processing time of the harness (ms; 0 initially).

        Returns:
            The processing time in ms.
        """
        now = self.operator.clock.processing_time
        return 0 if now is None else now

    def end_input(self) -> list[Output]:
        """Signal end of input: fire remaining timers (and BATCH final results).

        Returns:
            The ``Output`` records the end of input caused.

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        self._check_running()
        collected: list[Output] = []
        if self.sorted_mode and self._current_key_bytes is not None:
            collected += self._collect(self.operator.end_key())
        collected += self._collect(self.operator.end_input())
        self._ended = True
        return collected

    # -- output ---------------------------------------------------------------------------

    def get_output(self) -> list[Any]:
        """Main-output values, in emission order.

        Returns:
            The values.
        """
        return [out.value for out in self._outputs if out.tag is None]

    def get_output_records(self) -> list[TimestampedValue]:
        """Main-output values with their timestamps.

        Returns:
            ``TimestampedValue(value, timestamp)`` per output.
        """
        return [TimestampedValue(out.value, out.timestamp) for out in self._outputs if out.tag is None]

    def get_side_output(self, tag: OutputTag | str) -> list[Any]:
        """Values emitted to side output ``tag`` (an OutputTag or its tag_id).

        Args:
            tag: The ``OutputTag`` or its ``tag_id``.

        Returns:
            The values, in emission order.
        """
        tag_id = tag.tag_id if isinstance(tag, OutputTag) else tag
        return [out.value for out in self._outputs if out.tag == tag_id]

    def get_raw_output(self) -> list[Output]:
        """Every ``Output(tag, value, timestamp)``, main and side, in emission order.

        Returns:
            The outputs.
        """
        return list(self._outputs)

    def clear_output(self) -> None:
        """Forget the outputs collected so far."""
        self._outputs.clear()

    # -- timers ---------------------------------------------------------------------------

    def num_event_time_timers(self) -> int:
        """Pending event-time timers (all keys).

        Returns:
            The number of timers.
        """
        return len(self.operator.event_queue)

    def num_processing_time_timers(self) -> int:
        """Pending processing-time timers (all keys).

        Returns:
            The number of timers.
        """
        return len(self.operator.processing_queue)

    def get_metrics(self) -> dict[str, Any]:
        """The current values of the function's metrics (``get_metrics_group()``), by full
        name: an int per counter, the value of each gauge, ``{"count", "rate"}`` per meter and
        ``{"count", "sum", "min", "max", "mean"}`` per distribution.

        Returns:
            The values (empty when the function registered none).
        """
        return metrics_snapshot(self.config.operator_name, self.config.subtask_index)

    def fired_timers(self) -> list[FiredTimer]:
        """Every timer that fired so far, in firing order.

        Returns:
            ``FiredTimer`` records.
        """
        return list(self._fired)

    # -- state ----------------------------------------------------------------------------

    def _registered(self) -> dict[str, tuple[str, Any]]:
        states = dict(self.operator.runtime_context.registered_states)
        internal = getattr(self.operator, "state_descriptor", None)
        if isinstance(internal, StateDescriptor):
            states.setdefault(internal.name, ("get_state", internal))
        return states

    def _resolve(self, descriptor_or_name: Any) -> tuple[str, Any]:
        registered = self._registered()
        if isinstance(descriptor_or_name, str):
            found = registered.get(descriptor_or_name)
            if found is None:
                raise StateError(
                    f"harness of {self.config.operator_name!r}: no state named "
                    f"{descriptor_or_name!r} was acquired by the function (known: "
                    f"{sorted(registered)})"
                )
            return found
        if isinstance(descriptor_or_name, StateDescriptor):
            found = registered.get(descriptor_or_name.name)
            method = found[0] if found is not None else "get_state"
            return method, descriptor_or_name
        raise StateError(
            f"harness: a state descriptor or state name is needed, got {descriptor_or_name!r:.80}"
        )

    def _read(self, method: str, descriptor: Any) -> Any:
        backend = self.backend
        if method == "get_temporal_value_state":
            sorted_state = backend.get_temporal_value_state(descriptor).sorted_state
            return {t: values[-1] for t, values in _all_sorted(sorted_state)}
        if method == "get_temporal_list_state":
            sorted_state = backend.get_temporal_list_state(descriptor).sorted_state
            return {t: list(values) for t, values in _all_sorted(sorted_state)}
        kind = descriptor.kind if isinstance(descriptor, StateDescriptor) else None
        if kind is StateKind.SORTED:
            return [(k, list(v)) for k, v in _all_sorted(backend.get_binary_sorted_state(descriptor))]
        if kind is StateKind.VALUE:
            return backend.get_state(descriptor).value()
        if kind is StateKind.LIST:
            return list(backend.get_state(descriptor).get())
        if kind is StateKind.MAP:
            return dict(backend.get_state(descriptor).items())
        if kind in (StateKind.REDUCING, StateKind.AGGREGATING):
            return backend.get_state(descriptor).get()
        raise StateError(f"harness: cannot read state of descriptor {descriptor!r}")

    def get_state(self, key: Any, descriptor: Any) -> Any:
        """Contents of a state for ``key``: value / list / dict / reduced value.

        ``descriptor`` is a state descriptor or the name of a state the function
        acquired. Temporal states read as ``{timestamp: value(s)}``, sorted states
        as ``[(sort_key, values), ...]``. The single-key backend only holds the
        current key's state.

        Args:
            key: The key.
            descriptor: The state descriptor or state name.

        Returns:
            The state's contents for ``key``.

        Raises:
            StateError: On the single_key backend, ``key`` is not the current key.
        """
        method, descriptor = self._resolve(descriptor)
        key_bytes = self.key_serializer.serialize(key)
        backend = self.backend
        previous_bytes: Optional[bytes]
        try:
            previous_bytes = backend.get_current_key_bytes()
            previous_key = backend.get_current_key()
        except StateError:
            previous_bytes = previous_key = None
        if self.sorted_mode and key_bytes != previous_bytes:
            raise StateError(
                f"harness of {self.config.operator_name!r}: the single_key backend only holds "
                f"the current key's state ({previous_key!r:.60}), not key {key!r:.60}"
            )
        if key_bytes == previous_bytes:
            return self._read(method, descriptor)
        backend.set_current_key(self.key_serializer.deserialize(key_bytes), key_bytes)
        try:
            return self._read(method, descriptor)
        finally:
            if previous_bytes is not None:
                backend.set_current_key(previous_key, previous_bytes)

    def get_value_state(self, key: Any, descriptor_or_name: Any) -> Any:
        """Value of a ValueState for ``key`` (None when unset).

        Args:
            key: The key.
            descriptor_or_name: The ValueStateDescriptor or the state's name.

        Returns:
            The value, or None.
        """
        return self.get_state(key, descriptor_or_name)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the operator (and the backend when the harness created it)."""
        self.operator.close()
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> KeyedOperatorTestHarness:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _all_sorted(sorted_state: Any) -> list[tuple[Any, list[Any]]]:
    first = sorted_state.first_entry()
    if first is None:
        return []
    return [(k, list(v)) for k, v in sorted_state.read_range_from(first[0])]


class KeyedProcessFunctionTestHarness(KeyedOperatorTestHarness):
    """Harness for a ``KeyedProcessFunction`` (runs it in a ``KeyedProcessOperator``).

    Args:
        function: The ``KeyedProcessFunction`` under test.
        key_selector: Gives each input record's key (a KeySelector or a callable).
        key_type: The key's type, as for ``KeyedOperatorTestHarness``.
        backend: The keyed state backend, as for ``KeyedOperatorTestHarness``.
        mode: The runtime mode, or its name.
        backend_options: Options passed to the backend's constructor, or None.
        **config: ``OperatorConfig`` fields.

    Raises:
        ConfigurationError: As for ``KeyedOperatorTestHarness``.
    """

    def __init__(self, function: Any, key_selector: Any, key_type: Any = None,
                 backend: BackendSpec = "hashmap", mode: RuntimeMode | str = RuntimeMode.STREAMING,
                 backend_options: dict[str, Any] | None = None, **config: Any) -> None:
        config.setdefault("operator_name", type(function).__name__)
        super().__init__(
            KeyedProcessOperator(function),
            [key_selector],
            key_type,
            backend,
            mode,
            backend_options,
            **config,
        )

    def process_element(
        self, value: Any, timestamp: int | None = None, input_index: int = 0
    ) -> list[Output]:
        """Push one record of the function's one input; returns the outputs it caused.

        Args:
            value: A record of the function's input.
            timestamp: Its event timestamp in ms, or None.
            input_index: 0: a keyed process function has one input.

        Returns:
            The ``Output`` records it caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
            ConfigurationError: ``input_index`` is not 0.
        """
        if input_index != 0:
            raise ConfigurationError(
                f"KeyedProcessFunctionTestHarness({self.config.operator_name!r}): a keyed "
                f"process function has one input (input_index 0), got input_index={input_index!r}")
        return self._process(value, timestamp, 0)


class KeyedCoProcessFunctionTestHarness(KeyedOperatorTestHarness):
    """Harness for a ``KeyedCoProcessFunction`` (two keyed inputs, one key space).

    Args:
        function: The ``KeyedCoProcessFunction`` under test.
        key_selector1: Gives each first-input record's key.
        key_selector2: Gives each second-input record's key; None uses ``key_selector1``.
        key_type: The key's type, as for ``KeyedProcessFunctionTestHarness``.
        backend: The keyed state backend, as for ``KeyedProcessFunctionTestHarness``.
        mode: The runtime mode, or its name.
        backend_options: Options passed to the backend's constructor, or None.
        **config: ``OperatorConfig`` fields.

    Raises:
        ConfigurationError: As for ``KeyedProcessFunctionTestHarness``.
    """

    def __init__(self, function: Any, key_selector1: Any, key_selector2: Any = None,
                 key_type: Any = None, backend: BackendSpec = "hashmap",
                 mode: RuntimeMode | str = RuntimeMode.STREAMING,
                 backend_options: dict[str, Any] | None = None, **config: Any) -> None:
        config.setdefault("operator_name", type(function).__name__)
        selectors = [key_selector1, key_selector2 if key_selector2 is not None else key_selector1]
        super().__init__(
            KeyedCoProcessOperator(function),
            selectors,
            key_type,
            backend,
            mode,
            backend_options,
            **config,
        )

    def process_element1(self, value: Any, timestamp: int | None = None) -> list[Output]:
        """Push a record of the first input.

        Args:
            value: A record of the first input.
            timestamp: The record's event timestamp in ms, or None.

        Returns:
            The ``Output`` records it caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        return self._process(value, timestamp, 0)

    def process_element2(self, value: Any, timestamp: int | None = None) -> list[Output]:
        """Push a record of the second input.

        Args:
            value: A record of the second input.
            timestamp: Its event timestamp in ms, or None.

        Returns:
            The ``Output`` records it caused (main and side outputs).

        Raises:
            JobExecutionError: ``end_input()`` was already called.
        """
        return self._process(value, timestamp, 1)
