"""A broadcast operator's key group for one STREAMING micro-batch (Spark-free).

Every key group receives every broadcast element (the plugin replicates each one to all
``max_parallelism`` key groups) and keeps its own copy of the broadcast state in its
committed state, next to its keyed state:

* the key group's state bytes are :func:`wrap_state` of the keyed part (heap: the
  :func:`~.keygroup.encode_state` bytes; RocksDB: the version pointer) and the broadcast
  states' meta infos and entries (``BroadcastStates.snapshot``), so Spark's checkpoint
  commits both together: exactly-once, and a restarted query starts from the copy of
  the last committed micro-batch;
* in a call, due timers fire first (as for any keyed operator), then the micro-batch's
  broadcast elements are processed, in their arrival order, before its other elements;
* what ``process_broadcast_element`` emits is kept by one key group per subtask
  (:func:`~.broadcast.emits_broadcast_outputs`), once per parallel instance as in Flink.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any, Optional

from ..state_store.entries import StateEntry, StateMetaInfo
from ..state_store.exceptions import SavepointFormatError, SerializationError
from .base import MIN_WATERMARK, Output, raise_named_serialization_error
from .broadcast import BROADCAST_INPUT, BroadcastProcessOperator, emits_broadcast_outputs
from .exceptions import JobExecutionError
from .keygroup import KeyGroupResult, KeyGroupRow, KeyGroupRuntime

__all__ = ["BroadcastKeyGroupRuntime", "wrap_state", "unwrap_state"]

#: Format tag of a broadcast operator's key group state (first element of the pickled tuple).
_WRAPPED_FORMAT = "pyspark-datastream/broadcast-keygroup-state/v1"


def wrap_state(keyed: Optional[bytes], metas: Iterable[StateMetaInfo],
               entries: list[StateEntry]) -> Optional[bytes]:
    """One key group's state bytes: its keyed state bytes (or None) and its broadcast
    states; None when it holds neither."""
    if keyed is None and not entries:
        return None
    return pickle.dumps((_WRAPPED_FORMAT, keyed, [m.to_dict() for m in metas],
                         [tuple(e) for e in entries]), pickle.HIGHEST_PROTOCOL)


def unwrap_state(data: Optional[bytes]
                 ) -> tuple[Optional[bytes], list[StateMetaInfo], list[StateEntry]]:
    """Inverse of :func:`wrap_state` (None: nothing); ``SavepointFormatError`` on other bytes."""
    if data is None:
        return None, [], []
    try:
        tag, keyed, metas, rows = pickle.loads(data)
    except Exception as exc:
        raise SavepointFormatError(
            f"broadcast operator key group state is unreadable: {exc}") from exc
    if tag != _WRAPPED_FORMAT:
        raise SavepointFormatError(
            f"broadcast operator key group state has format {tag!r}, expected "
            f"{_WRAPPED_FORMAT!r}; was the operator changed between runs?")
    return keyed, [StateMetaInfo.from_dict(m) for m in metas], [StateEntry(*r) for r in rows]


class BroadcastKeyGroupRuntime(KeyGroupRuntime):
    """:class:`KeyGroupRuntime` for kind ``broadcast``: the keyed part runs as for any
    keyed operator; the broadcast states travel beside it in the state bytes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._incoming: tuple[list[StateMetaInfo], list[StateEntry]] = ([], [])
        self._operator: Optional[BroadcastProcessOperator] = None

    def run(self, state: Optional[bytes], rows: Iterable[KeyGroupRow],
            watermark: int = MIN_WATERMARK, *, end_of_input: bool = False,
            processing_time: Optional[int] = None, key_group: Optional[int] = None,
            track_positions: bool = False,
            watermark_after: Optional[int] = None) -> KeyGroupResult:
        if track_positions:  # broadcast elements run first, whatever their arrival
            raise JobExecutionError(
                f"operator {self.config.operator_name!r}: a broadcast operator's outputs "
                "carry no element positions")
        keyed, metas, entries = unwrap_state(state)
        self._incoming = (metas, entries)
        self._operator = None
        result = super().run(keyed, rows, watermark, end_of_input=end_of_input,
                             processing_time=processing_time, key_group=key_group,
                             watermark_after=watermark_after)
        operator = self._operator
        if operator is not None:
            states = operator.broadcast_states
            try:
                result.state = wrap_state(result.state, states.meta_infos(), states.snapshot())
            except SerializationError as exc:
                raise_named_serialization_error(exc, self.config.operator_name)
        return result

    def new_operator(self, key_group: Optional[int]) -> Any:
        operator = super().new_operator(key_group)
        assert isinstance(operator, BroadcastProcessOperator)
        metas, entries = self._incoming
        if metas or entries:
            operator.broadcast_states.operator_name = self.config.operator_name
            operator.broadcast_states.restore(metas, entries)
        config = self.config
        operator.emit_broadcast_outputs = emits_broadcast_outputs(
            key_group or 0, config.parallelism, config.max_parallelism)
        self._operator = operator
        return operator

    def restored_state(self, key_group: int, data: bytes) -> bytes:
        keyed, metas, entries = unwrap_state(data)
        if keyed is not None:
            keyed = super().restored_state(key_group, keyed)
        wrapped = wrap_state(keyed, metas, entries)
        return wrapped if wrapped is not None else data

    def _process(self, operator: Any, backend: Any, rows: Iterable[KeyGroupRow],
                 result: KeyGroupResult) -> list[Output]:
        """The micro-batch's broadcast elements first (arrival order), then the others."""
        broadcast: list[KeyGroupRow] = []
        other: list[KeyGroupRow] = []
        for row in rows:
            (broadcast if row[3] == BROADCAST_INPUT else other).append(row)
        out: list[Output] = []
        for _key, timestamp, value, _side in broadcast:
            out.extend(operator.process_broadcast(value, timestamp))
        if operator.keyed:
            out.extend(super()._process(operator, backend, other, result))
        else:  # no key: the elements only read broadcast state
            for _key, timestamp, value, _side in other:
                out.extend(operator.process_element(value, timestamp, 0))
            result.elements = len(other)
        result.elements += len(broadcast)
        return out
