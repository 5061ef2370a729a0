"""ExecutionConfig's and CheckpointConfig's runtime-only calls: each is checked, kept under
its Flink key (its getter returns it, with Flink's documented default before), and logs one
warning naming the key and why it has no effect; disable_auto_generated_uids is refused."""

from __future__ import annotations

import logging

import pytest
from pyspark_datastream import ConfigurationError, Duration, StreamExecutionEnvironment


@pytest.fixture
def env():
    return StreamExecutionEnvironment.get_execution_environment()


def test_flinks_defaults_before_any_call(env):
    config = env.get_config()
    assert config.is_closure_cleaner_enabled() is True
    assert config.get_latency_tracking_interval() == 0
    assert config.get_task_cancellation_interval() == 30_000
    assert config.get_task_cancellation_timeout() == 180_000
    assert not config.is_force_kryo_enabled() and not config.is_force_avro_enabled()
    assert not config.has_generic_types_disabled()
    assert config.has_auto_generated_uids_enabled()
    assert not config.is_use_snapshot_compression()
    assert config.get_registered_kryo_types() == [] == config.get_registered_pojo_types()
    assert config.get_default_kryo_serializer_classes() == {}
    checkpoints = env.get_checkpoint_config()
    assert not checkpoints.is_unaligned_checkpoints_enabled()
    assert not checkpoints.is_force_unaligned_checkpoints()
    assert checkpoints.get_aligned_checkpoint_timeout().to_milliseconds() == 0
    assert checkpoints.get_tolerable_checkpoint_failure_number() == 0
    assert checkpoints.is_fail_on_checkpointing_errors()


def test_each_call_is_kept_and_read_back(env):
    config = env.get_config()
    config.disable_closure_cleaner().set_latency_tracking_interval(500)
    config.set_task_cancellation_interval(100).set_task_cancellation_timeout(0)
    config.enable_force_kryo().enable_force_avro().disable_generic_types()
    config.set_use_snapshot_compression(True)
    assert not config.is_closure_cleaner_enabled()
    assert config.get_latency_tracking_interval() == 500
    assert (config.get_task_cancellation_interval(), config.get_task_cancellation_timeout()) == \
        (100, 0)
    assert config.is_force_kryo_enabled() and config.is_force_avro_enabled()
    assert config.has_generic_types_disabled() and config.is_use_snapshot_compression()
    config.enable_closure_cleaner().disable_force_kryo().enable_generic_types()
    assert config.is_closure_cleaner_enabled() and not config.is_force_kryo_enabled()
    assert not config.has_generic_types_disabled()
    checkpoints = env.get_checkpoint_config()
    checkpoints.enable_unaligned_checkpoints().set_force_unaligned_checkpoints(True)
    checkpoints.set_alignment_timeout(Duration.of_seconds(2))
    checkpoints.set_tolerable_checkpoint_failure_number(3)
    assert checkpoints.is_unaligned_checkpoints_enabled()
    assert env.is_unaligned_checkpoints_enabled() and env.is_force_unaligned_checkpoints()
    assert checkpoints.get_alignment_timeout().to_milliseconds() == 2000
    assert checkpoints.get_tolerable_checkpoint_failure_number() == 3
    assert not checkpoints.is_fail_on_checkpointing_errors()
    checkpoints.set_fail_on_checkpointing_errors(True)
    assert checkpoints.get_tolerable_checkpoint_failure_number() == 0
    checkpoints.disable_unaligned_checkpoints()
    assert not env.is_unaligned_checkpoints_enabled()


def test_each_kept_setting_logs_one_warning_naming_its_key_and_why(env, caplog):
    with caplog.at_level(logging.WARNING, logger="pyspark_datastream"):
        env.get_config().disable_closure_cleaner()
        env.get_config().enable_closure_cleaner()
        env.get_checkpoint_config().enable_unaligned_checkpoints()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("pipeline.closure-cleaner-level" in m for m in messages) == 1
    assert any("execution.checkpointing.unaligned.enabled" in m and "no barriers" in m
               for m in messages)


@pytest.mark.parametrize("call,match", [
    (lambda e: e.get_config().set_latency_tracking_interval("1s"), "set_latency_tracking"),
    (lambda e: e.get_config().set_task_cancellation_interval(-1), "set_task_cancellation"),
    (lambda e: e.get_config().set_use_snapshot_compression("yes"), "set_use_snapshot"),
    (lambda e: e.get_checkpoint_config().enable_unaligned_checkpoints(1), "enable_unaligned"),
    (lambda e: e.get_checkpoint_config().set_aligned_checkpoint_timeout("2s"),
     "set_aligned_checkpoint_timeout"),
    (lambda e: e.get_checkpoint_config().set_tolerable_checkpoint_failure_number(-1),
     "set_tolerable"),
    (lambda e: e.get_config().disable_auto_generated_uids(), "disable_auto_generated_uids"),
])
def test_bad_values_and_the_refused_call_are_configuration_errors(env, call, match):
    with pytest.raises(ConfigurationError, match=match):
        call(env)
