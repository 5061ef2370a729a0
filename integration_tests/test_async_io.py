"""Async I/O (``AsyncDataStream``) against a real HTTP service on loopback.

The service (http_service.py) answers after a delay and counts the calls it has in flight;
expected outputs are the service's documented answers (``answer``), orders and call counts
come from Flink's documented semantics: at most ``capacity`` calls in flight per parallel
instance, input order kept by ``ordered_wait``, results as calls finish with
``unordered_wait``, the timeout covering a record's retries, a call repeated after its n-th
attempt while ``can_retry(n)``.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from helpers import add_file
from http_service import ServiceError, SlowService, answer, gaps_ms, lookup
from pyspark_datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    Duration,
    GraphBuildError,
    JobExecutionError,
    Types,
    UserFunctionError,
)
from pyspark_datastream.async_retry_predicates import (
    empty_result_predicate,
    has_exception_predicate,
)
from pyspark_datastream.operators.async_wait import AsyncWaitOperator
from pyspark_datastream.operators.chain import StatelessChain


@pytest.fixture(scope="module")
def service():
    with SlowService() as s:
        yield s


class Lookup(AsyncFunction):
    """Looks each record id up; ``delays``/``fails``/``empties``: per id, default 0."""

    def __init__(self, port, delay_ms=0, delays=None, fails=None, empties=None,
                 on_timeout=None):
        self.port, self.delay_ms = port, delay_ms
        self.delays, self.fails, self.empties = delays or {}, fails or {}, empties or {}
        self.on_timeout = on_timeout

    def open(self, runtime_context):
        self.sub = runtime_context.get_index_of_this_subtask()

    async def async_invoke(self, value):
        rid = value if isinstance(value, int) else value[1]
        got = await lookup(self.port, rid, self.delays.get(rid, self.delay_ms), self.sub,
                           self.fails.get(rid, 0), self.empties.get(rid, 0))
        return [(rid, v) for v in got]

    def timeout(self, value):
        if self.on_timeout is None:
            return super().timeout(value)
        return [(value, self.on_timeout)]


def _chain(function, timeout_ms=5_000, capacity=10, ordered=True, retry=None):
    chain = StatelessChain([("async", AsyncWaitOperator(function, timeout_ms, capacity, ordered,
                                                        retry))])
    chain.open()
    return chain


def _run(chain, ids):
    out = []
    try:
        for i in ids:
            out += chain.process(i, i)
        out += chain.finish()
    finally:
        chain.close()
    return [(o.value, o.timestamp) for o in out]


# -- jobs on Spark ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_calls_in_flight_reach_capacity_and_never_exceed_it(spark, env_factory, service,
                                                           tmp_path, mode):
    capacity, files, per_file = 8, 3, 60
    folder = str(tmp_path / "in")
    ids = list(range(files * per_file))
    for f in range(files):
        add_file(folder, [(f"k{i}", i) for i in ids[f::files]], f"part-{f}")
    config = {"execution.checkpointing.dir": str(tmp_path / "ckpt")} if mode == "STREAMING" else {}
    env = env_factory(mode, config)
    env.set_parallelism(2)
    reader = spark.readStream.schema("k string, v long") if mode == "STREAMING" else spark.read
    source = env.from_dataframe(reader.parquet(folder))
    service.reset()
    looked_up = AsyncDataStream.unordered_wait(source, Lookup(service.port, delay_ms=60),
                                               Duration.of_seconds(30), capacity)
    with looked_up.execute_and_collect(f"async-capacity-{mode}") as it:
        rows = list(it)
    assert Counter(rows) == Counter((i, answer(i)) for i in ids)  # each result exactly once
    assert len(service.max_by_sub) >= 2  # several parallel instances called
    assert max(service.max_by_sub.values()) == capacity  # reached ...
    assert all(m <= capacity for m in service.max_by_sub.values())  # ... never exceeded


def test_ordered_wait_keeps_input_order_and_unordered_emits_as_calls_finish(env_factory,
                                                                            service):
    ids = list(range(40))
    slow = {i: 400 for i in ids if i % 10 == 0}  # every tenth call is slow
    outputs = {}
    for wait in ("ordered_wait", "unordered_wait"):
        env = env_factory("BATCH")
        env.set_parallelism(1)
        ds = env.from_collection(ids, type_info=Types.INT())
        looked_up = getattr(AsyncDataStream, wait)(
            ds, Lookup(service.port, delay_ms=20, delays=slow), Duration.of_seconds(30), 10)
        with looked_up.execute_and_collect(f"async-{wait}") as it:
            outputs[wait] = [rid for rid, _ in it]
    assert outputs["ordered_wait"] == ids
    unordered = outputs["unordered_wait"]
    assert sorted(unordered) == ids
    # a slow record leaves after the fast ones queued with it
    assert unordered.index(0) > unordered.index(1)
    assert unordered.index(10) > unordered.index(11)


def test_retries_and_timeouts_in_a_streaming_job(env_factory, service, tmp_path):
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    env.set_parallelism(2)
    ids = list(range(30))
    fails = {i: i % 3 for i in ids}  # 0, 1 or 2 failed calls before the answer
    delays = {i: 2_000 for i in ids if i % 10 == 7}  # these time out
    ds = env.from_collection(ids, type_info=Types.INT())
    strategy = AsyncRetryStrategy.fixed_delay(2, 20, exception_predicate=has_exception_predicate)
    looked_up = AsyncDataStream.ordered_wait_with_retry(
        ds, Lookup(service.port, delay_ms=10, delays=delays, fails=fails, on_timeout=-1),
        Duration.of_millis(600), strategy, 5)
    service.reset()
    with looked_up.execute_and_collect("async-retry-streaming") as it:
        rows = list(it)
    expected = [(i, -1) if i in delays else (i, answer(i)) for i in ids]
    assert Counter(rows) == Counter(expected)
    for i in ids:
        if i not in delays:  # fixed_delay(2, ...): retried while attempts <= 2
            assert len(service.calls[i]) == fails[i] + 1, i


# -- the operator over the service (no Spark) ------------------------------------------------
def test_retry_strategy_decides_the_calls_and_their_delays(service):
    service.reset()
    fixed = AsyncRetryStrategy.fixed_delay(3, 50, exception_predicate=has_exception_predicate)
    ids = [0, 1, 2, 3]
    rows = _run(_chain(Lookup(service.port, fails={i: i for i in ids}), retry=fixed), ids)
    assert rows == [((i, answer(i)), i) for i in ids]  # each keeps its input's timestamp
    assert [len(service.calls[i]) for i in ids] == [1, 2, 3, 4]
    assert all(g >= 45 for g in gaps_ms(service.calls[3]))

    service.reset()
    backoff = AsyncRetryStrategy.exponential_backoff(
        3, 40, 100, 2.0, exception_predicate=has_exception_predicate)
    rows = _run(_chain(Lookup(service.port, fails={9: 3}), retry=backoff), [9])
    assert rows == [((9, answer(9)), 9)]
    gaps = gaps_ms(service.calls[9])
    assert len(gaps) == 3
    for gap, delay in zip(gaps, [40, 80, 100]):  # initial, doubled, capped at 100
        assert gap >= delay * 0.9, gaps

    service.reset()
    on_empty = AsyncRetryStrategy.fixed_delay(5, 10, result_predicate=empty_result_predicate)
    rows = _run(_chain(Lookup(service.port, empties={4: 2}), retry=on_empty), [4])
    assert rows == [((4, answer(4)), 4)]
    assert len(service.calls[4]) == 3


def test_a_call_failing_after_its_last_retry_fails_the_job_naming_it(service):
    service.reset()
    fixed = AsyncRetryStrategy.fixed_delay(2, 10, exception_predicate=has_exception_predicate)
    with pytest.raises(UserFunctionError) as info:
        _run(_chain(Lookup(service.port, fails={5: 3}), retry=fixed), [5])
    assert "async_invoke" in str(info.value) and "HTTP 503 for id 5" in str(info.value)
    assert isinstance(info.value.__cause__, ServiceError)
    assert len(service.calls[5]) == 3  # the first call and two retries

    service.reset()
    with pytest.raises(UserFunctionError, match="HTTP 503"):  # no strategy: no retry
        _run(_chain(Lookup(service.port, fails={6: 1})), [6])
    assert len(service.calls[6]) == 1


def test_the_timeout_covers_retries_and_by_default_fails_the_job(service):
    always_failing = AsyncRetryStrategy.fixed_delay(
        1_000, 50, exception_predicate=has_exception_predicate)
    rows = _run(_chain(Lookup(service.port, fails={7: 1_000}, on_timeout="late"),
                       timeout_ms=400, retry=always_failing), [7, 8])
    assert rows == [((7, "late"), 7), ((8, answer(8)), 8)]

    with pytest.raises(UserFunctionError) as info:
        _run(_chain(Lookup(service.port, delay_ms=2_000), timeout_ms=200), [1])
    assert "timeout (after 200 ms)" in str(info.value)
    assert isinstance(info.value.__cause__, TimeoutError)


def test_unordered_capacity_holds_for_the_operator_alone(service):
    service.reset()
    ids = list(range(50))
    rows = _run(_chain(Lookup(service.port, delay_ms=30), capacity=7, ordered=False), ids)
    assert sorted(v for v, _ in rows) == [(i, answer(i)) for i in ids]
    assert service.max_in_flight == 7


# -- errors found when the job is built or the function answers wrongly ---------------------
class NotAsync(AsyncFunction):
    def async_invoke(self, value):  # a plain def
        return [value]


class NotAList(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(0)
        return value


def test_bad_arguments_are_refused_when_the_job_is_built(env_factory):
    ds = env_factory("BATCH").from_collection([1, 2])
    with pytest.raises(GraphBuildError, match="should be declared as 'async def'"):
        AsyncDataStream.unordered_wait(ds, NotAsync(), Duration.of_seconds(1))
    with pytest.raises(GraphBuildError, match="capacity must be a positive int, got 0"):
        AsyncDataStream.ordered_wait(ds, NotAList(), Duration.of_seconds(1), 0)
    with pytest.raises(GraphBuildError, match="timeout must be positive"):
        AsyncDataStream.ordered_wait(ds, NotAList(), Duration.of_millis(0))
    with pytest.raises(GraphBuildError, match="async_retry_strategy must be an AsyncRetryStrategy"):
        AsyncDataStream.unordered_wait_with_retry(ds, NotAList(), 1_000, "3 times")
    with pytest.raises(GraphBuildError, match="max_attempts must be greater than zero, got 0"):
        AsyncRetryStrategy.fixed_delay(0, 10)


def test_a_result_that_is_not_a_list_fails_naming_the_operator_and_type(env_factory):
    env = env_factory("BATCH")
    ds = env.from_collection([1, 2])
    out = AsyncDataStream.unordered_wait(ds, NotAList(), Duration.of_seconds(5))
    with pytest.raises(JobExecutionError) as info:
        with out.execute_and_collect("async-not-a-list") as it:
            list(it)
    message = str(info.value)
    assert "NotAList (unordered wait)" in message and "must return a list" in message
    assert "got int" in message
