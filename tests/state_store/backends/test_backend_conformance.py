"""One conformance suite, run on every registered keyed state backend (hashmap, rocksdb,
single_key, and any other registration, such as the test folder's ``counting_backend``).

The state TTL cases live in ``ttl_conformance.py`` and are mixed into the class.

Cases skip on single_key only where its semantics differ by design (it holds
one key at a time).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark_datastream import (
    IncompatibleStateError,
    KeyGroupError,
    SavepointFormatError,
    StateBackendError,
    StateDescriptorError,
    StateError,
)
from pyspark_datastream.state_store.backend import KeyedStateBackend, Timer
from pyspark_datastream.state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.entries import StateEntry, is_canonical
from pyspark_datastream.state_store.functions import AggregateFunction, ReduceFunction
from pyspark_datastream.state_store.namespaces import (
    VOID_NAMESPACE,
    TimeWindow,
    TimeWindowSerializer,
)
from pyspark_datastream.state_store.serializers import (
    LexicographicLongSerializer,
    LexicographicStringSerializer,
)
from pyspark_datastream.state_store.temporal import TemporalValue
from pyspark_datastream.state_store.types import Types
from statebackend_helpers import BACKEND_NAMES, make_backend
from ttl_conformance import TtlConformance

LEX_LONG = LexicographicLongSerializer.INSTANCE
WINDOWS = TimeWindowSerializer()


class SumReduce(ReduceFunction):
    def reduce(self, value1: int, value2: int) -> int:
        return value1 + value2


class AverageAggregate(AggregateFunction):
    """Accumulator (sum, count) stored as a pickled tuple."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


@pytest.fixture(params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> Iterator[KeyedStateBackend]:
    instance = make_backend(request.param)
    yield instance
    instance.close()


def multi_key(backend: KeyedStateBackend) -> None:
    if backend.holds_one_key:
        pytest.skip("single_key holds one key at a time by design")


def value_desc(name: str = "v") -> ValueStateDescriptor:
    return ValueStateDescriptor(name, Types.LONG())


# ---------------------------------------------------------------------------------------------
# helpers for the snapshot tests: every state kind, random programs
# ---------------------------------------------------------------------------------------------
def _register_all(backend: KeyedStateBackend) -> dict[str, Any]:
    return {
        "v": backend.get_state(value_desc("v")),
        "l": backend.get_state(ListStateDescriptor("l", Types.STRING())),
        "m": backend.get_state(MapStateDescriptor("m", Types.LONG(), Types.STRING())),
        "r": backend.get_state(ReducingStateDescriptor("r", SumReduce(), Types.LONG())),
        "a": backend.get_state(
            AggregatingStateDescriptor("a", AverageAggregate(), Types.PICKLED_BYTE_ARRAY())
        ),
        "s": backend.get_binary_sorted_state(
            BinarySortedStateDescriptor("s", LexicographicStringSerializer.INSTANCE, Types.LONG())
        ),
        "w": backend.get_state(ListStateDescriptor("w", Types.LONG()), WINDOWS),
        "_internal": backend.get_state(
            ValueStateDescriptor("_internal", Types.STRING(), _internal=True)
        ),
        "timers": backend.timer_queue("event", WINDOWS),
    }


OPERATION = st.one_of(
    st.tuples(st.just("v"), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.tuples(st.just("l"), st.text(max_size=5)),
    st.tuples(st.just("m"), st.tuples(st.integers(-5, 5), st.text(max_size=3))),
    st.tuples(st.just("r"), st.integers(-100, 100)),
    st.tuples(st.just("a"), st.integers(-100, 100)),
    st.tuples(st.just("s"), st.tuples(st.sampled_from(["", "a", "b\x00", "zz"]), st.integers(0, 9))),
    st.tuples(st.just("w"), st.tuples(st.integers(0, 3), st.integers(0, 9))),
    st.tuples(st.just("_internal"), st.text(max_size=4)),
    st.tuples(st.just("timers"), st.tuples(st.integers(-3, 3), st.integers(0, 3))),
    st.tuples(st.just("clear"), st.sampled_from(["v", "l", "m", "s"])),
)
PROGRAM = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), OPERATION), max_size=40)


def _apply(backend: KeyedStateBackend, states: dict[str, Any], program: list[Any]) -> None:
    for key, (kind, argument) in program:
        backend.set_current_key(key)
        if kind == "v":
            states["v"].update(argument)
        elif kind == "l":
            states["l"].add(argument)
        elif kind == "m":
            states["m"].put(*argument)
        elif kind in ("r", "a"):
            states[kind].add(argument)
        elif kind == "s":
            states["s"].add(*argument)
        elif kind == "w":
            start, value = argument
            states["w"].set_current_namespace(TimeWindow(start, start + 10))
            states["w"].add(value)
        elif kind == "_internal":
            states["_internal"].update(argument)
        elif kind == "timers":
            ts, start = argument
            states["timers"].add(ts, TimeWindow(start, start + 1))
        elif kind == "clear":
            states[argument].clear()


def _snapshot_of(name: str, program: list[Any]) -> tuple[list[Any], list[StateEntry]]:
    backend = make_backend(name)
    try:
        _apply(backend, _register_all(backend), program)
        return backend.state_meta_infos(), list(backend.snapshot())
    finally:
        backend.close()


def _drain_timers(backend: KeyedStateBackend) -> list[tuple[int, Any, Any]]:
    return [t[:3] for t in backend.timer_queue("event", WINDOWS).poll_until(1 << 40)]


# ---------------------------------------------------------------------------------------------
# state kinds
# ---------------------------------------------------------------------------------------------
class TestBackendConformance(TtlConformance):
    """Every backend; the state TTL cases come from :class:`TtlConformance`."""

    def test_value_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_state(value_desc())
        backend.set_current_key("k")
        assert state.value() is None
        state.update(7)
        assert state.value() == 7
        state.update(8)
        assert state.value() == 8
        state.update(None)
        assert state.value() is None
        state.update(9)
        state.clear()
        assert state.value() is None

    def test_list_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_state(ListStateDescriptor("l", Types.LONG()))
        backend.set_current_key("k")
        assert list(state.get()) == []
        state.add(1)
        state.add(2)
        state.add_all([3, 4])
        state.add_all([])
        state.add_all(None)
        assert list(state.get()) == [1, 2, 3, 4]
        got = state.get()
        got.append(99)
        assert list(state.get()) == [1, 2, 3, 4]
        state.update([5, 6])
        assert list(state.get()) == [5, 6]
        state.add(7)
        assert list(state.get()) == [5, 6, 7]
        state.update([])
        assert list(state.get()) == []
        state.add(1)
        state.update(None)
        assert list(state.get()) == []
        state.add_all([8])
        state.clear()
        assert list(state.get()) == []
        state.add(10)
        assert list(state.get()) == [10]

    def test_list_state_refuses_none(self, backend: KeyedStateBackend) -> None:
        state = backend.get_state(ListStateDescriptor("l", Types.LONG()))
        backend.set_current_key("k")
        with pytest.raises(StateError, match="cannot add None to list state 'l'"):
            state.add(None)
        with pytest.raises(StateError, match="cannot add None to list state 'l'"):
            state.add_all([1, None])
        with pytest.raises(StateError, match="cannot add None to list state 'l'"):
            state.update([None])
        assert list(state.get()) == []

    def test_map_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_state(MapStateDescriptor("m", Types.STRING(), Types.LONG()))
        backend.set_current_key("k")
        assert state.is_empty()
        assert state.get("a") is None
        assert not state.contains("a")
        state.put("a", 1)
        state.put_all({"b": 2, "c": 3})
        state.put_all([("d", 4)])
        assert state.get("a") == 1
        assert state.contains("b") and "b" in state
        assert sorted(state.keys()) == ["a", "b", "c", "d"]
        assert sorted(state) == ["a", "b", "c", "d"]
        assert sorted(state.values()) == [1, 2, 3, 4]
        assert sorted(state.items()) == [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
        assert not state.is_empty()
        state.put("a", 10)
        assert state.get("a") == 10
        state.remove("a")
        state.remove("missing")
        assert state.get("a") is None
        assert sorted(state.keys()) == ["b", "c", "d"]
        for key in list(state.keys()):
            state.remove(key)
        assert state.is_empty()
        state.put("x", 1)
        state.clear()
        assert state.is_empty()
        assert list(state.items()) == []

    def test_map_state_reads_and_writes_as_a_mapping(self, backend: KeyedStateBackend) -> None:
        """PyFlink's MapState item syntax: ``s[k]`` gets (None when absent), ``s[k] = v``
        puts, ``del s[k]`` removes (PyFlink's test_keyed_co_flat_map writes it so)."""
        state = backend.get_state(MapStateDescriptor("m", Types.STRING(), Types.BOOLEAN()))
        backend.set_current_key("k")
        assert state["a"] is None
        state["a"] = True
        assert state["a"] is True and "a" in state and state.get("a") is True
        del state["a"]
        assert "a" not in state and state.is_empty()

    def test_map_descriptor_needs_deterministic_key(self) -> None:
        with pytest.raises(StateDescriptorError, match="MapStateDescriptor 'm'.*key_type_info"):
            MapStateDescriptor("m", Types.PICKLED_BYTE_ARRAY(), Types.LONG())

    @pytest.mark.parametrize("function", [SumReduce(), lambda a, b: a + b], ids=["class", "lambda"])
    def test_reducing_state(self, backend: KeyedStateBackend, function: Any) -> None:
        state = backend.get_state(ReducingStateDescriptor("r", function, Types.LONG()))
        backend.set_current_key("k")
        assert state.get() is None
        state.add(3)
        assert state.get() == 3
        state.add(4)
        assert state.get() == 7
        state.add(None)
        assert state.get() is None
        state.add(1)
        state.clear()
        assert state.get() is None

    def test_aggregating_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_state(
            AggregatingStateDescriptor("a", AverageAggregate(), Types.PICKLED_BYTE_ARRAY())
        )
        backend.set_current_key("k")
        assert state.get() is None
        state.add(2)
        state.add(4)
        assert state.get() == 3.0
        state.clear()
        assert state.get() is None

    def test_aggregate_function_returning_none(self, backend: KeyedStateBackend) -> None:
        class Broken(AverageAggregate):
            def add(self, value: int, accumulator: Any) -> Any:  # forgets to return
                return None

        state = backend.get_state(
            AggregatingStateDescriptor("a", Broken(), Types.PICKLED_BYTE_ARRAY())
        )
        backend.set_current_key("k")
        with pytest.raises(StateError, match="aggregating state 'a' returned None"):
            state.add(1)

    def test_binary_sorted_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_binary_sorted_state(
            BinarySortedStateDescriptor("s", LEX_LONG, Types.STRING())
        )
        backend.set_current_key("k")
        assert state.first_entry() is None and state.last_entry() is None
        assert state.values_at(1) is None
        for key, value in [(5, "e"), (1, "a"), (3, "c"), (5, "e2"), (-7, "m")]:
            state.add(key, value)
        assert state.values_at(5) == ["e", "e2"]
        assert state.first_entry() == (-7, ["m"])
        assert state.first_entry(2) == (3, ["c"])
        assert state.first_entry(6) is None
        assert state.last_entry() == (5, ["e", "e2"])
        assert state.last_entry(4) == (3, ["c"])
        assert state.last_entry(-8) is None
        assert list(state.read_range(1, 5, False)) == [(1, ["a"]), (3, ["c"])]
        assert list(state.read_range(1, 5, True)) == [(1, ["a"]), (3, ["c"]), (5, ["e", "e2"])]
        assert list(state.read_range(4, 2, True)) == []
        assert list(state.read_range_until(3, False)) == [(-7, ["m"]), (1, ["a"])]
        assert list(state.read_range_from(3)) == [(3, ["c"]), (5, ["e", "e2"])]
        state.put(3, ["x", "y"])
        assert state.values_at(3) == ["x", "y"]
        state.put(3, [])
        assert state.values_at(3) is None
        state.clear_entry_at(1)
        assert [k for k, _ in state.read_range_from(-100)] == [-7, 5]
        state.add(10, "j")
        state.add(20, "t")
        state.clear_range(5, 20, False)
        assert [k for k, _ in state.read_range_from(-100)] == [-7, 20]
        state.clear_range_until(-7, True)
        assert [k for k, _ in state.read_range_from(-100)] == [20]
        state.add(30, "u")
        state.clear_range_from(25)
        assert [k for k, _ in state.read_range_from(-100)] == [20]
        state.add(20, "t2")
        assert state.values_at(20) == ["t", "t2"]
        state.clear()
        assert state.first_entry() is None

    def test_sorted_descriptor_needs_lexicographic_serializer(self) -> None:
        with pytest.raises(StateDescriptorError, match="'s'.*LexicographicalTypeSerializer"):
            BinarySortedStateDescriptor("s", Types.LONG().create_serializer(), Types.LONG())

    def test_temporal_value_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_temporal_value_state(ValueStateDescriptor("tv", Types.STRING()))
        backend.set_current_key("k")
        assert state.value_at(10) is None
        state.update(10, "ten")
        state.update(20, "twenty")
        state.update(20, "TWENTY")
        assert state.value_at(20) == TemporalValue(20, "TWENTY")
        assert state.value_at(15) is None
        assert state.value_at_or_before(15) == TemporalValue(10, "ten")
        assert state.value_at_or_before(9) is None
        assert state.value_at_or_after(15) == TemporalValue(20, "TWENTY")
        assert state.value_at_or_after(21) is None
        state.clear(10)
        assert state.value_at_or_before(15) is None
        state.update(20, None)
        assert state.value_at(20) is None
        state.update(1, "one")
        state.clear_all()
        assert state.value_at_or_after(-(1 << 63)) is None

    def test_temporal_list_state(self, backend: KeyedStateBackend) -> None:
        state = backend.get_temporal_list_state(ListStateDescriptor("tl", Types.LONG()))
        backend.set_current_key("k")
        assert state.get_at(5) is None
        state.add(5, 1)
        state.add_all(5, [2, 3])
        state.update(9, [7])
        assert state.get_at(5) == TemporalValue(5, [1, 2, 3])
        assert state.get_at_or_before(8) == TemporalValue(5, [1, 2, 3])
        assert state.get_at_or_after(6) == TemporalValue(9, [7])
        with pytest.raises(StateError, match="cannot add None to temporal list state 'tl'"):
            state.add(5, None)
        state.update(5, None)
        assert state.get_at(5) is None
        state.clear(9)
        assert state.get_at_or_after(0) is None

    def test_temporal_flavours_do_not_share_a_name(self, backend: KeyedStateBackend) -> None:
        backend.get_temporal_value_state(ValueStateDescriptor("t", Types.LONG()))
        with pytest.raises(StateDescriptorError, match="'t' is already registered as temporal value"):
            backend.get_temporal_list_state(ListStateDescriptor("t", Types.LONG()))

    # -----------------------------------------------------------------------------------------
    # registry, errors
    # -----------------------------------------------------------------------------------------
    def test_get_state_is_idempotent_and_checks_kind(self, backend: KeyedStateBackend) -> None:
        first = backend.get_state(value_desc("x"))
        assert backend.get_state(value_desc("x")) is first
        with pytest.raises(StateDescriptorError, match="'x' is already registered as value"):
            backend.get_state(ListStateDescriptor("x", Types.LONG()))
        with pytest.raises(StateDescriptorError, match="'x' is already registered"):
            backend.get_state(ValueStateDescriptor("x", Types.STRING()))
        with pytest.raises(StateDescriptorError, match="namespace serializer"):
            backend.get_state(value_desc("x"), WINDOWS)

    def test_no_current_key(self, backend: KeyedStateBackend) -> None:
        value = backend.get_state(value_desc("v"))
        listed = backend.get_state(ListStateDescriptor("l", Types.LONG()))
        queue = backend.timer_queue("t")
        with pytest.raises(StateError, match="no current key.*'v'"):
            value.update(1)
        with pytest.raises(StateError, match="no current key.*'l'"):
            listed.get()
        with pytest.raises(StateError, match="no current key.*timer queue 't'"):
            queue.add(1)
        with pytest.raises(StateError, match="no current key"):
            backend.get_current_key()

    def test_no_current_key_for_every_kind(self, backend: KeyedStateBackend) -> None:
        states = _register_all(backend)
        calls: dict[str, Any] = {
            "v": lambda state: state.value(),
            "l": lambda state: state.add("x"),
            "m": lambda state: state.put(1, "x"),
            "r": lambda state: state.add(1),
            "a": lambda state: state.get(),
            "s": lambda state: state.add("k", 1),
        }
        for name, call in calls.items():
            with pytest.raises(StateError, match=f"no current key.*'{name}'"):
                call(states[name])

    def test_closed_backend(self, backend: KeyedStateBackend) -> None:
        backend.close()
        with pytest.raises(StateBackendError, match="is closed"):
            backend.get_state(value_desc())

    def test_current_key_and_key_group(self, backend: KeyedStateBackend) -> None:
        backend.set_current_key("hello")
        key_bytes = backend.key_serializer.serialize("hello")
        assert backend.get_current_key() == "hello"
        assert backend.get_current_key_bytes() == key_bytes
        assert backend.get_current_key_group() == zlib.crc32(key_bytes) % 128
        backend.set_current_key("other", backend.key_serializer.serialize("other"))
        assert backend.get_current_key() == "other"

    # -----------------------------------------------------------------------------------------
    # namespaces
    # -----------------------------------------------------------------------------------------
    def test_namespaces_are_independent(self, backend: KeyedStateBackend) -> None:
        value = backend.get_state(value_desc("v"), WINDOWS)
        listed = backend.get_state(ListStateDescriptor("l", Types.LONG()), WINDOWS)
        sorted_state = backend.get_binary_sorted_state(
            BinarySortedStateDescriptor("s", LEX_LONG, Types.LONG()), WINDOWS
        )
        w1, w2 = TimeWindow(0, 10), TimeWindow(10, 20)
        backend.set_current_key("k")
        for state in (value, listed, sorted_state):
            state.set_current_namespace(w1)
        value.update(1)
        listed.add(1)
        sorted_state.add(5, 1)
        for state in (value, listed, sorted_state):
            state.set_current_namespace(w2)
        assert value.value() is None
        assert listed.get() == []
        assert sorted_state.first_entry() is None
        value.update(2)
        listed.add(2)
        sorted_state.add(5, 2)
        listed.clear()
        for state in (value, listed, sorted_state):
            state.set_current_namespace(w1)
        assert value.get_current_namespace() == w1
        assert value.value() == 1
        assert listed.get() == [1]
        assert sorted_state.values_at(5) == [1]
        value.set_current_namespace(w2)
        assert value.value() == 2

    def test_merge_namespaces(self, backend: KeyedStateBackend) -> None:
        listed = backend.get_state(ListStateDescriptor("l", Types.LONG()), WINDOWS)
        reducing = backend.get_state(
            ReducingStateDescriptor("r", SumReduce(), Types.LONG()), WINDOWS
        )
        aggregating = backend.get_state(
            AggregatingStateDescriptor("a", AverageAggregate(), Types.PICKLED_BYTE_ARRAY()),
            WINDOWS,
        )
        w1, w2, w3, merged = (
            TimeWindow(0, 5), TimeWindow(3, 8), TimeWindow(7, 9), TimeWindow(0, 9)
        )
        backend.set_current_key("k")
        for number, window in enumerate((w1, w2, w3), start=1):
            for state in (listed, reducing, aggregating):
                state.set_current_namespace(window)
                state.add(number * 10)
        for state in (listed, reducing, aggregating):
            state.set_current_namespace(w3)
            state.merge_namespaces(merged, [w1, w2, w3])
            assert state.get_current_namespace() == w3
            assert not state.get_internal()
            state.set_current_namespace(merged)
        assert sorted(listed.get()) == [10, 20, 30]
        assert reducing.get() == 60
        assert aggregating.get() == 20.0
        assert aggregating.get_internal() == (60, 3)

    # -----------------------------------------------------------------------------------------
    # several keys, key groups
    # -----------------------------------------------------------------------------------------
    def test_several_keys(self, backend: KeyedStateBackend) -> None:
        multi_key(backend)
        value = backend.get_state(value_desc("v"))
        mapped = backend.get_state(MapStateDescriptor("m", Types.STRING(), Types.LONG()))
        for number, key in enumerate(["a", "b", "c", ""]):
            backend.set_current_key(key)
            value.update(number)
            mapped.put(key, number)
        for number, key in enumerate(["a", "b", "c", ""]):
            backend.set_current_key(key)
            assert value.value() == number
            assert list(mapped.items()) == [(key, number)]
        backend.set_current_key("b")
        value.clear()
        assert sorted(backend.keys("v")) == ["", "a", "c"]
        assert sorted(backend.keys("m")) == ["", "a", "b", "c"]

    def test_keys_by_namespace(self, backend: KeyedStateBackend) -> None:
        multi_key(backend)
        listed = backend.get_state(ListStateDescriptor("l", Types.LONG()), WINDOWS)
        for key, window in [("a", TimeWindow(0, 1)), ("b", TimeWindow(0, 2)), ("c", TimeWindow(0, 1))]:
            backend.set_current_key(key)
            listed.set_current_namespace(window)
            listed.add(1)
        assert sorted(backend.keys("l", TimeWindow(0, 1))) == ["a", "c"]
        assert list(backend.keys("l", TimeWindow(5, 6))) == []
        with pytest.raises(StateError, match="unknown state 'nope'"):
            list(backend.keys("nope"))

    def test_key_group_range(self, backend: KeyedStateBackend) -> None:
        name = backend.backend_name
        backend.close()
        owned = make_backend(name, max_parallelism=8, key_group_range=range(0, 4))
        try:
            serializer = owned.key_serializer
            inside = next(k for k in map(str, range(100)) if zlib.crc32(serializer.serialize(k)) % 8 < 4)
            outside = next(k for k in map(str, range(100)) if zlib.crc32(serializer.serialize(k)) % 8 >= 4)
            owned.set_current_key(inside)
            assert owned.get_current_key_group() < 4
            with pytest.raises(KeyGroupError, match=f"key '{outside}' is in key group"):
                owned.set_current_key(outside)
        finally:
            owned.close()
        with pytest.raises(KeyGroupError, match="key_group_range"):
            make_backend(name, max_parallelism=8, key_group_range=range(4, 9))

    def test_snapshot_of_selected_key_groups(self, backend: KeyedStateBackend) -> None:
        multi_key(backend)
        value = backend.get_state(value_desc("v"))
        groups = {}
        for key in map(str, range(40)):
            backend.set_current_key(key)
            value.update(int(key))
            groups[key] = backend.get_current_key_group()
        some = sorted(set(groups.values()))[:3]
        entries = list(backend.snapshot(some))
        assert {entry.key_group for entry in entries} == set(some)
        assert len(entries) == sum(1 for g in groups.values() if g in some)
        with pytest.raises(KeyGroupError, match="cannot snapshot key group 500"):
            list(backend.snapshot([500]))

    def test_single_key_drops_previous_key(self) -> None:
        backend = make_backend("single_key")
        try:
            value = backend.get_state(value_desc("v"))
            queue = backend.timer_queue("t")
            seen: list[tuple[Any, Any]] = []
            backend.add_key_change_listener(
                lambda key, key_bytes: seen.append((key, value.value()))
            )
            backend.set_current_key("a")
            value.update(1)
            queue.add(5)
            backend.set_current_key("a")
            assert value.value() == 1
            backend.set_current_key("b")
            assert seen == [("b", 1)]
            assert value.value() is None
            assert len(queue) == 0
            assert list(backend.keys("v")) == []
        finally:
            backend.close()

    # -----------------------------------------------------------------------------------------
    # timers
    # -----------------------------------------------------------------------------------------
    def test_timer_queue(self, backend: KeyedStateBackend) -> None:
        queue = backend.timer_queue("event", WINDOWS)
        assert backend.timer_queue("event", WINDOWS) is queue
        assert queue.peek_timestamp() is None
        w1, w2 = TimeWindow(0, 10), TimeWindow(10, 20)
        backend.set_current_key("k")
        queue.add(9, w1)
        queue.add(9, w1)
        queue.add(19, w2)
        queue.add(9, w2)
        queue.add(30, w2)
        queue.delete(30, w2)
        queue.delete(31, w2)
        assert len(queue) == 3
        assert queue.peek_timestamp() == 9
        assert queue.timers_for_current_key() == [(9, w1), (9, w2), (19, w2)]
        fired = list(queue.poll_until(9))
        key_bytes = backend.get_current_key_bytes()
        assert fired == [(9, "k", w1, key_bytes), (9, "k", w2, key_bytes)]
        assert isinstance(fired[0], Timer) and fired[0].key_bytes == key_bytes
        assert (fired[0].timestamp, fired[0].key, fired[0].namespace) == (9, "k", w1)
        assert queue.peek_timestamp() == 19
        assert list(queue.poll_until(100)) == [(19, "k", w2, key_bytes)]
        assert len(queue) == 0 and queue.peek_timestamp() is None

    def test_timers_of_several_keys_fire_in_order(self, backend: KeyedStateBackend) -> None:
        multi_key(backend)
        queue = backend.timer_queue("event")
        for key, ts in [("b", 5), ("a", 5), ("c", 1), ("a", 7)]:
            backend.set_current_key(key)
            queue.add(ts)
        fired = [(t.timestamp, t.key) for t in queue.poll_until(6)]
        assert fired == [(1, "c"), (5, "a"), (5, "b")]
        assert queue.peek_timestamp() == 7

    def test_timer_added_while_polling_fires_in_same_poll(self, backend: KeyedStateBackend) -> None:
        queue = backend.timer_queue("event")
        backend.set_current_key("k")
        queue.add(5)
        fired = []
        for timer in queue.poll_until(10):
            fired.append(timer.timestamp)
            if timer.timestamp == 5:
                queue.add(8)
                queue.add(20)
        assert fired == [5, 8]
        assert queue.peek_timestamp() == 20

    # -----------------------------------------------------------------------------------------
    # snapshot / restore
    # -----------------------------------------------------------------------------------------
    def test_restore_checks_meta_and_names(self, backend: KeyedStateBackend) -> None:
        source = make_backend("heap")
        try:
            state = source.get_state(value_desc("v"))
            source.set_current_key("k")
            state.update(1)
            metas = source.state_meta_infos()
            entries = list(source.snapshot())
        finally:
            source.close()
        backend.get_state(ListStateDescriptor("v", Types.LONG()))
        with pytest.raises(IncompatibleStateError, match="state 'v'.*kind value != list"):
            backend.restore(metas, entries)
        stranger = StateEntry(entries[0].key_group, "w", b"k", b"", b"", b"")
        with pytest.raises(SavepointFormatError, match="entry of state 'w' has no state meta info"):
            backend.restore([], [stranger])
        misplaced = entries[0]._replace(key_group=(entries[0].key_group + 1) % 128)
        with pytest.raises(KeyGroupError, match="another max parallelism"):
            backend.restore([], [misplaced])

    def test_restored_state_checked_on_registration(self, backend: KeyedStateBackend) -> None:
        source = make_backend("heap")
        try:
            state = source.get_state(value_desc("v"))
            source.set_current_key("k")
            state.update(1)
            metas, entries = source.state_meta_infos(), list(source.snapshot())
        finally:
            source.close()
        backend.restore(metas, entries)
        with pytest.raises(IncompatibleStateError, match="'v'.*value_serializer"):
            backend.get_state(ValueStateDescriptor("v", Types.STRING()))
        backend.set_current_key("k")
        assert backend.get_state(value_desc("v")).value() == 1

    # -----------------------------------------------------------------------------------------
    # byte-identical snapshots, round trips between any two backends
    # -----------------------------------------------------------------------------------------
    def test_same_operations_give_byte_identical_snapshots(self) -> None:
        program = [
            (key, op)
            for key in ["a", "b", "k3"]
            for op in [
                ("v", 5), ("l", "x"), ("l", "y"), ("m", (3, "three")), ("m", (-1, "minus")),
                ("r", 4), ("r", 5), ("a", 7), ("s", ("b\x00", 1)), ("s", ("", 2)), ("s", ("b\x00", 3)),
                ("w", (0, 1)), ("w", (2, 2)), ("_internal", "i"), ("timers", (3, 0)), ("timers", (-1, 2)),
            ]
        ]
        heap_meta, heap = _snapshot_of("heap", program)
        rocks_meta, rocks = _snapshot_of("rocksdb", program)
        assert heap == rocks
        assert heap_meta == rocks_meta
        assert is_canonical(heap)
        assert {entry.state_name for entry in heap} == {
            "v", "l", "m", "r", "a", "s", "w", "_internal", "_timer/event"
        }
        one_key = [(key, op) for key, op in program if key == "b"]
        single_meta, single = _snapshot_of("single_key", one_key)
        assert single == [entry for entry in heap if entry.key == b"b"]
        assert single_meta == heap_meta

    @pytest.mark.parametrize("source", BACKEND_NAMES)
    @pytest.mark.parametrize("target", BACKEND_NAMES)
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(program=PROGRAM, register_first=st.booleans())
    def test_snapshot_restore_round_trip(
        self, source: str, target: str, program: list[Any], register_first: bool
    ) -> None:
        if "single_key" in (source, target):
            program = [(key, op) for key, op in program if key == "c"]
        metas, entries = _snapshot_of(source, program)
        assert is_canonical(entries)
        _, heap_entries = _snapshot_of("heap", program)
        assert entries == heap_entries
        restored = make_backend(target)
        try:
            if register_first:
                _register_all(restored)
            restored.restore(metas, entries)
            # restored but unregistered states are snapshotted unchanged
            assert list(restored.snapshot()) == entries
            assert restored.state_meta_infos() == metas
            states = _register_all(restored)
            assert list(restored.snapshot()) == entries
            # the restored contents are readable through the states
            for key in sorted({key for key, _ in program}):
                restored.set_current_key(key)
                expected_list = [
                    op[1] for k, op in program if k == key and op[0] == "l"
                ]
                if not any(k == key and op == ("clear", "l") for k, op in program):
                    assert states["l"].get() == expected_list
            fired = _drain_timers(restored)
            assert len(fired) == sum(1 for e in entries if e.state_name == "_timer/event")
        finally:
            restored.close()


def test_void_namespace_is_default(backend: KeyedStateBackend) -> None:
    state = backend.get_state(value_desc("v"))
    assert state.get_current_namespace() is VOID_NAMESPACE
