"""JobID: a run's 32-hex-digit id as a str (equal to its text), and the accumulators of a
job, which are none for Python functions (PyFlink's RuntimeContext has none)."""

from __future__ import annotations

import pytest
from pyspark_datastream import JobExecutionResult, JobID


def test_a_job_id_is_its_32_hex_digits():
    job_id = JobID.generate()
    assert len(job_id.to_hex_string()) == 32 and int(job_id, 16) >= 0
    assert JobID.from_hex_string("AB" * 16) == "ab" * 16
    assert str(JobID("0f" * 16)) == "0f" * 16
    assert JobID.generate() != job_id
    with pytest.raises(ValueError, match="32 hex digits"):
        JobID("xyz")


def test_a_result_gives_its_job_id_and_no_accumulators():
    result = JobExecutionResult("job", "BATCH", 5, job_id="12" * 16)
    assert isinstance(result.get_job_id(), JobID) and result.get_job_id() == "12" * 16
    assert result.get_all_accumulator_results() == {}
    assert result.get_accumulator_result("count") is None
