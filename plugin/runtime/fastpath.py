"""Batch-at-a-time execution of chains of plain lambdas (the common case).

When every stage of a non-keyed chain is a plain callable (map, filter,
flat_map, timestamp assigner), the pass runs each stage as one list
comprehension over a whole Arrow batch instead of calling the chain per
record, and pre-aggregation keys its dict by the key object (serializing each
distinct key once). Results are identical to the per-record path; on a user
error the batch is replayed record by record to name the failing record.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Iterator, Optional

from ..operators.base import user_function_error
from ..operators.functions import per_record_call, wrapped_callable
from ..state_store.exceptions import DataStreamError, SerializationError
from ..state_store.row import Row, take_emitted

__all__ = ["compile_chain", "FastKeyedOutput"]



Stage = Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]]


def _named(kind: str, fn: Callable[..., Any], name: str, body: Stage) -> Stage:
    """Wrap a stage so a failing record is reported with the operator's name."""

    def run(values: list[Any], ts: list[Any]) -> tuple[list[Any], list[Any]]:
        try:
            return body(values, ts)
        except DataStreamError:
            raise
        except Exception as exc:  # noqa: BLE001 - replay to find and name the failing record
            failure = exc
        # replayed outside the handler, so the record's own error carries no batch context
        for v, t in zip(values, ts):
            try:
                fn(v, t) if kind == "timestamps" else fn(v)
            except Exception as exc:  # noqa: BLE001
                raise user_function_error(name, kind, v, exc) from exc
        raise failure

    return run


def compile_chain(stages: list[tuple[Any, ...]], name: str) -> Optional[Callable[..., Any]]:
    """A function ``(values, timestamps) -> (values, timestamps)`` or None when not applicable."""
    compiled: list[Stage] = []
    for kind, function, *_ in stages:  # (kind, function[, operator name])
        if kind == "timestamps" and function is None:
            continue
        fn = wrapped_callable(function)
        if fn is None:
            return None
        if kind == "map":
            def body(vs: list[Any], ts: list[Any], f: Any = fn) -> tuple[list[Any], list[Any]]:
                # a Row is taken when emitted (see take_emitted)
                return [take_emitted(r) if isinstance(r := f(v), Row) else r for v in vs], ts
        elif kind == "filter":
            def body(vs: list[Any], ts: list[Any], f: Any = fn) -> tuple[list[Any], list[Any]]:
                keep = [bool(f(v)) for v in vs]
                return ([v for v, k in zip(vs, keep) if k], [t for t, k in zip(ts, keep) if k])
        elif kind == "flat_map":
            def body(vs: list[Any], ts: list[Any], f: Any = fn) -> tuple[list[Any], list[Any]]:
                out_v: list[Any] = []
                out_t: list[Any] = []
                for v, t in zip(vs, ts):
                    produced = f(v)
                    if produced is None:
                        continue
                    for x in produced:
                        out_v.append(take_emitted(x) if isinstance(x, Row) else x)
                        out_t.append(t)
                return out_v, out_t
        elif kind == "timestamps":
            def body(vs: list[Any], ts: list[Any], f: Any = fn) -> tuple[list[Any], list[Any]]:
                return vs, [f(v, t) for v, t in zip(vs, ts)]
        else:
            return None
        compiled.append(_named(kind, fn, name, body))

    def run_all(values: list[Any], ts: list[Any]) -> tuple[list[Any], list[Any]]:
        for stage in compiled:
            values, ts = stage(values, ts)
        return values, ts

    return run_all


_FAST_KEY_TYPES = (str, int, bytes)


class FastKeyedOutput:
    """Key extraction (+ optional pre-aggregation) over whole lists of records."""

    def __init__(self, key_selector: Any, key_serializer: Any, max_parallelism: int,
                 combiner: Any, name: str) -> None:
        self.get_key = per_record_call(key_selector.get_key)
        self.serialize = key_serializer.serialize
        self.maxp = max_parallelism
        self.reduce = per_record_call(combiner.reduce) if combiner is not None else None
        self.name = name
        # pre-aggregation: key object -> [value, ts]; keys of other types by their bytes
        self.by_key: dict[Any, list[Any]] = {}
        self.by_bytes: dict[bytes, list[Any]] = {}

    def _key_bytes(self, key: Any) -> bytes:
        try:
            return self.serialize(key)
        except Exception as exc:  # noqa: BLE001
            raise SerializationError(
                f"operator {self.name!r}: cannot serialize key {key!r:.80} of type "
                f"{type(key).__name__}: {exc}"
            ) from exc

    def keys_of(self, values: list[Any]) -> list[Any]:
        get_key = self.get_key
        try:
            return [get_key(v) for v in values]
        except DataStreamError:
            raise
        except Exception:  # noqa: BLE001
            for v in values:
                try:
                    get_key(v)
                except Exception as exc:  # noqa: BLE001
                    raise user_function_error(self.name, "key selector", v, exc) from exc
            raise

    def rows(self, values: list[Any], ts: list[Any]) -> Iterator[tuple[Any, Any, int, bytes]]:
        """Without pre-aggregation: (value, ts, key group, key bytes) per record."""
        keys = self.keys_of(values)
        ser = self._key_bytes
        crc, maxp = zlib.crc32, self.maxp
        cache: dict[Any, bytes] = {}
        for v, t, k in zip(values, ts, keys):
            kb = cache.get(k) if type(k) in _FAST_KEY_TYPES else None
            if kb is None:
                kb = ser(k)
                if type(k) in _FAST_KEY_TYPES:
                    cache[k] = kb
            yield v, t, crc(kb) % maxp, kb

    def combine(self, values: list[Any], ts: list[Any]) -> None:
        """Fold records into the per-partition pre-aggregation dicts."""
        keys = self.keys_of(values)
        reduce = self.reduce
        assert reduce is not None
        by_key, by_bytes = self.by_key, self.by_bytes
        for v, t, k in zip(values, ts, keys):
            if type(k) in _FAST_KEY_TYPES:
                slot = by_key.get(k)
                if slot is None:
                    by_key[k] = [v, t, type(k)]
                    continue
                if slot[2] is not type(k):  # 1 == 1.0 == True but they are different keys
                    slot = by_bytes.setdefault(self._key_bytes(k), [v, t, None])
                    if slot[0] is v:
                        continue
            else:
                kb = self._key_bytes(k)
                slot = by_bytes.get(kb)
                if slot is None:
                    by_bytes[kb] = [v, t, None]
                    continue
            if t is not None and slot[1] is not None and t < slot[1]:
                slot[0] = reduce(v, slot[0])  # keep the earliest record first
                slot[1] = t
            else:
                slot[0] = reduce(slot[0], v)

    def pending(self) -> int:
        return len(self.by_key) + len(self.by_bytes)

    def drain(self) -> Iterator[tuple[Any, Any, int, bytes]]:
        """The pre-aggregated records: (value, ts, key group, key bytes)."""
        crc, maxp = zlib.crc32, self.maxp
        for k, (v, t, _typ) in self.by_key.items():
            kb = self._key_bytes(k)
            yield v, t, crc(kb) % maxp, kb
        for kb, (v, t, _typ) in self.by_bytes.items():
            yield v, t, crc(kb) % maxp, kb
        self.by_key = {}
        self.by_bytes = {}
