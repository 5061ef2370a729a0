"""Shared helpers for operator tests: real backends, key setting, output helpers."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark_datastream.operators.base import OperatorConfig, Output
from pyspark_datastream.state_store.backends.heap import HeapKeyedStateBackend
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KEY_SERIALIZER = GenericKeySerializer.INSTANCE


class Driven:
    """An opened keyed operator on a real backend, with a helper to push records."""

    def __init__(self, operator: Any, backend: Any, config: OperatorConfig) -> None:
        self.operator = operator
        self.backend = backend
        self.config = config
        operator.open(backend, config)

    def push(self, key: Any, value: Any, timestamp: int | None = None, input_index: int = 0) -> list[Output]:
        self.backend.set_current_key(key, KEY_SERIALIZER.serialize(key))
        return list(self.operator.process_element(value, timestamp, input_index))


@pytest.fixture
def drive():
    """``drive(operator, mode="STREAMING", backend="heap", **config) -> Driven``."""
    created = []

    def make(operator: Any, mode: str = "STREAMING", backend: str = "heap", **config: Any) -> Driven:
        config.setdefault("operator_name", "op-under-test")
        cfg = OperatorConfig.for_mode(mode, **config)
        cls = HeapKeyedStateBackend if backend == "heap" else SingleKeyStateBackend
        be = cls(KEY_SERIALIZER, cfg.max_parallelism)
        created.append((operator, be))
        return Driven(operator, be, cfg)

    yield make
    for operator, be in created:
        operator.close()
        be.close()

