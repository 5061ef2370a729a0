"""``StateTtlConfig`` (PyFlink's builder, enums, defaults and getters), its checks, the
descriptors' ``enable_time_to_live`` and the ``TtlSerializer`` layout."""

from __future__ import annotations

import datetime
import pickle

import pytest
from pyspark_datastream import ConfigurationError, StateDescriptorError
from pyspark_datastream import StateTtlConfig as ExportedStateTtlConfig
from pyspark_datastream.api.time import Duration, Time
from pyspark_datastream.state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.functions import AggregateFunction
from pyspark_datastream.state_store.serializers import (
    LexicographicLongSerializer,
    LongSerializer,
    StringSerializer,
    TtlSerializer,
    TtlValue,
    serializer_from_snapshot,
)
from pyspark_datastream.state_store.ttl_config import StateTtlConfig
from pyspark_datastream.state_store.types import Types

Strategies = StateTtlConfig.CleanupStrategies


def test_exported_from_the_package_root() -> None:
    assert ExportedStateTtlConfig is StateTtlConfig


def test_builder_defaults_match_pyflink() -> None:
    config = StateTtlConfig.new_builder(Time.seconds(10)).build()
    assert config.get_ttl() == Time.seconds(10) and config.get_ttl_millis() == 10_000
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert config.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
    assert (config.get_ttl_time_characteristic()
            is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)
    assert config.is_enabled()
    strategies = config.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background() and not strategies.in_full_snapshot()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert (incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record()) == (5, False)
    compaction = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert compaction.get_query_time_after_num_entries() == 1000
    assert compaction.get_periodic_compaction_time() == datetime.timedelta(days=30)


def test_builder_setters() -> None:
    config = (StateTtlConfig.new_builder(Duration.of_minutes(1))
              .update_ttl_on_read_and_write()
              .return_expired_if_not_cleaned_up()
              .use_processing_time()
              .cleanup_full_snapshot()
              .cleanup_incrementally(10, True)
              .cleanup_in_rocksdb_compact_filter(500, Duration.of_hours(1))
              .disable_cleanup_in_background()
              .set_ttl(Time.milliseconds(250))
              .build())
    assert config.get_ttl_millis() == 250
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
    assert (config.get_state_visibility()
            is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
    strategies = config.get_cleanup_strategies()
    assert strategies.in_full_snapshot() and not strategies.is_cleanup_in_background()
    assert strategies.get_incremental_cleanup_strategy() == Strategies.IncrementalCleanupStrategy(
        10, True)
    compaction = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert compaction.get_query_time_after_num_entries() == 500
    assert compaction.get_periodic_compaction_time() == Duration.of_hours(1)
    back = (StateTtlConfig.new_builder(Time.seconds(1))
            .update_ttl_on_read_and_write().update_ttl_on_create_and_write()
            .return_expired_if_not_cleaned_up().never_return_expired()
            .set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)
            .build())
    assert back == StateTtlConfig.new_builder(Time.seconds(1)).build()


def test_without_background_cleanup_no_default_strategies() -> None:
    strategies = (StateTtlConfig.new_builder(Time.seconds(1)).disable_cleanup_in_background()
                  .build().get_cleanup_strategies())
    assert strategies.get_incremental_cleanup_strategy() is None
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy() is None


def test_disabled_update_type_is_not_enabled() -> None:
    config = (StateTtlConfig.new_builder(Time.seconds(1))
              .set_update_type(StateTtlConfig.UpdateType.Disabled).build())
    assert not config.is_enabled()
    descriptor = ValueStateDescriptor("v", Types.LONG())
    descriptor.enable_time_to_live(config)
    assert descriptor.get_ttl_config() is config and not descriptor.ttl_enabled
    assert descriptor.stored_value_serializer == LongSerializer.INSTANCE


def test_config_pickles() -> None:
    config = (StateTtlConfig.new_builder(Time.seconds(3)).cleanup_incrementally(7, False)
              .cleanup_full_snapshot().build())
    again = pickle.loads(pickle.dumps(config))
    assert again == config and again.get_cleanup_strategies().in_full_snapshot()


@pytest.mark.parametrize("ttl, message", [
    (5, r"new_builder\(ttl\) needs a Time or Duration.*got int 5"),
    (5.0, "got float 5.0"),
    ("10s", "got str '10s'"),
    (None, "got NoneType None"),
    (Time.seconds(0), r"must be positive, got Time\(millis=0\) \(0 ms\)"),
    (Time.milliseconds(-5), r"must be positive.*\(-5 ms\)"),
    (Duration.of_millis(-1), r"must be positive.*\(-1 ms\)"),
])
def test_new_builder_refuses_bad_ttl(ttl: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        StateTtlConfig.new_builder(ttl)


def test_timedelta_ttl_is_accepted() -> None:
    assert StateTtlConfig.new_builder(
        datetime.timedelta(seconds=2)).build().get_ttl_millis() == 2000


def test_builder_refuses_bad_arguments() -> None:
    builder = StateTtlConfig.new_builder(Time.seconds(1))
    with pytest.raises(ConfigurationError, match=r"set_ttl\(ttl\) must be positive"):
        builder.set_ttl(Time.seconds(-1))
    with pytest.raises(ConfigurationError, match="set_update_type.*UpdateType.*got str 'x'"):
        builder.set_update_type("x")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="set_state_visibility.*got UpdateType"):
        builder.set_state_visibility(StateTtlConfig.UpdateType.Disabled)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="cleanup_size.*must be positive, got 0"):
        builder.cleanup_incrementally(0, False)
    with pytest.raises(ConfigurationError, match="run_cleanup_for_every_record.*needs a bool"):
        builder.cleanup_incrementally(5, "yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="query_time_after_num_entries.*got int -1"):
        builder.cleanup_in_rocksdb_compact_filter(-1)
    with pytest.raises(ConfigurationError, match="periodic_compaction_time.*got int 5"):
        builder.cleanup_in_rocksdb_compact_filter(10, 5)
    # zero turns periodic compaction off
    builder.cleanup_in_rocksdb_compact_filter(10, Duration.of_millis(0))


class _Agg(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, accumulator: int) -> int:
        return accumulator + value

    def get_result(self, accumulator: int) -> int:
        return accumulator


@pytest.mark.parametrize("descriptor", [
    ValueStateDescriptor("v", Types.LONG()),
    ListStateDescriptor("l", Types.LONG()),
    MapStateDescriptor("m", Types.STRING(), Types.LONG()),
    ReducingStateDescriptor("r", lambda a, b: a + b, Types.LONG()),
    AggregatingStateDescriptor("a", _Agg(), Types.LONG()),
    BinarySortedStateDescriptor("s", LexicographicLongSerializer.INSTANCE, Types.LONG()),
], ids=lambda d: type(d).__name__)
def test_every_descriptor_kind_enables_ttl(descriptor: object) -> None:
    config = StateTtlConfig.new_builder(Time.seconds(1)).build()
    assert not descriptor.ttl_enabled  # type: ignore[attr-defined]
    descriptor.enable_time_to_live(config)  # type: ignore[attr-defined]
    assert descriptor.get_ttl_config() is config and descriptor.ttl_enabled  # type: ignore[attr-defined]
    stored = descriptor.stored_value_serializer  # type: ignore[attr-defined]
    assert isinstance(stored, TtlSerializer)
    assert stored.value_serializer == descriptor.value_serializer  # type: ignore[attr-defined]


def test_enable_time_to_live_refuses_other_objects() -> None:
    descriptor = ValueStateDescriptor("last-seen", Types.LONG())
    with pytest.raises(StateDescriptorError,
                       match=r"ValueStateDescriptor 'last-seen': enable_time_to_live\(\) needs a "
                             r"StateTtlConfig.*got Time"):
        descriptor.enable_time_to_live(Time.seconds(5))  # type: ignore[arg-type]
    with pytest.raises(StateDescriptorError, match=r"call build\(\) on the builder"):
        descriptor.enable_time_to_live(
            StateTtlConfig.new_builder(Time.seconds(5)))  # type: ignore[arg-type]


def test_ttl_serializer_layout() -> None:
    serializer = TtlSerializer(StringSerializer.INSTANCE)
    data = serializer.serialize(TtlValue("abc", 1_700_000_000_123))
    assert data == (1_700_000_000_123).to_bytes(8, "big", signed=True) + b"abc"
    assert serializer.deserialize(data) == ("abc", 1_700_000_000_123)
    assert serializer.deserialize(serializer.serialize(TtlValue("", -5))) == ("", -5)
    snapshot = serializer.snapshot()
    assert snapshot == {"name": "TtlValue", "params": {"value": StringSerializer.INSTANCE.snapshot()}}
    assert serializer_from_snapshot(snapshot) == serializer
    assert serializer.is_compatible_with(snapshot)
    assert not StringSerializer.INSTANCE.is_compatible_with(snapshot)
