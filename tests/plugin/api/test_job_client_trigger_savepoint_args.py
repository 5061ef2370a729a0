"""``JobClient.trigger_savepoint`` takes PyFlink's ``savepoint_directory`` (no Spark): a path
is required, given once."""

from __future__ import annotations

import inspect

import pytest
from pyspark_datastream import JobClient, SavepointError
from pyspark_datastream.operators.modes import RuntimeMode


def test_trigger_savepoint_takes_pyflink_s_savepoint_directory_and_needs_a_path():
    client = JobClient("job", RuntimeMode.BATCH)
    params = list(inspect.signature(JobClient.trigger_savepoint).parameters)
    assert params[:2] == ["self", "savepoint_directory"]
    with pytest.raises(SavepointError, match="savepoint_directory must be a non-empty path"):
        client.trigger_savepoint()
    with pytest.raises(SavepointError, match="not both"):
        client.trigger_savepoint("/a", path="/b")
