"""PyFlink's small ``pyflink.common``/``pyflink.datastream`` classes (no Spark):
``CompletableFuture`` behaves as a future (values, failures, cancellation, waiting); the
Java-object wrappers refuse ``get_java_object``; the Java watermark-assigner wrapper is refused
when constructed; the interfaces are abstract.
"""

from __future__ import annotations

import concurrent.futures
import threading

import pytest
from pyspark_datastream import (
    AssignerWithPeriodicWatermarksWrapper,
    BulkWriterFactory,
    CompletableFuture,
    GraphBuildError,
    InputFormat,
    JavaObjectWrapper,
    ResultTypeQueryable,
    StreamTransformer,
    SupportsPreprocessing,
    UnsupportedConnectorError,
)


def test_a_completed_future_gives_its_value_and_no_exception():
    future = CompletableFuture.completed(41)
    assert future.done() and not future.cancelled()
    assert future.result() == 41
    assert future.exception() is None
    assert not future.complete(42)  # completed once
    assert future.result() == 41
    assert not future.cancel()


def test_py_class_wraps_the_value_as_pyflink_wraps_a_java_one():
    inner: concurrent.futures.Future = concurrent.futures.Future()
    inner.set_result("7")
    assert CompletableFuture(inner, py_class=int).result() == 7


def test_a_failed_future_gives_its_exception_and_raises_it_from_result():
    future = CompletableFuture()
    assert future.exception() is None  # pending: no exception, without waiting
    error = ValueError("broken")
    assert future.complete_exceptionally(error)
    assert future.done()
    assert future.exception() is error
    with pytest.raises(ValueError, match="broken"):
        future.result()


def test_a_pending_future_can_be_cancelled_once():
    future = CompletableFuture()
    assert not future.done()
    assert future.cancel()
    assert future.cancelled() and future.done()
    assert future.exception() is None
    assert not future.complete(1)
    with pytest.raises(concurrent.futures.CancelledError):
        future.result()


def test_result_waits_for_another_thread_to_complete_the_future():
    future = CompletableFuture()
    timer = threading.Timer(0.05, future.complete, args=("late",))
    timer.start()
    try:
        assert future.result() == "late"
    finally:
        timer.join()
    assert str(future) == "CompletableFuture[completed]"


@pytest.mark.parametrize("cls,error", [(JavaObjectWrapper, GraphBuildError),
                                       (InputFormat, UnsupportedConnectorError),
                                       (BulkWriterFactory, UnsupportedConnectorError)])
def test_the_java_object_wrappers_refuse_get_java_object(cls, error):
    with pytest.raises(error, match=rf"{cls.__name__}\.get_java_object\(\): there is no Java"):
        cls(object()).get_java_object()


def test_the_java_watermark_assigner_wrapper_is_refused_naming_what_to_use():
    with pytest.raises(GraphBuildError, match="AssignerWithPeriodicWatermarksWrapper.*"
                                              "WatermarkStrategy"):
        AssignerWithPeriodicWatermarksWrapper(object())


@pytest.mark.parametrize("cls", [ResultTypeQueryable, StreamTransformer, SupportsPreprocessing])
def test_the_interfaces_are_abstract(cls):
    with pytest.raises(TypeError, match="abstract"):
        cls()
