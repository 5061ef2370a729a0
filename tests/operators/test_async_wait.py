"""AsyncWaitOperator in a StatelessChain, over coroutines that sleep (no Spark, no network)."""

from __future__ import annotations

import asyncio
import pickle

import pytest
from pyspark_datastream.operators.async_functions import AsyncFunction
from pyspark_datastream.operators.async_wait import AsyncWaitOperator
from pyspark_datastream.operators.chain import StatelessChain
from pyspark_datastream.operators.exceptions import JobExecutionError, UserFunctionError
from pyspark_datastream.state_store.exceptions import GraphBuildError


class Sleepy(AsyncFunction):
    """Answers ``[value * 10]`` after ``delays.get(value, 0.01)`` s; counts calls in flight."""

    def __init__(self, delays=None):
        self.delays = delays or {}

    def open(self, runtime_context):
        self.in_flight = self.max_in_flight = 0

    async def async_invoke(self, value):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delays.get(value, 0.01))
        finally:
            self.in_flight -= 1
        return [value * 10]


def _values(chain, inputs):
    out = []
    for v in inputs:
        out += chain.process(v, 1000 + v)
    out += chain.finish()
    return out


@pytest.mark.parametrize("ordered", [True, False])
def test_capacity_bounds_the_calls_in_flight(ordered):
    fn = Sleepy()
    chain = StatelessChain([("async", AsyncWaitOperator(fn, 5_000, 4, ordered))])
    chain.open()
    out = _values(chain, range(30))
    assert sorted(o.value for o in out) == [v * 10 for v in range(30)]
    assert all(o.timestamp == 1000 + o.value // 10 for o in out)
    assert fn.max_in_flight == 4
    chain.close()


def test_ordered_keeps_input_order_unordered_does_not():
    delays = {0: 0.3}
    orders = {}
    for ordered in (True, False):
        chain = StatelessChain([("async", AsyncWaitOperator(Sleepy(delays), 5_000, 5, ordered))])
        chain.open()
        orders[ordered] = [o.value // 10 for o in _values(chain, range(10))]
        chain.close()
    assert orders[True] == list(range(10))
    assert sorted(orders[False]) == list(range(10)) and orders[False][0] != 0


def test_two_async_stages_and_a_map_drain_in_order():
    chain = StatelessChain([
        ("async", AsyncWaitOperator(Sleepy(), 5_000, 3, True)),
        ("map", lambda v: v + 1),
        ("async", AsyncWaitOperator(Sleepy(), 5_000, 2, False)),
    ])
    chain.open()
    out = _values(chain, range(12))
    assert sorted(o.value for o in out) == sorted((v * 10 + 1) * 10 for v in range(12))
    assert chain.finish() == []  # drained: nothing left
    chain.close()


def test_the_operator_travels_pickled_and_opens_fresh():
    op = AsyncWaitOperator(Sleepy(), 1_000, 2, True)
    chain = StatelessChain([("async", op)])
    copy = pickle.loads(pickle.dumps(chain))
    copy.open()
    assert [o.value for o in _values(copy, [1, 2, 3])] == [10, 20, 30]
    copy.close()


def test_default_timeout_fails_naming_operator_and_record():
    op = AsyncWaitOperator(Sleepy({7: 5}), 50, 2, True, name="Lookup (ordered wait)")
    chain = StatelessChain([("async", op)])
    chain.open()
    with pytest.raises(UserFunctionError) as info:
        _values(chain, [7])
    assert "'Lookup (ordered wait)'" in str(info.value)
    assert "timeout (after 50 ms) failed on 7" in str(info.value)
    chain.close()  # cancels nothing left, closes the loop


class Plain(AsyncFunction):
    def async_invoke(self, value):  # not async
        return [value]


class Scalar(AsyncFunction):
    async def async_invoke(self, value):
        return value


def test_bad_functions_and_arguments_are_refused():
    with pytest.raises(GraphBuildError, match="'async_invoke' of class 'Plain' should be "
                                              "declared as 'async def'"):
        AsyncWaitOperator(Plain(), 100, 1, True)
    with pytest.raises(GraphBuildError, match="async_function must be an AsyncFunction"):
        AsyncWaitOperator(lambda v: v, 100, 1, True)  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match="capacity must be a positive int, got True"):
        AsyncWaitOperator(Sleepy(), 100, True, True)
    with pytest.raises(GraphBuildError, match="timeout must be positive, got -1 ms"):
        AsyncWaitOperator(Sleepy(), -1, 1, True)
    chain = StatelessChain([("async", AsyncWaitOperator(Scalar(), 100, 1, False))])
    chain.open()
    with pytest.raises(JobExecutionError, match="must return a list of results, got int"):
        _values(chain, [3])
    chain.close()
