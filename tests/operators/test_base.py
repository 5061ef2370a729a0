"""OperatorConfig: FLIP-134 defaults per runtime mode and validation."""

from __future__ import annotations

import pickle

import pytest
from pyspark_datastream import ConfigurationError
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.modes import RuntimeMode


def test_mode_defaults_follow_flip_134() -> None:
    batch = OperatorConfig.for_mode("BATCH")
    assert (batch.processing_time_allow, batch.processing_time_end_of_input) == ("FAIL", "IGNORE")
    assert batch.is_batch
    streaming = OperatorConfig.for_mode("streaming")
    assert streaming.mode is RuntimeMode.STREAMING and not streaming.is_batch
    # a mode's name is parsed where a caller hands it in; the config holds the mode
    assert OperatorConfig(mode="batch").mode is RuntimeMode.BATCH
    assert (streaming.processing_time_allow, streaming.processing_time_end_of_input) == (
        "ALLOW",
        "FIRE_AND_QUIESCE",
    )


def test_overrides_and_copies() -> None:
    config = OperatorConfig.for_mode(
        "BATCH",
        processing_time_allow="ignore",
        subtask_index=2,
        parallelism=4,
        max_parallelism=256,
        operator_name="window",
        job_parameters={"a": 1},
    )
    assert config.processing_time_allow == "IGNORE"
    assert (config.subtask_index, config.parallelism, config.max_parallelism) == (2, 4, 256)
    assert config.with_overrides(subtask_index=3).subtask_index == 3
    assert pickle.loads(pickle.dumps(config)) == config


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"processing_time_allow": "MAYBE"}, "pipeline.processing-time.allow must be one of ALLOW, IGNORE, FAIL; got 'MAYBE'"),
        ({"processing_time_end_of_input": "FIRE"}, "pipeline.processing-time.end-of-input must be one of"),
        ({"parallelism": 0}, "parallelism must be >= 1"),
        ({"subtask_index": 3, "parallelism": 2}, "subtask_index 3 is out of range for parallelism 2"),
        ({"max_parallelism": 0}, "pipeline.max-parallelism: max parallelism must be an int"),
        ({"operator_name": ""}, "operator_name must be a non-empty str"),
        ({"job_parameters": [1]}, "job_parameters must be a dict"),
        ({"colour": "red"}, "unknown option\\(s\\) \\['colour'\\]"),
    ],
)
def test_invalid_values_name_the_option(kwargs, message) -> None:
    with pytest.raises(ConfigurationError, match=message):
        OperatorConfig.for_mode("STREAMING", **kwargs)


def test_invalid_mode() -> None:
    with pytest.raises(ConfigurationError, match="execution.runtime-mode must be one of BATCH, STREAMING; got 'AUTOMATIC'"):
        OperatorConfig.for_mode("AUTOMATIC")
    with pytest.raises(ConfigurationError, match="execution.runtime-mode"):
        OperatorConfig(mode="bounded")
