"""Plugin unit tests that need no SparkSession: configuration, time, tracing, graph checks."""

from __future__ import annotations

import re

import pytest
from pyspark_datastream import (
    Configuration,
    ConfigurationError,
    Duration,
    GraphBuildError,
    Time,
    Types,
    WatermarkStrategy,
)
from pyspark_datastream.operators.functions import as_map_function, wrapped_callable
from pyspark_datastream.plan.config import OPTIONS, RuntimeMode, configured_runtime_mode, resolve
from pyspark_datastream.translation.tracing import Expr, trace


def test_configuration_typed_accessors():
    c = Configuration()
    c.set_string("execution.sorted-inputs.enabled", "false")
    assert c.get_boolean("execution.sorted-inputs.enabled") is False
    c.set_integer("pipeline.max-parallelism", 64)
    assert c.get_integer("pipeline.max-parallelism") == 64
    assert c.get_string("missing", "d") == "d"
    with pytest.raises(ConfigurationError, match="execution.runtime-mode must be one of"):
        c.set_string("execution.runtime-mode", "SOMETIMES")
    c.set_string("pipeline.max-parallelism", "many")
    with pytest.raises(ConfigurationError, match="pipeline.max-parallelism must be an integer"):
        c.get_integer("pipeline.max-parallelism")


@pytest.mark.parametrize("key, instead", [
    ("execution.sorted-shuffles.enabled", "use execution.sorted-inputs.enabled"),
    ("execution.streaming.key-group-ranges.enabled", "contiguous ranges"),
    ("execution.streaming.timeout-free-operators.enabled", "without a GroupState timeout"),
])
def test_a_removed_key_is_refused_naming_it_whatever_its_value(key, instead):
    for value in ("true", "false"):
        with pytest.raises(ConfigurationError, match=rf"{re.escape(key)} was removed: .*{instead}"):
            Configuration().set_string(key, value)
        with pytest.raises(ConfigurationError, match=re.escape(key)):
            Configuration({key: value})
    assert key not in OPTIONS


def test_mode_dependent_defaults_follow_flip_134():
    c = Configuration()
    assert resolve(c, "pipeline.processing-time.allow", RuntimeMode.BATCH) == "FAIL"
    assert resolve(c, "pipeline.processing-time.allow", RuntimeMode.STREAMING) == "ALLOW"
    assert resolve(c, "pipeline.processing-time.end-of-input", RuntimeMode.BATCH) == "IGNORE"
    assert resolve(c, "pipeline.processing-time.end-of-input", RuntimeMode.STREAMING) == "FIRE_AND_QUIESCE"
    assert all(o.description for o in OPTIONS.values())


def test_streaming_pushdown_reads_its_own_key_then_the_batch_key_then_true():
    own, batch = "execution.streaming.native-pushdown.enabled", "execution.batch.native-pushdown.enabled"
    assert resolve(Configuration(), own, RuntimeMode.STREAMING) == "true"
    assert resolve(Configuration({batch: "false"}), own, RuntimeMode.STREAMING) == "false"
    assert resolve(Configuration({batch: "false", own: "true"}), own, RuntimeMode.STREAMING) == "true"
    assert resolve(Configuration({own: "false"}), own, RuntimeMode.STREAMING) == "false"
    # the BATCH key never reads the STREAMING one
    assert resolve(Configuration({own: "false"}), batch, RuntimeMode.BATCH) == "true"


def test_runtime_mode_is_parsed_once_into_the_enum():
    assert configured_runtime_mode(Configuration()) is RuntimeMode.STREAMING
    assert configured_runtime_mode(Configuration({"execution.runtime-mode": "batch"})) \
        is RuntimeMode.BATCH
    assert configured_runtime_mode(Configuration({"execution.runtime-mode": "AUTOMATIC"})) is None


def test_duration_and_time():
    assert Duration.of_seconds(5).to_milliseconds() == 5000
    assert Time.minutes(2).to_milliseconds() == 120_000
    with pytest.raises(GraphBuildError, match="max_out_of_orderness must be >= 0"):
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(-1))
    with pytest.raises(GraphBuildError, match="TimestampAssigner or a callable"):
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(42)


ROW = Types.ROW_NAMED(["word", "n", "x"], [Types.STRING(), Types.LONG(), Types.DOUBLE()])


def test_trace_field_access_constants_and_arithmetic():
    traced = trace(lambda r: (r[0], 1, r[1] + r[2] * 2), [ROW])
    assert isinstance(traced, tuple) and len(traced) == 3
    assert traced[0] == Expr("field", (0, 0, "word"), Types.STRING())
    assert traced[1].op == "const" and traced[1].args == (1,)
    assert traced[2].op == "+" and traced[2].type_info == Types.DOUBLE()
    assert trace(lambda r: r.word, [ROW]).op == "field"
    assert trace(lambda r: r["n"], [ROW]).args[:2] == (0, 1)


@pytest.mark.parametrize("fn", [
    lambda r: r[0].upper(),          # method call
    lambda r: r[1] if r[1] else 0,   # bool() of a probe
    lambda r: r[0] + r[0],           # string concatenation is not modelled
    lambda r: f"{r[0]}",             # formatting
    lambda r: r[1] // 2,             # floor division differs from Spark's
    lambda r: r[9],                  # no such field
    lambda r: [r[0]],                # list constant
])
def test_untraceable_functions_fall_back(fn):
    assert trace(fn, [ROW]) is None


def test_wrapped_callable_only_for_wrapped_lambdas():
    from pyspark_datastream.operators.functions import as_partitioner
    from pyspark_datastream.operators.partition import as_map_partition_function

    f = lambda x: x  # noqa: E731
    assert wrapped_callable(as_map_function(f)) is f
    # every as_* wrapper, the partitioner's and the partition function's included
    p = lambda key, n: 0  # noqa: E731
    assert wrapped_callable(as_partitioner(p)) is p
    assert wrapped_callable(as_map_partition_function(f)) is f

    from pyspark_datastream import MapFunction

    class M(MapFunction):
        def map(self, value):
            return value

    assert wrapped_callable(M()) is None
