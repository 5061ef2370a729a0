"""MemorySize's unit conversions (binary units, rounded down as Flink's) and
SlotSharingGroup's builder, accepted where PyFlink programs pass them; the Java accessors
are refused."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    ConfigurationError,
    GraphBuildError,
    MemorySize,
    SlotSharingGroup,
    StreamExecutionEnvironment,
    Types,
)


def test_memory_size_units_are_binary_and_round_down():
    size = MemorySize(bytes_size=3 * 1024 ** 3 + 5)
    assert size.get_bytes() == 3_221_225_477
    assert size.get_kibi_bytes() == 3 * 1024 * 1024
    assert size.get_mebi_bytes() == 3072
    assert size.get_gibi_bytes() == 3
    assert size.get_tebi_bytes() == 0
    assert MemorySize.of_mebi_bytes(2).get_bytes() == 2_097_152
    assert MemorySize.of_mebi_bytes(2) == MemorySize(bytes_size=2 << 20)
    with pytest.raises(GraphBuildError, match="get_java_memory_size"):
        size.get_java_memory_size()
    with pytest.raises(GraphBuildError, match="bytes_size"):
        MemorySize(bytes_size=-1)


def test_a_group_keeps_what_its_builder_was_given():
    group = (SlotSharingGroup.builder("heavy").set_cpu_cores(1.5)
             .set_task_heap_memory_mb(100).set_task_off_heap_memory(MemorySize.of_mebi_bytes(10))
             .set_managed_memory_mb(50).set_external_resource("gpu", 1).build())
    assert group.get_name() == "heavy"
    assert group.get_cpu_cores() == 1.5
    assert group.get_task_heap_memory() == MemorySize(bytes_size=100 * 1024 * 1024)
    assert group.get_task_off_heap_memory().get_mebi_bytes() == 10
    assert group.get_managed_memory().get_mebi_bytes() == 50
    assert group.get_external_resources() == {"gpu": 1.0}
    bare = SlotSharingGroup.builder("light").build()
    assert bare.get_cpu_cores() is None and bare.get_task_heap_memory() is None
    with pytest.raises(GraphBuildError, match="get_java_slot_sharing_group"):
        group.get_java_slot_sharing_group()


@pytest.mark.parametrize("call", [
    lambda: SlotSharingGroup.builder(""),
    lambda: SlotSharingGroup.builder("g").set_cpu_cores(0),
    lambda: SlotSharingGroup.builder("g").set_task_heap_memory(100),
    lambda: SlotSharingGroup.builder("g").set_external_resource("gpu", -1),
])
def test_bad_group_settings_are_graph_build_errors(call):
    with pytest.raises(GraphBuildError, match="SlotSharingGroup"):
        call()


def test_a_group_is_accepted_by_the_environment_and_by_streams():
    env = StreamExecutionEnvironment.get_execution_environment()
    group = SlotSharingGroup.builder("g").build()
    assert env.register_slot_sharing_group(group) is env
    ds = env.from_collection([1, 2], Types.INT()).map(lambda x: x + 1)
    assert ds.slot_sharing_group(group) is ds
    with pytest.raises(ConfigurationError, match="register_slot_sharing_group"):
        env.register_slot_sharing_group("g")
