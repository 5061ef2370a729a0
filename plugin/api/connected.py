"""The calls of ``ConnectedStreams`` (``a.connect(b)``) and ``BroadcastConnectedStream`` as base classes: the stream class in
``datastream`` gives them their input nodes and wraps the nodes they build into DataStreams.
"""

from __future__ import annotations

from typing import Any, Optional

from ..operators.broadcast_functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from ..operators.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
)
from ..plan.graph import BroadcastNode, CoChainNode, CoKeyedNode, Transformation
from ..state_store.exceptions import GraphBuildError
from ..state_store.typeinfo import TypeInformation
from .arguments import check_output_type, function_name, opens

__all__ = ["ConnectedCalls", "BroadcastConnectedCalls"]


class _TwoInputCalls:
    """What the stream class gives both kinds of connected streams."""

    def _input_nodes(self) -> list[Transformation]:
        """The graph nodes of both inputs (given by the stream class)."""
        raise NotImplementedError

    def _derive(self, node: Transformation) -> Any:
        """The DataStream of ``node`` (given by the stream class)."""
        raise NotImplementedError


class ConnectedCalls(_TwoInputCalls):
    """``key_by``, ``process``, ``map`` and ``flat_map`` of two connected streams."""

    first: Any
    second: Any

    def _connect(self, first: Any, second: Any) -> Any:
        """The ConnectedStreams of ``first`` and ``second`` (given by the stream class)."""
        raise NotImplementedError

    def _is_keyed(self) -> bool:
        """Whether both inputs are keyed (given by the stream class)."""
        raise NotImplementedError

    def key_by(self, key_selector1: Any, key_selector2: Any,
               key_type: Optional[TypeInformation] = None) -> Any:
        """Key both inputs (keyed co-processing: ``KeyedCoProcessFunction``).

        Args:
            key_selector1: The first input's key selector.
            key_selector2: The second input's key selector.
            key_type: The key's ``TypeInformation`` for both, or None.

        Returns:
            The connected keyed streams.

        Raises:
            GraphBuildError: A selector or ``key_type`` is invalid (as ``DataStream.key_by``).
        """
        return self._connect(self.first.key_by(key_selector1, key_type),
                             self.second.key_by(key_selector2, key_type))

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> Any:
        """Run a ``KeyedCoProcessFunction`` (keyed inputs) or a ``CoProcessFunction`` (keyed
        inputs run it keyed, as PyFlink does: its state and timers are the key's).

        Args:
            func: The co-process function.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``func`` is neither, a KeyedCoProcessFunction gets non-keyed
                inputs, or ``output_type`` is not a ``TypeInformation``.
        """
        name = function_name(func, "CoProcess")
        out_t = check_output_type(output_type, "process")
        if isinstance(func, KeyedCoProcessFunction):
            if not self._is_keyed():
                raise GraphBuildError(
                    f"operator '{name}': a KeyedCoProcessFunction needs keyed inputs; "
                    "call connect(...).key_by(key1, key2) first"
                )
            keyed_node = CoKeyedNode(name=name, inputs=self._input_nodes(),
                                     output_type=out_t, function=func)
            return self._derive(keyed_node)
        if isinstance(func, CoProcessFunction):
            if self._is_keyed():  # as PyFlink: keyed inputs run a keyed co-process operator,
                # so the function's state is the key's and its context's timers work
                return self._derive(CoKeyedNode(name=name, inputs=self._input_nodes(),
                                                output_type=out_t, function=func))
            node = CoChainNode(name=name, inputs=self._input_nodes(),
                               output_type=out_t, stage="co_process", function=func)
            return self._derive(node)
        raise GraphBuildError(
            f"operator '{name}': ConnectedStreams.process needs a KeyedCoProcessFunction or "
            f"CoProcessFunction, got {func!r}"
        )

    def map(self, func: CoMapFunction, output_type: Optional[TypeInformation] = None) -> Any:
        """Map each input with its own method of a ``CoMapFunction`` (``map1``/``map2``).

        Args:
            func: The ``CoMapFunction``.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``func`` is not a CoMapFunction, or ``output_type`` is not a
                ``TypeInformation``.
        """
        if not isinstance(func, CoMapFunction):
            raise GraphBuildError(f"ConnectedStreams.map needs a CoMapFunction, got {func!r}")
        return self._co_function(func, function_name(func, "CoMap"),
                                 check_output_type(output_type, "map"), "co_map")

    def flat_map(self, func: CoFlatMapFunction,
                 output_type: Optional[TypeInformation] = None) -> Any:
        """Flat-map each input with its own method of a ``CoFlatMapFunction``.

        Args:
            func: The ``CoFlatMapFunction``.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``func`` is not a CoFlatMapFunction, or ``output_type`` is not a
                ``TypeInformation``.
        """
        if not isinstance(func, CoFlatMapFunction):
            raise GraphBuildError(f"ConnectedStreams.flat_map needs a CoFlatMapFunction, got {func!r}")
        return self._co_function(func, function_name(func, "CoFlatMap"),
                                 check_output_type(output_type, "flat_map"), "co_flat_map")

    # After key_by(k1, k2) a co-map or co-flat-map function object runs keyed, as in Flink:
    # the runtime context its open() receives reads the current key's state (PyFlink wraps
    # it into a KeyedCoProcessFunction). As after DataStream.key_by, only a function with its
    # own open() can reach that context; every other one stays a stateless two-input step.
    def _co_function(self, func: Any, name: str, output_type: Optional[TypeInformation],
                     stage: str) -> Any:
        if self._is_keyed() and opens(func):
            return self._derive(CoKeyedNode(name=name, inputs=self._input_nodes(),
                                             output_type=output_type, function=func))
        return self._derive(CoChainNode(name=name, inputs=self._input_nodes(),
                                        output_type=output_type, stage=stage, function=func))


class BroadcastConnectedCalls(_TwoInputCalls):
    """``process`` of a stream connected with a BroadcastStream."""

    broadcast_stream: Any

    def _is_keyed(self) -> bool:
        """Whether the non-broadcast input is keyed (given by the stream class)."""
        raise NotImplementedError

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> Any:
        """Run a KeyedBroadcastProcessFunction (keyed stream) or a BroadcastProcessFunction
        (non-keyed stream) over both inputs.

        Args:
            func: The broadcast process function.
            output_type: The records' ``TypeInformation``; None sends them pickled.

        Returns:
            The output stream.

        Raises:
            GraphBuildError: ``func`` is not the function class the stream's keying needs, or
                ``output_type`` is not a ``TypeInformation``.
        """
        keyed = self._is_keyed()
        name = function_name(func, "BroadcastProcess")
        expected = KeyedBroadcastProcessFunction if keyed else BroadcastProcessFunction
        if not isinstance(func, expected):
            other = "" if keyed else "; a KeyedBroadcastProcessFunction needs key_by(...) first"
            raise GraphBuildError(
                f"operator '{name}': process() on a {'keyed' if keyed else 'non-keyed'} stream "
                f"connected with a broadcast stream needs a {expected.__name__}, got "
                f"{type(func).__name__} {func!r:.80}{other}")
        node = BroadcastNode(name=name, inputs=self._input_nodes(), output_type=check_output_type(output_type,
                                                                               "process"),
                             function=func,
                             descriptors=self.broadcast_stream.broadcast_state_descriptors,
                             keyed=keyed)
        return self._derive(node)
