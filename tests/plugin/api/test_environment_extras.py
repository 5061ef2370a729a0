"""The environment's PyFlink 1.x time characteristic (accepted with a DeprecationWarning),
its checkpointing getters and runtime-only calls, and the calls refused with their reason."""

from __future__ import annotations

import warnings

import pytest
from pyspark_datastream import (
    CheckpointingMode,
    ConfigurationError,
    StreamExecutionEnvironment,
    TimeCharacteristic,
    UnsupportedConnectorError,
)


@pytest.fixture
def env():
    return StreamExecutionEnvironment.get_execution_environment()


@pytest.mark.parametrize("characteristic", list(TimeCharacteristic))
def test_the_time_characteristic_is_accepted_with_a_deprecation_warning(env, characteristic):
    assert env.get_stream_time_characteristic() is TimeCharacteristic.EventTime
    with pytest.warns(DeprecationWarning, match="since Flink 1.12"):
        env.set_stream_time_characteristic(characteristic)
    assert env.get_stream_time_characteristic() is characteristic


def test_a_bad_time_characteristic_is_refused_without_a_warning(env):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigurationError, match="TimeCharacteristic"):
            env.set_stream_time_characteristic("EventTime")


def test_the_checkpointing_getters_read_the_checkpoint_config(env):
    assert env.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert env.get_checkpointing_consistency_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert env.is_chaining_of_operators_with_different_max_parallelism_enabled()


def test_the_default_savepoint_directory_and_local_parallelism_are_kept(env):
    assert env.get_default_savepoint_directory() is None
    env.set_default_savepoint_directory("/tmp/savepoints")
    assert env.get_default_savepoint_directory() == "/tmp/savepoints"
    before = StreamExecutionEnvironment.get_default_local_parallelism()
    assert before >= 1
    StreamExecutionEnvironment.set_default_local_parallelism(3)
    try:
        assert StreamExecutionEnvironment.get_default_local_parallelism() == 3
    finally:
        StreamExecutionEnvironment._default_local_parallelism = None
    with pytest.raises(ConfigurationError, match="set_default_local_parallelism"):
        StreamExecutionEnvironment.set_default_local_parallelism(0)


def test_the_changelog_backend_is_off_and_cannot_be_enabled(env):
    assert env.enable_changelog_state_backend(False) is env
    assert not env.is_changelog_state_backend_enabled()
    with pytest.raises(ConfigurationError, match="changelog state backend"):
        env.enable_changelog_state_backend(True)


@pytest.mark.parametrize("call,error,match", [
    (lambda e: e.add_source(object(), "src"), UnsupportedConnectorError, "add_source.*SourceFunction"),
    (lambda e: e.create_input(object()), UnsupportedConnectorError, "create_input.*InputFormat"),
    (lambda e: e.register_cached_file("/tmp/f", "f"), ConfigurationError, "register_cached_file"),
])
def test_refused_calls_name_the_api_and_what_to_use(env, call, error, match):
    with pytest.raises(error, match=match):
        call(env)
