"""State descriptors, namespaces and the user function base classes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_datastream import SerializationError, StateDescriptorError
from pyspark_datastream.state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
    internal_descriptor,
)
from pyspark_datastream.state_store.entries import StateKind
from pyspark_datastream.state_store.functions import AggregateFunction, ReduceFunction
from pyspark_datastream.state_store.namespaces import (
    VOID_NAMESPACE,
    VOID_NAMESPACE_SERIALIZER,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
)
from pyspark_datastream.state_store.serializers import (
    LexicographicLongSerializer,
    LongSerializer,
    serializer_from_snapshot,
)
from pyspark_datastream.state_store.types import Types


class TestDescriptorValidation:
    def test_names(self) -> None:
        with pytest.raises(StateDescriptorError, match="ValueStateDescriptor: argument 'name' must not be empty"):
            ValueStateDescriptor("", Types.LONG())
        with pytest.raises(StateDescriptorError, match="ListStateDescriptor: argument 'name' must be a str"):
            ListStateDescriptor(3, Types.LONG())  # type: ignore[arg-type]
        with pytest.raises(StateDescriptorError, match="ValueStateDescriptor '_x'.*reserved"):
            ValueStateDescriptor("_x", Types.LONG())
        with pytest.raises(StateDescriptorError, match="NUL"):
            ValueStateDescriptor("a\x00", Types.LONG())

    def test_internal_names(self) -> None:
        descriptor = ListStateDescriptor("_window-contents", Types.LONG(), _internal=True)
        assert descriptor.internal and descriptor.name == "_window-contents"
        helper = internal_descriptor(ValueStateDescriptor, "_reduce", Types.LONG())
        assert isinstance(helper, ValueStateDescriptor) and helper.internal

    def test_missing_or_bad_type(self) -> None:
        with pytest.raises(StateDescriptorError, match="ValueStateDescriptor 'v': argument 'value_type_info' is missing"):
            ValueStateDescriptor("v", None)
        with pytest.raises(StateDescriptorError, match="MapStateDescriptor 'm': argument 'value_type_info' must be"):
            MapStateDescriptor("m", Types.LONG(), 42)
        with pytest.raises(StateDescriptorError, match="AggregatingStateDescriptor 'a': argument 'state_type_info' is missing"):
            AggregatingStateDescriptor("a", _Count(), None)

    def test_serializer_accepted_in_place_of_type_info(self) -> None:
        descriptor = ValueStateDescriptor("v", LongSerializer.INSTANCE)
        assert descriptor.value_serializer is LongSerializer.INSTANCE
        assert ValueStateDescriptor("v", Types.LONG()).value_serializer == LongSerializer.INSTANCE

    def test_functions(self) -> None:
        with pytest.raises(StateDescriptorError, match="'r': argument 'reduce_function' must be a ReduceFunction"):
            ReducingStateDescriptor("r", 5, Types.LONG())
        with pytest.raises(StateDescriptorError, match="'a': argument 'agg_function'.*lacks get_result"):
            AggregatingStateDescriptor("a", _NoResult(), Types.LONG())
        reducing = ReducingStateDescriptor("r", _Max(), Types.LONG())
        assert reducing.reduce(3, 9) == 9
        assert ReducingStateDescriptor("r", max, Types.LONG()).reduce(3, 9) == 9

    def test_kinds_and_meta(self) -> None:
        descriptor = BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.STRING())
        meta = descriptor.meta_info(Types.STRING().create_serializer(), VOID_NAMESPACE_SERIALIZER)
        assert meta.kind is StateKind.SORTED
        assert meta.user_key_serializer == LexicographicLongSerializer.INSTANCE.snapshot()
        assert meta.namespace_serializer == {"name": "VoidNamespaceSerializer", "params": {}}
        assert not descriptor.is_compatible_with(ValueStateDescriptor("s", Types.STRING()))


class _Max(ReduceFunction):
    def reduce(self, value1: int, value2: int) -> int:
        return max(value1, value2)


class _Count(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator


class _NoResult:
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator


def test_aggregate_merge_default_explains() -> None:
    with pytest.raises(NotImplementedError, match="_Count.merge is not implemented"):
        _Count().merge(1, 2)


class TestNamespaces:
    def test_time_window(self) -> None:
        window = TimeWindow(0, 10)
        assert window.max_timestamp() == 9
        assert window.intersects(TimeWindow(10, 20))
        assert not window.intersects(TimeWindow(11, 20))
        assert window.cover(TimeWindow(5, 15)) == TimeWindow(0, 15)
        assert TimeWindow(0, 10) < TimeWindow(0, 11) < TimeWindow(1, 2)
        assert TimeWindow.get_window_start_with_offset(17, 0, 5) == 15
        assert TimeWindow.get_window_start_with_offset(-3, 0, 5) == -5
        assert len({TimeWindow(0, 1), TimeWindow(0, 1)}) == 1

    def test_merge_windows(self) -> None:
        merged = TimeWindow.merge_windows(
            [TimeWindow(0, 5), TimeWindow(20, 25), TimeWindow(4, 8), TimeWindow(30, 31)]
        )
        assert merged == [(TimeWindow(0, 8), [TimeWindow(0, 5), TimeWindow(4, 8)])]

    @given(
        st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1)),
        st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1)),
    )
    def test_time_window_serializer_is_lexicographic(
        self, a: tuple[int, int], b: tuple[int, int]
    ) -> None:
        serializer = TimeWindowSerializer()
        wa, wb = TimeWindow(*a), TimeWindow(*b)
        assert serializer.deserialize(serializer.serialize(wa)) == wa
        assert len(serializer.serialize(wa)) == 16
        assert (serializer.serialize(wa) < serializer.serialize(wb)) == (wa < wb)

    def test_void_and_global(self) -> None:
        assert VOID_NAMESPACE_SERIALIZER.serialize(VOID_NAMESPACE) == b""
        assert VOID_NAMESPACE_SERIALIZER.deserialize(b"") is VOID_NAMESPACE
        with pytest.raises(SerializationError, match="only serialize VOID_NAMESPACE"):
            VOID_NAMESPACE_SERIALIZER.serialize(TimeWindow(0, 1))
        with pytest.raises(SerializationError, match="TimeWindowSerializer cannot serialize 'x'"):
            TimeWindowSerializer().serialize("x")  # type: ignore[arg-type]
        assert GlobalWindow.get() is GlobalWindow()
        assert GlobalWindowSerializer().deserialize(GlobalWindowSerializer().serialize(GlobalWindow())) is GlobalWindow()

    def test_namespace_serializers_restore_from_snapshot(self) -> None:
        for serializer in (VOID_NAMESPACE_SERIALIZER, TimeWindowSerializer(), GlobalWindowSerializer()):
            assert serializer_from_snapshot(serializer.snapshot()) == serializer
