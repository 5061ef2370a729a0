"""RestartStrategies onto Spark's task attempts (``spark.task.maxFailures``): the number of
attempts each strategy means (Flink: n restarts = n + 1 runs), a local master's ``local[N,F]``
form, the session settings an environment starts with, and the refusals. A real run of a
flaky job under each strategy is in integration_tests/test_pyflink_rest_of_api.py."""

from __future__ import annotations

import datetime

import pytest
from pyspark.sql import SparkSession
from pyspark_datastream import (
    ConfigurationError,
    Duration,
    RestartStrategies,
    StreamExecutionEnvironment,
)
from pyspark_datastream.api.restart_strategies import local_master_with_attempts


@pytest.fixture
def no_session(monkeypatch):
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))


@pytest.mark.parametrize("strategy,attempts", [
    (RestartStrategies.no_restart(), 1),
    (RestartStrategies.fixed_delay_restart(0, 0), 1),
    (RestartStrategies.fixed_delay_restart(3, 10_000), 4),
    (RestartStrategies.fixed_delay_restart(2, datetime.timedelta(seconds=5)), 3),
    (RestartStrategies.failure_rate_restart(5, Duration.of_minutes(5), 1000), 6),
    (RestartStrategies.fall_back_restart(), None),
])
def test_each_strategy_means_restarts_plus_one_task_attempts(strategy, attempts):
    assert strategy.task_max_failures() == attempts


def test_the_strategies_keep_flinks_values():
    fixed = RestartStrategies.fixed_delay_restart(3, datetime.timedelta(seconds=10))
    assert fixed.get_restart_attempts() == 3
    assert fixed.get_delay_between_attempts_interval() == datetime.timedelta(seconds=10)
    rate = RestartStrategies.failure_rate_restart(2, 60_000, Duration.of_seconds(1))
    assert rate.get_max_failure_rate() == 2
    assert rate.get_failure_interval() == datetime.timedelta(minutes=1)
    assert rate.get_delay_between_attempts_interval() == datetime.timedelta(seconds=1)
    assert fixed == RestartStrategies.fixed_delay_restart(3, 10_000)
    assert "Restart deactivated" in RestartStrategies.no_restart().get_description()


@pytest.mark.parametrize("call", [
    lambda: RestartStrategies.fixed_delay_restart(-1, 0),
    lambda: RestartStrategies.fixed_delay_restart(True, 0),
    lambda: RestartStrategies.fixed_delay_restart(1, "10s"),
    lambda: RestartStrategies.failure_rate_restart(0, 1000, 0),
])
def test_bad_arguments_are_configuration_errors_naming_the_call(call):
    with pytest.raises(ConfigurationError, match="_restart"):
        call()


@pytest.mark.parametrize("master,conf,expected", [
    ("local[2]", {"spark.task.maxFailures": "4"}, "local[2,4]"),
    ("local[*]", {"spark.task.maxFailures": "1"}, "local[*,1]"),
    ("local[2,3]", {"spark.task.maxFailures": "5"}, "local[2,5]"),
    ("local[2]", {}, "local[2]"),
    ("spark://127.0.0.1:7077", {"spark.task.maxFailures": "4"}, "spark://127.0.0.1:7077"),
])
def test_a_local_master_takes_its_attempts_in_its_name(master, conf, expected):
    assert local_master_with_attempts(master, conf) == expected


def test_the_environment_starts_its_session_with_the_attempts(no_session):
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_restart_strategy() == RestartStrategies.fall_back_restart()
    assert "spark.task.maxFailures" not in env._session_conf()
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 0))
    assert env._session_conf()["spark.task.maxFailures"] == "3"
    env.set_restart_strategy(RestartStrategies.fall_back_restart())
    assert "spark.task.maxFailures" not in env._session_conf()


def test_not_a_strategy_is_refused(no_session):
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(ConfigurationError, match="set_restart_strategy"):
        env.set_restart_strategy(3)
