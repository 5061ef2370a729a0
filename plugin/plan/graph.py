"""The job graph: transformations recorded by the DataStream API.

Nothing runs while a program is defined; every node validates its arguments
when it is created so definition errors surface at graph-build time, naming the
operator. Translators (``translation/``) turn the graph into Spark plans.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from ..state_store.exceptions import GraphBuildError
from .config import RuntimeMode

__all__ = [
    "Transformation",
    "SourceNode",
    "ChainNode",
    "KeyByNode",
    "KeyedNode",
    "CoKeyedNode",
    "CoChainNode",
    "BroadcastNode",
    "UnionNode",
    "SideOutputNode",
    "SinkNode",
    "FullPartitionNode",
    "PartitionNode",
    "WatermarkSpec",
    "PARTITION_STRATEGIES",
    "check_forward_parallelism",
    "reachable",
    "consumers",
    "upstream",
    "is_keyed",
]

_ids = itertools.count(1)


@dataclass(eq=False)
class Transformation:
    """A node of the job graph."""

    name: str
    inputs: list[Transformation]
    output_type: Any = None
    id: int = field(default_factory=lambda: next(_ids))
    uid: Optional[str] = None
    parallelism: Optional[int] = None
    #: ``set_description(...)``: shown nowhere by Spark, kept for the program's readers
    description: Optional[str] = None

    def describe(self) -> str:
        """How errors name this operator."""
        return f"operator '{self.name}' (id {self.id}{', uid ' + repr(self.uid) if self.uid else ''})"

    def default_uid(self) -> str:
        return f"{self.name}-{self.id}"

    def effective_uid(self) -> str:
        return self.uid or self.default_uid()


@dataclass(eq=False)
class SourceNode(Transformation):
    """A source: ``kind`` names its translators' ``_SOURCES`` entry ('collection',
    'dataframe', 'kafka'). ``bounded``: its input ends; ``batch_runs_unbounded``: a BATCH job
    may still run it unbounded, reading what is there once (a streaming DataFrame)."""

    kind: str = "collection"
    payload: Any = None
    bounded: bool = True
    batch_runs_unbounded: bool = False


class WatermarkSpec(Protocol):
    """What the plan and the translators read of a watermark strategy
    (``api/watermarks.py``'s ``WatermarkStrategy``)."""

    #: ``"bounded"``, ``"monotonous"`` or ``"none"`` (no watermarks)
    kind: str
    #: the bounded out-of-orderness (0 for monotonous timestamps), None without watermarks
    out_of_orderness_ms: Optional[int]


@dataclass(eq=False)
class ChainNode(Transformation):
    """A non-keyed one-input stage: map, flat_map, filter, process, timestamps."""

    stage: str = "map"
    function: Any = None
    watermark_strategy: Optional[WatermarkSpec] = None


@dataclass(eq=False)
class KeyByNode(Transformation):
    """Partitioning by key (``key_by``); carries the key selector and serializer."""

    key_selector: Any = None
    key_type: Any = None
    key_serializer: Any = None


@dataclass(eq=False)
class KeyedNode(Transformation):
    """A keyed one-input operator: ``op`` is 'process', 'reduce' or 'window'."""

    op: str = "process"
    function: Any = None


@dataclass(eq=False)
class CoKeyedNode(Transformation):
    """A keyed two-input operator (KeyedCoProcessFunction)."""

    function: Any = None


@dataclass(eq=False)
class CoChainNode(Transformation):
    """A non-keyed two-input stage (CoMapFunction / CoFlatMapFunction / CoProcessFunction)."""

    stage: str = "co_map"
    function: Any = None


@dataclass(eq=False)
class BroadcastNode(Transformation):
    """``stream.connect(ds.broadcast(descriptors...)).process(function)``: inputs are the
    other stream (a KeyByNode when ``keyed``) and the broadcast stream; ``function`` is the
    (Keyed)BroadcastProcessFunction, ``descriptors`` the declared MapStateDescriptors.
    A stateful stage in both variants (broadcast state is operator state)."""

    function: Any = None
    descriptors: tuple[Any, ...] = ()
    keyed: bool = True

    @property
    def key_node(self) -> Optional[KeyByNode]:
        """The keyed input when ``keyed``, else None.

        Raises:
            GraphBuildError: ``keyed`` and the other input is not a keyed stream.
        """
        if not self.keyed:
            return None
        main = self.inputs[0]
        if not isinstance(main, KeyByNode):
            raise GraphBuildError(f"{self.describe()}: a keyed broadcast connection reads a "
                                  f"keyed stream, not {main.describe()}")
        return main

    @property
    def key_serializer(self) -> Any:
        """The keyed input's key serializer; the non-keyed variant has no key (and no keyed
        state) and uses the default key serializer for its layout."""
        key_node = self.key_node
        if key_node is not None:
            return key_node.key_serializer
        from ..state_store.serializers import GenericKeySerializer

        return GenericKeySerializer.INSTANCE

    def operator_spec(self, restored: Any = None) -> Any:
        """The ``BroadcastSpec`` its operator runs (``restored``: broadcast state to start
        from, ``(meta infos, entries)``)."""
        from ..operators.broadcast import BroadcastSpec

        return BroadcastSpec(self.function, self.descriptors, self.keyed, restored)


@dataclass(eq=False)
class UnionNode(Transformation):
    pass


@dataclass(eq=False)
class SideOutputNode(Transformation):
    tag_id: str = ""


@dataclass(eq=False)
class SinkNode(Transformation):
    """A sink: ``kind`` names its entry of ``translation/sinks.py``'s ``SINK_KINDS``."""

    kind: str = "collect"
    options: dict[str, Any] = field(default_factory=dict)


# -- full-window partition processing (FLIP-380), see plugin/windows.py -----------------
@dataclass(eq=False)
class FullPartitionNode(Transformation):
    """``full_window_partition().<op>(...)``: ``partition_op`` is an operators.partition.PartitionOp;
    ``keyed`` when the input is a KeyByNode (one partition per key). BATCH only."""

    partition_op: Any = None
    keyed: bool = False


#: The physical partitionings of a :class:`PartitionNode`.
PARTITION_STRATEGIES = ("forward", "rebalance", "shuffle", "rescale", "broadcast", "custom")


@dataclass(eq=False)
class PartitionNode(Transformation):
    """A physical partitioning of a non-keyed stream (``rebalance()``, ``shuffle()``,
    ``rescale()``, ``broadcast()``, ``partition_custom(...)``, ``forward()``): which parallel
    instance of the next operator each record goes to. ``partitioner`` and ``key_selector``
    are set for ``custom`` only."""

    strategy: str = "forward"
    partitioner: Any = None
    key_selector: Any = None

    def __post_init__(self) -> None:
        if self.strategy not in PARTITION_STRATEGIES:
            raise GraphBuildError(f"{self.describe()}: unknown partitioning {self.strategy!r}, "
                                  f"expected one of {PARTITION_STRATEGIES}")


def check_forward_parallelism(nodes: list[Transformation], default: int) -> None:
    """Refuse a ``forward()`` between operators of different parallelism, as Flink does
    when it builds the job graph.

    Args:
        nodes: the job's nodes.
        default: the job's parallelism (of every node without its own).

    Raises:
        GraphBuildError: naming both operators and their parallelism.
    """
    readers = consumers(nodes)
    for node in nodes:
        if not (isinstance(node, PartitionNode) and node.strategy == "forward"):
            continue
        up = node.inputs[0]
        up_p = up.parallelism or default
        for down in readers.get(node.id, []):
            down_p = down.parallelism or default
            if down_p != up_p:
                raise GraphBuildError(
                    f"forward() does not allow a change of parallelism: upstream "
                    f"{up.describe()} has parallelism {up_p}, downstream {down.describe()} "
                    f"has parallelism {down_p}; use another partitioning, such as rebalance()")


def reachable(sinks: list[Transformation]) -> list[Transformation]:
    """Every node upstream of ``sinks`` (inclusive), inputs before consumers."""
    order: list[Transformation] = []
    seen: set[int] = set()

    def visit(node: Transformation) -> None:
        if node.id in seen:
            return
        seen.add(node.id)
        for parent in node.inputs:
            visit(parent)
        order.append(node)

    for s in sinks:
        visit(s)
    return order


def is_keyed(node: Transformation) -> bool:
    """True for a stateful operator: keyed state (one keyed input or two connected keyed
    inputs) or broadcast state (keyed or not)."""
    return isinstance(node, (KeyedNode, CoKeyedNode, BroadcastNode))


def upstream(node: Transformation, stop: Optional[Callable[[Transformation], bool]] = None,
             include_self: bool = False) -> Iterator[Transformation]:
    """Nodes above ``node``, nearest first, each once (``node`` itself first with
    ``include_self``). A node for which ``stop`` is true is yielded but not walked past
    (e.g. a keyed operator: what lies above it belongs to another stage)."""
    todo = deque([node] if include_self else node.inputs)
    seen: set[int] = set()
    while todo:
        n = todo.popleft()
        if n.id in seen:
            continue
        seen.add(n.id)
        yield n
        if stop is None or not stop(n):
            todo.extend(n.inputs)


def consumers(nodes: list[Transformation]) -> dict[int, list[Transformation]]:
    """Map node id -> the nodes that read it."""
    out: dict[int, list[Transformation]] = {n.id: [] for n in nodes}
    for n in nodes:
        for parent in n.inputs:
            out.setdefault(parent.id, []).append(n)
    return out


def check_uid(uid: Any) -> str:
    if not isinstance(uid, str) or not uid.strip():
        raise GraphBuildError(f"uid must be a non-empty string, got {uid!r}")
    return uid


def full_window_streaming_error(what: str) -> GraphBuildError:
    """The error for full-window processing in STREAMING mode."""
    return GraphBuildError(
        f"{what}: full-window processing (full_window_partition) needs BATCH execution "
        f"(execution.runtime-mode = BATCH): a partition's window ends only when the input "
        f"ends, which an unbounded STREAMING job never reaches"
    )


def check_full_window_mode(nodes: list[Any], mode: RuntimeMode) -> None:
    """Raise the STREAMING error when ``nodes`` hold full-window nodes and mode is not BATCH."""
    if mode is RuntimeMode.BATCH:
        return
    for node in nodes:
        if isinstance(node, FullPartitionNode):
            raise full_window_streaming_error(node.describe())
