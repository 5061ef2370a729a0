"""User function base classes used by reducing and aggregating state (PyFlink names).

The plugin re-exports them; they live here because ``ReducingStateDescriptor``
and ``AggregatingStateDescriptor`` need them and the state layer may not import
the plugin.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

__all__ = ["Function", "ReduceFunction", "AggregateFunction", "Forwarding", "per_record_call"]

IN = TypeVar("IN")
ACC = TypeVar("ACC")
OUT = TypeVar("OUT")


class Function:
    """Base of user functions: optional ``open``/``close`` lifecycle hooks."""

    def open(self, runtime_context: Any) -> None:
        """Called once before the first record; default does nothing.

        Args:
            runtime_context: The ``RuntimeContext``: state, task info, metrics.
        """

    def close(self) -> None:
        """Called once after the last record; default does nothing."""


class ReduceFunction(Function, ABC, Generic[IN]):
    """Combines two values of the same type into one (``reduce(value1, value2)``)."""

    @abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN:
        """Combine ``value1`` (the accumulated value) with ``value2`` (the new one).

        Args:
            value1: The accumulated value.
            value2: The new value.

        Returns:
            The combined value.
        """


class AggregateFunction(Function, ABC, Generic[IN, ACC, OUT]):
    """Incremental aggregation through an accumulator (PyFlink's ``AggregateFunction``)."""

    @abstractmethod
    def create_accumulator(self) -> ACC:
        """A new, empty accumulator.

        Returns:
            The accumulator.
        """

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC:
        """Add ``value`` to ``accumulator`` and return the (possibly new) accumulator.

        Args:
            value: The input value.
            accumulator: The current accumulator.

        Returns:
            The updated accumulator.
        """

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT:
        """Result of the aggregation for ``accumulator``.

        Args:
            accumulator: The accumulator.

        Returns:
            The result.
        """

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        """Merge two accumulators (needed for merging windows); default: unsupported.

        Args:
            acc_a: One accumulator.
            acc_b: The other.

        Returns:
            The merged accumulator.

        Raises:
            NotImplementedError: Not overridden (merging windows need it).
        """
        raise NotImplementedError(
            f"{type(self).__name__}.merge is not implemented; it is required to merge "
            "accumulators (session windows)"
        )


class Forwarding(ABC):
    """A function object whose per-record methods only forward to other callables (a
    wrapped plain callable, an adapter): :func:`per_record_call` gives a hot loop those
    callables instead, so it makes one Python call less per record."""

    @abstractmethod
    def forwarded(self, method: str) -> Callable[..., Any] | None:
        """What a method of this object forwards to.

        Args:
            method: the method's name.

        Returns:
            The callable it forwards to, or None when it does not forward.
        """


C = TypeVar("C", bound=Callable[..., Any])


def per_record_call(method: C) -> C:
    """The callable a hot loop binds for ``method``, a bound per-record method of a function
    object (``fn.map``, ``selector.get_key``, ...): the plain callable an ``as_*`` helper
    wrapped, or what an adapter forwards the method to; else ``method`` itself.

    Args:
        method: the bound method, as the loop would call it.

    Returns:
        A callable taking the same arguments and returning the same result.
    """
    owner = getattr(method, "__self__", None)
    if isinstance(owner, Forwarding):
        direct = owner.forwarded(getattr(method, "__name__", ""))
        if direct is not None:
            return cast(C, direct)
    return method
