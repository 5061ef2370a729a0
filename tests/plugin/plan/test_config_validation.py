"""Every option of the configuration reference (docs/configuration.md) is checked when a job
is built: a value the option cannot take raises ConfigurationError naming the key, what is
allowed and the value, before Spark is touched or any directory is created."""

from __future__ import annotations

import pytest
from pyspark_datastream import Configuration, ConfigurationError, StreamExecutionEnvironment
from pyspark_datastream.plan.config import (
    OPTIONS,
    RuntimeMode,
    parse_boolean,
    parse_trigger,
    resolve_boolean,
    validate,
)

BAD = [
    ("parallelism.default", "-1", r"parallelism.default must be an integer >= 1, got '-1'"),
    ("parallelism.default", "two", r"parallelism.default must be an integer >= 1, got 'two'"),
    ("pipeline.max-parallelism", "0", r"must be an integer 1..32768, got '0'"),
    ("pipeline.max-parallelism", "32769", r"must be an integer 1..32768, got '32769'"),
    ("execution.sorted-inputs.enabled", "maybe", r"must be true or false, got 'maybe'"),
    ("execution.batch.pre-aggregation.enabled", "2", r"must be true or false, got '2'"),
    ("execution.batch.native-pushdown.enabled", "", r"must be true or false, got ''"),
    ("execution.streaming.native-pushdown.enabled", "maybe", r"must be true or false, got 'maybe'"),
    ("execution.savepoint.ignore-unclaimed-state", "y", r"must be true or false, got 'y'"),
    ("execution.streaming.trigger", "processing-time=abc",
     r"processing-time=<interval> .*got 'processing-time=abc'"),
    ("execution.streaming.trigger", "every minute", r"available-now, once or processing-time"),
    ("execution.savepoint.version", "-2", r"must be an integer >= 0, got '-2'"),
    ("execution.checkpointing.dir", "  ", r"execution.checkpointing.dir must be a path"),
    ("execution.savepoint.path", "", r"execution.savepoint.path must be a path"),
]


@pytest.mark.parametrize("key, value, message", BAD)
def test_bad_values_are_refused_when_the_job_is_built(tmp_path, key, value, message):
    conf = Configuration()
    conf.set_string("execution.runtime-mode", "STREAMING")
    if key != "execution.checkpointing.dir":
        conf.set_string("execution.checkpointing.dir", str(tmp_path / "ckpt"))
    conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.from_collection([1, 2]).key_by(lambda x: x).reduce(lambda a, b: a + b).print()
    with pytest.raises(ConfigurationError, match=message):
        env.execute()
    assert not (tmp_path / "ckpt").exists(), "nothing is created for a refused job"
    with pytest.raises(ConfigurationError, match=message):
        env.from_collection([1]).execute_and_collect()


def test_choices_are_checked_when_set():
    # the built-in names come first; backends other tests register follow them
    with pytest.raises(ConfigurationError, match="state.backend.type must be one of hashmap, heap, "
                                                 "rocksdb(, [^ ]+)* or the 'module:attr' path of "
                                                 "a state backend registration, got 'rocks'"):
        Configuration({"state.backend.type": "rocks"})
    with pytest.raises(ConfigurationError, match="execution.runtime-mode must be one of"):
        Configuration().set_string("execution.runtime-mode", "MICROBATCH")


def test_every_option_of_the_table_has_a_check_or_choices_or_is_free_text():
    unchecked = {k for k, o in OPTIONS.items() if o.check is None and o.choices is None}
    assert unchecked == set(), unchecked


def test_good_values_pass_and_spark_intervals_parse():
    validate(Configuration({"parallelism.default": "3", "pipeline.max-parallelism": "32768",
                            "execution.sorted-inputs.enabled": "FALSE",
                            "execution.savepoint.version": "0",
                            "execution.streaming.trigger": "processing-time=1 minute 30 seconds"}))
    assert parse_trigger("processing-time=500 milliseconds") == ("processing-time",
                                                                  "500 milliseconds")
    assert parse_trigger(None) == ("available-now", None)
    assert parse_trigger("ONCE") == ("once", None)



def test_one_boolean_parser_for_every_boolean_option() -> None:
    assert all(parse_boolean("k", v) for v in ("true", " TRUE ", "1", "yes", "On", True))
    assert not any(parse_boolean("k", v) for v in ("false", "0", "no", "OFF ", False))
    for bad in ("", "maybe", None, 2):
        with pytest.raises(ConfigurationError, match=f"k must be true or false, got {bad!r}"):
            parse_boolean("k", bad)
    # the option's default when unset, the configured value else; a bad one is refused
    key = "execution.sorted-inputs.enabled"
    assert resolve_boolean(Configuration(), key, RuntimeMode.BATCH) is True
    assert resolve_boolean(Configuration({key: "off"}), key, RuntimeMode.BATCH) is False
    assert Configuration({key: "No"}).get_boolean(key) is False
    with pytest.raises(ConfigurationError, match=f"{key} must be true or false, got 'nope'"):
        Configuration({key: "nope"}).get_boolean(key)
