"""Stateful Hypothesis test of BinarySortedState on every backend and key serializer.

Random sequences of point, lookup, range and delete operations are checked
against a reference model: a dict ``serialized key -> (key, [values])`` read in
sorted byte order (the order the serializer documents, e.g. NaN last for doubles).
Neighbouring data (another state, another key, another namespace) is written
first, so range bounds that leak would be caught.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule
from pyspark_datastream.state_store.descriptors import BinarySortedStateDescriptor
from pyspark_datastream.state_store.namespaces import TimeWindow, TimeWindowSerializer
from pyspark_datastream.state_store.serializers import (
    LexicographicDoubleSerializer,
    LexicographicIntSerializer,
    LexicographicLongSerializer,
    LexicographicStringSerializer,
    LexicographicTupleSerializer,
)
from pyspark_datastream.state_store.types import Types
from statebackend_helpers import BACKEND_NAMES, make_backend

MIN_LONG, MAX_LONG = -(1 << 63), (1 << 63) - 1
MIN_INT, MAX_INT = -(1 << 31), (1 << 31) - 1

LONGS = st.one_of(
    st.sampled_from([MIN_LONG, MAX_LONG, 0, -1, 1, MIN_LONG + 1, MAX_LONG - 1]),
    st.integers(MIN_LONG, MAX_LONG),
    st.integers(-5, 5),
)
INTS = st.one_of(st.sampled_from([MIN_INT, MAX_INT, 0, -1]), st.integers(-5, 5))
DOUBLES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -1.5]),
    st.floats(allow_nan=True),
    st.integers(-3, 3).map(float),
)
STRINGS = st.one_of(
    st.sampled_from(["", "\x00", "a", "a\x00", "ab", "\uffff", "\U0001f600"]),
    st.text(max_size=4),
)
TUPLES = st.tuples(st.integers(-2, 2).map(lambda i: i * (1 << 40)), st.sampled_from(["", "a", "b", "\x00"]))

SERIALIZERS: dict[str, tuple[Any, Any]] = {
    "long": (LexicographicLongSerializer.INSTANCE, LONGS),
    "int": (LexicographicIntSerializer.INSTANCE, INTS),
    "double": (LexicographicDoubleSerializer.INSTANCE, DOUBLES),
    "string": (LexicographicStringSerializer.INSTANCE, STRINGS),
    "tuple": (
        LexicographicTupleSerializer(
            [LexicographicLongSerializer.INSTANCE, LexicographicStringSerializer.INSTANCE]
        ),
        TUPLES,
    ),
}

WINDOW = TimeWindow(0, 100)


def build_machine(backend_name: str, serializer: Any, keys: Any) -> type[RuleBasedStateMachine]:
    """A state machine class comparing the backend's sorted state with the model."""

    class SortedStateMachine(RuleBasedStateMachine):
        #: keys that were added at some point (lookups draw from here half of the time)
        added = Bundle("added")
        any_key = st.one_of(added, keys)

        def __init__(self) -> None:
            super().__init__()
            self.backend = make_backend(backend_name)
            self.model: dict[bytes, tuple[Any, list[int]]] = {}
            self.counter = 0

        @initialize()
        def setup(self) -> None:
            backend = self.backend
            namespaces = TimeWindowSerializer()
            descriptor = BinarySortedStateDescriptor("s", serializer, Types.LONG())
            self.state = backend.get_binary_sorted_state(descriptor, namespaces)
            neighbour = backend.get_binary_sorted_state(
                BinarySortedStateDescriptor("s2", serializer, Types.LONG()), namespaces
            )
            if backend_name != "single_key":
                backend.set_current_key("other")
                self.state.set_current_namespace(WINDOW)
                for key in self._edge_keys():
                    self.state.add(key, -1)
            backend.set_current_key("k")
            for namespace in (TimeWindow(0, 99), TimeWindow(0, 101)):
                self.state.set_current_namespace(namespace)
                for key in self._edge_keys():
                    self.state.add(key, -2)
            neighbour.set_current_namespace(WINDOW)
            for key in self._edge_keys():
                neighbour.add(key, -3)
            self.state.set_current_namespace(WINDOW)

        def _edge_keys(self) -> list[Any]:
            return {
                "long": [MIN_LONG, 0, MAX_LONG],
                "int": [MIN_INT, 0, MAX_INT],
                "double": [-math.inf, 0.0, math.nan],
                "string": ["", "a", "\U0001f600"],
                "tuple": [(-(1 << 40), ""), (0, "a")],
            }[serializer_name]

        def teardown(self) -> None:
            self.backend.close()

        # -- model helpers -----------------------------------------------------------------
        def lex(self, key: Any) -> bytes:
            return serializer.serialize(key)

        def normal(self, key: Any) -> Any:
            return serializer.deserialize(serializer.serialize(key))

        def sorted_model(self) -> list[tuple[bytes, Any, list[int]]]:
            return [(lex, *self.model[lex]) for lex in sorted(self.model)]

        def expect_entries(self, got: Any, expected: list[tuple[bytes, Any, list[int]]]) -> None:
            got_list = [(self.lex(key), values) for key, values in got]
            assert got_list == [(lex, values) for lex, _, values in expected]

        def expect_entry(self, got: Any, expected: tuple[bytes, Any, list[int]] | None) -> None:
            if expected is None:
                assert got is None
            else:
                assert got is not None
                assert (self.lex(got[0]), got[1]) == (expected[0], expected[2])

        def in_range(
            self, lex: bytes, lower: bytes | None, upper: bytes | None, inclusive: bool
        ) -> bool:
            if lower is not None and lex < lower:
                return False
            if upper is not None and (lex > upper or (lex == upper and not inclusive)):
                return False
            return True

        # -- point operations --------------------------------------------------------------
        @rule(target=added, key=keys)
        def add(self, key: Any) -> Any:
            self.counter += 1
            self.state.add(key, self.counter)
            self.model.setdefault(self.lex(key), (self.normal(key), []))[1].append(self.counter)
            return key

        @rule(key=added)
        def add_again(self, key: Any) -> None:
            self.add(key)

        @rule(key=any_key, count=st.integers(0, 3))
        def put(self, key: Any, count: int) -> None:
            values = [self.counter + i for i in range(count)]
            self.counter += count
            self.state.put(key, values)
            if values:
                self.model[self.lex(key)] = (self.normal(key), list(values))
            else:
                self.model.pop(self.lex(key), None)

        @rule(key=any_key)
        def values_at(self, key: Any) -> None:
            entry = self.model.get(self.lex(key))
            assert self.state.values_at(key) == (None if entry is None else entry[1])

        @rule(key=any_key)
        def clear_entry_at(self, key: Any) -> None:
            self.state.clear_entry_at(key)
            self.model.pop(self.lex(key), None)

        # -- lookups -----------------------------------------------------------------------
        @rule(key=st.none() | any_key)
        def first_entry(self, key: Any) -> None:
            lower = None if key is None else self.lex(key)
            matching = [e for e in self.sorted_model() if self.in_range(e[0], lower, None, True)]
            self.expect_entry(self.state.first_entry(key), matching[0] if matching else None)

        @rule(key=st.none() | any_key)
        def last_entry(self, key: Any) -> None:
            upper = None if key is None else self.lex(key)
            matching = [e for e in self.sorted_model() if self.in_range(e[0], None, upper, True)]
            self.expect_entry(self.state.last_entry(key), matching[-1] if matching else None)

        # -- ranges ------------------------------------------------------------------------
        @rule(low=any_key, high=any_key, inclusive=st.booleans())
        def read_range(self, low: Any, high: Any, inclusive: bool) -> None:
            lower, upper = self.lex(low), self.lex(high)
            expected = [e for e in self.sorted_model() if self.in_range(e[0], lower, upper, inclusive)]
            self.expect_entries(self.state.read_range(low, high, inclusive), expected)

        @rule(high=any_key, inclusive=st.booleans())
        def read_range_until(self, high: Any, inclusive: bool) -> None:
            upper = self.lex(high)
            expected = [e for e in self.sorted_model() if self.in_range(e[0], None, upper, inclusive)]
            self.expect_entries(self.state.read_range_until(high, inclusive), expected)

        @rule(low=any_key)
        def read_range_from(self, low: Any) -> None:
            lower = self.lex(low)
            expected = [e for e in self.sorted_model() if self.in_range(e[0], lower, None, True)]
            self.expect_entries(self.state.read_range_from(low), expected)

        # -- range deletes -----------------------------------------------------------------
        def _drop(self, lower: bytes | None, upper: bytes | None, inclusive: bool) -> None:
            for lex in [lex for lex in self.model if self.in_range(lex, lower, upper, inclusive)]:
                del self.model[lex]

        @rule(low=any_key, high=any_key, inclusive=st.booleans())
        def clear_range(self, low: Any, high: Any, inclusive: bool) -> None:
            self.state.clear_range(low, high, inclusive)
            self._drop(self.lex(low), self.lex(high), inclusive)

        @rule(high=any_key, inclusive=st.booleans())
        def clear_range_until(self, high: Any, inclusive: bool) -> None:
            self.state.clear_range_until(high, inclusive)
            self._drop(None, self.lex(high), inclusive)

        @rule(low=any_key)
        def clear_range_from(self, low: Any) -> None:
            self.state.clear_range_from(low)
            self._drop(self.lex(low), None, True)

        @rule()
        def clear(self) -> None:
            self.state.clear()
            self.model.clear()

        @invariant()
        def everything_matches(self) -> None:
            if not hasattr(self, "state"):
                return
            self.expect_entries(self._all(), self.sorted_model())

        def _all(self) -> list[tuple[Any, list[int]]]:
            first = self.state.first_entry()
            if first is None:
                return []
            return list(self.state.read_range_from(first[0]))

    serializer_name = next(name for name, (ser, _) in SERIALIZERS.items() if ser is serializer)
    SortedStateMachine.__name__ = f"SortedStateMachine_{backend_name}_{serializer_name}"
    return SortedStateMachine


@pytest.mark.parametrize("serializer_name", sorted(SERIALIZERS))
@pytest.mark.parametrize("backend_name", BACKEND_NAMES)
def test_sorted_state_matches_model(backend_name: str, serializer_name: str) -> None:
    serializer, keys = SERIALIZERS[serializer_name]
    machine = build_machine(backend_name, serializer, keys)
    machine.TestCase.settings = settings(
        max_examples=12,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    machine.TestCase().runTest()
