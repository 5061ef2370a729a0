"""The sink kinds: one entry of :data:`SINK_KINDS` per ``SinkNode.kind``.

An entry says what the sink needs before a job runs (a checkpoint root, Spark's Delta
writer) and how each mode runs it: BATCH plans it before any action and writes it with one
action; STREAMING writes every micro-batch through a ``foreachBatch`` function. Adding a sink
kind is one entry here; the translators and the environment look the kind up with
:func:`sink_kind` and never compare a sink's kind with a name.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ..plan.graph import SinkNode, Transformation
from ..runtime.encoding import make_decoder, output_check
from ..spark_io.dataframes import to_arrow
from ..state_store.exceptions import GraphBuildError
from .steps import collectable, collectable_arrow, typed_df
from .stream import SinkOwner, Stream, StreamingSinkOwner, StreamTranslator

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SinkKind", "SINK_KINDS", "sink_kind", "arrow_collectable"]

#: BATCH: (translator, sink) -> (the stage's detail, the action writing it; its row count)
BatchRunner = Callable[[SinkOwner, SinkNode], tuple[str, Callable[[], int]]]
#: STREAMING: (translator, sink, its input stream, its name, the job's one query writing it
#: in the one-query mapping, else None) -> (the DataFrame the query runs, its foreachBatch
#: function, the one-element counter that function adds to)
StreamingRunner = Callable[[StreamingSinkOwner, SinkNode, Stream, str, Optional[str]],
                           tuple["DataFrame", Callable[[Any, int], None], list[int]]]


@dataclass(frozen=True)
class SinkKind:
    """One kind of sink: what it needs before a job runs and how each mode runs it.

    Attributes:
        title: its BATCH progress stage's title (``"print sink"``).
        durable: its output outlives the run, so a STREAMING job writing it keeps its
            queries' checkpoints under the checkpoint root (a print-only job may run on a
            temporary one).
        writes_delta: it writes a Delta table: the session's Delta writer is checked before
            the job runs.
        batch: plans the sink in a BATCH job (before any action) and returns the stage's
            detail and the action that writes it.
        streaming: builds the sink's STREAMING query: its DataFrame, ``foreachBatch``
            function and row counter (given the job's one query's name in the one-query
            mapping: the function then finds the query by it and tells its sink apart by the
            sink's name).
    """

    title: str
    durable: bool
    writes_delta: bool
    batch: BatchRunner
    streaming: StreamingRunner


def arrow_collectable(t: StreamTranslator, node: Transformation) -> tuple[DataFrame, Callable[[Any], list[Any]]]:
    """The DataFrame to collect for ``node`` over Arrow and the decoder of its batches.

    Args:
        t: the translator (``input_stream``, ``materialize``).
        node: the node whose main output is collected.

    Returns:
        The DataFrame and a function from one of its Arrow record batches to the records
        (checked against the node's output_type when they travel pickled).
    """
    stream = t.input_stream(node)  # its main output: never its side outputs
    df, enc = collectable_arrow(t, stream, node)
    decode, check = make_decoder(enc), output_check(node.output_type, enc, node.name)
    if check is None:
        return df, decode
    return df, lambda batch: check(decode(batch))


def _checkpoint(t: StreamingSinkOwner, name: str, query: Optional[str]) -> str:
    """The checkpoint of the query writing sink ``name``: its own, or ``query``'s."""
    return str(t.query_checkpoint(query or name))


def _line(prefix: Any, record: Any) -> str:
    return f"{prefix}> {record}" if prefix else str(record)


def _print_batch(t: SinkOwner, sink: SinkNode) -> tuple[str, Callable[[], int]]:
    df, decode = arrow_collectable(t, sink.inputs[0])
    prefix = sink.options.get("identifier")

    def write() -> int:
        n = 0
        for batch in to_arrow(df).to_batches():
            for record in decode(batch):
                print(_line(prefix, record))
                n += 1
        return n

    return "stdout", write


def _print_streaming(t: StreamingSinkOwner, sink: SinkNode, stream: Stream, name: str,
                     query: Optional[str] = None
                     ) -> tuple[DataFrame, Callable[[Any, int], None], list[int]]:
    df, decode = collectable(t, stream, sink.inputs[0])
    prefix = sink.options.get("identifier")
    total = [0]

    def show(batch_df: Any, batch_id: int) -> None:
        for record in decode(batch_df.collect()):
            print(_line(prefix, record))
            total[0] += 1

    return df, show, total


def _delta_batch(t: SinkOwner, sink: SinkNode) -> tuple[str, Callable[[], int]]:
    source = sink.inputs[0]
    df = typed_df(t, t.input_stream(source), source)
    path, mode = sink.options["path"], sink.options["mode"]

    def write() -> int:
        from ..spark_io.delta_io import write_delta

        return write_delta(t.spark, df, path, mode)

    return f"Delta table {path}, mode {mode}", write


def _delta_streaming(t: StreamingSinkOwner, sink: SinkNode, stream: Stream, name: str,
                     query: Optional[str] = None
                     ) -> tuple[DataFrame, Callable[[Any, int], None], list[int]]:
    from .delta_sink import micro_batch_writer

    df = typed_df(t, stream, sink.inputs[0])
    total = [0]
    # exactly-once: each micro-batch is one idempotent Delta commit (delta_sink.py)
    write = micro_batch_writer(sink.options["path"], sink.options["mode"],
                               _checkpoint(t, name, query), total, t.storage,
                               name if query else "")
    return df, write, total


def _kafka_batch(t: SinkOwner, sink: SinkNode) -> tuple[str, Callable[[], int]]:
    source = sink.inputs[0]
    df = typed_df(t, t.input_stream(source), source)

    exactly_once = _check_kafka_sink(sink)

    def write() -> int:
        from .kafka import write_kafka, write_kafka_transactions

        if exactly_once:  # the whole job is one batch, under an id of its own
            return write_kafka_transactions(df, sink, uuid.uuid4().hex, 0)
        return write_kafka(df, sink)

    return f"Kafka topic {sink.options['topic']}", write


def _kafka_streaming(t: StreamingSinkOwner, sink: SinkNode, stream: Stream, name: str,
                     query: Optional[str] = None
                     ) -> tuple[DataFrame, Callable[[Any, int], None], list[int]]:
    from .kafka import kafka_batch_writer

    _check_kafka_sink(sink)
    total = [0]
    write = kafka_batch_writer(sink, total, _checkpoint(t, name, query), name if query else "")
    return typed_df(t, stream, sink.inputs[0]), write, total


def _check_kafka_sink(sink: SinkNode) -> bool:
    """Whether ``sink`` is EXACTLY_ONCE, its producer settings checked if so."""
    from .kafka import exactly_once

    if not exactly_once(sink):
        return False
    from ..runtime.kafka_transactions import check_producer_config

    check_producer_config(dict(sink.options), f"sink {sink.describe()}")
    return True


def _file_batch(t: SinkOwner, sink: SinkNode) -> tuple[str, Callable[[], int]]:
    from .file_sink import file_job_writer

    source = sink.inputs[0]
    df = typed_df(t, t.input_stream(source), source)
    return f"files under {sink.options['base_path']}", file_job_writer(df, sink, t.storage)


def _file_streaming(t: StreamingSinkOwner, sink: SinkNode, stream: Stream, name: str,
                    query: Optional[str] = None
                    ) -> tuple[DataFrame, Callable[[Any, int], None], list[int]]:
    from .file_sink import file_batch_writer

    total = [0]
    write = file_batch_writer(sink, total, t.storage, _checkpoint(t, name, query),
                              name if query else "")
    return typed_df(t, stream, sink.inputs[0]), write, total


#: ``SinkNode.kind`` -> what that kind of sink needs and how each mode runs it
SINK_KINDS: dict[str, SinkKind] = {
    "print": SinkKind(title="print sink", durable=False, writes_delta=False,
                      batch=_print_batch, streaming=_print_streaming),
    "delta": SinkKind(title="Delta sink", durable=True, writes_delta=True,
                      batch=_delta_batch, streaming=_delta_streaming),
    "kafka": SinkKind(title="Kafka sink", durable=True, writes_delta=False,
                      batch=_kafka_batch, streaming=_kafka_streaming),
    "files": SinkKind(title="file sink", durable=True, writes_delta=False,
                     batch=_file_batch, streaming=_file_streaming),
}


def sink_kind(sink: SinkNode) -> SinkKind:
    """The entry of :data:`SINK_KINDS` for ``sink``'s kind.

    Args:
        sink: a sink of the job's graph.

    Returns:
        Its kind's entry.

    Raises:
        GraphBuildError: no sink kind has that name (the error names the sink and its kind).

    Example:
        >>> sink_kind(SinkNode(name="Print", inputs=[], kind="print")).durable
        False
    """
    found = SINK_KINDS.get(sink.kind)
    if found is None:
        raise GraphBuildError(
            f"sink {sink.name!r} has kind {sink.kind!r}, which is no sink kind "
            f"(the sink kinds: {', '.join(sorted(SINK_KINDS))})")
    return found
