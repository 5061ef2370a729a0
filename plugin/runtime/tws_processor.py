"""The ``transformWithStateInPandas`` processor of a keyed stage in the one-query mapping.

Spark 4.0+ chains several ``transformWithStateInPandas`` in one streaming query, which
``applyInPandasWithState`` cannot. :class:`KeyGroupProcessor` runs the same per-key-group call
as the ``applyInPandasWithState`` function (group_state.group_function): its state is the key
group's bytes in one value state, its GroupState timeout one Spark timer
(:class:`_TimerGroupState`), and its output gains the null ``_et`` timestamp column through
which Spark hands the watermark to the next keyed stage of the query.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

if TYPE_CHECKING:
    from .group_state import GroupSpec

# The runtime this module calls (pandas, pyarrow and the package's passes) is imported where
# it is called: Spark unpickles the processor in a driver process of its own per stage and
# run only to call init(), which needs none of it (KeyGroupProcessor.__getstate__).

__all__ = ["ET_OUT", "STATE_DDL", "KeyGroupProcessor", "TwsCall", "state_name", "tws_time_mode"]

#: The output's event-time column (``eventTimeColumnName``): null on every row, it only
#: carries the stage's watermark to the stateful operators after it in the query.
ET_OUT = "_et"
#: The value state of a key group: its state bytes, the Spark timer it holds (or null) and
#: the watermark of its last call.
STATE_DDL = "s binary, t bigint, w bigint"


def state_name(stage: str) -> str:
    """The value state name of a keyed stage (its identity, ``evolution.stage_names``): unique
    in the query, so a savepoint finds the stage's operator through Spark's state metadata.

    Args:
        stage: the stage's identity (its uid, else its position among stateful operators).

    Returns:
        ``kg_<the stage's letters and digits>_<8 hex digits of its hash>``.
    """
    digest = hashlib.sha1(stage.encode("utf-8")).hexdigest()[:8]
    return f"kg_{re.sub(r'[^A-Za-z0-9]+', '_', stage)[:40]}_{digest}"


@dataclass(frozen=True)
class TwsCall:
    """How a keyed stage runs as ``transformWithStateInPandas`` in the one-query mapping."""

    #: ``"EventTime"``, ``"ProcessingTime"`` or ``"None"`` (:func:`tws_time_mode`)
    time_mode: str
    #: the input's columns (Spark hands the rows over with positional names)
    columns: tuple[str, ...]
    #: the stage's value state (:func:`state_name`)
    state_name: str
    #: records are carried through the stage (runtime/carry.py)
    carries: bool = False
    #: the stage's watermark comes in band, from a strategy below the stage above
    #: (runtime/inband.py) or forwarded by the keyed stage above, not from Spark
    inband: bool = False
    #: (``inband``) the stage hands its watermark to the keyed stage below it, after each
    #: key group's call, under ``inband.WATERMARK_TAG``
    forwards: bool = False


def tws_time_mode(processing_timeout: bool, timeouts: bool) -> str:
    """The ``timeMode`` of a keyed stage: the time its GroupState timeout would run on.

    Args:
        processing_timeout: the stage's timers run on processing time.
        timeouts: the stage has timers at all (else no watermark reaches it).

    Returns:
        ``"ProcessingTime"``, ``"EventTime"`` or ``"None"``.
    """
    if processing_timeout:
        return "ProcessingTime"
    return "EventTime" if timeouts else "None"


class _TimerGroupState:
    """The GroupState calls of group_state.group_function, kept by a value state and a timer.

    The call's updates and its timeout are written once, by :meth:`flush`: the key group's
    state bytes and its one timer (a call that sets no timeout leaves none, as GroupState).
    """

    def __init__(self, value: Any, handle: Any, timers: Any, expired: Optional[int]) -> None:
        self._value = value
        self._handle = handle
        self._timers = timers
        row = value.get() if value.exists() else None
        self._bytes: Optional[bytes] = None if row is None else row[0]
        # an expired timer is gone already: Spark deleted it before the call
        held = None if row is None else row[1]
        self._held: Optional[int] = None if held == expired else held
        self._last = 0 if row is None or row[2] is None else int(row[2])
        self._timeout: Optional[int] = None
        self._changed = False

    @property
    def exists(self) -> bool:
        return self._bytes is not None

    @property
    def get(self) -> tuple[Optional[bytes]]:
        return (self._bytes,)

    def update(self, value: tuple[bytes]) -> None:
        self._bytes, self._changed = bytes(value[0]), True

    def remove(self) -> None:
        self._bytes, self._changed = None, True

    def getCurrentWatermarkMs(self) -> int:  # noqa: N802 - GroupState's name
        return max(int(self._timers.getCurrentWatermarkInMs()), 0)

    def lastWatermarkMs(self) -> int:  # noqa: N802 - beside GroupState's names
        """The Spark watermark of the key group's previous call (0: none)."""
        return self._last

    def getCurrentProcessingTimeMs(self) -> int:  # noqa: N802 - GroupState's name
        return int(self._timers.getCurrentProcessingTimeInMs())

    def setTimeoutTimestamp(self, timestamp_ms: int) -> None:  # noqa: N802
        # GroupState times out once the watermark passes the timestamp, Spark's timer fires
        # once the watermark reaches its time: one millisecond later is the same moment
        self._timeout = int(timestamp_ms) + 1

    def setTimeoutDuration(self, duration_ms: int) -> None:  # noqa: N802
        self._timeout = self.getCurrentProcessingTimeMs() + int(duration_ms)

    def flush(self) -> None:
        """Write the call's state bytes and move its timer (one round trip each at most)."""
        timeout = self._timeout if self._bytes is not None else None
        if self._held is not None and self._held != timeout:
            self._handle.deleteTimer(self._held)
        if timeout is not None and timeout != self._held:
            self._handle.registerTimer(timeout)
        if self._bytes is None:
            if self._changed or self._held is not None:
                self._value.clear()
        else:
            self._value.update((self._bytes, timeout, self.getCurrentWatermarkMs()))


class _InBandGroupState(_TimerGroupState):
    """:class:`_TimerGroupState` of a stage whose watermark comes in band (runtime/inband.py):
    the greatest watermark row the key group has seen, kept in its value state (also while
    it holds no state bytes, so that records reaching it later are late as they would be
    elsewhere), or the end of input once Spark's watermark says so (``ends``: the input is
    bounded and the stage runs on Spark's event time). Its one Spark timer waits for the end
    of input: before it, the watermark rows call every key group."""

    def __init__(self, value: Any, handle: Any, timers: Any, expired: Optional[int],
                 seen: Optional[int], ends: bool) -> None:
        from .group_state import END_THRESHOLD

        super().__init__(value, handle, timers, expired)
        spark = max(int(timers.getCurrentWatermarkInMs()), 0) if ends else 0
        self._current = spark if spark >= END_THRESHOLD else max(self._last, seen or 0)
        self._ends = ends

    def getCurrentWatermarkMs(self) -> int:  # noqa: N802 - GroupState's name
        return self._current

    def setTimeoutTimestamp(self, timestamp_ms: int) -> None:  # noqa: N802
        from .group_state import END_THRESHOLD

        # an unbounded input never ends: no Spark timer (its query may have no watermark)
        self._timeout = END_THRESHOLD if self._ends else None

    def flush(self) -> None:
        if self._bytes is not None:
            super().flush()
            return
        if self._held is not None:
            self._handle.deleteTimer(self._held)
        if self._current > self._last or self._changed or self._held is not None:
            if self._current > 0:  # the watermark alone, for the records still to come
                self._value.update((None, None, self._current))
            else:
                self._value.clear()


def _watermark_row(watermark: int) -> Any:
    """The key group's watermark, as the keyed stage below reads it (runtime/inband.py),
    in the layout of a carried record (:func:`~.carry.carried_output` makes the row)."""
    import pandas as pd

    from .carry import CARRIED_SEQ
    from .encoding import KEY, TS, VALUE
    from .group_frames import SEQ
    from .inband import WATERMARK_TAG

    return pd.DataFrame({TS: [watermark], KEY: [WATERMARK_TAG.encode("utf-8")],
                         VALUE: [b""], SEQ: [CARRIED_SEQ]})


def _with_et(frame: Any) -> Any:
    import pandas as pd

    frame[ET_OUT] = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns]")
    return frame


class KeyGroupProcessor:
    """``transformWithStateInPandas`` processor: one call = one key group's rows or timer.

    Built on the driver from the stage's :class:`GroupSpec` and :class:`TwsCall`;
    Spark pickles it to the executors, where :meth:`init` opens the value state. It has the
    methods of pyspark's ``StatefulProcessor``, which Spark calls by name.
    """

    def __init__(self, spec: GroupSpec, call: TwsCall) -> None:
        self._spec: Optional[GroupSpec] = spec
        self._spec_bytes: Optional[bytes] = None
        self.columns = list(call.columns)
        self.state_name = call.state_name
        self.carries = call.carries
        self.inband = call.inband
        self.forwards = call.forwards
        self.time_mode = call.time_mode
        self._fn: Optional[Callable[..., Iterator[Any]]] = None
        self._value: Any = None
        self._handle: Any = None
        self._watermark = 0  # the in-band watermark of the last call

    def __getstate__(self) -> dict[str, Any]:
        """The stage (its functions, and so the modules they import) travels as bytes, read on
        the first call: Spark also unpickles the processor in a driver process of its own per
        stage and run, only to call :meth:`init` for the state variables."""
        from pyspark import cloudpickle

        state = dict(self.__dict__, _fn=None, _value=None, _handle=None)
        if self._spec is not None:
            state.update(_spec=None, _spec_bytes=cloudpickle.dumps(self._spec))
        return state

    @property
    def spec(self) -> GroupSpec:
        """The stage's :class:`GroupSpec`, unpickled on first use."""
        if self._spec is None:
            assert self._spec_bytes is not None
            self._spec = pickle.loads(self._spec_bytes)
            self._spec_bytes = None
        return self._spec

    def init(self, handle: Any) -> None:
        self._handle = handle
        self._value = handle.getValueState(self.state_name, STATE_DDL)

    def _call(self, key: Any, rows: Iterator[Any], timers: Any,
              expired: Optional[int], seen: Optional[int] = None) -> Iterator[Any]:
        if self._fn is None:
            from .group_state import group_function

            self._fn = group_function(self.spec)
        state = (_InBandGroupState(self._value, self._handle, timers, expired, seen,
                                   self.time_mode == "EventTime")
                 if self.inband else _TimerGroupState(self._value, self._handle, timers, expired))
        for frame in self._fn(key, self._named(rows), state):
            yield _with_et(frame)
        state.flush()
        self._watermark = state.getCurrentWatermarkMs()

    def _named(self, frames: Iterator[Any]) -> Iterator[Any]:
        for frame in frames:
            if list(frame.columns) != self.columns:
                frame.columns = self.columns
            yield frame

    def handleInputRows(self, key: Any, rows: Iterator[Any],  # noqa: N802 - Spark's name
                        timerValues: Any) -> Iterator[Any]:  # noqa: N803
        if not (self.inband or self.carries):
            return self._call(key, rows, timerValues, None)
        return self._split(key, rows, timerValues)

    def _split(self, key: Any, rows: Iterator[Any], timers: Any) -> Iterator[Any]:
        """The call over the key group's own records, its watermark moved by the watermark
        rows among them (runtime/inband.py; taken out first: their ``_seq`` lies below a
        carried record's), then the records carried through the stage (runtime/carry.py).
        Carried records alone call nothing."""
        from .carry import carried_output, split_carried
        from .inband import split_watermarks

        own, carried, seen = [], [], None
        for frame in self._named(rows):
            mine, wm = split_watermarks(frame) if self.inband else (frame, None)
            if wm is not None:
                seen = wm if seen is None else max(seen, wm)
            if self.carries:
                mine, theirs = split_carried(mine)
                carried += [theirs] if len(theirs) else []
            own += [mine] if len(mine) else []
        if own or seen is not None:
            yield from self._call(key, iter(own), timers, None, seen)
            if self.forwards and seen is not None:  # after the records its timers emitted
                carried.append(_watermark_row(self._watermark))
        for frame in carried_output(carried, self.spec.direct_output, self.spec.ordered):
            yield _with_et(frame)

    def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa: N802, N803
                           expiredTimerInfo: Any) -> Iterator[Any]:  # noqa: N803
        return self._call(key, iter(()), timerValues, int(expiredTimerInfo.getExpiryTimeInMs()))

    def close(self) -> None:
        pass

