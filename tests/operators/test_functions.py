"""User function API: PyFlink names, callable wrappers, OutputTag, pickling."""

from __future__ import annotations

import pickle

import pytest
from pyspark import cloudpickle
from pyspark_datastream import GraphBuildError
from pyspark_datastream.operators.functions import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessFunction,
    ReduceFunction,
    TimeDomain,
    TimestampAssigner,
    as_filter_function,
    as_flat_map_function,
    as_key_selector,
    as_map_function,
    as_reduce_function,
    as_timestamp_assigner,
)
from pyspark_datastream.state_store.functions import ReduceFunction as StateReduceFunction


class Double(MapFunction):
    def map(self, value):
        return value * 2


def test_reexports_are_the_state_store_classes() -> None:
    assert ReduceFunction is StateReduceFunction
    assert issubclass(AggregateFunction, Function)
    assert issubclass(MapFunction, Function)


def test_abstract_methods_must_be_implemented() -> None:
    class Incomplete(MapFunction):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()


def test_keyed_process_function_on_timer_defaults_to_nothing() -> None:
    class P(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    assert P().on_timer(1, None) is None
    assert P.Context is KeyedProcessFunction.Context
    assert issubclass(KeyedProcessFunction.OnTimerContext, KeyedProcessFunction.Context)
    assert issubclass(KeyedProcessFunction.Context, ProcessFunction.Context)


@pytest.mark.parametrize(
    ("wrap", "cls", "call"),
    [
        (as_map_function, MapFunction, lambda f: f.map(3)),
        (as_flat_map_function, FlatMapFunction, lambda f: list(f.flat_map(3))),
        (as_filter_function, FilterFunction, lambda f: f.filter(3)),
        (as_key_selector, KeySelector, lambda f: f.get_key(3)),
        (as_timestamp_assigner, TimestampAssigner, lambda f: f.extract_timestamp(3, None)),
    ],
)
def test_wrappers_accept_callables(wrap, cls, call) -> None:
    funcs = {
        MapFunction: lambda v: v + 1,
        FlatMapFunction: lambda v: [v, v],
        FilterFunction: lambda v: v > 2,
        KeySelector: lambda v: v % 2,
        TimestampAssigner: lambda v, ts: v * 1000,
    }
    expected = {
        MapFunction: 4,
        FlatMapFunction: [3, 3],
        FilterFunction: True,
        KeySelector: 1,
        TimestampAssigner: 3000,
    }
    wrapped = wrap(funcs[cls])
    assert isinstance(wrapped, cls)
    assert call(wrapped) == expected[cls]
    # the lifecycle hooks exist on wrapped callables too
    wrapped.open(None)
    wrapped.close()


def test_wrappers_return_instances_unchanged() -> None:
    f = Double()
    assert as_map_function(f) is f


def test_reduce_wrapper() -> None:
    r = as_reduce_function(lambda a, b: a + b)
    assert isinstance(r, ReduceFunction)
    assert r.reduce(2, 5) == 7


@pytest.mark.parametrize(
    "wrap", [as_map_function, as_flat_map_function, as_filter_function, as_reduce_function]
)
def test_wrappers_reject_non_callables_naming_the_argument(wrap) -> None:
    with pytest.raises(GraphBuildError, match=r"argument 'my_arg' must be a \w+ or a callable, got int 5"):
        wrap(5, "my_arg")


def test_wrapper_rejects_the_wrong_function_class() -> None:
    class F(FlatMapFunction):
        def flat_map(self, value):
            return [value]

    with pytest.raises(GraphBuildError, match="argument 'func' must be a MapFunction"):
        as_map_function(F())


def test_wrapper_rejects_a_class_instead_of_an_instance() -> None:
    with pytest.raises(GraphBuildError, match="got the class Double itself"):
        as_map_function(Double)


def test_key_selector_error_names_key_selector() -> None:
    with pytest.raises(GraphBuildError, match="key_by\\(\\): argument 'key_selector'"):
        as_key_selector("field")


def test_output_tag_equality_and_validation() -> None:
    a = OutputTag("late")
    b = OutputTag("late", type_info="whatever")
    assert a == b and hash(a) == hash(b)
    assert a != OutputTag("other")
    assert a.tag_id == "late" and b.type_info == "whatever"
    assert repr(a) == "OutputTag('late')"
    for bad in ("", 3, None):
        with pytest.raises(GraphBuildError, match="tag_id must be a non-empty str"):
            OutputTag(bad)  # type: ignore[arg-type]


def test_time_domain_members() -> None:
    assert {d.name for d in TimeDomain} == {"EVENT_TIME", "PROCESSING_TIME"}


def test_everything_pickles_with_cloudpickle() -> None:
    offset = 10
    objects = [
        as_map_function(lambda v: v + offset),
        as_flat_map_function(lambda v: range(v)),
        as_filter_function(lambda v: v % 2 == 0),
        as_key_selector(lambda v: v[0]),
        as_reduce_function(lambda a, b: a + b + offset),
        as_timestamp_assigner(lambda v, ts: v),
    ]
    restored = cloudpickle.loads(cloudpickle.dumps(objects))
    assert restored[0].map(1) == 11
    assert list(restored[1].flat_map(3)) == [0, 1, 2]
    assert restored[2].filter(4) is True
    assert restored[3].get_key(("k", 1)) == "k"
    assert restored[4].reduce(1, 2) == 13
    assert restored[5].extract_timestamp(42, None) == 42
    tag = pickle.loads(pickle.dumps(OutputTag("side", "t")))
    assert tag == OutputTag("side") and tag.type_info == "t"
    assert pickle.loads(pickle.dumps(Double())).map(4) == 8


def test_wrapped_callable_exposes_plain_lambdas_only() -> None:
    from pyspark_datastream.operators.functions import wrapped_callable

    def f(v):
        return v

    assert wrapped_callable(as_map_function(f)) is f
    assert wrapped_callable(as_reduce_function(f)) is f
    assert wrapped_callable(Double()) is None


def test_a_hot_loop_calls_a_wrapped_callable_directly_and_a_class_through_its_method() -> None:
    """``per_record_call`` hands a loop the user's plain callable behind an ``as_*`` wrapper
    (one Python call less per record), the bound method of a user's class, and what an
    adapter forwards to; each gives the method's own result."""
    from pyspark_datastream.operators.aggregations import BuiltinAggregation
    from pyspark_datastream.operators.functions import (
        as_filter_function,
        as_flat_map_function,
        as_key_selector,
        as_timestamp_assigner,
        per_record_call,
    )
    from pyspark_datastream.operators.keyed_process import _KeyedStageAdapter

    def f(v):
        return v + 1

    def two(a, b):
        return a * b

    wrappers = [(as_map_function(f), "map", f), (as_flat_map_function(f), "flat_map", f),
                (as_filter_function(f), "filter", f), (as_key_selector(f), "get_key", f),
                (as_reduce_function(two), "reduce", two),
                (as_timestamp_assigner(two), "extract_timestamp", two)]
    for wrapper, name, plain in wrappers:
        method = getattr(wrapper, name)
        assert per_record_call(method) is plain, name
    assert as_map_function(f).map(1) == per_record_call(as_map_function(f).map)(1) == 2
    user = Double()
    assert per_record_call(user.map) == user.map and per_record_call(user.map)(4) == 8
    assert per_record_call(len) is len  # not a method of a function object
    wrapper = as_map_function(f)  # its other methods are not the callable
    assert per_record_call(wrapper.open) == wrapper.open
    # an adapter gives what it forwards to; a built-in sum its tuple fast path
    adapter = _KeyedStageAdapter(as_map_function(f))
    assert per_record_call(adapter.process_element)(1, None) == adapter.process_element(1, None)
    assert per_record_call(adapter.process_element) is not adapter.process_element
    total = BuiltinAggregation("sum", 1)
    fast = per_record_call(total.reduce)
    assert fast(("a", 1), ("a", 2)) == total.reduce(("a", 1), ("a", 2)) == ("a", 3)
