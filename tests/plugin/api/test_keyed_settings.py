"""The per-operator settings PyFlink's KeyedStream refuses raise a GraphBuildError naming
the call (no Spark); the operator after ``key_by`` still takes them.

The refused calls are PyFlink's own list: ``flink-python/pyflink/datastream/data_stream.py``,
``KeyedStream`` raises ``Exception("... for KeyedStream is not supported.")`` in each.
"""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    GraphBuildError,
    StreamExecutionEnvironment,
    Types,
)

REFUSED = [("name", ("keyed stream",)), ("get_name", ()), ("uid", ("u",)),
           ("set_parallelism", (2,)), ("set_max_parallelism", (8,)), ("force_non_parallel", ()),
           ("set_buffer_timeout", (10,)), ("start_new_chain", ()), ("disable_chaining", ()),
           ("slot_sharing_group", ("g",)), ("cache", ())]


def _keyed():
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([("a", 0)], type_info=Types.ROW([Types.STRING(), Types.INT()]))


@pytest.mark.parametrize("call,args", REFUSED, ids=[c for c, _ in REFUSED])
def test_a_keyed_stream_refuses_each_operator_setting_naming_it(call, args):
    keyed = _keyed().key_by(lambda r: r[1], key_type=Types.INT())
    with pytest.raises(GraphBuildError, match=rf"{call}\(\) on the KeyedStream of .* not supported"):
        getattr(keyed, call)(*args)


def test_the_operator_after_key_by_still_takes_each_setting():
    stream = _keyed().key_by(lambda r: r[1]).reduce(lambda a, b: a)
    stream.name("totals").uid("totals").set_parallelism(2).disable_chaining()
    assert stream.get_name() == "totals"
