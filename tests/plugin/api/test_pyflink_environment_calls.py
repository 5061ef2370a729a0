"""PyFlink's environment and checkpoint calls (no Spark): each maps to the setting the job
reads, or is kept with one warning naming it, or is refused with a typed error.

Expected values are PyFlink's documented ones: ``get_checkpoint_interval()`` is -1 when
checkpointing is off, the default checkpoint timeout is 10 minutes, the default auto
watermark interval 200 ms, max concurrent checkpoints 1."""

from __future__ import annotations

import json
import logging

import pytest
from pyspark_datastream import (
    CheckpointingMode,
    Configuration,
    ConfigurationError,
    ExecutionConfig,
    ExternalizedCheckpointRetention,
    GraphBuildError,
    KeyGroupError,
    StreamExecutionEnvironment,
    Types,
)
from pyspark_datastream.plan.config import RuntimeMode, streaming_trigger


def _env(conf: Configuration | None = None) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(conf)


def _warnings(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and key in r.getMessage()]


def test_enable_checkpointing_sets_the_streaming_trigger_interval():
    env = _env()
    assert env.get_checkpoint_config().get_checkpoint_interval() == -1  # PyFlink: off
    assert not env.get_checkpoint_config().is_checkpointing_enabled()
    assert env.enable_checkpointing(5000) is env
    assert env.get_checkpoint_interval() == 5000
    assert env.get_checkpoint_config().is_checkpointing_enabled()
    assert streaming_trigger(env.get_config(), RuntimeMode.STREAMING) == \
        ("processing-time", "5000 milliseconds")
    # a job over bounded sources runs to its end, as Flink's bounded job finishes
    assert streaming_trigger(env.get_config(), RuntimeMode.STREAMING, bounded=True) == \
        ("available-now", None)


def test_an_explicit_trigger_wins_over_the_checkpoint_interval(caplog):
    conf = Configuration({"execution.streaming.trigger": "once"})
    env = _env(conf).enable_checkpointing(2000)
    with caplog.at_level(logging.WARNING, "pyspark_datastream"):
        assert streaming_trigger(env.get_config(), RuntimeMode.STREAMING) == ("once", None)
    assert _warnings(caplog, "execution.checkpointing.interval")


def test_checkpointing_interval_key_takes_flink_durations():
    for raw, ms in [("10 s", 10_000), ("1 min", 60_000), ("250", 250), ("500 ms", 500)]:
        conf = Configuration({"execution.checkpointing.interval": raw})
        assert streaming_trigger(conf, RuntimeMode.STREAMING) == \
            ("processing-time", f"{ms} milliseconds")
    with pytest.raises(ConfigurationError, match=r"at least 10 ms.*'5'"):
        Configuration({"execution.checkpointing.interval": "5"})
    with pytest.raises(ConfigurationError, match=r"must be a duration .*'soon'"):
        Configuration({"execution.checkpointing.interval": "soon"})


@pytest.mark.parametrize("bad", [0, 9, -1, "1000", 1.5, True])
def test_enable_checkpointing_refuses_a_bad_interval(bad):
    with pytest.raises(ConfigurationError, match="checkpoint_interval"):
        _env().enable_checkpointing(bad)


def test_checkpointing_mode_at_least_once_is_accepted():
    env = _env().enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    config = env.get_checkpoint_config()
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    config.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
    assert config.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    with pytest.raises(ConfigurationError, match="CheckpointingMode"):
        config.set_checkpointing_mode("EXACTLY_ONCE")  # type: ignore[arg-type]


def test_checkpoint_config_defaults_are_pyflinks():
    config = _env().get_checkpoint_config()
    assert config.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    assert config.get_checkpoint_timeout() == 10 * 60 * 1000
    assert config.get_min_pause_between_checkpoints() == 0
    assert config.get_max_concurrent_checkpoints() == 1
    assert config.get_externalized_checkpoint_retention() is \
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION


@pytest.mark.parametrize("call, key, getter, value", [
    ("set_min_pause_between_checkpoints", "execution.checkpointing.min-pause",
     "get_min_pause_between_checkpoints", 500),
    ("set_checkpoint_timeout", "execution.checkpointing.timeout", "get_checkpoint_timeout", 60000),
    ("set_max_concurrent_checkpoints", "execution.checkpointing.max-concurrent-checkpoints",
     "get_max_concurrent_checkpoints", 2),
])
def test_settings_without_effect_are_kept_and_warn_once(caplog, call, key, getter, value):
    config = _env().get_checkpoint_config()
    with caplog.at_level(logging.WARNING, "pyspark_datastream"):
        getattr(config, call)(value)
        getattr(config, call)(value)
    assert getattr(config, getter)() == value
    assert len(_warnings(caplog, key)) == 1


@pytest.mark.parametrize("call", ["set_min_pause_between_checkpoints", "set_checkpoint_timeout",
                                  "set_max_concurrent_checkpoints"])
def test_settings_without_effect_still_check_their_value(call):
    with pytest.raises(ConfigurationError, match=call):
        getattr(_env().get_checkpoint_config(), call)("soon")


def test_retention_other_than_retain_is_refused():
    config = _env().get_checkpoint_config()
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    config.enable_externalized_checkpoints(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    for other in (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION,
                  ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS):
        with pytest.raises(ConfigurationError, match=rf"{other.name}.*always stays"):
            config.set_externalized_checkpoint_retention(other)
    with pytest.raises(ConfigurationError, match="always stays"):
        Configuration({"execution.checkpointing.externalized-checkpoint-retention":
                       "DELETE_ON_CANCELLATION"})


def test_checkpoint_storage_sets_the_checkpoint_root(tmp_path):
    env = _env()
    env.get_checkpoint_config().set_checkpoint_storage_dir(str(tmp_path / "a"))
    assert env.get_config().get_string("execution.checkpointing.dir") == str(tmp_path / "a")

    class FileSystemCheckpointStorage:
        def get_checkpoint_path(self) -> str:
            return str(tmp_path / "b")

    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage())
    assert env.get_checkpoint_config().get_checkpoint_storage_dir() == str(tmp_path / "b")
    with pytest.raises(ConfigurationError, match="set_checkpoint_storage needs a path"):
        env.get_checkpoint_config().set_checkpoint_storage(object())
    with pytest.raises(ConfigurationError, match="non-empty path"):
        env.get_checkpoint_config().set_checkpoint_storage_dir("")


def test_get_config_is_both_configuration_and_execution_config():
    config = _env().get_config()
    assert isinstance(config, Configuration) and isinstance(config, ExecutionConfig)
    config.set_string("execution.runtime-mode", "batch")
    assert config.get_string("execution.runtime-mode") == "BATCH"
    config.set_parallelism(3).set_max_parallelism(64)
    assert (config.get_parallelism(), config.get_max_parallelism()) == (3, 64)
    assert config.get_integer("parallelism.default") == 3
    with pytest.raises(ConfigurationError):
        config.set_parallelism(0)
    with pytest.raises(KeyGroupError):
        config.set_max_parallelism(40000)


def test_execution_config_watermark_interval_and_job_parameters(caplog):
    config = _env().get_config()
    assert config.get_auto_watermark_interval() == 200  # Flink's default
    with caplog.at_level(logging.WARNING, "pyspark_datastream"):
        config.set_auto_watermark_interval(50)
    assert config.get_auto_watermark_interval() == 50
    assert len(_warnings(caplog, "pipeline.auto-watermark-interval")) == 1
    config.set_global_job_parameters({"threshold": 5, "name": "x"})
    assert config.get_global_job_parameters() == {"threshold": "5", "name": "x"}
    assert config.get_string("threshold") == "5"  # what get_job_parameter reads
    config.set_global_job_parameters({"name": "y"})
    assert config.get_global_job_parameters() == {"name": "y"}
    assert not config.contains_key("threshold")
    with pytest.raises(ConfigurationError, match="dict of str keys"):
        config.set_global_job_parameters([("a", 1)])  # type: ignore[arg-type]


def test_flink_keys_without_effect_warn_once_naming_the_key(caplog):
    with caplog.at_level(logging.WARNING, "pyspark_datastream"):
        conf = Configuration({"restart-strategy.type": "fixed-delay"})
        conf.set_string("restart-strategy.type", "none")
        conf.set_string("taskmanager.numberOfTaskSlots", "4")
        conf.set_string("my.own.parameter", "1")  # a job parameter: no warning
    assert len(_warnings(caplog, "restart-strategy.type")) == 1
    assert "spark.task.maxFailures" in _warnings(caplog, "restart-strategy.type")[0]
    assert len(_warnings(caplog, "taskmanager.numberOfTaskSlots")) == 1
    assert not _warnings(caplog, "my.own.parameter")
    assert conf.get_string("restart-strategy.type") == "none"


def test_disable_operator_chaining_is_a_documented_no_op(caplog):
    env = _env()
    assert env.is_chaining_enabled()
    with caplog.at_level(logging.WARNING, "pyspark_datastream"):
        assert env.disable_operator_chaining() is env
    assert not env.is_chaining_enabled()
    assert _warnings(caplog, "pipeline.operator-chaining.enabled")


def test_jars_and_python_executable_wait_for_the_session(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    # a process where no session has started (an earlier test in this process may have one)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    env = _env()
    env.add_jars("file:///opt/a.jar", "file:///opt/b.jar").add_classpaths("file:///opt/c.jar")
    env.set_python_executable("/usr/bin/python3")
    # the session this environment starts gets them
    assert env.get_config().get_string("pipeline.jars") == "file:///opt/a.jar;file:///opt/b.jar"
    with pytest.raises(ConfigurationError, match="one or more paths"):
        env.add_jars()
    with pytest.raises(ConfigurationError, match="one or more paths"):
        env.add_jars(3)  # type: ignore[arg-type]


def test_python_requirements_are_refused_and_missing_files_too(tmp_path):
    env = _env()
    with pytest.raises(ConfigurationError, match="installs no Python requirements"):
        env.set_python_requirements(str(tmp_path / "requirements.txt"))
    with pytest.raises(ConfigurationError, match="does not exist"):
        env.add_python_file(str(tmp_path / "missing.py"))
    with pytest.raises(ConfigurationError, match="does not exist"):
        env.add_python_archive(str(tmp_path / "missing.zip"), "env")


def test_configuration_from_dict_and_add_all_with_prefix():
    conf = Configuration.from_dict({"a": 1, "b": "x"})
    assert conf.to_dict() == {"a": "1", "b": "x"}
    target = Configuration({"c": "3"})
    assert target.add_all(conf, "p.") is target
    assert target.to_dict() == {"c": "3", "p.a": "1", "p.b": "x"}
    target.add_all(conf)
    assert target.get_string("a") == "1"
    with pytest.raises(ConfigurationError, match="needs a Configuration"):
        target.add_all({"a": 1})  # type: ignore[arg-type]


def test_execution_plan_is_flinks_json_shape():
    env = _env()
    assert json.loads(env.get_execution_plan()) == {"nodes": []}
    ds = env.from_collection([(1, "a")], Types.TUPLE([Types.INT(), Types.STRING()]))
    ds.key_by(lambda v: v[0]).map(lambda v: v).name("m").print().set_parallelism(1)
    nodes = json.loads(env.get_execution_plan())["nodes"]
    assert [n["pact"] for n in nodes] == ["Data Source", "Operator", "Operator", "Data Sink"]
    assert nodes[0]["type"] == "Source: Collection Source" and nodes[0]["predecessors"] == []
    assert nodes[2]["contents"] == "m"
    assert nodes[2]["predecessors"] == [{"id": nodes[1]["id"], "ship_strategy": "HASH",
                                         "side": "second"}]
    assert nodes[3]["parallelism"] == 1


def test_close_drops_declared_sinks():
    env = _env()
    env.from_collection([1]).print()
    env.close()
    assert json.loads(env.get_execution_plan()) == {"nodes": []}
    with pytest.raises(GraphBuildError, match="no sinks declared"):
        env.execute()
