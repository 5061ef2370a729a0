"""AsyncFunctionDescriptor keeps an async stage's function and settings as PyFlink's
AsyncDataStream does, and refuses what is not one."""

from __future__ import annotations

import pytest
from pyspark_datastream import AsyncFunction, AsyncFunctionDescriptor, GraphBuildError
from pyspark_datastream.operators.async_functions import NO_RETRY_STRATEGY


class Echo(AsyncFunction):
    async def async_invoke(self, value):
        return [value]


def test_the_descriptor_keeps_the_stage():
    fn = Echo()
    mode = AsyncFunctionDescriptor.OutputMode.UNORDERED
    descriptor = AsyncFunctionDescriptor(fn, 1000, 10, NO_RETRY_STRATEGY, mode)
    assert (descriptor.async_function, descriptor.timeout, descriptor.capacity,
            descriptor.async_retry_strategy, descriptor.output_mode) == \
        (fn, 1000, 10, NO_RETRY_STRATEGY, mode)


@pytest.mark.parametrize("args,match", [
    ((lambda v: v, 1000, 10, NO_RETRY_STRATEGY, AsyncFunctionDescriptor.OutputMode.ORDERED),
     "AsyncFunction"),
    ((Echo(), 1000, 0, NO_RETRY_STRATEGY, AsyncFunctionDescriptor.OutputMode.ORDERED),
     "capacity"),
    ((Echo(), 1000, 1, NO_RETRY_STRATEGY, "ORDERED"), "output_mode"),
])
def test_what_is_not_a_stage_is_refused(args, match):
    with pytest.raises(GraphBuildError, match=match):
        AsyncFunctionDescriptor(*args)
