"""The broadcast state operator: a (Keyed)BroadcastProcessFunction with its broadcast states.

:class:`BroadcastProcessOperator` is a keyed operator (kind ``broadcast``) whose inputs are
the other stream (``input_index`` 0) and the broadcast stream (:data:`BROADCAST_INPUT`).
It runs where keyed operators run - a BATCH keyed pass, a STREAMING key group - and the
drivers give it every broadcast element before the other input's elements of the same
batch (BATCH: the whole broadcast input first, Flink's rule; STREAMING: the broadcast
elements of a micro-batch before its other elements).

* Broadcast state is operator state: :class:`BroadcastStates` holds one map per
  ``MapStateDescriptor`` declared in ``ds.broadcast(...)``, Python objects keyed by
  their serialized key. Its snapshot is unified entries with key group
  :data:`OPERATOR_STATE_KEY_GROUP` (-1), no key, no namespace, the map key's bytes as
  user key and the value's bytes as value; its meta infos have the void key serializer.
* ``process_broadcast_element`` gets a writable :class:`BroadcastState`;
  ``process_element`` and ``on_timer`` a read-only view whose writes raise
  ``BroadcastStateError`` naming the operator, the state, the call and the element.
* Every parallel instance processes every broadcast element; what
  ``process_broadcast_element`` emits is kept once per parallel instance
  (``emit_broadcast_outputs``: a STREAMING key group keeps it when it is the first key
  group of its subtask, as Flink's instances each emit it).
* The non-keyed variant (``BroadcastProcessFunction``) runs on the same operator with
  ``keyed=False``: no keyed state (its runtime context has none), no timers, no key.

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Iterator
from typing import Any

from ..state_store.descriptors import (
    BinarySortedStateDescriptor,
    MapStateDescriptor,
    StateDescriptor,
)
from ..state_store.entries import StateEntry, StateMetaInfo
from ..state_store.exceptions import (
    DataStreamError,
    GraphBuildError,
    IncompatibleStateError,
    SerializationError,
    StateDescriptorError,
    StateError,
)
from ..state_store.namespaces import VOID_NAMESPACE, VOID_NAMESPACE_SERIALIZER
from ..state_store.row import take_emitted
from .base import Output, raise_named_serialization_error, user_function_error
from .broadcast_functions import (
    BroadcastProcessFunction,
    BroadcastState,
    KeyedBroadcastProcessFunction,
    ReadOnlyBroadcastState,
)
from .context import RuntimeContext
from .exceptions import BroadcastStateError
from .functions import OutputTag, TimeDomain, TimerService, per_record_call
from .keyed import AbstractKeyedOperator, collect_outputs
from .timers import KeyedTimerService

__all__ = [
    "BROADCAST_INPUT",
    "TICK_INPUT",
    "OPERATOR_STATE_KEY_GROUP",
    "BroadcastSpec",
    "BroadcastStates",
    "BroadcastProcessOperator",
    "emits_broadcast_outputs",
]

#: ``input_index`` of a broadcast element.
BROADCAST_INPUT = 1
#: ``input_index`` of a no-op row (BATCH sends one to every partition so each one runs).
TICK_INPUT = 2
#: Key group of broadcast (operator) state entries: they belong to no key group.
OPERATOR_STATE_KEY_GROUP = -1

_short = reprlib.Repr()
_short.maxstring = 80
_short.maxother = 80


def emits_broadcast_outputs(key_group: int, parallelism: int, max_parallelism: int) -> bool:
    """Whether ``key_group`` is the first key group of its subtask (Flink's operator index
    ``key_group * parallelism // max_parallelism``): the one of its subtask that keeps what
    ``process_broadcast_element`` emits, so it is emitted once per parallel instance."""
    if key_group <= 0:
        return True
    index = key_group * parallelism // max_parallelism
    return index != (key_group - 1) * parallelism // max_parallelism


class BroadcastSpec:
    """What a broadcast node runs: the user function, the declared broadcast state
    descriptors, whether the other input is keyed, and (BATCH restore) the broadcast state
    to start from as ``(meta infos, entries)``. Picklable; checked when built."""

    def __init__(self, function: Any, descriptors: Iterable[Any], keyed: bool,
                 restored: tuple[list[StateMetaInfo], list[StateEntry]] | None = None) -> None:
        expected = KeyedBroadcastProcessFunction if keyed else BroadcastProcessFunction
        if not isinstance(function, expected):
            raise GraphBuildError(
                f"a broadcast operator on a {'keyed' if keyed else 'non-keyed'} stream needs a "
                f"{expected.__name__}, got {type(function).__name__} {function!r:.80}")
        self.function = function
        self.descriptors = tuple(descriptors)
        names = [d.name for d in self.descriptors]
        if not self.descriptors or len(set(names)) != len(names) or not all(
                isinstance(d, MapStateDescriptor) for d in self.descriptors):
            raise GraphBuildError(
                f"broadcast state descriptors must be MapStateDescriptors with distinct names, "
                f"got {list(self.descriptors)!r:.200}")
        self.keyed = bool(keyed)
        self.restored = restored

    def meta_infos(self) -> list[StateMetaInfo]:
        """Meta infos of the declared broadcast states (void key and namespace)."""
        return [d.meta_info(VOID_NAMESPACE_SERIALIZER, VOID_NAMESPACE_SERIALIZER)
                for d in self.descriptors]

    def with_restored(self, metas: list[StateMetaInfo], entries: list[StateEntry]) -> BroadcastSpec:
        """A copy that starts from the broadcast state ``(metas, entries)``."""
        return BroadcastSpec(self.function, self.descriptors, self.keyed, (metas, entries))

    def __repr__(self) -> str:
        return (f"BroadcastSpec({type(self.function).__name__}, "
                f"{[d.name for d in self.descriptors]}, keyed={self.keyed})")


def check_broadcast_compatible(stored: StateMetaInfo, descriptor: MapStateDescriptor,
                               where: str) -> None:
    """Refuse restoring broadcast state ``stored`` into ``descriptor`` when their kinds or
    serializers differ (``IncompatibleStateError`` naming ``where``, the state and both)."""
    current = descriptor.meta_info(VOID_NAMESPACE_SERIALIZER, VOID_NAMESPACE_SERIALIZER)
    problems = []
    if stored.kind is not current.kind:
        problems.append(f"kind {stored.kind.value} (savepoint) != {current.kind.value} (program)")
    for attr in ("user_key_serializer", "value_serializer"):
        a, b = getattr(stored, attr), getattr(current, attr)
        if a != b:
            problems.append(f"{attr}: savepoint {a!r} != program {b!r}")
    if problems:
        raise IncompatibleStateError(
            f"{where}, broadcast state {descriptor.name!r}: savepoint state is incompatible "
            f"with the program: {'; '.join(problems)}")


class BroadcastStates:
    """One operator instance's broadcast states: per declared descriptor a dict
    ``key bytes -> (key, value)``. States restored under a name no descriptor declares are
    kept as they came and snapshotted again (as operator state is)."""

    def __init__(self, descriptors: Iterable[MapStateDescriptor], operator_name: str = "operator"
                 ) -> None:
        self.descriptors = {d.name: d for d in descriptors}
        self.maps: dict[str, dict[bytes, tuple[Any, Any]]] = {n: {} for n in self.descriptors}
        self.unclaimed: dict[str, tuple[StateMetaInfo, list[StateEntry]]] = {}
        self.operator_name = operator_name

    def restore(self, metas: Iterable[StateMetaInfo], entries: Iterable[StateEntry]) -> None:
        """Replace the states with ``entries`` (broadcast state entries) under ``metas``."""
        by_name = {m.name: m for m in metas}
        rows: dict[str, list[StateEntry]] = {}
        for entry in entries:
            if entry.state_name not in by_name:
                raise IncompatibleStateError(
                    f"operator {self.operator_name!r}: broadcast state entry of {entry.state_name!r} "
                    f"has no meta info (restored states: {sorted(by_name)})")
            rows.setdefault(entry.state_name, []).append(entry)
        self.unclaimed = {}
        for name, entries_of in self.maps.items():
            if name not in by_name:
                entries_of.clear()
        for name, meta in by_name.items():
            descriptor = self.descriptors.get(name)
            if descriptor is None:
                self.unclaimed[name] = (meta, rows.get(name, []))
                continue
            check_broadcast_compatible(meta, descriptor, f"operator {self.operator_name!r}")
            key_ser, value_ser = descriptor.user_key_serializer, descriptor.value_serializer
            target = self.maps[name]
            target.clear()  # in place: views of this map stay valid
            for entry in rows.get(name, []):
                try:
                    target[bytes(entry.user_key)] = (key_ser.deserialize(entry.user_key),
                                                     value_ser.deserialize(entry.value))
                except Exception as exc:
                    raise SerializationError(
                        f"operator {self.operator_name!r}: cannot read restored broadcast state "
                        f"{name!r} entry {bytes(entry.user_key)!r:.60}: {exc}") from exc

    def meta_infos(self) -> list[StateMetaInfo]:
        """Meta infos of the declared states and of the unclaimed restored ones, by name."""
        metas = {n: d.meta_info(VOID_NAMESPACE_SERIALIZER, VOID_NAMESPACE_SERIALIZER)
                 for n, d in self.descriptors.items()}
        metas.update({n: meta for n, (meta, _) in self.unclaimed.items()})
        return [metas[n] for n in sorted(metas)]

    def snapshot(self) -> list[StateEntry]:
        """The states as entries in canonical order (state name, map key bytes)."""
        out: list[StateEntry] = []
        for name in sorted(set(self.maps) | set(self.unclaimed)):
            if name in self.unclaimed:
                out.extend(sorted(self.unclaimed[name][1], key=lambda e: bytes(e.user_key)))
                continue
            serialize = self.descriptors[name].value_serializer.serialize
            entries = self.maps[name]
            for key_bytes in sorted(entries):
                try:
                    value = serialize(entries[key_bytes][1])
                except Exception as exc:
                    raise SerializationError(
                        f"operator {self.operator_name!r}: broadcast state {name!r} cannot "
                        f"serialize the value of key {entries[key_bytes][0]!r:.60}: {exc}") from exc
                out.append(StateEntry(OPERATOR_STATE_KEY_GROUP, name, b"", b"", key_bytes, value))
        return out

    def is_empty(self) -> bool:
        return not any(self.maps.values()) and not any(e for _, e in self.unclaimed.values())


class _StateView:
    """Reads of one broadcast state (the map of :class:`BroadcastStates`)."""

    def __init__(self, descriptor: MapStateDescriptor, entries: dict[bytes, tuple[Any, Any]],
                 operator_name: str) -> None:
        #: read by error reports (``base.raise_named_serialization_error`` names the state)
        self.descriptor = descriptor
        self.entries = entries
        self.operator_name = operator_name
        self.key_serializer = descriptor.user_key_serializer
        self.value_serializer = descriptor.value_serializer

    def key_bytes(self, key: Any) -> bytes:
        try:
            return self.key_serializer.serialize(key)
        except Exception as exc:
            raise SerializationError(
                f"operator {self.operator_name!r}: broadcast state {self.descriptor.name!r} "
                f"cannot serialize key {key!r:.60} with {self.key_serializer!r}: {exc}") from exc

    def get(self, key: Any) -> Any:
        found = self.entries.get(self.key_bytes(key))
        return None if found is None else found[1]

    def contains(self, key: Any) -> bool:
        return self.key_bytes(key) in self.entries

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self.entries.values()))

    def keys(self) -> Iterator[Any]:
        return iter([k for k, _ in self.entries.values()])

    def values(self) -> Iterator[Any]:
        return iter([v for _, v in self.entries.values()])

    def is_empty(self) -> bool:
        return not self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.descriptor.name!r}, {len(self.entries)} entries)"


class WritableBroadcastState(_StateView, BroadcastState[Any, Any]):
    """The broadcast state ``process_broadcast_element`` gets."""

    def put(self, key: Any, value: Any) -> None:
        key_bytes = self.key_bytes(key)
        try:
            self.value_serializer.serialize(value)  # refuse a value the state cannot hold now
        except Exception as exc:
            raise SerializationError(
                f"operator {self.operator_name!r}: broadcast state {self.descriptor.name!r} "
                f"cannot hold value {value!r:.60} ({self.value_serializer!r}): {exc}") from exc
        self.entries[key_bytes] = (key, value)

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for key, value in dict(dict_value).items():
            self.put(key, value)

    def remove(self, key: Any) -> None:
        self.entries.pop(self.key_bytes(key), None)

    def clear(self) -> None:
        self.entries.clear()


class ReadOnlyBroadcastStateView(_StateView, ReadOnlyBroadcastState[Any, Any]):
    """The broadcast state ``process_element`` / ``on_timer`` get: writes are refused."""

    def __init__(self, descriptor: MapStateDescriptor, entries: dict[bytes, tuple[Any, Any]],
                 operator_name: str, context: Any) -> None:
        super().__init__(descriptor, entries, operator_name)
        self.context = context

    def refuse(self, call: str) -> BroadcastStateError:
        ctx = self.context
        return BroadcastStateError(
            f"operator {self.operator_name!r}: broadcast state {self.descriptor.name!r} is "
            f"read-only in {ctx.method}; {call} refused while processing "
            f"{_short.repr(ctx.value)} (only process_broadcast_element may change broadcast "
            f"state)")

    def put(self, key: Any, value: Any) -> None:
        raise self.refuse(f"put({_short.repr(key)}, {_short.repr(value)})")

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        raise self.refuse("put_all(...)")

    def remove(self, key: Any) -> None:
        raise self.refuse(f"remove({_short.repr(key)})")

    def clear(self) -> None:
        raise self.refuse("clear()")

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


# -- contexts ---------------------------------------------------------------------------------


class _ContextBase:
    """What every broadcast context shares: the element, its timestamp, clocks, side outputs."""

    method = "process_element"

    def __init__(self, operator: BroadcastProcessOperator) -> None:
        self.operator = operator
        self.element_timestamp: int | None = None
        self.value: Any = None
        self.side_outputs: list[Output] = []
        self.views: dict[str, Any] = {}

    def timestamp(self) -> int | None:
        return self.element_timestamp

    def current_processing_time(self) -> int:
        return self.operator.clock.current_processing_time()

    def current_watermark(self) -> int:
        return self.operator.clock.watermark

    def output(self, output_tag: OutputTag, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(
                f"operator {self.operator.operator_name!r}: ctx.output() needs an OutputTag as "
                f"first argument, got {type(output_tag).__name__} {output_tag!r:.60}")
        self.side_outputs.append(Output(output_tag.tag_id, take_emitted(value), self.element_timestamp))

    def get_broadcast_state(self, state_descriptor: Any) -> Any:
        name = getattr(state_descriptor, "name", None)
        view = self.views.get(name) if isinstance(name, str) else None
        if view is not None and view.descriptor is state_descriptor:
            return view
        declared = self.operator.declared(state_descriptor, "get_broadcast_state")
        view = self.views.get(declared.name)
        if view is None:
            view = self.views[declared.name] = self.new_view(declared)
        return view

    def new_view(self, descriptor: MapStateDescriptor) -> Any:
        entries = self.operator.broadcast_states.maps[descriptor.name]
        return ReadOnlyBroadcastStateView(descriptor, entries, self.operator.operator_name, self)


class _WritableContextBase(_ContextBase):
    method = "process_broadcast_element"

    def new_view(self, descriptor: MapStateDescriptor) -> Any:
        entries = self.operator.broadcast_states.maps[descriptor.name]
        return WritableBroadcastState(descriptor, entries, self.operator.operator_name)


class NonKeyedReadOnlyContext(_ContextBase, BroadcastProcessFunction.ReadOnlyContext):
    """``BroadcastProcessFunction.process_element``'s context."""


class NonKeyedWritableContext(_WritableContextBase, BroadcastProcessFunction.Context):
    """``BroadcastProcessFunction.process_broadcast_element``'s context."""


class KeyedReadOnlyContext(_ContextBase, KeyedBroadcastProcessFunction.ReadOnlyContext):
    """``KeyedBroadcastProcessFunction.process_element``'s context."""

    def __init__(self, operator: BroadcastProcessOperator, timer_service: TimerService) -> None:
        super().__init__(operator)
        self.timers = timer_service

    def timer_service(self) -> TimerService:
        return self.timers

    def get_current_key(self) -> Any:
        return self.operator.backend.get_current_key()


class KeyedOnTimerContext(KeyedReadOnlyContext, KeyedBroadcastProcessFunction.OnTimerContext):
    """``KeyedBroadcastProcessFunction.on_timer``'s context."""

    method = "on_timer"

    def __init__(self, operator: BroadcastProcessOperator, timer_service: TimerService) -> None:
        super().__init__(operator, timer_service)
        self.domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self.domain


class KeyedWritableContext(_WritableContextBase, KeyedBroadcastProcessFunction.Context):
    """``KeyedBroadcastProcessFunction.process_broadcast_element``'s context."""

    def apply_to_keyed_state(self, state_descriptor: Any, function: Any) -> None:
        self.operator.apply_to_keyed_state(state_descriptor, function)


# -- the operator -----------------------------------------------------------------------------


class BroadcastProcessOperator(AbstractKeyedOperator):
    """Runs a :class:`BroadcastSpec`: ``input_index`` 0 calls ``process_element``,
    :data:`BROADCAST_INPUT` ``process_broadcast_element`` (no current key needed)."""

    def __init__(self, function: BroadcastSpec, name: str | None = None) -> None:
        super().__init__(name)
        if not isinstance(function, BroadcastSpec):
            raise GraphBuildError(
                f"BroadcastProcessOperator needs a BroadcastSpec, got {function!r:.80}")
        self.spec = function
        self.keyed = function.keyed
        #: whether what process_broadcast_element emits is kept (once per parallel instance)
        self.emit_broadcast_outputs = True
        self.broadcast_states = BroadcastStates(function.descriptors, name or "operator")
        if function.restored is not None:
            self.broadcast_states.restore(*function.restored)

    def _definition(self) -> dict[str, Any]:
        return {"function": self.spec, "name": self.name}

    def __repr__(self) -> str:
        return f"BroadcastProcessOperator({self.spec!r}, name={self.name!r})"

    # -- lifecycle --------------------------------------------------------------------------
    def open_operator(self) -> None:
        self.broadcast_states.operator_name = self.operator_name
        function = self.spec.function
        runtime_context = self.runtime_context
        if self.keyed:
            timers = KeyedTimerService(self.clock, self.event_queue, self.processing_queue,
                                       VOID_NAMESPACE)
            self._read_ctx: _ContextBase = KeyedReadOnlyContext(self, timers)
            self._timer_ctx = KeyedOnTimerContext(self, timers)
            self._write_ctx: _ContextBase = KeyedWritableContext(self)
        else:
            runtime_context = RuntimeContext(self.config, None)  # no keyed state, as in Flink
            self._read_ctx = NonKeyedReadOnlyContext(self)
            self._write_ctx = NonKeyedWritableContext(self)
        self._process = per_record_call(function.process_element)
        self._process_broadcast = function.process_broadcast_element
        self._on_timer = getattr(function, "on_timer", None)
        self.open_function(function, runtime_context)

    def close_operator(self) -> None:
        self.close_function(self.spec.function)

    def declared(self, descriptor: Any, method: str) -> MapStateDescriptor:
        """The declared descriptor ``descriptor`` names; ``StateDescriptorError`` otherwise."""
        name = self.operator_name
        if not isinstance(descriptor, MapStateDescriptor):
            raise StateDescriptorError(
                f"operator {name!r}: {method}() needs the MapStateDescriptor of a broadcast "
                f"state, got {type(descriptor).__name__} {descriptor!r:.80}")
        declared = self.broadcast_states.descriptors.get(descriptor.name)
        if declared is None:
            raise StateDescriptorError(
                f"operator {name!r}: {method}({descriptor!r}): no broadcast state "
                f"{descriptor.name!r} was declared; pass its descriptor to ds.broadcast(...) "
                f"(declared: {sorted(self.broadcast_states.descriptors)})")
        if declared is not descriptor and not declared.is_compatible_with(descriptor):
            raise StateDescriptorError(
                f"operator {name!r}: {method}({descriptor!r}): broadcast state "
                f"{descriptor.name!r} was declared with key serializer "
                f"{declared.user_key_serializer!r} and value serializer "
                f"{declared.value_serializer!r}, not {descriptor.user_key_serializer!r} and "
                f"{descriptor.value_serializer!r}")
        return declared

    # -- elements ---------------------------------------------------------------------------
    def _call(self, method: str, call: Any, ctx: _ContextBase, value: Any,
              timestamp: int | None) -> list[Output]:
        ctx.element_timestamp = timestamp
        ctx.value = value
        out: list[Output] = []
        ctx.side_outputs = out
        try:
            result = call(value, ctx)
            if result is not None:
                collect_outputs(result, out, timestamp)
        except SerializationError as exc:
            raise_named_serialization_error(exc, self.operator_name, method, value)
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(self.operator_name, method, value, exc) from exc
        return out

    def process_element(self, value: Any, timestamp: int | None,
                        input_index: int = 0) -> list[Output]:
        if input_index == BROADCAST_INPUT:
            return self.process_broadcast(value, timestamp)
        return self._call("process_element", self._process, self._read_ctx, value, timestamp)

    def process_broadcast(self, value: Any, timestamp: int | None) -> list[Output]:
        """One broadcast element; its outputs unless another instance of this subtask emits them."""
        out = self._call("process_broadcast_element", self._process_broadcast, self._write_ctx,
                         value, timestamp)
        return out if self.emit_broadcast_outputs else []

    def apply_to_keyed_state(self, descriptor: Any, function: Any) -> None:
        """``function(key, state)`` for every key with a value in ``descriptor``'s state (the
        key is current while it runs)."""
        name = self.operator_name
        if not isinstance(descriptor, StateDescriptor):
            raise StateDescriptorError(
                f"operator {name!r}: apply_to_keyed_state() needs a keyed state descriptor, "
                f"got {type(descriptor).__name__} {descriptor!r:.80}")
        call = function if callable(function) else getattr(function, "process", None)
        if not callable(call):
            raise StateError(
                f"operator {name!r}: apply_to_keyed_state() needs a function(key, state) or an "
                f"object with process(key, state), got {function!r:.80}")
        backend = self.backend
        if isinstance(descriptor, BinarySortedStateDescriptor):
            state = backend.get_binary_sorted_state(descriptor)
        else:
            state = backend.get_state(descriptor)
        for key in list(backend.keys(descriptor.name)):
            backend.set_current_key(key)
            call(key, state)

    # -- timers -----------------------------------------------------------------------------
    def _timer(self, timestamp: int, domain: TimeDomain) -> list[Output]:
        if self._on_timer is None:
            return []
        ctx = self._timer_ctx
        ctx.domain = domain
        return self._call(f"on_timer ({domain.name})", lambda _v, c: self._on_timer(timestamp, c),
                          ctx, timestamp, timestamp)

    def on_event_time(self, timestamp: int, namespace: Any) -> list[Output]:
        return self._timer(timestamp, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timestamp: int, namespace: Any) -> list[Output]:
        return self._timer(timestamp, TimeDomain.PROCESSING_TIME)
