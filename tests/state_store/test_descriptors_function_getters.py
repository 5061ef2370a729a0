"""The reducing and aggregating descriptors give back the function they were made with."""

from __future__ import annotations

from pyspark_datastream import (
    AggregateFunction,
    AggregatingStateDescriptor,
    ReduceFunction,
    ReducingStateDescriptor,
    Types,
)


class Sum(ReduceFunction):
    def reduce(self, value1, value2):
        return value1 + value2


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]


def test_the_functions_come_back():
    fn, lam = Sum(), (lambda a, b: a * b)
    assert ReducingStateDescriptor("s", fn, Types.LONG()).get_reduce_function() is fn
    assert ReducingStateDescriptor("p", lam, Types.LONG()).get_reduce_function() is lam
    avg = Avg()
    descriptor = AggregatingStateDescriptor("a", avg, Types.TUPLE([Types.LONG(), Types.LONG()]))
    assert descriptor.get_agg_function() is avg
