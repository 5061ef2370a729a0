"""The storage of a job versus the session's (spark_io/storage_conf.py), without Spark."""

from __future__ import annotations

import threading

import pytest
from pyspark_datastream import Configuration, ConfigurationError
from pyspark_datastream.spark_io.storage_conf import (
    current_storage,
    job_scope,
    job_storage,
    storage_options,
)


def _config(**keys: str) -> Configuration:
    conf = Configuration()
    for key, value in keys.items():
        conf.set_string(key, value)
    return conf


def test_the_jobs_s3_keys_are_its_options():
    conf = _config(**{"s3.endpoint": "http://127.0.0.1:9", "s3.path.style.access": "TRUE",
                      "s3.connection.ssl.enabled": "false", "s3.access-key": "ak"})
    options = storage_options(conf, None)
    assert (options.s3_endpoint, options.s3_path_style, options.s3_ssl,
            options.s3_access_key) == ("http://127.0.0.1:9", True, False, "ak")


def test_a_boolean_key_that_is_neither_true_nor_false_is_named():
    with pytest.raises(ConfigurationError, match=r"s3\.path\.style\.access.*'yes'"):
        storage_options(_config(**{"s3.path.style.access": "yes"}), None)


def test_current_storage_is_the_jobs_inside_its_scope_only_and_in_this_thread_only():
    job = job_storage(_config(**{"s3.endpoint": "http://127.0.0.1:9"}), None)
    # outside a job: the active session's settings, if this process has a session (another
    # test's), else the defaults; never the job's
    outside = current_storage().options
    assert outside.s3_endpoint != "http://127.0.0.1:9"
    seen: list[object] = []
    with job_scope(job):
        assert current_storage() is job
        with job_scope(job_storage(_config(), None)):  # nested: the inner job's
            assert current_storage() is not job
        assert current_storage() is job
        # a thread Spark starts (a foreachBatch callback) does not inherit the scope: the
        # Delta sink's function enters it itself (delta_sink.micro_batch_writer)
        other = threading.Thread(target=lambda: seen.append(current_storage()))
        other.start()
        other.join()
    # (the thread's: the session's settings or, with no active session in it, the defaults)
    assert seen[0] is not job and seen[0].options.s3_endpoint != "http://127.0.0.1:9"
    assert current_storage() is not job
