"""Drivers: run a keyed operator over the rows of one partition.

Used inside Spark's ``mapInArrow`` by the plugin, and directly by tests and the
test harness. Rows are ``(key_bytes, timestamp, value, input_index)`` tuples;
``key_bytes`` are the key serializer's bytes (``KeyExtractor``).

* :func:`run_sorted_keyed`: rows sorted (grouped) by key. The key is deserialized
  and set once per key, and ``end_key()`` closes each key before the next one;
  with the single-key backend this is FLIP-140's sorted execution.
* :func:`run_hash_keyed`: rows in any order; the current key is set per record
  (skipped when it repeats), and at the end of the input ``end_input()`` fires
  every timer with watermark MAX (BATCH hash execution,
  ``execution.sorted-inputs.enabled = false``, heap or rocksdb backend). It can
  also run one micro-batch of a STREAMING job (``end_of_input=False`` and a
  watermark / processing time to advance to).
* :func:`process_keyed_rows`: the per-record loop (set the key when it changes,
  process the element) that ``run_hash_keyed`` and the STREAMING key group runtime
  (``keygroup.KeyGroupRuntime``) share; :func:`key_deserializer` gives both the key
  of the key bytes.

The two drivers are generators: iterate them to completion. By default they open the
operator (if not open yet) and close it when done; the backend is left open so
that the caller can snapshot it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from typing import TYPE_CHECKING, Any

from ..state_store.exceptions import DataStreamError, SerializationError
from .base import KeyedOperator, OperatorConfig, Output, raise_named_serialization_error
from .exceptions import JobExecutionError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend
    from ..state_store.entries import StateEntry, StateMetaInfo
    from ..state_store.serializers import TypeSerializer

__all__ = [
    "KeyedRow",
    "RESTORE_INPUT",
    "run_sorted_keyed",
    "run_hash_keyed",
    "process_keyed_rows",
    "process_keyed_rows_at",
    "key_deserializer",
]

#: ``input_index`` of a restore row ``(key_bytes, None, [StateEntry, ...], RESTORE_INPUT)``:
#: the key's savepoint entries, given to :func:`run_sorted_keyed` as the FIRST row of the key.
RESTORE_INPUT = -1

#: ``(key_bytes, timestamp, value, input_index)``
KeyedRow = tuple[bytes, "int | None", Any, int]


def key_deserializer(
    key_serializer: TypeSerializer, operator_name: str, *, cache: bool = False
) -> Callable[[bytes], Any]:
    """``key_of(key_bytes)``: the key of serialized key bytes, or a ``SerializationError``
    naming the operator when they cannot be read.

    ``cache=True`` deserializes each distinct key once and keeps every key seen: for rows
    whose keys interleave (arrival order), when the number of keys is bounded.
    """
    deserialize = key_serializer.deserialize

    def key_of(key_bytes: bytes) -> Any:
        try:
            return deserialize(key_bytes)
        except Exception as exc:
            raise SerializationError(
                f"operator {operator_name!r}: cannot deserialize key bytes {bytes(key_bytes)!r:.80} "
                f"with {key_serializer!r}: {exc}"
            ) from exc

    return _KeyCache(key_of).__getitem__ if cache else key_of


class _KeyCache(dict):
    """key bytes -> key, deserialized on first use (a hit costs one dict lookup in C)."""

    __slots__ = ("key_of",)

    def __init__(self, key_of: Callable[[bytes], Any]) -> None:
        super().__init__()
        self.key_of = key_of

    def __missing__(self, key_bytes: bytes) -> Any:
        key = self[key_bytes] = self.key_of(key_bytes)
        return key


def process_keyed_rows(
    operator: KeyedOperator,
    backend: KeyedStateBackend,
    rows: Iterable[KeyedRow],
    key_of: Callable[[bytes], Any],
) -> Iterator[Iterable[Output]]:
    """Feed ``rows`` to ``operator.process_element`` in order, yielding their outputs.

    The backend's current key is set (``key_of(key_bytes)``) only when a row's key
    differs from the previous row's. Each element's outputs are yielded as soon as it
    is processed. No end of key or end of input here: the callers add those.
    """
    set_current_key = backend.set_current_key
    process = operator.process_element
    current: bytes | None = None
    for key_bytes, timestamp, value, input_index in rows:
        if key_bytes != current:
            if type(key_bytes) is not bytes:
                key_bytes = bytes(key_bytes)
            set_current_key(key_of(key_bytes), key_bytes)
            current = key_bytes
        outputs = process(value, timestamp, input_index)
        if outputs:
            yield outputs


def process_keyed_rows_at(
    operator: KeyedOperator,
    backend: KeyedStateBackend,
    rows: Iterable[KeyedRow],
    key_of: Callable[[bytes], Any],
) -> Iterator[tuple[int, Iterable[Output]]]:
    """:func:`process_keyed_rows`, each element's outputs with the element's position in
    ``rows`` (what a caller keeping its outputs in the elements' order needs)."""
    position = -1

    def counted() -> Iterator[KeyedRow]:
        nonlocal position
        for row in rows:
            position += 1
            yield row

    # process_keyed_rows takes the next row only after yielding the last one's outputs
    for outputs in process_keyed_rows(operator, backend, counted(), key_of):
        yield position, outputs


def _open(operator: KeyedOperator, backend: KeyedStateBackend, config: OperatorConfig) -> None:
    if not getattr(operator, "is_open", False):
        operator.open(backend, config)


def run_sorted_keyed(
    operator: KeyedOperator,
    backend: KeyedStateBackend,
    rows: Iterable[KeyedRow],
    key_serializer: TypeSerializer,
    config: OperatorConfig,
    on_key_end: Callable[[KeyedStateBackend], Iterable[Output] | None] | None = None,
    *,
    open_operator: bool = True,
    close_operator: bool = True,
    restore_meta: Iterable[StateMetaInfo] | None = None,
) -> Iterator[Output]:
    """Run ``operator`` over rows grouped by key; ``end_key()`` after each key.

    ``on_key_end(backend)`` is called after a key's ``end_key()`` while the key is
    still current (its state complete, its timers fired), before the next key
    drops it - the savepoint writer snapshots each key there; outputs it returns (if
    not None) are yielded after the key's own end-of-key outputs. After the last key,
    ``end_input()`` runs (a no-op for keys already ended in BATCH).

    Savepoint restore: a row ``(key_bytes, None, entries, RESTORE_INPUT)`` that is
    the first row of its key restores ``entries`` (that key's
    :class:`~pyspark_datastream.state_store.entries.StateEntry` rows) into the backend
    with ``restore_meta`` (the savepoint's meta infos of this operator), then calls
    ``operator.on_restored_key()``; a key with only a restore row still ends
    normally (its due timers fire).
    """
    if open_operator:
        _open(operator, backend, config)
    key_of = key_deserializer(key_serializer, config.operator_name)
    set_current_key = backend.set_current_key
    process = operator.process_element
    end_key = operator.end_key
    metas = tuple(restore_meta) if restore_meta is not None else None
    current: bytes | None = None

    def key_ended() -> list[Any]:
        """The current key's end-of-key outputs, then ``on_key_end``'s."""
        ended = list(end_key())
        if on_key_end is not None:
            extra = on_key_end(backend)
            if extra is not None:
                ended.extend(extra)
        return ended

    with _run_errors(operator, config, "sorted", close_operator):
        for key_bytes, timestamp, value, input_index in rows:
            if key_bytes != current:
                if current is not None:
                    yield from key_ended()
                if type(key_bytes) is not bytes:
                    key_bytes = bytes(key_bytes)
                set_current_key(key_of(key_bytes), key_bytes)
                current = key_bytes
                if input_index == RESTORE_INPUT:
                    yield from _restore_key(operator, backend, metas, value)
                    continue
            outputs = process(value, timestamp, input_index)
            if outputs:
                yield from outputs
        if current is not None:
            yield from key_ended()
        yield from operator.end_input()


@contextmanager
def _run_errors(
    operator: KeyedOperator, config: OperatorConfig, what: str, close_operator: bool
) -> Iterator[None]:
    """A keyed run's errors named by the operator; the operator closed after, if asked."""
    try:
        yield
    except SerializationError as exc:  # a state (or snapshot) could not hold a value
        raise_named_serialization_error(exc, config.operator_name)
    except (DataStreamError, GeneratorExit):
        raise
    except Exception as exc:
        raise JobExecutionError(
            f"operator {config.operator_name!r}: {what} keyed run failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if close_operator:
            operator.close()


def _restore_key(
    operator: KeyedOperator,
    backend: KeyedStateBackend,
    metas: tuple[StateMetaInfo, ...] | None,
    entries: list[StateEntry],
) -> Iterable[Output]:
    """Load one key's savepoint entries into the backend (the key is current)."""
    if metas is None:
        raise JobExecutionError(
            "run_sorted_keyed got a restore row but no restore_meta (the savepoint's meta infos)"
        )
    backend.restore(metas, entries)
    hook = getattr(operator, "on_restored_key", None)
    return hook() if hook is not None else ()


def run_hash_keyed(
    operator: KeyedOperator,
    backend: KeyedStateBackend,
    rows: Iterable[KeyedRow],
    key_serializer: TypeSerializer,
    config: OperatorConfig,
    *,
    end_of_input: bool = True,
    watermark: int | None = None,
    processing_time: int | None = None,
    open_operator: bool = True,
    close_operator: bool | None = None,
) -> Iterator[Output]:
    """Run ``operator`` over rows in any order, setting the current key per record.

    After the rows: ``advance_watermark(watermark)`` and
    ``advance_processing_time(processing_time)`` when given, then ``end_input()``
    when ``end_of_input``. ``close_operator`` defaults to ``end_of_input``.
    """
    if close_operator is None:
        close_operator = end_of_input
    if open_operator:
        _open(operator, backend, config)
    key_of = key_deserializer(key_serializer, config.operator_name)
    with _run_errors(operator, config, "hash", close_operator):
        yield from chain.from_iterable(process_keyed_rows(operator, backend, rows, key_of))
        if watermark is not None:
            yield from operator.advance_watermark(watermark)
        if processing_time is not None:
            yield from operator.advance_processing_time(processing_time)
        if end_of_input:
            yield from operator.end_input()
