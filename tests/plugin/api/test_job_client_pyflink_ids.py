"""JobClient.get_job_id is the run's JobID (the same as its result's) and
get_accumulators is empty: Python functions register no accumulators in PyFlink."""

from __future__ import annotations

from pyspark_datastream import JobClient, JobExecutionResult, JobID


def test_the_client_of_a_finished_run_gives_its_id_and_no_accumulators():
    result = JobExecutionResult("job", "BATCH", 5, job_id="ab" * 16)
    client = JobClient.finished(result)
    assert isinstance(client.get_job_id(), JobID)
    assert client.get_job_id() == result.get_job_id() == "ab" * 16
    assert client.get_accumulators().result() == {}
