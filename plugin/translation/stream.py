"""A translated stream and what the shared steps need from a translator.

Kept apart from the two translators (``batch/``, ``streaming/``) so the steps translators
call (``steps.py`` for both modes, ``batch/partition.py`` for BATCH) depend on this small
contract, not on a translator module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

from ..plan.graph import KeyByNode, Transformation
from ..runtime.emit_order import ordered_first
from ..runtime.encoding import Encoding
from ..runtime.passes import KeyedSpec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from ..runtime.passes import Combiner, KeyOut
    from ..state_store.storage import Storage
    from ..state_store.typeinfo import TypeInformation

__all__ = ["Stream", "StreamTranslator", "KeyedInputTranslator", "SinkOwner",
           "StreamingSinkOwner", "arrow_pass"]


@dataclass(frozen=True)
class Stream:
    """A translated stream: ``df`` in ``enc``, plus fused work not yet applied."""

    df: DataFrame
    enc: Encoding
    type_info: Any = None
    keyed: Optional[KeyedSpec] = None
    co_stage: Optional[tuple[str, Any, str]] = None
    sided: bool = False
    chain: tuple[tuple[Any, ...], ...] = field(default_factory=tuple)  # (kind, function[, name])
    name: str = ""
    tagged: bool = False  # df carries a _tag column (side outputs present)
    stage: Optional[int] = None  # progress stage of the pending work (None: none / not tracked)
    #: df is a physical partitioning's ``parallelism`` partitions (physical.py)
    partitioned: bool = False
    #: ``(df, records)`` when ``df`` is ``records`` sorted by a keyed stage's order pass
    #: (emit_order.py): a Python pass over this very ``df`` may read ``records`` and sort
    #: them itself (``emit_order.ordered_first``); a ``df`` replaced since is not that ``df``
    ordered_from: Optional[tuple[DataFrame, DataFrame]] = None

    @property
    def pending(self) -> bool:
        return self.keyed is not None or self.co_stage is not None or bool(self.chain)


def arrow_pass(stream: Stream,
               function: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
               ddl: Union[str, StructType]) -> DataFrame:
    """``stream.df.mapInArrow(function, ddl)``; where ``df`` is a keyed stage's records sorted
    by its order pass (``ordered_from``), the pass reads them unsorted and sorts them first,
    in its own Python worker (``emit_order.ordered_first``).

    Args:
        stream: the stream the pass reads.
        function: the ``mapInArrow`` function.
        ddl: its output schema (DDL or a StructType).

    Returns:
        The pass's DataFrame.
    """
    if stream.ordered_from is not None and stream.ordered_from[0] is stream.df:
        return stream.ordered_from[1].mapInArrow(ordered_first(function), ddl)
    return stream.df.mapInArrow(function, ddl)


class StreamTranslator(Protocol):
    """What the steps shared by the BATCH and the STREAMING translator use of either."""

    parallelism: int
    max_parallelism: int
    op_config: dict[str, Any]

    def translate(self, node: Transformation) -> Stream: ...

    def input_stream(self, parent: Transformation) -> Stream: ...

    def preferred_encoding(self, type_info: Optional[TypeInformation]) -> Encoding: ...

    def materialize(self, stream: Stream, enc: Encoding, key_out: Optional[KeyOut] = None,
                    combiner: Optional[Combiner] = None, tags: frozenset[str] = frozenset(),
                    name: str = "", force: bool = False) -> DataFrame: ...


class KeyedInputTranslator(StreamTranslator, Protocol):
    """A translator that also keys a stream in one pass (the full-partition translation)."""

    def keyed_input(self, key_node: KeyByNode, consumer: Transformation,
                    combiner: Optional[Combiner] = None, force_pickled: bool = False
                    ) -> tuple[DataFrame, Encoding]: ...


class SinkOwner(StreamTranslator, Protocol):
    """What a sink's writer uses of the translator running the job (``sinks.py``)."""

    spark: SparkSession
    storage: Storage


class StreamingSinkOwner(SinkOwner, Protocol):
    """A STREAMING translator, to a sink's writer: also where each query keeps its checkpoint."""

    def query_checkpoint(self, name: str) -> str: ...
