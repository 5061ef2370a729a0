"""A state backend registered from the test folder alone: the heap backend, counting calls.

It proves a backend is one folder plus one registration: the backend conformance suite runs
on it (``statebackend_helpers`` registers it by its ``"module:attr"`` path) and a STREAMING
job runs on it on real Spark executors (``integration_tests/test_backend_plugin_streaming.py``), with
no change to the product. With the ``record_dir`` option, each backend writes its counts to
a JSON file there when it is closed, so a test can see what executors did.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, Optional

from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor
from pyspark_datastream.state_store.backends import HEAP, StateBackendType
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.entries import StateEntry, StateMetaInfo

#: how executors and the driver find it: state.backend.type = PATH
PATH = "counting_backend:COUNTING"
#: calls of every CountingBackend of this process, by method
CALLS: Counter[str] = Counter()


class CountingBackend(HeapKeyedStateBackend):
    """The heap backend, counting ``set_current_key``, state creation, snapshots, restores."""

    backend_name = "counting"

    def __init__(self, key_serializer: Any, max_parallelism: int,
                 key_group_range: Optional[range] = None,
                 record_dir: Optional[str] = None) -> None:
        super().__init__(key_serializer, max_parallelism, key_group_range)
        self.calls: Counter[str] = Counter()
        self.record_dir = record_dir

    def _count(self, name: str) -> None:
        self.calls[name] += 1
        CALLS[name] += 1

    def set_current_key(self, key: Any, key_bytes: bytes | None = None) -> None:
        self._count("set_current_key")
        super().set_current_key(key, key_bytes)

    def _create_state(self, descriptor: Any, namespace_serializer: Any) -> Any:
        self._count("create_state")
        return super()._create_state(descriptor, namespace_serializer)

    def snapshot(self, key_groups: Iterable[int] | None = None) -> Iterator[StateEntry]:
        self._count("snapshot")
        return super().snapshot(key_groups)

    def restore(self, meta_infos: Iterable[StateMetaInfo], entries: Iterable[StateEntry]) -> None:
        self._count("restore")
        super().restore(meta_infos, entries)

    def close(self) -> None:
        self._count("close")
        if self.record_dir is not None and self.calls:
            os.makedirs(self.record_dir, exist_ok=True)
            path = os.path.join(self.record_dir, f"{uuid.uuid4().hex}.json")
            with open(path, "w", encoding="utf-8") as out:
                json.dump({"pid": os.getpid(), "calls": dict(self.calls)}, out)
        super().close()


def _create(key_serializer: Any, max_parallelism: int, key_group_range: Optional[range] = None,
            *, record_dir: Optional[str] = None) -> CountingBackend:
    return CountingBackend(key_serializer, max_parallelism, key_group_range, record_dir)


COUNTING = StateBackendType(
    name="counting", create_backend=_create, aliases=("counting-heap",),
    description="the heap backend, counting calls (a test backend)",
    options=("record_dir",), ttl_cleanup=HEAP.ttl_cleanup)


class RunningCount(KeyedProcessFunction):
    """The keyed function both suites run on the backend: emits (key, elements of the key so
    far), one ValueState per key."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield value[0], n
