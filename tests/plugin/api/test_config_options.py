"""ConfigOptions/ConfigOption: typed keys with defaults, read from and written to a
Configuration (the stored text parsed to the option's type, a wrong one refused)."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    ConfigOption,
    ConfigOptions,
    Configuration,
    ConfigurationError,
    InputDependencyConstraint,
)


def test_an_option_reads_its_default_then_the_configured_value():
    parallelism = ConfigOptions.key("application.parallelism").int_type().default_value(100)
    assert isinstance(parallelism, ConfigOption)
    assert parallelism.key() == "application.parallelism"
    assert parallelism.has_default_value() and parallelism.default_value() == 100
    config = Configuration()
    assert parallelism.get_from(config) == 100
    parallelism.set_to(config, 7)
    assert config.get_string("application.parallelism") == "7"
    assert parallelism.get_from(config) == 7


@pytest.mark.parametrize("builder,text,value", [
    (lambda b: b.boolean_type(), "TRUE", True),
    (lambda b: b.long_type(), "12345678901", 12_345_678_901),
    (lambda b: b.double_type(), "0.25", 0.25),
    (lambda b: b.float_type(), "2", 2.0),
    (lambda b: b.string_type(), "/tmp", "/tmp"),
])
def test_each_type_parses_the_stored_text(builder, text, value):
    option = builder(ConfigOptions.key("k")).no_default_value()
    assert not option.has_default_value() and option.get_from(Configuration()) is None
    assert option.get_from(Configuration({"k": text})) == value


def test_a_value_of_another_type_is_refused():
    option = ConfigOptions.key("n").int_type().no_default_value()
    with pytest.raises(ConfigurationError, match="n must be an int"):
        option.get_from(Configuration({"n": "many"}))
    with pytest.raises(ConfigurationError, match="n must be an int"):
        option.set_to(Configuration(), "many")
    with pytest.raises(ConfigurationError, match="default"):
        ConfigOptions.key("b").boolean_type().default_value("yes")
    with pytest.raises(ConfigurationError, match="key"):
        ConfigOptions.key("")


def test_input_dependency_constraint_has_flinks_values():
    assert [c.name for c in InputDependencyConstraint] == ["ANY", "ALL"]
