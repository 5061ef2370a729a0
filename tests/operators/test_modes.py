"""The runtime mode type: parsing a mode's name, FLIP-134's defaults, AUTOMATIC decided."""

from __future__ import annotations

import pickle

import pytest
from pyspark_datastream import ConfigurationError, RuntimeExecutionMode
from pyspark_datastream.operators.modes import RuntimeMode


@pytest.mark.parametrize("value, mode", [
    ("BATCH", RuntimeMode.BATCH), (" streaming ", RuntimeMode.STREAMING),
    ("Batch", RuntimeMode.BATCH), (RuntimeMode.STREAMING, RuntimeMode.STREAMING),
])
def test_a_mode_or_its_name_parses_to_the_mode(value: object, mode: RuntimeMode) -> None:
    assert RuntimeMode.parse(value) is mode


@pytest.mark.parametrize("value", ["AUTOMATIC", "stream", "", None, 1, RuntimeExecutionMode.BATCH])
def test_anything_else_is_refused_naming_the_setting_and_the_value(value: object) -> None:
    with pytest.raises(ConfigurationError) as info:
        RuntimeMode.parse(value, key="mode")
    assert str(info.value) == f"mode must be one of BATCH, STREAMING; got {value!r}"


def test_processing_time_defaults_are_flip_134s() -> None:
    # FLIP-134: BATCH fails on processing time and drops its timers at end of input;
    # STREAMING allows it and fires them
    assert dict(RuntimeMode.BATCH.processing_time_defaults) == {
        "processing_time_allow": "FAIL", "processing_time_end_of_input": "IGNORE"}
    assert dict(RuntimeMode.STREAMING.processing_time_defaults) == {
        "processing_time_allow": "ALLOW", "processing_time_end_of_input": "FIRE_AND_QUIESCE"}
    assert RuntimeMode.BATCH.is_batch and not RuntimeMode.STREAMING.is_batch


def test_the_setting_decides_a_mode_except_automatic() -> None:
    assert RuntimeExecutionMode.BATCH.decided() is RuntimeMode.BATCH
    assert RuntimeExecutionMode.STREAMING.decided() is RuntimeMode.STREAMING
    assert RuntimeExecutionMode.AUTOMATIC.decided() is None
    assert pickle.loads(pickle.dumps(RuntimeMode.BATCH)) is RuntimeMode.BATCH  # shipped to executors
