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

A plain rolling ``reduce`` on the heap backend (no user ``open``/``close``, state
holding only its ``_reduce`` values) takes a lean path with the same results and
the same state bytes: a dict ``key bytes -> value`` instead of a backend, values
unpickled only for the keys this batch touches, untouched entries re-encoded
as they came (see :meth:`KeyGroupRuntime._run_lean_reduce`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import contextmanager
from dataclasses import replace
from itertools import chain, count, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Optional

from ..state_store.backends import HEAP, KeyGroupStore
from ..state_store.bulk import paused_gc
from ..state_store.entries import StateMetaInfo
from ..state_store.exceptions import DataStreamError, SerializationError
from ..state_store.serializers import PickleSerializer
from .base import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    OperatorConfig,
    Output,
    raise_named_serialization_error,
)
from .driver import key_deserializer, process_keyed_rows, process_keyed_rows_at
from .exceptions import JobExecutionError
from .factory import KEYED_KINDS, make_keyed_operator
from .functions import per_record_call
from .instances import SubtaskInstance, subtask_of
from .keygroup_state import decode_state, dump_state, encode_state, load_state, state_entries
from .lean_reduce import VOID_NS, fold_in_order, keyed_entries

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend
    from ..state_store.serializers import TypeSerializer

__all__ = [
    "KEYED_KINDS",
    "KeyGroupColumns",
    "KeyGroupResult",
    "KeyGroupRuntime",
    "make_keyed_operator",
    "encode_state",
    "decode_state",
]

#: Value serializer of the reduce state.
_PICKLE_SERIALIZER = PickleSerializer.INSTANCE

#: ``(key_bytes, timestamp, value, input_index)`` - one input element.
KeyGroupRow = tuple[bytes, Optional[int], Any, int]


def _batch_failure(name: str, exc: Exception) -> JobExecutionError:
    """The error of a key group's micro-batch that failed on a foreign exception."""
    return JobExecutionError(
        f"operator {name!r}: key group micro-batch failed: {type(exc).__name__}: {exc}")


@contextmanager
def _failures_named(name: str) -> Iterator[None]:
    """Errors of a key group's micro-batch, named for operator ``name``: a serializer's
    error names it, the library's own pass as raised, a foreign one becomes
    :func:`_batch_failure`."""
    try:
        yield
    except SerializationError as exc:  # a state (or its snapshot) could not hold a value
        raise_named_serialization_error(exc, name)
    except DataStreamError:
        raise
    except Exception as exc:
        raise _batch_failure(name, exc) from exc


class KeyGroupColumns:
    """The rows of one call as parallel lists (what a columnar reader has anyway).

    Iterating gives :data:`KeyGroupRow` tuples, so it is a valid ``rows`` argument of
    :meth:`KeyGroupRuntime.run` everywhere; the lean reduce path reads the lists
    directly. ``input_indexes`` None means every element comes from input 0.

    A reader of typed keys may give each element's key value (``key_values``) and the
    bytes of each distinct key (``key_bytes``) instead of ``keys``: the lean reduce then
    keys its fold by the values, and ``keys`` (each element's key bytes) is only built when
    something reads it. ``key_group``, when given, is the key group the reader checked
    every key's bytes to belong to.
    """

    __slots__ = ("_keys", "timestamps", "values", "input_indexes", "key_values", "key_bytes",
                 "key_group")

    def __init__(self, keys: Optional[list[bytes]], timestamps: list[Optional[int]],
                 values: list[Any], input_indexes: Optional[list[int]] = None, *,
                 key_values: Optional[list[Any]] = None,
                 key_bytes: Optional[dict[Any, bytes]] = None,
                 key_group: Optional[int] = None) -> None:
        if keys is None and (key_values is None or key_bytes is None):
            raise JobExecutionError("KeyGroupColumns: keys, or key values and their bytes")
        n = len(keys) if keys is not None else len(key_values or ())
        if not n == len(timestamps) == len(values) or (
                input_indexes is not None and len(input_indexes) != n):
            raise JobExecutionError(
                f"KeyGroupColumns: columns of different lengths ({n} keys, "
                f"{len(timestamps)} timestamps, {len(values)} values)")
        self._keys = keys
        self.timestamps = timestamps
        self.values = values
        self.input_indexes = input_indexes
        self.key_values = key_values if keys is None else None
        self.key_bytes = key_bytes if keys is None else None
        self.key_group = key_group

    @property
    def keys(self) -> list[bytes]:
        """Each element's key bytes."""
        if self._keys is None:
            assert self.key_values is not None and self.key_bytes is not None
            self._keys = list(map(self.key_bytes.__getitem__, self.key_values))
        return self._keys

    def __len__(self) -> int:
        return len(self.timestamps)

    def __iter__(self) -> Iterator[KeyGroupRow]:
        sides: Iterable[int] = self.input_indexes if self.input_indexes is not None else repeat(0)
        return zip(self.keys, self.timestamps, self.values, sides)


class KeyGroupResult:
    """What one micro-batch of a key group produced.

    ``state`` is None when the key group holds nothing any more (the plugin removes
    its GroupState); ``next_event_timer`` / ``next_processing_timer`` are the
    earliest pending timers (None when there are none).

    ``outputs`` may be given as ``columns``, ``(values, timestamps)`` of main outputs
    (the lean reduce's): the ``Output`` tuples are then only built when ``outputs`` is
    read, and :meth:`output_columns` hands the columns on as they are.
    """

    __slots__ = ("_outputs", "_columns", "state", "next_event_timer", "next_processing_timer",
                 "elements", "state_entries", "positions")

    def __init__(self, outputs: Optional[list[Output]] = None, state: Optional[bytes] = None,
                 next_event_timer: Optional[int] = None,
                 next_processing_timer: Optional[int] = None, elements: int = 0,
                 state_entries: int = 0, *,
                 columns: Optional[tuple[list[Any], list[Optional[int]]]] = None) -> None:
        self._outputs = [] if outputs is None and columns is None else outputs
        self._columns = columns if outputs is None else None
        self.state = state
        self.next_event_timer = next_event_timer
        self.next_processing_timer = next_processing_timer
        self.elements = elements
        self.state_entries = state_entries
        #: with ``track_positions``: per output, the position of the element that produced
        #: it (-1: before the elements, e.g. a timer; ``elements``: at the end of input);
        #: None when every element produced exactly one output, in order (the lean reduce)
        self.positions: Optional[list[int]] = None

    @property
    def outputs(self) -> list[Output]:
        if self._outputs is None:
            assert self._columns is not None
            values, stamps = self._columns
            # Output(None, value, timestamp) per element, built at C speed
            self._outputs = list(map(_new_tuple, repeat(Output),
                                     zip(repeat(None), values, stamps)))
            self._columns = None
        return self._outputs

    @outputs.setter
    def outputs(self, outputs: list[Output]) -> None:
        self._outputs, self._columns = outputs, None

    def output_columns(self) -> tuple[Optional[list[Optional[str]]], list[Any],
                                      list[Optional[int]]]:
        """``(tags, values, timestamps)`` of the outputs; ``tags`` None when every output is
        a main output given as columns."""
        if self._outputs is None:
            assert self._columns is not None
            return None, self._columns[0], self._columns[1]
        outputs = self._outputs
        return ([o[0] for o in outputs], [o[1] for o in outputs], [o[2] for o in outputs])

    def __repr__(self) -> str:
        return (f"KeyGroupResult(outputs={self.outputs!r}, state={self.state!r}, "
                f"next_event_timer={self.next_event_timer!r}, "
                f"next_processing_timer={self.next_processing_timer!r}, "
                f"elements={self.elements!r}, state_entries={self.state_entries!r})")


class KeyGroupRuntime:
    """Runs one keyed operator over the elements of one key group, one micro-batch at a time.

    ``backend_factory()`` returns a fresh, empty keyed backend (heap by default);
    a new operator is opened and closed per call on the key group's backend, so only the
    state bytes carry state between micro-batches. The user's function is not per call: a
    call for a key group (``key_group`` given) runs the function instance of the key
    group's subtask in ``instances`` (operators/instances.py: made, and opened, the first
    time; default: kept by this runtime), as Flink runs one instance per parallel instance.
    """

    def __init__(
        self,
        kind: str,
        function: Any,
        key_serializer: TypeSerializer[Any],
        config: OperatorConfig,
        backend_factory: Optional[Callable[[], KeyedStateBackend]] = None,
        store: Optional[KeyGroupStore] = None,
        instances: Optional[dict[int, SubtaskInstance]] = None,
        parallel_instances: Optional[int] = None,
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
        lean = kind == "reduce" and backend_factory is None and store is None
        if backend_factory is None:
            backend_factory = self._heap_backend
        self.backend_factory = backend_factory
        #: the backend's STREAMING key-group store (its registration's; e.g. RocksDB: the
        #: state bytes point to versioned files); None: the
        #: state bytes are the backend's full snapshot
        self.store = store
        #: the reduce function when the lean reduce path applies (see ``_run_lean_reduce``)
        self._lean_reduce = _plain_reduce_function(function) if lean else None
        #: meta infos (as dicts) a heap ReduceOperator snapshots; computed on first use
        self._reduce_metas: Optional[list[dict[str, Any]]] = None
        #: subtask index -> the long-lived instance of the function (instances.py)
        self.instances: dict[int, SubtaskInstance] = {} if instances is None else instances
        #: how many parallel instances the key groups are split into (Flink's ranges; the
        #: number of Spark partitions a STREAMING stage runs on; None: the parallelism)
        self.parallel_instances = parallel_instances or config.parallelism

    def _heap_backend(self) -> KeyedStateBackend:
        return HEAP.create(self.key_serializer, self.config.max_parallelism)

    def run(
        self,
        state: Optional[bytes],
        rows: Iterable[KeyGroupRow],
        watermark: int = MIN_WATERMARK,
        *,
        end_of_input: bool = False,
        processing_time: Optional[int] = None,
        key_group: Optional[int] = None,
        track_positions: bool = False,
        watermark_after: Optional[int] = None,
    ) -> KeyGroupResult:
        """One micro-batch: restore ``state``, fire due timers, process ``rows``, snapshot.

        With ``track_positions`` the result's ``positions`` say which element produced each
        output (:class:`KeyGroupResult`), so a caller can interleave several key groups'
        outputs in their elements' order.

        ``watermark`` is the operator (Flink) watermark of this micro-batch;
        ``watermark_after``, when later, is the watermark the operator moves to after the
        elements (they reached it before that watermark: a keyed stage's input that the stage
        above emitted in the same micro-batch); ``end_of_input`` moves it to +inf after the
        elements so every timer fires.
        With a key-group ``store``, ``state`` is what the store committed (RocksDB: a version
        pointer) and ``key_group`` is required; the result's ``state`` is the new one.
        """
        if self._lean_reduce is not None:
            lean = self._run_lean_reduce(state, rows)
            if lean is not None:
                return lean
        name = self.config.operator_name
        store = self.store
        group = -1  # the key group the store holds (a store needs its number)
        if store is not None:
            if key_group is None:
                raise JobExecutionError(
                    f"operator {name!r}: the key group store needs the key group number")
            group = key_group
        operator = self.new_operator(key_group)
        result = KeyGroupResult()
        outputs = result.outputs
        backend: Any = None
        committed = False
        try:
            with _failures_named(name):
                if store is not None:
                    backend = store.acquire(group, state)
                else:
                    backend = self.backend_factory()
                    if state is not None:
                        with paused_gc():
                            raw_metas, rows_in, timers_in, _ = load_state(state)
                            backend.restore([StateMetaInfo.from_dict(m) for m in raw_metas],
                                            state_entries(rows_in))
                            for timer_state, columns in timers_in:
                                backend.restore_timer_columns(timer_state, columns)
                operator.open(backend, self.config)
                try:
                    if processing_time is not None:
                        outputs.extend(operator.advance_processing_time(processing_time))
                    if watermark > MIN_WATERMARK:
                        outputs.extend(operator.advance_watermark(min(watermark, MAX_WATERMARK)))
                    if track_positions:
                        positions = [-1] * len(outputs)
                        produced, at = self._process_at(operator, backend, rows, result)
                        outputs.extend(produced)
                        positions.extend(at)
                    else:
                        outputs.extend(self._process(operator, backend, rows, result))
                    if watermark_after is not None and watermark_after > watermark:
                        outputs.extend(operator.advance_watermark(
                            min(watermark_after, MAX_WATERMARK)))
                    if end_of_input:
                        outputs.extend(operator.end_input())
                    if track_positions:
                        positions.extend(repeat(result.elements, len(outputs) - len(positions)))
                        result.positions = positions
                    result.next_event_timer = operator.event_queue.peek_timestamp()
                    result.next_processing_timer = operator.processing_queue.peek_timestamp()
                finally:
                    operator.close()
                if store is not None:
                    result.state = store.commit(group, backend)
                    committed = True
                else:
                    with paused_gc():
                        metas_out = backend.state_meta_infos()
                        taken = backend.take_timer_columns()  # kept as columns, not entries
                        rows_out = [tuple(e) for e in backend.snapshot()]
                        timer_count = sum(columns.timer_count() for _, columns in taken)
                        result.state_entries = len(rows_out) + timer_count
                        if rows_out or timer_count:
                            result.state = dump_state([m.to_dict() for m in metas_out], rows_out,
                                                      taken, self.config.max_parallelism)
        finally:
            if store is None:
                if backend is not None:
                    backend.close()
            elif not committed:
                store.abandon(group)
        return result

    def new_operator(self, key_group: Optional[int]) -> Any:
        """A fresh, unopened operator for one call (subclasses prepare it further), running
        the function instance of ``key_group``'s subtask (None: a function of its own)."""
        if key_group is None:
            return make_keyed_operator(self.kind, self.function)
        config, parallel = self.config, self.parallel_instances
        subtask = subtask_of(key_group, parallel, config.max_parallelism)
        instance = self.instances.get(subtask)
        if instance is None:
            instance = SubtaskInstance(self.function, replace(
                config, subtask_index=subtask, parallelism=parallel))
            self.instances[subtask] = instance
        operator = make_keyed_operator(self.kind, instance.function)
        operator.instance = instance
        return operator

    def close_instances(self) -> None:
        """Close the function instances this runtime made (the end of its run)."""
        instances = list(self.instances.values())
        self.instances.clear()
        for instance in instances:
            instance.close()

    def restored_state(self, key_group: int, data: bytes) -> bytes:
        """The committed state of a key group that starts from savepoint restore bytes
        ``data`` (:func:`encode_state`); with a key-group store: imported into a first version."""
        if self.store is None:
            return data
        metas, entries = decode_state(data)
        return self.store.import_entries(key_group, metas, entries)

    def _process(self, operator: Any, backend: Any, rows: Iterable[KeyGroupRow],
                 result: KeyGroupResult) -> list[Output]:
        # rows arrive in arrival order, so keys interleave: each distinct key is
        # deserialized once per call
        key_of = key_deserializer(self.key_serializer, self.config.operator_name, cache=True)
        if isinstance(rows, Sized):  # KeyGroupColumns, lists
            out = list(chain.from_iterable(process_keyed_rows(operator, backend, rows, key_of)))
            result.elements = len(rows)
            return out
        seen = count()  # zip stops at the end of rows without drawing from it
        out = list(chain.from_iterable(
            process_keyed_rows(operator, backend, map(_first, zip(rows, seen)), key_of)))
        result.elements = next(seen)
        return out

    def _process_at(self, operator: Any, backend: Any, rows: Iterable[KeyGroupRow],
                    result: KeyGroupResult) -> tuple[list[Output], list[int]]:
        """:meth:`_process`, with each output's element position (``track_positions``)."""
        key_of = key_deserializer(self.key_serializer, self.config.operator_name, cache=True)
        elements = rows if isinstance(rows, Sized) else list(rows)
        out: list[Output] = []
        positions: list[int] = []
        for position, produced in process_keyed_rows_at(operator, backend, elements, key_of):
            before = len(out)
            out.extend(produced)
            positions.extend(repeat(position, len(out) - before))
        result.elements = len(elements)
        return out, positions

    # -- lean reduce -----------------------------------------------------------------------
    def _expected_reduce_metas(self) -> list[dict[str, Any]]:
        """The meta infos a heap-backed ReduceOperator snapshots (taken from a real one)."""
        if self._reduce_metas is None:
            backend = self._heap_backend()
            operator = make_keyed_operator("reduce", self.function)
            try:
                operator.open(backend, self.config)
                operator.close()
                self._reduce_metas = [m.to_dict() for m in backend.state_meta_infos()]
            finally:
                backend.close()
        return self._reduce_metas

    @property
    def lean_reduce(self) -> bool:
        """Whether this runtime's reduce takes the lean path (a plain reduce on the heap
        backend: no operator, no backend; :meth:`_run_lean_reduce`)."""
        return self._lean_reduce is not None

    def lean_restored(self, state: Optional[bytes]) -> Optional[dict[bytes, tuple[Any, ...]]]:
        """The ``_reduce`` entries of a lean reduce's ``state`` by key bytes (empty for
        None); None when ``state`` holds anything else (e.g. restored from a savepoint
        written by another operator layout): the operator path handles it then."""
        from .keyed import REDUCE_STATE_NAME

        restored: dict[bytes, tuple[Any, ...]] = {}
        if state is not None:
            state_metas, entries, timers, _ = load_state(state)
            if state_metas != self._expected_reduce_metas() or timers:
                return None
            for entry in entries:
                if entry[1] != REDUCE_STATE_NAME or entry[3] != VOID_NS or entry[4] != b"":
                    return None
                restored[entry[2]] = entry
        return restored

    def lean_state(self, key_bytes: list[bytes], values: list[Any],
                   restored: dict[bytes, tuple[Any, ...]],
                   key_group: Optional[int]) -> tuple[Optional[bytes], int]:
        """The state bytes (None: empty) and entry count of a lean reduce whose touched keys
        (their distinct ``key_bytes``) now hold ``values``, started from ``restored``
        (:func:`~.lean_reduce.keyed_entries`)."""
        with _failures_named(self.config.operator_name):
            entries = keyed_entries(key_bytes, values, restored,
                                    self.config.max_parallelism, key_group)
        return (dump_state(self._expected_reduce_metas(), entries) if entries else None,
                len(entries))

    def _run_lean_reduce(self, state: Optional[bytes],
                         rows: Iterable[KeyGroupRow]) -> Optional[KeyGroupResult]:
        """``run`` for a plain rolling reduce on the heap backend, without a backend.

        Same outputs (every intermediate result, with its element's timestamp, in
        arrival order) and the same state (unified entries of the ``_reduce`` value
        state, canonical order, the same meta infos) as the operator path. A STREAMING
        reduce holds no timers, so watermarks, processing time and end of input emit
        nothing. Returns None - before consuming ``rows`` - when :meth:`lean_restored`
        does not read ``state``: the operator path then handles this call.
        """
        restored = self.lean_restored(state)
        if restored is None:
            return None
        name = self.config.operator_name
        reduce_function = self._lean_reduce
        assert reduce_function is not None
        key_bytes: Optional[dict[Any, bytes]] = None
        checked_group = rows.key_group if isinstance(rows, KeyGroupColumns) else None
        if isinstance(rows, KeyGroupColumns) and rows.key_values is not None:
            # typed keys: the fold is keyed by their values, bytes only per distinct key
            keys, key_bytes = rows.key_values, rows.key_bytes
            stamps, elements = rows.timestamps, rows.values
        elif isinstance(rows, KeyGroupColumns):
            keys, stamps, elements = rows.keys, rows.timestamps, rows.values
        else:
            keys, stamps, elements = [], [], []
            for kb, timestamp, value, _ in rows:
                keys.append(kb)
                stamps.append(timestamp)
                elements.append(value)
        if key_bytes is None and set(map(type, keys)) - {bytes}:
            keys = [k if type(k) is bytes else bytes(k) for k in keys]  # e.g. bytearray
        with _failures_named(name):
            # running values of the keys this batch touches; a restored one is unpickled
            # here, the others keep their stored bytes
            deserialize = _PICKLE_SERIALIZER.deserialize
            if key_bytes is None:
                running = {k: deserialize(restored[k][5])
                           for k in set(keys).intersection(restored)}
            else:
                running = {k: deserialize(restored[kb][5])
                           for k, kb in key_bytes.items() if kb in restored}
            results = fold_in_order(per_record_call(reduce_function.reduce), name, keys, elements, running)
        touched = list(running)  # the keys' bytes, or their typed values mapped to bytes
        kbs = touched if key_bytes is None else list(map(key_bytes.__getitem__, touched))
        state_out, entries = self.lean_state(kbs, list(running.values()), restored,
                                             checked_group)
        return KeyGroupResult(state=state_out, elements=len(results), state_entries=entries,
                              columns=(results, stamps))


_new_tuple = tuple.__new__
_first = itemgetter(0)


def _plain_reduce_function(function: Any) -> Any:
    """``function`` as a ReduceFunction when it needs no runtime context (no ``open`` /
    ``close`` of its own, so it cannot hold keyed state); else None."""
    from ..state_store.functions import Function
    from .functions import as_reduce_function

    try:
        reduce_function = as_reduce_function(function, "reduce_function")
    except DataStreamError:
        return None  # the operator path reports it
    kind = type(reduce_function)
    if kind.open is not Function.open or kind.close is not Function.close:
        return None
    return reduce_function
