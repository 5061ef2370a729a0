"""State descriptors (PyFlink names): what a state is called and how its values are stored.

A descriptor takes a TypeInformation (anything with ``create_serializer()``) or a
:class:`~.serializers.TypeSerializer` directly, and is validated on construction.

Internal states of the runtime use names starting with ``_`` (``_reduce``,
``_window-contents``); user descriptors may not. The runtime creates them with
the keyword-only flag ``_internal=True`` (or :func:`internal_descriptor`)::

    ListStateDescriptor("_window-contents", Types.PICKLED_BYTE_ARRAY(), _internal=True)

``descriptor.enable_time_to_live(StateTtlConfig...)`` gives any kind of state a
time-to-live (see :mod:`.ttl`): its values are then stored with their last-access
timestamp (:class:`~.serializers.TtlSerializer`), which the state's meta info records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from .entries import StateKind, StateMetaInfo
from .exceptions import StateDescriptorError
from .functions import AggregateFunction, ReduceFunction, per_record_call
from .serializers import LexicographicalTypeSerializer, TtlSerializer, TypeSerializer
from .ttl_config import StateTtlConfig

__all__ = [
    "StateDescriptor",
    "ValueStateDescriptor",
    "ListStateDescriptor",
    "MapStateDescriptor",
    "ReducingStateDescriptor",
    "AggregatingStateDescriptor",
    "BinarySortedStateDescriptor",
    "internal_descriptor",
    "resolve_serializer",
    "serializer_is_deterministic",
]

D = TypeVar("D", bound="StateDescriptor")


def serializer_is_deterministic(serializer: TypeSerializer[Any]) -> bool:
    """``serializer.is_deterministic`` whether it is declared as an attribute or a method."""
    flag = getattr(serializer, "is_deterministic", False)
    if callable(flag):
        flag = flag()
    return bool(flag)


def resolve_serializer(owner: str, argument: str, type_info: Any) -> TypeSerializer[Any]:
    """Turn a TypeInformation or TypeSerializer into a serializer.

    ``owner`` and ``argument`` name the descriptor and parameter in error messages.
    """
    if type_info is None:
        raise StateDescriptorError(
            f"{owner}: argument '{argument}' is missing (give a TypeInformation such as "
            "Types.LONG() or a TypeSerializer)"
        )
    if isinstance(type_info, TypeSerializer):
        return type_info
    create = getattr(type_info, "create_serializer", None)
    if not callable(create):
        raise StateDescriptorError(
            f"{owner}: argument '{argument}' must be a TypeInformation or a TypeSerializer, "
            f"got {type_info!r}"
        )
    try:
        serializer = create()
    except Exception as exc:  # a foreign failure inside the type information
        raise StateDescriptorError(
            f"{owner}: argument '{argument}' ({type_info!r}) could not create a serializer: {exc}"
        ) from exc
    if not isinstance(serializer, TypeSerializer):
        raise StateDescriptorError(
            f"{owner}: argument '{argument}' ({type_info!r}) created {serializer!r}, "
            "which is not a TypeSerializer"
        )
    return serializer


class StateDescriptor:
    """Base of all descriptors: a validated name plus the serializers of its kind.

    Args:
        name: The state's name, unique within the operator; non-empty, no NUL, not starting
            with ``_`` (reserved for the runtime's internal states).

    Raises:
        StateDescriptorError: ``name`` is not a str, is empty, holds a NUL or starts with ``_``.
    """

    kind: ClassVar[StateKind]

    def __init__(self, name: str, *, _internal: bool = False) -> None:
        cls = type(self).__name__
        if not isinstance(name, str):
            raise StateDescriptorError(f"{cls}: argument 'name' must be a str, got {name!r}")
        if not name:
            raise StateDescriptorError(f"{cls}: argument 'name' must not be empty")
        if "\x00" in name:
            raise StateDescriptorError(f"{cls} {name!r}: argument 'name' contains a NUL character")
        if name.startswith("_") and not _internal:
            raise StateDescriptorError(
                f"{cls} {name!r}: argument 'name' starts with '_', which is reserved for the "
                "runtime's internal states"
            )
        self.name = name
        self.internal = bool(_internal)
        self._ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        """The state's name (PyFlink's ``StateDescriptor.get_name``).

        Returns:
            The name given to the descriptor.
        """
        return self.name

    @property
    def _owner(self) -> str:
        return f"{type(self).__name__} {self.name!r}"

    # -- time-to-live ------------------------------------------------------------------------
    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Give the state a time-to-live: values expire ``ttl`` after their last access
        (processing time; per element for lists, per entry for maps). A config whose update
        type is ``Disabled`` leaves the state without TTL.

        Args:
            ttl_config: The ``StateTtlConfig`` (``StateTtlConfig.new_builder(ttl)...build()``).

        Raises:
            StateDescriptorError: ``ttl_config`` is not a StateTtlConfig (e.g. the builder itself).
        """
        if not isinstance(ttl_config, StateTtlConfig):
            hint = (" (call build() on the builder)"
                    if isinstance(ttl_config, StateTtlConfig.Builder) else "")
            raise StateDescriptorError(
                f"{self._owner}: enable_time_to_live() needs a StateTtlConfig "
                f"(StateTtlConfig.new_builder(Time.seconds(10)).build()){hint}, got "
                f"{type(ttl_config).__name__} {ttl_config!r:.80}"
            )
        self._ttl_config = ttl_config

    def get_ttl_config(self) -> StateTtlConfig | None:
        """The config given to :meth:`enable_time_to_live`, or None.

        Returns:
            The ``StateTtlConfig``, or None.
        """
        return getattr(self, "_ttl_config", None)

    @property
    def ttl_enabled(self) -> bool:
        """True when values of this state expire (a TTL config that is enabled)."""
        config = self.get_ttl_config()
        return config is not None and config.is_enabled()

    @property
    def stored_value_serializer(self) -> TypeSerializer[Any]:
        """Serializer of the stored value bytes: the value serializer, wrapped in a
        :class:`~.serializers.TtlSerializer` when TTL is enabled."""
        if self.ttl_enabled:
            return TtlSerializer(self.value_serializer)
        return self.value_serializer

    # -- what the backends need -------------------------------------------------------------
    @property
    def user_key_serializer(self) -> TypeSerializer[Any] | None:
        """Serializer of the user-key part (map key / sorted key); None for other kinds."""
        return None

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        """Serializer of one stored value (list/sorted: one element)."""
        raise NotImplementedError

    def meta_info(
        self, key_serializer: TypeSerializer[Any], namespace_serializer: TypeSerializer[Any]
    ) -> StateMetaInfo:
        """The state's :class:`StateMetaInfo` under the given key / namespace serializers.

        Args:
            key_serializer: The serializer of the operator's keys.
            namespace_serializer: The serializer of the namespaces (windows or void).

        Returns:
            The meta info stored with the state in savepoints.
        """
        user_key = self.user_key_serializer
        return StateMetaInfo(
            name=self.name,
            kind=self.kind,
            key_serializer=key_serializer.snapshot(),
            namespace_serializer=namespace_serializer.snapshot(),
            user_key_serializer=None if user_key is None else user_key.snapshot(),
            value_serializer=self.stored_value_serializer.snapshot(),
        )

    def is_compatible_with(self, other: StateDescriptor) -> bool:
        """Same name, kind and serializers, both with or both without TTL (the same state
        may be fetched through both).

        Args:
            other: Another descriptor.

        Returns:
            Whether both describe the same state.
        """
        return (
            self.name == other.name
            and self.kind is other.kind
            and self.user_key_serializer == other.user_key_serializer
            and self.value_serializer == other.value_serializer
            and self.ttl_enabled == other.ttl_enabled
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`~.state.ValueState`.

    Args:
        name: The state's name (see :class:`StateDescriptor`).
        value_type_info: The value's type: a TypeInformation (``Types.LONG()``) or a
            TypeSerializer.

    Raises:
        StateDescriptorError: A bad name, or ``value_type_info`` is missing or gives no
            serializer.
    """

    kind = StateKind.VALUE

    def __init__(self, name: str, value_type_info: Any, *, _internal: bool = False) -> None:
        super().__init__(name, _internal=_internal)
        self.type_info = value_type_info
        self._value_serializer = resolve_serializer(self._owner, "value_type_info", value_type_info)

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        return self._value_serializer


class ListStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`~.state.ListState`.

    Args:
        name: The state's name (see :class:`StateDescriptor`).
        elem_type_info: The type of one element: a TypeInformation or a TypeSerializer.

    Raises:
        StateDescriptorError: A bad name, or ``elem_type_info`` is missing or gives no
            serializer.
    """

    kind = StateKind.LIST

    def __init__(self, name: str, elem_type_info: Any, *, _internal: bool = False) -> None:
        super().__init__(name, _internal=_internal)
        self.elem_type_info = elem_type_info
        self._value_serializer = resolve_serializer(self._owner, "elem_type_info", elem_type_info)

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        return self._value_serializer


class MapStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`~.state.MapState`; map keys need a deterministic serializer.

    Args:
        name: The state's name (see :class:`StateDescriptor`).
        key_type_info: The map key's type (TypeInformation or TypeSerializer); its
            serializer must be deterministic, as keys are stored by their bytes.
        value_type_info: The map value's type (TypeInformation or TypeSerializer).

    Raises:
        StateDescriptorError: A bad name, a missing type, or a non-deterministic key
            serializer.
    """

    kind = StateKind.MAP

    def __init__(
        self, name: str, key_type_info: Any, value_type_info: Any, *, _internal: bool = False
    ) -> None:
        super().__init__(name, _internal=_internal)
        self.key_type_info = key_type_info
        self.value_type_info = value_type_info
        self._key_serializer = resolve_serializer(self._owner, "key_type_info", key_type_info)
        if not serializer_is_deterministic(self._key_serializer):
            raise StateDescriptorError(
                f"{self._owner}: argument 'key_type_info' ({key_type_info!r}) has a "
                "non-deterministic serializer; map keys are stored by their bytes, so equal "
                "keys must give equal bytes"
            )
        self._value_serializer = resolve_serializer(self._owner, "value_type_info", value_type_info)

    @property
    def user_key_serializer(self) -> TypeSerializer[Any]:
        return self._key_serializer

    @property
    def key_serializer(self) -> TypeSerializer[Any]:
        """Serializer of the map keys."""
        return self._key_serializer

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        return self._value_serializer


class ReducingStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`~.state.ReducingState`.

    Args:
        name: The state's name (see :class:`StateDescriptor`).
        reduce_function: A :class:`~.functions.ReduceFunction` or a plain
            ``callable(accumulated, new)`` returning the new accumulated value.
        type_info: The value's type (TypeInformation or TypeSerializer).

    Raises:
        StateDescriptorError: A bad name, ``reduce_function`` is neither a ReduceFunction nor
            callable, or ``type_info`` is missing or gives no serializer.
    """

    kind = StateKind.REDUCING

    def __init__(
        self, name: str, reduce_function: Any, type_info: Any, *, _internal: bool = False
    ) -> None:
        super().__init__(name, _internal=_internal)
        if isinstance(reduce_function, ReduceFunction):
            reduce: Callable[[Any, Any], Any] = per_record_call(reduce_function.reduce)
        elif callable(reduce_function):
            reduce = reduce_function
        else:
            raise StateDescriptorError(
                f"{self._owner}: argument 'reduce_function' must be a ReduceFunction or a "
                f"callable(a, b), got {reduce_function!r}"
            )
        self.reduce_function = reduce_function
        self.reduce: Callable[[Any, Any], Any] = reduce
        self.type_info = type_info
        self._value_serializer = resolve_serializer(self._owner, "type_info", type_info)

    def get_reduce_function(self) -> Any:
        """The reduce function given (a ReduceFunction or a callable).

        Returns:
            The function.
        """
        return self.reduce_function

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        return self._value_serializer


class AggregatingStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`~.state.AggregatingState`.

    Args:
        name: The state's name (see :class:`StateDescriptor`).
        agg_function: An :class:`~.functions.AggregateFunction`, or an object with
            ``create_accumulator``, ``add(value, acc)`` and ``get_result`` (``merge`` is
            needed only for merging windows).
        state_type_info: The type of the ACCUMULATOR (TypeInformation or TypeSerializer).

    Raises:
        StateDescriptorError: A bad name, ``agg_function`` lacks one of those methods, or
            ``state_type_info`` is missing or gives no serializer.
    """

    kind = StateKind.AGGREGATING

    def __init__(
        self, name: str, agg_function: Any, state_type_info: Any, *, _internal: bool = False
    ) -> None:
        super().__init__(name, _internal=_internal)
        if not isinstance(agg_function, AggregateFunction):
            missing = [
                method
                for method in ("create_accumulator", "add", "get_result")
                if not callable(getattr(agg_function, method, None))
            ]
            if missing:
                raise StateDescriptorError(
                    f"{self._owner}: argument 'agg_function' must be an AggregateFunction; "
                    f"{agg_function!r} lacks {', '.join(missing)}"
                )
        self.agg_function = agg_function
        self.state_type_info = state_type_info
        self._value_serializer = resolve_serializer(self._owner, "state_type_info", state_type_info)

    def get_agg_function(self) -> Any:
        """The AggregateFunction given.

        Returns:
            The function.
        """
        return self.agg_function

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        return self._value_serializer


class BinarySortedStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`~.state.BinarySortedState` (FLIP-220).

    Args:
        name: The state's name (see :class:`StateDescriptor`).
        key_serializer: A :class:`~.serializers.LexicographicalTypeSerializer`: the state is
            ordered by the serialized key bytes.
        value_type_info: The value's type (TypeInformation or TypeSerializer).

    Raises:
        StateDescriptorError: A bad name, ``key_serializer`` is not lexicographical, or
            ``value_type_info`` is missing or gives no serializer.
    """

    kind = StateKind.SORTED

    def __init__(
        self,
        name: str,
        key_serializer: LexicographicalTypeSerializer[Any],
        value_type_info: Any,
        *,
        _internal: bool = False,
    ) -> None:
        super().__init__(name, _internal=_internal)
        if not isinstance(key_serializer, LexicographicalTypeSerializer):
            raise StateDescriptorError(
                f"{self._owner}: argument 'key_serializer' must be a "
                f"LexicographicalTypeSerializer (byte order = key order), got {key_serializer!r}"
            )
        self._key_serializer = key_serializer
        self.value_type_info = value_type_info
        self._value_serializer = resolve_serializer(self._owner, "value_type_info", value_type_info)

    @property
    def user_key_serializer(self) -> LexicographicalTypeSerializer[Any]:
        return self._key_serializer

    @property
    def key_serializer(self) -> LexicographicalTypeSerializer[Any]:
        """Serializer of the sort keys."""
        return self._key_serializer

    @property
    def value_serializer(self) -> TypeSerializer[Any]:
        return self._value_serializer


def internal_descriptor(cls: type[D], name: str, *args: Any, **kwargs: Any) -> D:
    """Build a descriptor of class ``cls`` for a runtime-internal state (name may start with ``_``)."""
    return cls(name, *args, _internal=True, **kwargs)
