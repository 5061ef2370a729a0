"""One query writing several sinks: how the one-query mapping fans a job out.

A Spark query writes one sink, and a DataFrame read twice is planned twice (a keyed stage
in it would run twice, each copy with its own state). So a job with several sinks, or whose
keyed stage's outputs are read apart, runs as one query whose plan ends at the job's
*exits* (``carried.query_exits``): each exit's records travel in a struct column of their
own through one union. The query's ``foreachBatch`` function caches the micro-batch, runs
each sink's *tail* (the stateless operators from its exit down to it) over its exit's rows,
and hands the result to the sink's writer, which tells its sink apart by the sink's name:
each sink stays exactly-once on its own (docs/spark-mapping.md). Over Spark Connect the
function, with the translator it closes over, is pickled and runs in the server's Python
process, whose session the pickled session and DataFrames resolve to: the tails are built
there, and the sinks' counters stay there.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING, Any, Protocol

from ...plan.graph import SinkNode, Transformation, is_keyed
from ...runtime.carry import side_tag
from ...runtime.encoding import PICKLED, TAG, TS, VALUE
from ...spark_io.columns import col
from ..query_ids import is_connect
from ..rows import leading_rows
from ..sinks import sink_kind
from ..steps import materialize_shared, side_output_tags
from ..stream import Stream, StreamingSinkOwner
from .carried import Carry, carry_tag, query_exits
from .inband import chained
from .one_query import QUERY
from .queries import QueryOwner, run_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["run_fanned_out", "EXIT", "FanningTranslator"]

#: the column naming the exit a row of the fanned-out query belongs to
EXIT = "_exit"


class FanningTranslator(StreamingSinkOwner, QueryOwner, Protocol):
    """What fanning a job out reads of (and records on) the STREAMING translator."""

    nodes: list[Transformation]
    consumers: dict[int, list[Transformation]]
    #: carrying keyed stage id -> how it carries (``carried.with_carriers``)
    carriers: dict[int, Carry]
    #: passes built so far (a tail's operators are named by the pass that runs them)
    passes: int

    def register_query(self, name: str, root: Transformation) -> None: ...

    def run_prerequisites(self) -> None: ...

    def fork(self, streams: dict[int, Stream], first_pass: int) -> FanningTranslator: ...


def run_fanned_out(t: FanningTranslator, sinks: list[SinkNode]) -> dict[str, int]:
    """Run ``sinks`` as the job's one query (:data:`one_query.QUERY`).

    Args:
        t: the STREAMING translator (one-query mapping, ``fanned_out``).
        sinks: the job's sinks.

    Returns:
        Records written per sink name (empty over Spark Connect: the counters live in the
        server process that ran the query's function; no count rather than a wrong one).

    Raises:
        GraphBuildError: a sink's operators cannot be translated (before anything runs).
    """
    # in graph order, so that the query holds its keyed stages in the same order whichever
    # sinks the program adds or removes (Spark keeps a stage's state under its place)
    exits = sorted(query_exits(t.nodes), key=lambda n: n.id)
    # a carried exit's records leave the query through the keyed stage carrying them
    by_id = {n.id: n for n in t.nodes}
    carried = {c.carried: by_id[b] for b, c in t.carriers.items()}
    exits = [e for e in exits if e.id not in carried]
    streams = [_exit_stream(t, e) for e in exits]
    df = _union(streams)
    first_pass = t.passes  # each micro-batch's tails take the same pass identities
    names = [f"sink-{sink.uid or i}" for i, sink in enumerate(sinks)]
    # built once over the query's own exits: a sink that cannot be translated fails now
    view = _tails(t, exits, streams, [s.df for s in streams], first_pass, carried)
    writers = [sink_kind(sink).streaming(view, sink, view.input_stream(sink.inputs[0]), name,
                                         QUERY)
               for sink, name in zip(sinks, names)]
    t.passes = view.passes

    def each(batch_df: Any, batch_id: int) -> None:
        batch_df.persist()
        try:
            # every partition runs once, whatever the writers skip: Spark commits the state
            # of a micro-batch whose stateful operators ran in every partition
            batch_df.count()
            parts = [batch_df.filter(batch_df[EXIT] == i).select(f"_e{i}.*")
                     for i in range(len(exits))]
            batch = _tails(t, exits, streams, parts, first_pass, carried)
            for sink, name, (_, write, _) in zip(sinks, names, writers):
                stream = batch.input_stream(sink.inputs[0])
                sink_df = sink_kind(sink).streaming(batch, sink, stream, name, QUERY)[0]
                write(sink_df, batch_id)
        finally:
            batch_df.unpersist()

    t.register_query(QUERY, next((e for e in exits if is_keyed(e) or chained(e)),
                                         exits[0]))
    t.run_prerequisites()
    run_query(t, QUERY, df.writeStream.foreachBatch(each))
    if is_connect(t.spark):
        return {}
    return {sink.name: total[0] for sink, (_, _, total) in zip(sinks, writers)}


def _exit_stream(t: FanningTranslator, node: Transformation) -> Stream:
    """``node``'s stream with its pending work applied (its side outputs kept, tagged)."""
    stream = t.translate(node)
    return materialize_shared(t, stream, node, frozenset()) if stream.pending else stream


def _union(streams: list[Stream]) -> DataFrame:
    """One DataFrame of every exit's rows: ``_exit`` and one struct column per exit."""
    from pyspark.sql import functions as F

    schemas = [s.df.schema for s in streams]
    parts = []
    for i, s in enumerate(streams):
        packed = [F.struct(*[F.col(f"`{c}`") for c in s.df.columns]) if j == i
                  else F.lit(None).cast(schemas[j]) for j in range(len(streams))]
        parts.append(s.df.select(F.lit(i).alias(EXIT),
                                 *[c.alias(f"_e{j}") for j, c in enumerate(packed)]))
    return reduce(lambda a, b: a.union(b), parts)


def _tails(t: FanningTranslator, exits: list[Transformation], streams: list[Stream],
           dfs: list[Any], first_pass: int, carried: dict[int, Transformation]
           ) -> FanningTranslator:
    """A fork of translator ``t`` whose exits are ``dfs``: translating a sink's input on it
    builds the sink's tail over them. Its passes are numbered from ``first_pass`` on, so
    the tails' operators keep their identity (and open state) from batch to batch. A
    ``carried`` exit (its id -> the keyed stage carrying it) reads the carrier's rows of
    its tag, as a side output is read, and its side outputs' rows under their own tags."""
    from pyspark.sql import functions as F

    own = {e.id: replace(s, df=df) for e, s, df in zip(exits, streams, dfs)}
    sided = side_output_tags(t.nodes) if carried else {}
    for node_id, carrier in carried.items():
        node = next(n for n in t.nodes if n.id == node_id)
        while carrier.id in carried:  # carried on: its records leave through the last one
            carrier = carried[carrier.id]
        tag, side = carry_tag(node_id), side_tag(carry_tag(node_id), "")
        rows = own[carrier.id].df
        chain = leading_rows(node.output_type, node.name)
        if not sided.get(node_id):
            own[node_id] = Stream(rows.filter(col(TAG) == tag).select(TS, VALUE), PICKLED,
                                  node.output_type, name=node.name, chain=chain)
            continue
        # its records (no tag) and its side outputs (their own tags), as its stream was
        theirs = rows.filter((col(TAG) == tag) | col(TAG).startswith(side))
        untagged = F.when(col(TAG) == tag, F.lit(None)).otherwise(
            F.expr(f"substring({TAG}, {len(side) + 1})"))
        own[node_id] = Stream(theirs.select(TS, VALUE, untagged.alias(TAG)), PICKLED,
                              node.output_type, name=node.name, chain=chain, tagged=True)
    return t.fork(own, first_pass)
