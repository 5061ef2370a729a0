"""The broadcast state pattern's user API, with PyFlink's names and signatures.

``ds.broadcast(MapStateDescriptor(...), ...)`` gives a ``BroadcastStream``; connecting a
stream to it and calling ``process`` runs a :class:`BroadcastProcessFunction` (non-keyed
stream) or a :class:`KeyedBroadcastProcessFunction` (keyed stream):

* ``process_broadcast_element(value, ctx)`` sees every element of the broadcast stream
  in every parallel instance; ``ctx.get_broadcast_state(descriptor)`` is a writable
  :class:`BroadcastState` (keyed variant: ``ctx.apply_to_keyed_state(descriptor, fn)``
  calls ``fn(key, state)`` for every key that has that keyed state);
* ``process_element(value, ctx)`` sees the other stream; its broadcast state is a
  :class:`ReadOnlyBroadcastState` (a write raises ``BroadcastStateError``); the keyed
  variant also has keyed state, ``ctx.get_current_key()`` and timers (``on_timer``).

Whatever the methods yield is the main output; ``yield (output_tag, value)`` or
``ctx.output(output_tag, value)`` emits to a side output. The classes subscript as
PyFlink's ``Generic`` ones do (``KeyedBroadcastProcessFunction[str, tuple, tuple, str]``).

No Spark imports: this module runs inside Spark's Python workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

from ..state_store.functions import Function
from .functions import OutputTag, TimeDomain, TimerService

__all__ = [
    "ReadOnlyBroadcastState",
    "BroadcastState",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "KeyedBroadcastProcessFunction",
    "OperatorStateStore",
]

K = TypeVar("K")
V = TypeVar("V")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")


class ReadOnlyBroadcastState(ABC, Generic[K, V]):
    """A read-only view of a :class:`BroadcastState` (what ``process_element`` gets).

    Do not modify the objects :meth:`get` or :meth:`items` return: they are the stored
    values, not copies."""

    @abstractmethod
    def get(self, key: K) -> V | None:
        """The value of ``key``, or None.

        Args:
            key: The key.

        Returns:
            The value, or None.
        """

    @abstractmethod
    def contains(self, key: K) -> bool:
        """Whether ``key`` has a value.

        Args:
            key: The key.

        Returns:
            Whether ``key`` has a value.
        """

    @abstractmethod
    def items(self) -> Iterable[tuple[K, V]]:
        """Every ``(key, value)`` mapping.

        Returns:
            The mappings.
        """

    @abstractmethod
    def keys(self) -> Iterable[K]:
        """Every key.

        Returns:
            The key of every mapping.
        """

    @abstractmethod
    def values(self) -> Iterable[V]:
        """Every value.

        Returns:
            The value of every mapping.
        """

    @abstractmethod
    def is_empty(self) -> bool:
        """True when the state holds no mapping.

        Returns:
            Whether the state is empty.
        """

    @abstractmethod
    def clear(self) -> None:
        """Remove every mapping (refused on a read-only view)."""

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(cast(K, key))  # the container protocol takes any object

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """The broadcast state of one ``MapStateDescriptor``, writable (``process_broadcast_element``).

    Every parallel instance keeps its own copy and sees the same broadcast elements, so
    the copies stay equal as long as the function updates the state only from the
    broadcast elements (not from, e.g., random numbers or the wall clock)."""

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        """Set the value of ``key``.

        Args:
            key: The key.
            value: The value.
        """

    @abstractmethod
    def put_all(self, dict_value: dict[K, V]) -> None:
        """Set every mapping of ``dict_value``.

        Args:
            dict_value: The mappings.
        """

    @abstractmethod
    def remove(self, key: K) -> None:
        """Remove the mapping of ``key`` (no-op when absent).

        Args:
            key: The key.
        """

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class OperatorStateStore(ABC):
    """Where an operator's broadcast state lives (PyFlink's ``OperatorStateStore``): the
    context of ``process_broadcast_element`` is one."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState[Any, Any]:
        """The broadcast state of ``state_descriptor``.

        Args:
            state_descriptor: The ``MapStateDescriptor``.

        Returns:
            The ``BroadcastState``.
        """


class BaseBroadcastProcessFunction(Function):
    """What :class:`BroadcastProcessFunction` and :class:`KeyedBroadcastProcessFunction` share."""

    class BaseContext(ABC):
        """The context of every method of a broadcast process function."""

        @abstractmethod
        def timestamp(self) -> int | None:
            """Timestamp of the element being processed (of the timer in ``on_timer``), or None.

            Returns:
                The timestamp in ms, or None.
            """

        @abstractmethod
        def current_processing_time(self) -> int:
            """Current processing time in ms (raises under ``pipeline.processing-time.allow=FAIL``).

            Returns:
                The processing time in ms.

            Raises:
                ProcessingTimeError: ``pipeline.processing-time.allow`` is FAIL.
            """

        @abstractmethod
        def current_watermark(self) -> int:
            """Current event-time watermark in ms.

            Returns:
                The watermark in ms.
            """

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``.

            Args:
                output_tag: The side output's ``OutputTag``.
                value: The value.
            """

    class Context(BaseContext, OperatorStateStore):
        """The context of ``process_broadcast_element``: read/write broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState[Any, Any]:
            """The broadcast state of ``state_descriptor`` (a MapStateDescriptor declared in
            ``ds.broadcast(...)``), writable.

            Args:
                state_descriptor: The ``MapStateDescriptor``.

            Returns:
                The ``BroadcastState``.
            """

    class ReadOnlyContext(BaseContext):
        """The context of ``process_element``: read-only broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: Any) -> ReadOnlyBroadcastState[Any, Any]:
            """A read-only view of the broadcast state of ``state_descriptor``.

            Args:
                state_descriptor: The ``MapStateDescriptor``.

            Returns:
                The ``ReadOnlyBroadcastState``.
            """


_BaseContext = BaseBroadcastProcessFunction.Context
_BaseReadOnlyContext = BaseBroadcastProcessFunction.ReadOnlyContext


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """Connects a non-keyed stream (``process_element``) with a broadcast stream
    (``process_broadcast_element``): ``ds.connect(broadcast_stream).process(f)``."""

    class Context(_BaseContext, ABC):
        """The context of ``process_broadcast_element``."""

    class ReadOnlyContext(_BaseReadOnlyContext, ABC):
        """The context of ``process_element``."""

    @abstractmethod
    def process_element(self, value: IN1, ctx: BroadcastProcessFunction.ReadOnlyContext
                        ) -> Iterable[OUT] | None:
        """Yield the outputs for an element of the non-broadcast stream.

        Args:
            value: The element.
            ctx: Read-only broadcast state, timestamp, processing time, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    @abstractmethod
    def process_broadcast_element(self, value: IN2, ctx: BroadcastProcessFunction.Context
                                  ) -> Iterable[OUT] | None:
        """Yield the outputs for an element of the broadcast stream (once per parallel
        instance: every instance processes every broadcast element).

        Args:
            value: The broadcast element.
            ctx: Writable broadcast state, timestamp, processing time, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    """Connects a keyed stream (``process_element``, with keyed state and timers) with a
    broadcast stream (``process_broadcast_element``):
    ``keyed.connect(broadcast_stream).process(f)``."""

    class Context(_BaseContext, ABC):
        """The context of ``process_broadcast_element``."""

        @abstractmethod
        def apply_to_keyed_state(self, state_descriptor: Any,
                                 function: Callable[[Any, Any], None]) -> None:
            """Call ``function(key, state)`` for every key that has state ``state_descriptor``
            (a keyed state descriptor); ``state`` is that key's state, readable and writable.
            An object with a ``process(key, state)`` method works too.

            Args:
                state_descriptor: A keyed state descriptor of the function.
                function: ``function(key, state)``, or an object with ``process(key, state)``.

            Raises:
                StateDescriptorError: ``state_descriptor`` is not a keyed state descriptor.
                StateError: ``function`` is neither.
            """

    class ReadOnlyContext(_BaseReadOnlyContext, ABC):
        """The context of ``process_element``: also the current key and timers."""

        @abstractmethod
        def timer_service(self) -> TimerService:
            """Timers and clocks of the current key.

            Returns:
                The ``TimerService``.
            """

        @abstractmethod
        def get_current_key(self) -> Any:
            """Key of the element being processed.

            Returns:
                The key.
            """

    class OnTimerContext(ReadOnlyContext, ABC):
        """The context of ``on_timer``: also the firing timer's time domain."""

        @abstractmethod
        def time_domain(self) -> TimeDomain:
            """EVENT_TIME or PROCESSING_TIME.

            Returns:
                The ``TimeDomain``.
            """

    @abstractmethod
    def process_element(self, value: IN1, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
                        ) -> Iterable[OUT] | None:
        """Yield the outputs for an element of the keyed stream.

        Args:
            value: The element.
            ctx: Current key, read-only broadcast state, timer service, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    @abstractmethod
    def process_broadcast_element(self, value: IN2, ctx: KeyedBroadcastProcessFunction.Context
                                  ) -> Iterable[OUT] | None:
        """Yield the outputs for an element of the broadcast stream (once per parallel
        instance: every instance processes every broadcast element).

        Args:
            value: The broadcast element.
            ctx: Writable broadcast state, ``apply_to_keyed_state``, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext
                 ) -> Iterable[OUT] | None:
        """A timer of the current key fired; yield outputs. Default: nothing.

        Args:
            timestamp: The timer's time in ms.
            ctx: Current key, time domain, read-only broadcast state, side outputs.

        Returns:
            The outputs (a generator or iterable), or None for none.
        """
        return None
