"""``ConnectedStreams.map``/``flat_map`` after ``connect(...).key_by(k1, k2)`` (no Spark): a
co-function with its own ``open()`` builds a keyed two-input operator (PyFlink wraps it into a
KeyedCoProcessFunction, so its state is the key's); one without stays a stateless step, and
so does every co-function on non-keyed connected streams.
"""

from __future__ import annotations

from pyspark_datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
)
from pyspark_datastream.plan.graph import CoChainNode, CoKeyedNode


def _stream():
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([("a", 0)], type_info=Types.ROW([Types.STRING(), Types.INT()]))


class _Counting(CoMapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def map1(self, value):
        return value

    def map2(self, value):
        return value


class _Plain(CoFlatMapFunction):
    def flat_map1(self, value):
        yield value

    def flat_map2(self, value):
        yield value


def test_a_co_function_that_opens_runs_keyed_after_connected_key_by():
    a, b = _stream(), _stream()
    keyed = a.connect(b).key_by(lambda r: r[1], lambda r: r[1])
    assert isinstance(keyed.map(_Counting())._node, CoKeyedNode)
    assert isinstance(keyed.flat_map(_Plain())._node, CoChainNode)
    assert isinstance(a.connect(b).map(_Counting())._node, CoChainNode)  # not keyed


def test_a_co_process_function_on_keyed_inputs_runs_keyed_as_in_pyflink():
    """PyFlink's ConnectedStreams.process builds its KEYED_CO_PROCESS operator for keyed
    inputs whatever the function's class, so a CoProcessFunction's state is the key's."""
    from pyspark_datastream import CoProcessFunction

    class Both(CoProcessFunction):
        def process_element1(self, value, ctx):
            yield value

        def process_element2(self, value, ctx):
            yield value

    a, b = _stream(), _stream()
    assert isinstance(a.connect(b).key_by(lambda r: r[1], lambda r: r[1]).process(Both())._node,
                      CoKeyedNode)
    assert isinstance(a.connect(b).process(Both())._node, CoChainNode)
