"""What the BATCH and STREAMING translators share: dispatch by node and source kind, and the
node kinds both translate the same way (``steps.py`` holds the code both call)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from ..operators.modes import RuntimeMode
from ..plan import graph
from ..plan.graph import KeyByNode, PartitionNode, SideOutputNode, SourceNode, Transformation
from ..runtime.encoding import Encoding
from .steps import by_kind, by_source_kind, input_stream, preferred_encoding, side_output
from .stream import Stream

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame

    from ..runtime.passes import Combiner, KeyOut
    from ..state_store.typeinfo import TypeInformation

__all__ = ["TranslatorBase", "kind_table"]


class TranslatorBase:
    """The base of :class:`~.batch.translator.BatchTranslator` and
    :class:`~.streaming.translator.StreamingTranslator`; each sets :attr:`mode` and the two
    tables."""

    #: the runtime mode the translator runs a job in
    mode: ClassVar[RuntimeMode]
    #: node class -> the translator's method for it (a kind not listed is refused)
    _BY_KIND: ClassVar[dict[type, Callable[[Any, Any], Stream]]]
    #: source kind -> the translator's method for it (a kind not listed is refused)
    _SOURCES: ClassVar[dict[str, Callable[[Any, SourceNode], Stream]]]
    #: the job's parallelism, number of key groups, and the configuration its operators are
    #: opened with (``steps.operator_config``)
    parallelism: int
    max_parallelism: int
    op_config: dict[str, Any]

    #: node id -> its stream, once translated
    _streams: dict[int, Stream]
    #: node id -> the side-output tags read from it
    _tags: dict[int, frozenset[str]]
    #: node id -> the nodes reading it
    consumers: dict[int, list[Transformation]]

    def translate(self, node: Transformation) -> Stream:
        """``node``'s stream, translated once; a stream read by several consumers, or with
        side outputs, is kept in the translator's way (``_kept``).

        Args:
            node: a node of the job graph.

        Returns:
            Its stream.
        """
        cached = self._streams.get(node.id)
        if cached is not None:
            return cached
        stream = self._kept(self._translate(node), node, self._tags.get(node.id) or frozenset())
        self._streams[node.id] = stream
        return stream

    def _kept(self, stream: Stream, node: Transformation, tags: frozenset[str]) -> Stream:
        """``stream`` as the translator keeps it for ``node``'s consumers (materialized where
        several read it or ``tags`` are read from it)."""
        raise NotImplementedError

    def materialize(self, stream: Stream, enc: Encoding, key_out: Optional[KeyOut] = None,
                    combiner: Optional[Combiner] = None, tags: frozenset[str] = frozenset(),
                    name: str = "", force: bool = False) -> DataFrame:
        """``stream``'s records as ``enc`` rows (each mode's way: ``steps.StreamTranslator``).

        Args:
            stream: the stream.
            enc: the encoding to write.
            key_out: the key selector whose ``_k``/``_kg`` columns to add (None: none).
            combiner: a pre-aggregation to run per partition (None: none).
            tags: the side-output tags to keep.
            name: the stage's name.
            force: run the pass even where none is needed.

        Returns:
            The rows.
        """
        raise NotImplementedError

    def _translate(self, node: Transformation) -> Stream:
        """``node`` translated by the method of its kind (:attr:`_BY_KIND`)."""
        return by_kind(self._BY_KIND, self, node, self.mode)

    def _source(self, node: SourceNode) -> Stream:
        return by_source_kind(self._SOURCES, self, node, self.mode)

    def _key_by(self, node: KeyByNode) -> Stream:
        # A KeyedStream used as a plain DataStream (e.g. keyed_stream.map(...)).
        return self.input_stream(node.inputs[0])

    def _side_output(self, node: SideOutputNode) -> Stream:
        return side_output(self, node)

    def _partitioning(self, node: PartitionNode) -> Stream:
        from .physical import translate_partitioning  # rebalance, shuffle, ...: physical.py

        return translate_partitioning(self, node)

    def input_stream(self, parent: Transformation) -> Stream:
        """``parent``'s main output (steps.py).

        Args:
            parent: a node of the job graph.

        Returns:
            Its main output's stream.
        """
        return input_stream(self, parent)

    def preferred_encoding(self, type_info: Optional[TypeInformation]) -> Encoding:
        """Typed columns when Spark can hold ``type_info``, else pickled (steps.py).

        Args:
            type_info: a stream's declared type (None: undeclared).

        Returns:
            The encoding its records travel in.
        """
        return preferred_encoding(type_info)

    #: the node kinds both translators translate with the methods above (each translator's
    #: :attr:`_BY_KIND` starts with these)
    SHARED_KINDS: ClassVar[dict[type, Callable[[Any, Any], Stream]]] = {
        SourceNode: _source,
        KeyByNode: _key_by,
        SideOutputNode: _side_output,
        PartitionNode: _partitioning,
    }

#: the node kinds each translator translates in its mode's way, by the name of its method
MODE_KINDS: dict[type, str] = {
    graph.ChainNode: "_chain",
    graph.KeyedNode: "_keyed",
    graph.CoKeyedNode: "_co_keyed",
    graph.BroadcastNode: "_broadcast",
    graph.CoChainNode: "_co_chain",
    graph.UnionNode: "_union",
    graph.FullPartitionNode: "_full_partition",
}


def kind_table(methods: Mapping[str, Any]) -> dict[type, Callable[[Any, Any], Stream]]:
    """A translator's :attr:`~TranslatorBase._BY_KIND`: the shared kinds, then each kind of
    :data:`MODE_KINDS` by the method of its name in ``methods`` (the class body's ``vars()``).

    Args:
        methods: the translator class's namespace.

    Returns:
        node class -> method.
    """
    return {**TranslatorBase.SHARED_KINDS, **{kind: methods[name] for kind, name in MODE_KINDS.items()}}
