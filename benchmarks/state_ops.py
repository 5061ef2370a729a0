"""FLIP-140's ValueState benchmark in Python, for the three keyed state backends.

Each operation is ``backend.set_current_key(key, key_bytes)`` followed by one
ValueState call, over keys ``0..n-1`` in order (not shuffled), with the key
bytes pre-serialized (the runtime's fast path):

* ``value_add``: ``update`` on fresh keys (a new backend);
* ``value_update``: ``update`` on keys that already have a value;
* ``value_get``: ``value()`` on keys that have a value.

The single-key backend drops the previous key's state on every key change, as
in BATCH execution; its ``value_update``/``value_get`` therefore see empty state,
exactly like FLIP-140's SINGLE_KEY numbers.

Usage: ``python -m benchmarks.state_ops [--quick] [--keys N] [--repeat R]``.
The last line printed is one JSON object with ops/ms per operation and backend.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from pyspark_datastream.state_store.backend import KeyedStateBackend
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.descriptors import ValueStateDescriptor
from pyspark_datastream.state_store.types import Types

__all__ = ["run", "main"]

BACKENDS: dict[str, Callable[[Any], KeyedStateBackend]] = {
    "single_key": lambda key_serializer: SingleKeyStateBackend(key_serializer),
    "heap": lambda key_serializer: HeapKeyedStateBackend(key_serializer),
    "rocksdb": lambda key_serializer: RocksDBKeyedStateBackend(key_serializer),
}
OPERATIONS = ("value_get", "value_update", "value_add")


def _timed(loop: Callable[[], None], n: int) -> float:
    """ops/ms of one run of ``loop`` (n operations)."""
    gc.disable()
    try:
        start = time.perf_counter()
        loop()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return n / (elapsed * 1000.0)


def _measure(backend_name: str, keys: list[int], key_bytes: list[bytes]) -> dict[str, float]:
    """One round of the three operations on a fresh backend."""
    key_serializer = Types.LONG().create_serializer()
    backend = BACKENDS[backend_name](key_serializer)
    try:
        state = backend.get_state(ValueStateDescriptor("value", Types.LONG()))
        set_key = backend.set_current_key
        update = state.update
        value = state.value
        pairs = list(zip(keys, key_bytes))
        n = len(pairs)

        def add() -> None:
            for key, data in pairs:
                set_key(key, data)
                update(key)

        def update_all() -> None:
            for key, data in pairs:
                set_key(key, data)
                update(key + 1)

        def get_all() -> None:
            for key, data in pairs:
                set_key(key, data)
                value()

        result = {"value_add": _timed(add, n)}
        result["value_update"] = _timed(update_all, n)
        result["value_get"] = _timed(get_all, n)
        return result
    finally:
        backend.close()


def run(n_keys: int, repeat: int) -> dict[str, dict[str, float]]:
    """Best-of-``repeat`` ops/ms: ``{operation: {backend: ops_per_ms}}``."""
    key_serializer = Types.LONG().create_serializer()
    keys = list(range(n_keys))
    key_bytes = [key_serializer.serialize(key) for key in keys]
    best: dict[str, dict[str, float]] = {op: {} for op in OPERATIONS}
    for backend_name in BACKENDS:
        for _ in range(repeat):
            for op, ops_per_ms in _measure(backend_name, keys, key_bytes).items():
                best[op][backend_name] = max(best[op].get(backend_name, 0.0), ops_per_ms)
    return {op: {name: round(best[op][name], 1) for name in BACKENDS} for op in OPERATIONS}


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small run (well under 60 s)")
    parser.add_argument("--keys", type=int, default=None, help="number of keys per round")
    parser.add_argument("--repeat", type=int, default=None, help="rounds per backend (best kept)")
    args = parser.parse_args(argv)
    n_keys = args.keys or (100_000 if args.quick else 1_000_000)
    repeat = args.repeat or (3 if args.quick else 5)
    print(f"ValueState benchmark: {n_keys} keys, best of {repeat} rounds, ops/ms")
    results = run(n_keys, repeat)
    for op in OPERATIONS:
        row = results[op]
        cells = "  ".join(f"{name}={row[name]:>9.1f}" for name in BACKENDS)
        print(f"{op:<13} {cells}")
    for op in OPERATIONS:
        row = results[op]
        print(
            f"{op:<13} single_key/heap={row['single_key'] / row['heap']:.2f}x  "
            f"heap/rocksdb={row['heap'] / row['rocksdb']:.2f}x"
        )
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
