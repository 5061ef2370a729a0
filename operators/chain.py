"""Non-keyed, fused per-record pipelines and key extraction.

``StatelessChain`` runs a list of map / flat_map / filter / process /
timestamp-assigner / async stages over each record in one Python call chain: stages
are compiled at ``open`` into closures that push each output straight into the
next stage (no intermediate lists, methods prebound). Side outputs of any stage
leave the chain tagged; only main outputs flow on. An async stage may hold records
back; ``finish`` (end of the input) drains it.

``CoStatelessOperator`` is the non-keyed two-input counterpart (CoMap /
CoFlatMap / CoProcess functions). ``KeyExtractor`` computes ``(key_group,
key_bytes)`` per record for the shuffle in front of a keyed operator.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..state_store.exceptions import DataStreamError, GraphBuildError, SerializationError
from ..state_store.keygroups import check_max_parallelism
from ..state_store.row import Row, take_emitted
from .async_wait import AsyncWaitOperator
from .base import OperatorConfig, Output, user_function_error
from .context import ProcessContextImpl, RuntimeContext
from .exceptions import JobExecutionError
from .functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessFunction,
    TimestampAssigner,
    as_filter_function,
    as_flat_map_function,
    as_key_selector,
    as_map_function,
    as_timestamp_assigner,
    per_record_call,
)
from .modes import RuntimeMode
from .timers import NonKeyedTimerService, OperatorClock

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..state_store.backend import KeyedStateBackend
    from ..state_store.serializers import TypeSerializer

__all__ = [
    "STAGE_KINDS",
    "ChainStage",
    "StatelessChain",
    "CoStatelessOperator",
    "KeyExtractor",
    "open_key_selector",
]

#: Stage kinds of a StatelessChain.
STAGE_KINDS = ("map", "flat_map", "filter", "process", "timestamps", "async")

_NORMALIZERS: dict[str, Callable[..., Function]] = {
    "map": as_map_function,
    "flat_map": as_flat_map_function,
    "filter": as_filter_function,
    "timestamps": as_timestamp_assigner,
}


class ChainStage(NamedTuple):
    """One stage: ``kind`` in STAGE_KINDS, its function, and a name for error messages."""

    kind: str
    function: Any
    name: str | None = None


def _stage_from(spec: Any, position: int) -> ChainStage:
    """Normalise a stage spec: ChainStage, ``(kind, function[, name])`` or a function object."""
    if isinstance(spec, ChainStage):
        kind, function, name = spec
    elif isinstance(spec, tuple) and 2 <= len(spec) <= 3 and isinstance(spec[0], str):
        kind, function = spec[0], spec[1]
        name = spec[2] if len(spec) == 3 else None
    elif isinstance(spec, MapFunction):
        kind, function, name = "map", spec, None
    elif isinstance(spec, FlatMapFunction):
        kind, function, name = "flat_map", spec, None
    elif isinstance(spec, FilterFunction):
        kind, function, name = "filter", spec, None
    elif isinstance(spec, ProcessFunction):
        kind, function, name = "process", spec, None
    elif isinstance(spec, TimestampAssigner):
        kind, function, name = "timestamps", spec, None
    else:
        raise GraphBuildError(
            f"StatelessChain: stage {position} must be a ChainStage, a (kind, function) tuple "
            f"or a Map/FlatMap/Filter/Process function or TimestampAssigner, got {spec!r:.80}"
        )
    if kind not in STAGE_KINDS:
        raise GraphBuildError(
            f"StatelessChain: stage {position} has unknown kind {kind!r}; "
            f"expected one of {', '.join(STAGE_KINDS)}"
        )
    if kind == "timestamps" and function is None:
        pass  # a watermark strategy without a timestamp assigner: records keep their timestamps
    elif kind == "process":
        if not isinstance(function, ProcessFunction):
            raise GraphBuildError(
                f"StatelessChain: stage {position} ('process') needs a ProcessFunction, "
                f"got {function!r:.80}"
            )
    elif kind == "async":
        if not isinstance(function, AsyncWaitOperator):
            raise GraphBuildError(
                f"StatelessChain: stage {position} ('async') needs an AsyncWaitOperator, "
                f"got {function!r:.80}"
            )
    else:
        function = _NORMALIZERS[kind](function, f"stage {position}")
    if name is None:
        name = f"{kind}[{position}]"
    elif not isinstance(name, str) or not name:
        raise GraphBuildError(f"StatelessChain: stage {position} name must be a non-empty str")
    return ChainStage(kind, function, name)


def _emit_generated(
    result: Any,
    nxt: Callable[[Any, Any], None],
    append: Callable[[Output], None],
    ts: int | None,
    name: str,
    what: str,
    record: Any,
) -> None:
    """Push the items of a process-function result: ``(OutputTag, v)`` pairs go to side outputs."""
    it = iter(result)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except DataStreamError:
            raise
        except Exception as exc:
            raise user_function_error(name, what, record, exc) from exc
        if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
            append(Output(item[0].tag_id, take_emitted(item[1]), ts))
        else:
            if isinstance(item, Row):  # taken when emitted (see take_emitted)
                item = take_emitted(item)
            nxt(item, ts)


def _not_opened(value: Any, timestamp: Any) -> None:
    """A chain's head before ``open()`` (``process`` checks first, naming the chain)."""
    raise JobExecutionError("StatelessChain: call open() before processing")


class _Clocked:
    """An operator whose process functions read a clock (``current_watermark()``,
    ``current_processing_time()``); ``_clock`` is None until it is opened."""

    _clock: OperatorClock | None

    def advance_watermark(self, watermark: int) -> list[Output]:
        """Record the watermark (seen by process functions' ``current_watermark()``).

        Args:
            watermark: The new watermark in ms.

        Returns:
            No outputs: a stateless operator has no timers.
        """
        if self._clock is not None:
            self._clock.watermark = watermark
        return []

    def advance_processing_time(self, now: int) -> list[Output]:
        """Record the processing time (seen by ``current_processing_time()``).

        Args:
            now: The processing time in ms.

        Returns:
            No outputs: a stateless operator has no timers.
        """
        if self._clock is not None:
            self._clock.processing_time = now
        return []


class StatelessChain(_Clocked):
    """Fused non-keyed stages, applied per record: ``process(value, timestamp)``.

    Call :meth:`open` once per partition (it opens every function) and
    :meth:`close` at the end. Outputs carry the record's timestamp, or the one
    given by the last timestamp-assigner stage before them.
    """

    def __init__(self, stages: Sequence[Any], name: str = "chain") -> None:
        if isinstance(stages, (str, bytes)) or not isinstance(stages, Iterable):
            raise GraphBuildError(f"StatelessChain: stages must be a list, got {stages!r:.80}")
        self.stages: list[ChainStage] = [_stage_from(s, i) for i, s in enumerate(stages)]
        self.name = name
        self._opened = False
        #: the compiled pipeline's first step (set by open(); before it, one that refuses)
        self._head: Callable[[Any, Any], None] = _not_opened
        self._buf: list[Output] = []
        self._clock: OperatorClock | None = None
        self._drains: list[Callable[[], None]] = []

    def __getstate__(self) -> dict[str, Any]:
        return {"stages": self.stages, "name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.stages = state["stages"]
        self.name = state["name"]
        self._opened = False
        self._head = _not_opened
        self._buf = []
        self._clock = None
        self._drains = []

    def __repr__(self) -> str:
        return f"StatelessChain({[s.name for s in self.stages]!r})"

    # -- lifecycle ----------------------------------------------------------------------

    def open(
        self, config: OperatorConfig | None = None, backend: KeyedStateBackend | None = None
    ) -> None:
        """Open every stage's function and compile the per-record pipeline.

        ``backend`` is given only when the chain runs keyed (after ``key_by``), which lets
        its functions use keyed state of the current key.
        """
        if self._opened:
            return
        config = config or OperatorConfig.for_mode(RuntimeMode.STREAMING, operator_name=self.name)
        self._clock = OperatorClock(config)
        for stage in self.stages:
            if stage.function is None:
                continue
            # each stage's metrics under its own operator's name, as Flink's chained operators
            runtime_context = RuntimeContext(config, backend, metrics_name=stage.name)
            open_named(stage.function, runtime_context, config, f"stage {stage.name!r}")
        self._buf = []
        self._drains = []
        self._head = self._compile(config)
        self._opened = True

    def close(self) -> None:
        """Close every stage's function."""
        if not self._opened:
            return
        self._opened = False
        for stage in self.stages:
            if stage.function is not None:
                stage.function.close()

    def _compile(self, config: OperatorConfig) -> Callable[[Any, Any], None]:
        append = self._buf.append
        op_name = config.operator_name
        make_output = Output._make

        def sink(value: Any, ts: int | None) -> None:
            append(make_output((None, value, ts)))

        nxt: Callable[[Any, Any], None] = sink
        for stage in reversed(self.stages):
            if stage.function is None:  # identity timestamps stage
                continue
            nxt = self._compile_stage(stage, nxt, append, op_name)
        return nxt

    def _compile_stage(
        self,
        stage: ChainStage,
        nxt: Callable[[Any, Any], None],
        append: Callable[[Output], None],
        op_name: str,
    ) -> Callable[[Any, Any], None]:
        kind = stage.kind
        fn = stage.function
        what = f"{kind} stage {stage.name!r}"

        if kind == "async":
            submit = fn.process
            drain = fn.drain
            # compiled last stage first: upstream async stages drain before downstream ones
            self._drains.insert(0, lambda: drain(nxt))

            def run_async(value: Any, ts: int | None) -> None:
                submit(value, ts, nxt)

            return run_async

        if kind == "map":
            f = per_record_call(fn.map)

            def run_map(value: Any, ts: int | None) -> None:
                try:
                    result = f(value)
                except DataStreamError:
                    raise
                except Exception as exc:
                    raise user_function_error(op_name, what, value, exc) from exc
                if isinstance(result, Row):  # taken when emitted (see take_emitted)
                    result = take_emitted(result)
                nxt(result, ts)

            return run_map

        if kind == "filter":
            f = per_record_call(fn.filter)

            def run_filter(value: Any, ts: int | None) -> None:
                try:
                    keep = f(value)
                except DataStreamError:
                    raise
                except Exception as exc:
                    raise user_function_error(op_name, what, value, exc) from exc
                if keep:
                    nxt(value, ts)

            return run_filter

        if kind == "flat_map":
            f = per_record_call(fn.flat_map)

            def run_flat_map(value: Any, ts: int | None) -> None:
                try:
                    result = f(value)
                    if result is None:
                        return
                    items = iter(result)
                except DataStreamError:
                    raise
                except Exception as exc:
                    raise user_function_error(op_name, what, value, exc) from exc
                while True:
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                    except DataStreamError:
                        raise
                    except Exception as exc:
                        raise user_function_error(op_name, what, value, exc) from exc
                    if isinstance(item, Row):  # taken when emitted (see take_emitted)
                        item = take_emitted(item)
                    nxt(item, ts)

            return run_flat_map

        if kind == "timestamps":
            f = per_record_call(fn.extract_timestamp)

            def run_timestamps(value: Any, ts: int | None) -> None:
                try:
                    new_ts = f(value, ts)
                except DataStreamError:
                    raise
                except Exception as exc:
                    raise user_function_error(op_name, what, value, exc) from exc
                if type(new_ts) is not int:
                    if new_ts is not None and hasattr(new_ts, "__index__") and not isinstance(new_ts, bool):
                        new_ts = new_ts.__index__()
                    else:
                        raise JobExecutionError(
                            f"operator {op_name!r}: {what} returned {new_ts!r:.60} "
                            f"({type(new_ts).__name__}); extract_timestamp must return an int "
                            f"timestamp in milliseconds"
                        )
                nxt(value, new_ts)

            return run_timestamps

        # process
        assert self._clock is not None
        ctx = ProcessContextImpl(NonKeyedTimerService(self._clock), op_name)
        ctx.side_outputs = self._buf
        f = per_record_call(fn.process_element)

        def run_process(value: Any, ts: int | None) -> None:
            ctx.element_timestamp = ts
            try:
                result = f(value, ctx)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(op_name, what, value, exc) from exc
            if result is not None:
                _emit_generated(result, nxt, append, ts, op_name, what, value)

        return run_process

    # -- records ------------------------------------------------------------------------

    def _require_open(self) -> Callable[[Any, Any], None]:
        if not self._opened:
            raise JobExecutionError(f"StatelessChain {self.name!r}: call open() before processing")
        return self._head

    def process(self, value: Any, timestamp: int | None = None) -> list[Output]:
        """Outputs (main and side) of one record, in emission order."""
        head = self._head if self._opened else self._require_open()
        buf = self._buf
        try:
            head(value, timestamp)
            return buf.copy()
        finally:
            buf.clear()

    def process_batch(
        self, values: Iterable[Any], timestamps: Iterable[int | None] | None = None
    ) -> list[Output]:
        """Outputs of many records (one list for the whole batch)."""
        head = self._head if self._opened else self._require_open()

        def run() -> None:
            if timestamps is None:
                for value in values:
                    head(value, None)
            else:
                for value, ts in zip(values, timestamps, strict=True):
                    head(value, ts)

        return self._collected(run)

    def _collected(self, run: Callable[[], None]) -> list[Output]:
        """What ``run`` pushed through the chain (the buffer is left empty, also on error)."""
        buf = self._buf
        try:
            run()
            return buf.copy()
        finally:
            buf.clear()

    def finish(self) -> list[Output]:
        """Outputs of the records async stages still hold (end of the input: a partition,
        or a micro-batch's partition); empty for a chain without async stages."""
        if not self._drains:
            return []
        self._require_open()

        def run() -> None:
            for drain in self._drains:
                drain()

        return self._collected(run)


class CoStatelessOperator(_Clocked):
    """Non-keyed two-input operator: CoMapFunction, CoFlatMapFunction or CoProcessFunction.

    ``process(value, timestamp, input_index)`` with ``input_index`` 0 (first input)
    or 1 (second input).
    """

    def __init__(self, function: Any, name: str = "co-operator") -> None:
        if not isinstance(function, (CoMapFunction, CoFlatMapFunction, CoProcessFunction)):
            raise GraphBuildError(
                f"connect(...): the function must be a CoMapFunction, CoFlatMapFunction or "
                f"CoProcessFunction, got {function!r:.80}"
            )
        self.function = function
        self.name = name
        self._opened = False
        self._ctx: ProcessContextImpl | None = None
        self._clock: OperatorClock | None = None
        self._op_name = name

    def __getstate__(self) -> dict[str, Any]:
        return {"function": self.function, "name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["function"], state["name"])  # unpickled: __init__ runs again

    def open(
        self, config: OperatorConfig | None = None, backend: KeyedStateBackend | None = None
    ) -> None:
        """Open the function."""
        if self._opened:
            return
        config = config or OperatorConfig.for_mode(RuntimeMode.STREAMING, operator_name=self.name)
        self._op_name = config.operator_name
        self._clock = OperatorClock(config)
        self._ctx = ProcessContextImpl(NonKeyedTimerService(self._clock), config.operator_name)
        self.function.open(RuntimeContext(config, backend))
        self._opened = True

    def close(self) -> None:
        """Close the function."""
        if self._opened:
            self._opened = False
            self.function.close()

    def process(self, value: Any, timestamp: int | None = None, input_index: int = 0) -> list[Output]:
        """Outputs of one record of input ``input_index`` (0 or 1)."""
        if not self._opened:
            raise JobExecutionError(f"operator {self.name!r}: call open() before processing")
        fn = self.function
        op_name = self._op_name
        if input_index not in (0, 1):
            raise JobExecutionError(
                f"operator {op_name!r}: input_index must be 0 or 1, got {input_index!r}"
            )
        second = input_index == 1
        out: list[Output] = []
        if isinstance(fn, CoMapFunction):
            what = "map2" if second else "map1"
            try:
                result = fn.map2(value) if second else fn.map1(value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(op_name, what, value, exc) from exc
            out.append(Output(None, take_emitted(result), timestamp))
            return out
        append = out.append

        def main(item: Any, ts: int | None) -> None:
            append(Output(None, take_emitted(item), ts))

        if isinstance(fn, CoFlatMapFunction):
            what = "flat_map2" if second else "flat_map1"
            try:
                result = fn.flat_map2(value) if second else fn.flat_map1(value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(op_name, what, value, exc) from exc
        else:
            what = "process_element2" if second else "process_element1"
            ctx = self._ctx
            assert ctx is not None
            ctx.element_timestamp = timestamp
            ctx.side_outputs = out
            try:
                result = (
                    fn.process_element2(value, ctx) if second else fn.process_element1(value, ctx)
                )
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(op_name, what, value, exc) from exc
        if result is not None:
            _emit_generated(result, main, append, timestamp, op_name, what, value)
        return out


def open_key_selector(selector: KeySelector, config: OperatorConfig) -> None:
    """``selector.open(runtime_context)`` for the parallel instance ``config`` describes; a
    failure names the operator.

    Args:
        selector: the key selector.
        config: the parallel instance's operator configuration.
    Returns:
        None.
    """
    open_named(selector, RuntimeContext(config, None), config, "the key selector")


def open_named(function: Any, runtime_context: RuntimeContext, config: OperatorConfig,
               what: str) -> None:
    """``function.open(runtime_context)``; a failure names the operator and ``what``."""
    try:
        function.open(runtime_context)
    except DataStreamError:
        raise
    except Exception as exc:
        raise JobExecutionError(
            f"operator {config.operator_name!r}: open() of {what} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


class KeyExtractor:
    """Per record: ``(key_group, key_bytes)`` for the shuffle in front of a keyed operator.

    ``key_group = crc32(key_bytes) % max_parallelism`` (``state_store.keygroups``).
    Errors of the key selector or key serializer are re-raised naming the operator.
    Call the extractor itself, or :meth:`extract` (same), :meth:`extract_with_key`
    (also returns the key) or :meth:`extract_batch` (two lists).
    """

    def __init__(
        self,
        key_selector: Any,
        key_serializer: TypeSerializer,
        max_parallelism: int,
        operator_name: str = "key_by",
    ) -> None:
        self.key_selector: KeySelector = as_key_selector(key_selector)
        if not getattr(key_serializer, "is_deterministic", False):
            raise GraphBuildError(
                f"operator {operator_name!r}: key serializer {key_serializer!r} is not "
                f"deterministic (equal keys must give equal bytes); declare a deterministic "
                f"key_type"
            )
        self.key_serializer = key_serializer
        self.max_parallelism = check_max_parallelism(max_parallelism)
        self.operator_name = operator_name
        self._build()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "key_selector": self.key_selector,
            "key_serializer": self.key_serializer,
            "max_parallelism": self.max_parallelism,
            "operator_name": self.operator_name,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._build()

    def __repr__(self) -> str:
        return (
            f"KeyExtractor({self.key_selector!r}, {self.key_serializer!r}, "
            f"max_parallelism={self.max_parallelism})"
        )

    def _build(self) -> None:
        get_key = per_record_call(self.key_selector.get_key)
        serialize = self.key_serializer.serialize
        crc32 = zlib.crc32
        max_par = self.max_parallelism
        op_name = self.operator_name

        def key_bytes_of(value: Any) -> tuple[Any, bytes]:
            try:
                key = get_key(value)
            except DataStreamError:
                raise
            except Exception as exc:
                raise user_function_error(op_name, "key selector", value, exc) from exc
            try:
                return key, serialize(key)
            except Exception as exc:
                raise SerializationError(
                    f"operator {op_name!r}: cannot serialize key {key!r:.80} of type "
                    f"{type(key).__name__}: {exc}"
                ) from exc

        def extract(value: Any) -> tuple[int, bytes]:
            kb = key_bytes_of(value)[1]
            return crc32(kb) % max_par, kb

        def extract_with_key(value: Any) -> tuple[int, bytes, Any]:
            key, kb = key_bytes_of(value)
            return crc32(kb) % max_par, kb, key

        self.extract: Callable[[Any], tuple[int, bytes]] = extract
        self.extract_with_key: Callable[[Any], tuple[int, bytes, Any]] = extract_with_key

    def open(self, config: OperatorConfig | None = None) -> None:
        """``open(runtime_context)`` of the key selector, as PyFlink's ``key_by`` does for the
        parallel instance that extracts the keys (once per instance; see instances.py)."""
        open_key_selector(self.key_selector, config or OperatorConfig.for_mode(
            RuntimeMode.STREAMING, operator_name=self.operator_name))

    def close(self) -> None:
        """``close()`` of the key selector."""
        self.key_selector.close()

    def __call__(self, value: Any) -> tuple[int, bytes]:
        return self.extract(value)

    def extract_batch(self, values: Iterable[Any]) -> tuple[list[int], list[bytes]]:
        """Key groups and key bytes of many records, as two parallel lists."""
        extract = self.extract
        groups: list[int] = []
        keys: list[bytes] = []
        add_group = groups.append
        add_key = keys.append
        for value in values:
            group, kb = extract(value)
            add_group(group)
            add_key(kb)
        return groups, keys
