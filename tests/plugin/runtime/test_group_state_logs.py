"""A STREAMING call that read its key group's state from the checkpoint's storage logs one
line (operator, key group, bytes, query, micro-batch); a call that read nothing logs none."""

from __future__ import annotations

import logging

from pyspark_datastream.runtime.group_state import log_storage_read


def test_a_read_from_storage_is_logged_and_no_read_is_not(caplog):
    with caplog.at_level(logging.INFO, logger="pyspark_datastream.state"):
        log_storage_read("sessions", 17, 0)
        assert caplog.records == []
        log_storage_read("sessions", 17, 48213)
    [record] = caplog.records
    assert record.name == "pyspark_datastream.state"
    # outside a Spark task: no query and no micro-batch to name
    assert record.getMessage() == ("operator 'sessions' key group 17: 48213 bytes of state "
                                   "read from the checkpoint's storage (query , batch )")
