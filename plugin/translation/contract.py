"""The translator contract: what the API (``api/``) uses of a translator of either mode.

``BatchTranslator`` (``batch/translator.py``) and ``StreamingTranslator``
(``streaming/translator.py``) both
implement :class:`Translator`; the environment and the job client reach a translator only
through it. The methods after ``release`` serve ``env.execute_async`` (``api/job_client.py``):
a STREAMING job whose queries keep running; a BATCH translator runs no queries and refuses
them with :class:`~pyspark_datastream.operators.exceptions.JobExecutionError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Protocol

from ..plan.config import RuntimeMode
from ..plan.graph import SinkNode, Transformation
from ..results import CloseableIterator
from ..state_store.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["Translator"]


class Translator(Protocol):
    """One job's translation and run, as the API drives it."""

    @property
    def mode(self) -> RuntimeMode:
        """The mode this translator runs its job in."""
        ...

    @property
    def storage(self) -> Storage:
        """The job's storage (its ``s3.*`` keys over the session's; spark_io/storage_conf.py)."""
        ...

    @property
    def progress(self) -> list[dict[str, Any]]:
        """The job's progress rows so far (BATCH: one per stage, filled when the job ends;
        STREAMING: one per micro-batch). The translator's own list: read it, do not change it."""
        ...

    def to_dataframe(self, node: Transformation) -> DataFrame:
        """The DataFrame of ``node``'s records, which the caller runs."""
        ...

    def collect(self, node: Transformation, one_off: bool = False) -> CloseableIterator:
        """Run the job ending in ``node`` and iterate its records; ``one_off``: the job is
        unnamed and keeps nothing (STREAMING: on a temporary checkpoint)."""
        ...

    def run_sinks(self, sinks: list[SinkNode], savepoint_path: Optional[str] = None
                  ) -> dict[str, int]:
        """Run ``sinks`` to their end (writing a savepoint at ``savepoint_path``); the rows
        each sink received, by sink name."""
        ...

    def release(self) -> None:
        """The job has ended: remove what it kept only for its run (a temporary checkpoint)."""
        ...

    # -- jobs whose queries keep running (env.execute_async) -------------------------------
    def plan_sinks(self, sinks: list[SinkNode]) -> None:
        """Check, before anything runs, that ``sinks`` can run (a checkpoint root when they
        are durable)."""
        ...

    def runs_detached(self) -> bool:
        """True when the job's queries keep running until stopped (a processing-time trigger
        over unbounded sources): :meth:`start_sinks` starts them."""
        ...

    def trigger_kind(self) -> Optional[str]:
        """The kind of the job's streaming trigger (available-now, once, processing-time);
        None in BATCH."""
        ...

    def start_sinks(self, sinks: list[SinkNode]) -> list[tuple[str, Any]]:
        """Start every query of ``sinks`` (planned by :meth:`plan_sinks`) without waiting; the
        ``(query name, StreamingQuery)`` pairs, upstream first. A failure stops the queries
        already started and releases the job."""
        ...

    def log_query_progress(self, name: str, query: StreamingQuery) -> None:
        """Record and log the micro-batches of query ``name`` (one of :meth:`start_sinks`)."""
        ...

    def query_holds_state(self, name: str) -> bool:
        """True when query ``name`` runs a keyed operator."""
        ...

    def query_checkpoint(self, name: str) -> str:
        """The Spark checkpoint folder of query ``name``."""
        ...

    def query_staging(self, name: str) -> str:
        """The folder where query ``name`` stages its output for a downstream query (it exists
        only for a query that does)."""
        ...

    def write_savepoint_at(self, path: str, batch_ids: dict[str, int],
                           progress: list[dict[str, Any]]) -> int:
        """Write a savepoint at ``path`` of every keyed operator's state as of the committed
        micro-batch ``batch_ids[query]`` of its query, the final watermark read from
        ``progress`` (the progress rows of those batches, not the translator's); its
        version."""
        ...
