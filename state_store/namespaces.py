"""State namespaces: the void namespace, time windows, the global window.

Every keyed state entry lives under ``(key, namespace)``. Plain user state uses
the void namespace (serialized as ``b""``); window operators use the window as
the namespace, so all windows of a key keep separate contents. Namespace
serializers are lexicographic, so entries of one key are ordered by window.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from .exceptions import SerializationError
from .serializers import LexicographicalTypeSerializer, register_serializer

__all__ = [
    "VoidNamespace",
    "VOID_NAMESPACE",
    "VoidNamespaceSerializer",
    "VOID_NAMESPACE_SERIALIZER",
    "Window",
    "TimeWindow",
    "TimeWindowSerializer",
    "GlobalWindow",
    "GlobalWindowSerializer",
    "CountWindow",
    "CountWindowSerializer",
    "MAX_LONG",
    "MIN_LONG",
]

MAX_LONG = (1 << 63) - 1
MIN_LONG = -(1 << 63)
_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
_TWO_LONGS = struct.Struct(">QQ")
_ONE_LONG = struct.Struct(">Q")


class VoidNamespace:
    """The namespace of state that has none (a singleton: ``VOID_NAMESPACE``)."""

    __slots__ = ()
    _instance: VoidNamespace | None = None

    def __new__(cls) -> VoidNamespace:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "VOID_NAMESPACE"

    def __reduce__(self) -> tuple[Any, ...]:
        return (VoidNamespace, ())


VOID_NAMESPACE = VoidNamespace()


class VoidNamespaceSerializer(LexicographicalTypeSerializer[VoidNamespace]):
    """Serializes ``VOID_NAMESPACE`` to ``b""`` (the layout's "no namespace")."""

    def serialize(self, value: VoidNamespace) -> bytes:
        if value is not VOID_NAMESPACE:
            raise SerializationError(
                f"VoidNamespaceSerializer can only serialize VOID_NAMESPACE, got {value!r}"
            )
        return b""

    def deserialize(self, data: bytes) -> VoidNamespace:
        if data:
            raise SerializationError(f"void namespace bytes must be empty, got {bytes(data)!r}")
        return VOID_NAMESPACE

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[VoidNamespace, int]:
        return VOID_NAMESPACE, pos

    def snapshot(self) -> dict[str, Any]:
        return {"name": "VoidNamespaceSerializer", "params": {}}


VOID_NAMESPACE_SERIALIZER = VoidNamespaceSerializer()


class Window(ABC):
    """A window: :class:`TimeWindow`, :class:`CountWindow` and :class:`GlobalWindow` are
    Windows (``isinstance(w, Window)``), as in PyFlink."""

    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window.

        Returns:
            Epoch milliseconds.
        """


class TimeWindow:
    """Half-open time interval ``[start, end)`` in epoch milliseconds (Flink's ``TimeWindow``).

    Windows order by ``(start, end)``; they are hashable and usable as namespaces.

    Args:
        start: The first millisecond in the window (epoch ms, inclusive).
        end: The end of the window (epoch ms, exclusive).
    """

    __slots__ = ("start", "end")

    start: int
    end: int

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end

    def max_timestamp(self) -> int:
        """Largest timestamp inside the window: ``end - 1``.

        Returns:
            ``end - 1``.
        """
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """True when the windows overlap or touch (Flink's merge criterion).

        Args:
            other: Another window.

        Returns:
            Whether they overlap or touch.
        """
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """Smallest window containing both.

        Args:
            other: Another window.

        Returns:
            ``TimeWindow(min(starts), max(ends))``.
        """
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the aligned window of ``window_size`` containing ``timestamp``.

        Args:
            timestamp: The timestamp in ms.
            offset: The windows' offset in ms.
            window_size: The windows' size in ms.

        Returns:
            The window start.

        Example:
            >>> TimeWindow.get_window_start_with_offset(12_345, 0, 5_000)
            10000
        """
        remainder = (timestamp - offset) % window_size
        return timestamp - remainder

    @staticmethod
    def merge_windows(
        windows: Iterable[TimeWindow], callback: Any = None,
    ) -> list[tuple[TimeWindow, list[TimeWindow]]]:
        """Group intersecting windows: ``[(merged window, [windows merged into it]), ...]``.

        Only groups of two or more windows are returned (as Flink's
        ``TimeWindow.mergeWindows`` reports only actual merges).

        Args:
            windows: The windows to merge.
            callback: PyFlink's ``MergeCallback``: when given, ``callback.merge(members,
                covering window)`` is called for each group too.

        Returns:
            ``[(covering window, [members]), ...]`` for each group of two or more
            intersecting windows.
        """
        ordered = sorted(windows)
        merged: list[tuple[TimeWindow, list[TimeWindow]]] = []
        current: TimeWindow | None = None
        members: list[TimeWindow] = []
        for window in ordered:
            if current is None:
                current, members = window, [window]
            elif current.intersects(window):
                current = current.cover(window)
                members.append(window)
            else:
                merged.append((current, members))
                current, members = window, [window]
        if current is not None:
            merged.append((current, members))
        result = [(window, group) for window, group in merged if len(group) > 1]
        if callback is not None:
            for window, group in result:
                callback.merge(group, window)
        return result

    def __eq__(self, other: object) -> bool:
        if type(other) is not TimeWindow:
            return NotImplemented
        return self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __lt__(self, other: TimeWindow) -> bool:
        if type(other) is not TimeWindow:
            return NotImplemented
        return (self.start, self.end) < (other.start, other.end)

    def __le__(self, other: TimeWindow) -> bool:
        if type(other) is not TimeWindow:
            return NotImplemented
        return (self.start, self.end) <= (other.start, other.end)

    def __gt__(self, other: TimeWindow) -> bool:
        if type(other) is not TimeWindow:
            return NotImplemented
        return (self.start, self.end) > (other.start, other.end)

    def __ge__(self, other: TimeWindow) -> bool:
        if type(other) is not TimeWindow:
            return NotImplemented
        return (self.start, self.end) >= (other.start, other.end)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TimeWindow, (self.start, self.end))


class TimeWindowSerializer(LexicographicalTypeSerializer[TimeWindow]):
    """16 bytes: start and end as lexicographic longs; byte order = window order."""

    def serialize(self, value: TimeWindow) -> bytes:
        try:
            return _TWO_LONGS.pack(
                (value.start ^ _SIGN) & _MASK64, (value.end ^ _SIGN) & _MASK64
            )
        except (AttributeError, TypeError, struct.error) as exc:
            raise SerializationError(
                f"TimeWindowSerializer cannot serialize {value!r}: {exc}"
            ) from exc

    def deserialize(self, data: bytes) -> TimeWindow:
        if len(data) != 16:
            raise SerializationError(f"TimeWindow bytes must be 16 long, got {len(data)}")
        start, end = _TWO_LONGS.unpack(data)
        return TimeWindow(start - _SIGN, end - _SIGN)

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[TimeWindow, int]:
        return self.deserialize(bytes(data[pos : pos + 16])), pos + 16

    def snapshot(self) -> dict[str, Any]:
        return {"name": "TimeWindowSerializer", "params": {}}


class GlobalWindow:
    """The single window of global windowing (count windows); a singleton."""

    __slots__ = ()
    _instance: GlobalWindow | None = None

    def __new__(cls) -> GlobalWindow:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @classmethod
    def get(cls) -> GlobalWindow:
        """The global window.

        Returns:
            A ``GlobalWindow``.
        """
        return cls()

    def max_timestamp(self) -> int:
        """``Long.MAX_VALUE``: the global window never ends.

        Returns:
            ``2**63 - 1``.
        """
        return MAX_LONG

    def __repr__(self) -> str:
        return "GlobalWindow"

    def __reduce__(self) -> tuple[Any, ...]:
        return (GlobalWindow, ())


class GlobalWindowSerializer(LexicographicalTypeSerializer[GlobalWindow]):
    """Serializes the global window to one zero byte (as Flink does)."""

    def serialize(self, value: GlobalWindow) -> bytes:
        if not isinstance(value, GlobalWindow):
            raise SerializationError(
                f"GlobalWindowSerializer can only serialize GlobalWindow, got {value!r}"
            )
        return b"\x00"

    def deserialize(self, data: bytes) -> GlobalWindow:
        if data != b"\x00":
            raise SerializationError(f"GlobalWindow bytes must be b'\\x00', got {bytes(data)!r}")
        return GlobalWindow()

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[GlobalWindow, int]:
        return self.deserialize(bytes(data[pos : pos + 1])), pos + 1

    def snapshot(self) -> dict[str, Any]:
        return {"name": "GlobalWindowSerializer", "params": {}}


class CountWindow:
    """A window of count windowing, identified by its number (PyFlink's ``CountWindow``):
    the n-th group of elements of a key. It has no end in time.

    Args:
        id: The window's number.
    """

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:  # noqa: A002 - PyFlink's parameter name
        self.id = id

    def max_timestamp(self) -> int:
        """``Long.MAX_VALUE``: a count window is not bounded in time.

        Returns:
            ``2**63 - 1``.
        """
        return MAX_LONG

    def __eq__(self, other: object) -> bool:
        return type(other) is CountWindow and other.id == self.id

    def __hash__(self) -> int:
        return hash(("CountWindow", self.id))

    def __lt__(self, other: CountWindow) -> bool:
        if type(other) is not CountWindow:
            return NotImplemented
        return self.id < other.id

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (CountWindow, (self.id,))


class CountWindowSerializer(LexicographicalTypeSerializer[CountWindow]):
    """8 bytes: the id as a lexicographic long; byte order = window order."""

    def serialize(self, value: CountWindow) -> bytes:
        if type(value) is not CountWindow or isinstance(value.id, bool) \
                or not isinstance(value.id, int):
            raise SerializationError(f"CountWindowSerializer can only serialize CountWindow, got {value!r}")
        try:
            return _ONE_LONG.pack((value.id ^ _SIGN) & _MASK64)
        except struct.error as exc:
            raise SerializationError(f"CountWindowSerializer cannot serialize {value!r}: {exc}") from exc

    def deserialize(self, data: bytes) -> CountWindow:
        if len(data) != 8:
            raise SerializationError(f"CountWindow bytes must be 8 long, got {len(data)}")
        return CountWindow(_ONE_LONG.unpack(data)[0] - _SIGN)

    def deserialize_nested(self, data: bytes, pos: int) -> tuple[CountWindow, int]:
        return self.deserialize(bytes(data[pos : pos + 8])), pos + 8

    def snapshot(self) -> dict[str, Any]:
        return {"name": "CountWindowSerializer", "params": {}}


_TIME_WINDOW_SERIALIZER = TimeWindowSerializer()
_GLOBAL_WINDOW_SERIALIZER = GlobalWindowSerializer()
_COUNT_WINDOW_SERIALIZER = CountWindowSerializer()
register_serializer("VoidNamespaceSerializer", lambda params: VOID_NAMESPACE_SERIALIZER)
register_serializer("TimeWindowSerializer", lambda params: _TIME_WINDOW_SERIALIZER)
register_serializer("GlobalWindowSerializer", lambda params: _GLOBAL_WINDOW_SERIALIZER)
register_serializer("CountWindowSerializer", lambda params: _COUNT_WINDOW_SERIALIZER)


for _window_class in (TimeWindow, GlobalWindow, CountWindow):
    Window.register(_window_class)
