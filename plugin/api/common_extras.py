"""PyFlink's small base classes and helpers of ``pyflink.common`` and ``pyflink.datastream``
that programs meet in signatures and subclasses: ``CompletableFuture`` (a future over a
``concurrent.futures.Future``), the Java-object wrappers (``JavaObjectWrapper``,
``InputFormat``, ``BulkWriterFactory``, whose ``get_java_object`` is refused: there is no Flink
JVM here), the interfaces ``ResultTypeQueryable``, ``StreamTransformer`` and
``SupportsPreprocessing``, and the refused wrapper of a Java watermark assigner.
"""

from __future__ import annotations

import concurrent.futures
from abc import ABC, abstractmethod
from typing import Any, Callable, Optional

from ..state_store.exceptions import GraphBuildError
from .exceptions import UnsupportedConnectorError
from .no_jvm import no_java_object

__all__ = [
    "AssignerWithPeriodicWatermarksWrapper",
    "BulkWriterFactory",
    "CompletableFuture",
    "InputFormat",
    "JavaObjectWrapper",
    "ResultTypeQueryable",
    "StreamTransformer",
    "SupportsPreprocessing",
]


class CompletableFuture:
    """A future whose value a job client or a program completes, as PyFlink's
    ``CompletableFuture``: ``result()`` waits for the value, ``exception()`` gives the failure
    of a completed future without waiting.

    Args:
        future: The ``concurrent.futures.Future`` it completes with (a new, pending one if
            omitted; complete it with :meth:`complete` or :meth:`complete_exceptionally`).
        py_class: Applied to the value by ``result()``, as PyFlink wraps a Java value in a
            Python class (``None``: the value itself).
    """

    def __init__(self, future: Optional[concurrent.futures.Future[Any]] = None,
                 py_class: Optional[Callable[[Any], Any]] = None) -> None:
        self._future: concurrent.futures.Future[Any] = (
            future if future is not None else concurrent.futures.Future())
        self._py_class = py_class

    @classmethod
    def completed(cls, value: Any) -> CompletableFuture:
        """A future completed with ``value``.

        Args:
            value: The value ``result()`` returns.

        Returns:
            The completed future.
        """
        future = cls()
        future.complete(value)
        return future

    def complete(self, value: Any) -> bool:
        """Complete the future with ``value`` unless it is already completed.

        Args:
            value: The value.

        Returns:
            True if this call completed it.
        """
        if self._future.done():
            return False
        self._future.set_result(value)
        return True

    def complete_exceptionally(self, error: BaseException) -> bool:
        """Complete the future with the failure ``error`` unless it is already completed.

        Args:
            error: The exception ``result()`` raises and ``exception()`` returns.

        Returns:
            True if this call completed it.
        """
        if self._future.done():
            return False
        self._future.set_exception(error)
        return True

    def cancel(self) -> bool:
        """Cancel the future if it has not completed.

        Returns:
            True if it is now cancelled.
        """
        self._future.cancel()
        return self._future.cancelled()

    def cancelled(self) -> bool:
        """Whether the future was cancelled before it completed.

        Returns:
            True if cancelled.
        """
        return self._future.cancelled()

    def done(self) -> bool:
        """Whether the future completed in any way: with a value, a failure or cancelled.

        Returns:
            True if completed.
        """
        return self._future.done()

    def result(self) -> Any:
        """Wait for the future and return its value (``py_class`` applied, if given).

        Returns:
            The value.

        Raises:
            BaseException: The failure it completed with.
            concurrent.futures.CancelledError: It was cancelled.
        """
        value = self._future.result()
        return value if self._py_class is None else self._py_class(value)

    def exception(self) -> Optional[BaseException]:
        """The failure the future completed with, without waiting.

        Returns:
            The exception, or None if it has not completed, completed with a value or was
            cancelled.
        """
        if not self._future.done() or self._future.cancelled():
            return None
        return self._future.exception()

    def __str__(self) -> str:
        state = ("cancelled" if self.cancelled() else "failed" if self.exception() is not None
                 else "completed" if self.done() else "pending")
        return f"CompletableFuture[{state}]"


class JavaObjectWrapper:
    """PyFlink's base of the Python wrappers of Java objects. There is no Flink JVM here, so
    :meth:`get_java_object` raises :class:`GraphBuildError`.

    Args:
        j_object: What PyFlink would wrap (kept, never used).
    """

    def __init__(self, j_object: Any = None) -> None:
        self._j_object = j_object

    get_java_object = no_java_object("JavaObjectWrapper.get_java_object")


class InputFormat(JavaObjectWrapper):
    """PyFlink's wrapper of a Java ``InputFormat``, what ``env.create_input`` reads (refused
    there: read with Spark and pass the DataFrame to ``env.from_dataframe``).

    Args:
        j_input_format: What PyFlink would wrap (kept, never used).
    """

    def __init__(self, j_input_format: Any = None) -> None:
        super().__init__(j_input_format)

    get_java_object = no_java_object("InputFormat.get_java_object", UnsupportedConnectorError)


class BulkWriterFactory(JavaObjectWrapper):
    """PyFlink's wrapper of a Java ``BulkWriter.Factory``, what ``FileSink.for_bulk_format``
    writes with (refused there: write with Spark's writer or ``sink_to_delta``).

    Args:
        j_bulk_writer_factory: What PyFlink would wrap (kept, never used).
    """

    def __init__(self, j_bulk_writer_factory: Any = None) -> None:
        super().__init__(j_bulk_writer_factory)

    get_java_object = no_java_object("BulkWriterFactory.get_java_object",
                                     UnsupportedConnectorError)


class ResultTypeQueryable(ABC):
    """PyFlink's interface of an object that says the type of what it produces."""

    @abstractmethod
    def get_produced_type(self) -> Any:
        """The ``TypeInformation`` of what this object produces.

        Returns:
            The type information.
        """


class StreamTransformer(ABC):
    """PyFlink's interface of a transformation a sink applies to the stream before writing it
    (see :class:`SupportsPreprocessing`)."""

    @abstractmethod
    def apply(self, ds: Any) -> Any:
        """Transform the stream.

        Args:
            ds: The DataStream to write.

        Returns:
            The DataStream the sink writes instead.
        """


class SupportsPreprocessing(ABC):
    """PyFlink's interface of a sink that transforms the stream before writing it."""

    @abstractmethod
    def get_transformer(self) -> Optional[StreamTransformer]:
        """The transformation to apply before writing, or None.

        Returns:
            The transformer, or None.
        """


class AssignerWithPeriodicWatermarksWrapper:
    """PyFlink's wrapper of a Java ``AssignerWithPeriodicWatermarks``: refused when
    constructed (there is no Flink JVM here), with :class:`GraphBuildError`; assign timestamps
    and watermarks with a ``WatermarkStrategy`` and ``assign_timestamps_and_watermarks``.

    Args:
        j_assigner_with_periodic_watermarks: What PyFlink would wrap.

    Raises:
        GraphBuildError: Always.
    """

    def __init__(self, j_assigner_with_periodic_watermarks: Any = None) -> None:
        raise GraphBuildError(
            "AssignerWithPeriodicWatermarksWrapper(...): it wraps a Java watermark assigner and "
            "there is no Flink JVM here; use a WatermarkStrategy (for_bounded_out_of_orderness, "
            "for_monotonous_timestamps, with_timestamp_assigner) with "
            "ds.assign_timestamps_and_watermarks")
