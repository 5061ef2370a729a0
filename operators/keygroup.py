"""One key group of a keyed operator for one STREAMING micro-batch (Spark-free).

The Spark plugin maps every keyed operator to ``applyInPandasWithState`` grouped
by key group: one call per key group per micro-batch handles all its keys. This
module is what that call runs, so it can be tested without Spark:

1. restore a fresh backend from the key group's committed state bytes (the
   unified entry layout of ``state_store.entries``, timers included);
2. fire processing-time timers <= now, then event-time timers <= the watermark,
   *before* the batch's elements (Flink: a watermark precedes later elements);
3. process the elements in arrival order;
4. at end of input (watermark +inf) fire every remaining timer (``end_input``);
5. snapshot the backend back to bytes and report the earliest pending timers,
   which the plugin turns into the GroupState timeout.

The state bytes are only ever produced here and read here: a retried or
restarted micro-batch gets the bytes of the last committed batch from Spark.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..state_store.entries import StateEntry, StateMetaInfo
from ..state_store.errors import (
    DataStreamError,
    JobExecutionError,
    SavepointFormatError,
    SerializationError,
)
from .base import MAX_WATERMARK, MIN_WATERMARK, OperatorConfig, Output

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend
    from ..state_store.serializers import TypeSerializer

__all__ = [
    "KEYED_KINDS",
    "KeyGroupResult",
    "KeyGroupRuntime",
    "make_keyed_operator",
    "encode_state",
    "decode_state",
]

#: Operator kinds a key group runtime can run.
KEYED_KINDS = ("process", "reduce", "co_process")

#: Format tag of the state bytes (first element of the pickled tuple).
_STATE_FORMAT = "pyspark-datastream/keygroup-state/v1"

#: ``(key_bytes, timestamp, value, input_index)`` - one input element.
KeyGroupRow = tuple[bytes, Optional[int], Any, int]


def make_keyed_operator(kind: str, function: Any) -> Any:
    """A fresh keyed operator of ``kind`` (process, reduce or co_process) around ``function``."""
    from . import keyed

    if kind == "process":
        return keyed.KeyedProcessOperator(function)
    if kind == "reduce":
        return keyed.ReduceOperator(function)
    if kind == "co_process":
        return keyed.KeyedCoProcessOperator(function)
    raise JobExecutionError(f"unknown keyed operator kind {kind!r}; expected one of {KEYED_KINDS}")


def encode_state(meta_infos: Iterable[StateMetaInfo], entries: Iterable[StateEntry]) -> bytes:
    """Bytes of a key group's state: meta infos (as dicts) and entries (unified layout)."""
    metas = [m.to_dict() for m in meta_infos]
    rows = [tuple(e) for e in entries]
    return pickle.dumps((_STATE_FORMAT, metas, rows), pickle.HIGHEST_PROTOCOL)


def decode_state(data: bytes) -> tuple[list[StateMetaInfo], list[StateEntry]]:
    """Inverse of :func:`encode_state`; ``SavepointFormatError`` on foreign bytes."""
    try:
        tag, metas, rows = pickle.loads(data)
    except Exception as exc:
        raise SavepointFormatError(f"key group state bytes are unreadable: {exc}") from exc
    if tag != _STATE_FORMAT:
        raise SavepointFormatError(
            f"key group state has format {tag!r}, expected {_STATE_FORMAT!r}"
        )
    return [StateMetaInfo.from_dict(m) for m in metas], [StateEntry(*r) for r in rows]


@dataclass
class KeyGroupResult:
    """What one micro-batch of a key group produced.

    ``state`` is None when the key group holds nothing any more (the plugin removes
    its GroupState); ``next_event_timer`` / ``next_processing_timer`` are the
    earliest pending timers (None when there are none).
    """

    outputs: list[Output] = field(default_factory=list)
    state: Optional[bytes] = None
    next_event_timer: Optional[int] = None
    next_processing_timer: Optional[int] = None
    elements: int = 0
    state_entries: int = 0


class KeyGroupRuntime:
    """Runs one keyed operator over the elements of one key group, one micro-batch at a time.

    ``backend_factory()`` returns a fresh, empty keyed backend (heap by default);
    a new operator instance is opened and closed per call so that no runtime
    object survives between micro-batches - only the state bytes do.
    """

    def __init__(
        self,
        kind: str,
        function: Any,
        key_serializer: TypeSerializer[Any],
        config: OperatorConfig,
        backend_factory: Optional[Callable[[], KeyedStateBackend]] = None,
    ) -> None:
        if kind not in KEYED_KINDS:
            raise JobExecutionError(
                f"operator {config.operator_name!r}: unknown keyed operator kind {kind!r}; "
                f"expected one of {KEYED_KINDS}"
            )
        if config.is_batch:
            raise JobExecutionError(
                f"operator {config.operator_name!r}: KeyGroupRuntime runs STREAMING micro-batches, "
                "got a BATCH OperatorConfig"
            )
        self.kind = kind
        self.function = function
        self.key_serializer = key_serializer
        self.config = config
        if backend_factory is None:
            backend_factory = self._heap_backend
        self.backend_factory = backend_factory

    def _heap_backend(self) -> KeyedStateBackend:
        from ..state_store.backends.heap import HashMapStateBackend

        return HashMapStateBackend(self.key_serializer, self.config.max_parallelism)

    def run(
        self,
        state: Optional[bytes],
        rows: Iterable[KeyGroupRow],
        watermark: int = MIN_WATERMARK,
        *,
        end_of_input: bool = False,
        processing_time: Optional[int] = None,
    ) -> KeyGroupResult:
        """One micro-batch: restore ``state``, fire due timers, process ``rows``, snapshot.

        ``watermark`` is the operator (Flink) watermark of this micro-batch;
        ``end_of_input`` moves it to +inf after the elements so every timer fires.
        """
        name = self.config.operator_name
        backend = self.backend_factory()
        operator = make_keyed_operator(self.kind, self.function)
        result = KeyGroupResult()
        outputs = result.outputs
        try:
            if state is not None:
                metas, entries = decode_state(state)
                backend.restore(metas, entries)
            operator.open(backend, self.config)
            try:
                if processing_time is not None:
                    outputs.extend(operator.advance_processing_time(processing_time))
                if watermark > MIN_WATERMARK:
                    outputs.extend(operator.advance_watermark(min(watermark, MAX_WATERMARK)))
                outputs.extend(self._process(operator, backend, rows, result))
                if end_of_input:
                    outputs.extend(operator.end_input())
                result.next_event_timer = operator.event_queue.peek_timestamp()
                result.next_processing_timer = operator.processing_queue.peek_timestamp()
                metas_out = backend.state_meta_infos()
                entries_out = list(backend.snapshot())
            finally:
                operator.close()
        except DataStreamError:
            raise
        except Exception as exc:
            raise JobExecutionError(
                f"operator {name!r}: key group micro-batch failed: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            backend.close()
        result.state_entries = len(entries_out)
        result.state = encode_state(metas_out, entries_out) if entries_out else None
        return result

    def _process(self, operator: Any, backend: Any, rows: Iterable[KeyGroupRow],
                 result: KeyGroupResult) -> list[Output]:
        out: list[Output] = []
        deserialize = self.key_serializer.deserialize
        set_current_key = backend.set_current_key
        process = operator.process_element
        current: Optional[bytes] = None
        n = 0
        for key_bytes, timestamp, value, input_index in rows:
            if key_bytes != current:
                if type(key_bytes) is not bytes:
                    key_bytes = bytes(key_bytes)
                try:
                    key = deserialize(key_bytes)
                except Exception as exc:
                    raise SerializationError(
                        f"operator {self.config.operator_name!r}: cannot deserialize key bytes "
                        f"{key_bytes!r:.80} with {self.key_serializer!r}: {exc}"
                    ) from exc
                set_current_key(key, key_bytes)
                current = key_bytes
            out.extend(process(value, timestamp, input_index))
            n += 1
        result.elements = n
        return out
