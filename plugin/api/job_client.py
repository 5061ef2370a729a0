"""``JobClient``: a job started by ``env.execute_async(job_name)`` (PyFlink names).

A STREAMING job over unbounded sources with a ``processing-time=<interval>`` trigger keeps
running: ``trigger_savepoint`` and ``stop_with_savepoint`` take savepoints of it. Every other
job (available-now / once triggers, bounded sources) runs as ``execute`` runs it, on a
background thread; a BATCH job has run to its end when ``execute_async`` returns. What each
case does: the "Savepoints of a running job" section of the Savepoints user guide.

As in PyFlink, every query and action returns a :class:`CompletableFuture`
(``client.get_job_status().result()``): ``get_job_execution_result()``'s completes when the job
ends; the others are complete when returned (an action's refusal is raised by the call).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import enum
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Optional

from ..operators.exceptions import JobExecutionError
from ..plan.config import RuntimeMode
from ..plan.graph import SinkNode
from ..results import JobID
from ..spark_io.versions import require_feature
from ..state_store.exceptions import SavepointError
from ..state_store.storage import Storage
from .common_extras import CompletableFuture

if TYPE_CHECKING:
    from ..results import JobExecutionResult
    from ..translation.contract import Translator

__all__ = ["JobClient", "JobStatus"]

log = logging.getLogger("pyspark_datastream")

#: how long a stop waits for a running micro-batch to finish before interrupting it
_STOP_GRACE_S = 30.0


class JobStatus(str, enum.Enum):
    """Flink's job status names (a ``str``: ``status == "RUNNING"`` works). A job here is
    RUNNING, FINISHED, CANCELED or FAILED; Flink's other states are listed for programs
    that compare against them."""

    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    def is_globally_terminal_state(self) -> bool:
        """Whether the job ended for good (Flink: FAILED, CANCELED, FINISHED).

        Returns:
            The flag.
        """
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        """Whether the job ended here (Flink: the globally terminal ones and SUSPENDED).

        Returns:
            The flag.
        """
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED


def _last_batch_id(storage: Storage, folder: str) -> Optional[int]:
    """The highest batch id among the log files in ``folder`` (``N`` or ``N.compact``);
    None when there are none."""
    heads = [n.split(".")[0] for n in storage.list_names(folder)]
    ids = [int(h) for h in heads if h.isdigit()]
    return max(ids) if ids else None


def _last_committed_batch(storage: Storage, checkpoint: str) -> Optional[int]:
    """The highest batch id in ``<checkpoint>/commits`` (None when none committed yet)."""
    return _last_batch_id(storage, Storage.join(checkpoint, "commits"))


def _last_sink_batch(storage: Storage, data: str) -> Optional[int]:
    """The highest batch id in the file sink log ``<data>/_spark_metadata`` (None if none)."""
    return _last_batch_id(storage, Storage.join(data, "_spark_metadata"))


class JobClient:
    """Handle on a job started by :meth:`StreamExecutionEnvironment.execute_async`, which
    returns it; not constructed directly.
    """

    def __init__(self, job_name: str, mode: RuntimeMode, translator: Optional[Translator] = None,
                 queries: Optional[list[tuple[str, Any]]] = None,
                 result: Optional[JobExecutionResult] = None,
                 thread: Optional[threading.Thread] = None) -> None:
        self._job_id = result.job_id if result is not None else uuid.uuid4().hex
        self.job_name = job_name
        self._runtime_mode = mode
        #: "BATCH" or "STREAMING", as :class:`JobExecutionResult` names it
        self.mode = self._runtime_mode.value
        self._translator = translator
        self._queries: list[tuple[str, Any]] = list(queries or [])
        self._result = result
        self._thread = thread
        self._thread_outcome: dict[str, Any] = {}
        self._error: Optional[BaseException] = None
        self._status = JobStatus.FINISHED if result is not None else JobStatus.RUNNING
        self._start = time.time()
        self._lock = threading.Lock()

    # -- construction (called by the environment) --------------------------------------------
    @classmethod
    def finished(cls, result: JobExecutionResult) -> JobClient:
        """The client of a job that already ran to its end (BATCH).

        Args:
            result: The job's result.

        Returns:
            A FINISHED client.
        """
        return cls(result.job_name, RuntimeMode.parse(result.mode), result=result)

    @classmethod
    def start(cls, job_name: str, translator: Translator, sinks: list[SinkNode]) -> JobClient:
        """Start the STREAMING job of ``sinks`` on its ``translator`` (see the module doc
        for what runs how).

        Args:
            job_name: The job's name.
            translator: The STREAMING translator the job was planned on.
            sinks: The job's sink nodes.

        Returns:
            The client of the started job.
        """
        translator.plan_sinks(sinks)  # CheckpointRootError / CheckpointMismatchError: nothing started
        if translator.runs_detached():
            started = translator.start_sinks(sinks)  # a failure stops and releases them
            log.info("job %r started: queries %s", job_name, [n for n, _ in started])
            return cls(job_name, RuntimeMode.STREAMING, translator, queries=started)
        client = cls(job_name, RuntimeMode.STREAMING, translator)

        def run() -> None:
            try:
                client._thread_outcome["counts"] = translator.run_sinks(list(sinks))
            except BaseException as exc:  # noqa: BLE001 - reported by the client
                client._thread_outcome["error"] = exc
            finally:
                translator.release()  # a temporary checkpoint ends with the job

        # the thread runs in this context: the job's storage scope (environment.py) with it
        context = contextvars.copy_context()
        client._thread = threading.Thread(target=context.run, args=(run,),
                                          name=f"job-{job_name}", daemon=True)
        client._thread.start()
        return client

    @property
    def _job(self) -> Translator:
        """The translator of a started job (a finished BATCH client has none)."""
        if self._translator is None:
            raise JobExecutionError(f"job {self.job_name!r} ran to its end: nothing runs")
        return self._translator

    # -- PyFlink API ---------------------------------------------------------------------------
    def get_job_id(self) -> JobID:
        """A random hex id of this run (Spark has no job id for a set of streaming queries).

        Returns:
            The id, a :class:`JobID` (a 32-digit hex ``str``).
        """
        return JobID(self._job_id)

    def get_accumulators(self) -> CompletableFuture:
        """The job's accumulators: none, as for every PyFlink job whose functions are
        Python (PyFlink's ``RuntimeContext`` has no accumulators).

        Returns:
            A completed future of an empty dict.
        """
        return CompletableFuture.completed({})

    def get_queries(self) -> dict[str, Any]:
        """The Spark ``StreamingQuery`` of each query name (processing-time jobs only).

        Returns:
            Query name to ``StreamingQuery``.
        """
        return dict(self._queries)

    def get_job_status(self) -> CompletableFuture:
        """RUNNING, FINISHED, CANCELED or FAILED (a failed query makes the job FAILED).

        Returns:
            A completed future of the ``JobStatus`` (``.result()``), as PyFlink's.
        """
        return CompletableFuture.completed(self._current_status())

    def _current_status(self) -> JobStatus:
        with self._lock:
            self._refresh()
            return self._status

    def _refresh(self) -> None:
        if self._status is not JobStatus.RUNNING:
            return
        if self._thread is not None:
            if not self._thread.is_alive():
                self._finish_thread()
            return
        for name, q in self._queries:
            exc = q.exception()
            if exc is not None:
                self._fail(name, exc)
                return
        if self._queries and not any(q.isActive for _, q in self._queries):
            self._finish_queries()

    def _fail(self, name: str, exc: Any) -> None:
        from ..translation.failures import job_failure

        for _, q in self._queries:
            if q.isActive:
                q.stop()
        self._status = JobStatus.FAILED
        self._error = job_failure(exc, f"STREAMING query {name!r} of job {self.job_name!r}")
        self._job.release()  # a temporary checkpoint ends with the job

    def _finish_thread(self) -> None:
        from ..results import JobExecutionResult

        error = self._thread_outcome.get("error")
        if error is not None:
            self._status = JobStatus.FAILED
            self._error = error
            return
        self._status = JobStatus.FINISHED
        self._result = JobExecutionResult(self.job_name, self.mode,
                                          int((time.time() - self._start) * 1000),
                                          dict(self._thread_outcome.get("counts") or {}),
                                          job_id=self._job_id)

    def _finish_queries(self, status: JobStatus = JobStatus.FINISHED) -> None:
        from ..results import JobExecutionResult

        self._log_progress()
        self._job.release()  # a temporary checkpoint ends with the job
        self._status = status
        # per-sink row counts are not tracked for queries that ran detached
        self._result = JobExecutionResult(self.job_name, self.mode,
                                          int((time.time() - self._start) * 1000), {},
                                          job_id=self._job_id)

    def _log_progress(self) -> None:
        for name, q in self._queries:
            self._job.log_query_progress(name, q)

    def wait(self, timeout: Optional[float] = None) -> JobStatus:
        """Wait until the job ended or ``timeout`` seconds passed; its status then.

        Args:
            timeout: Seconds to wait at most; None waits for the end.

        Returns:
            The ``JobStatus`` at return.
        """
        deadline = None if timeout is None else time.time() + timeout
        while self._current_status() is JobStatus.RUNNING:
            left = None if deadline is None else deadline - time.time()
            if left is not None and left <= 0:
                break
            step = 1.0 if left is None else min(1.0, left)
            if self._thread is not None:
                self._thread.join(step)
            elif self._queries:
                for _, q in self._queries:
                    if q.isActive:
                        try:
                            q.awaitTermination(max(1, int(step)))
                        except Exception:  # noqa: BLE001 - reported by get_job_status
                            pass
                        break
            else:
                time.sleep(step)
        return self._current_status()

    def get_job_execution_result(self) -> CompletableFuture:
        """The job's result, when it ends (PyFlink's future: ``.result()`` waits).

        Returns:
            A future of the ``JobExecutionResult``; its ``result()`` raises the job's failure
            as JobExecutionError (also when it was canceled).
        """
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def wait_for_the_end() -> None:
            try:
                future.set_result(self._execution_result())
            except BaseException as exc:  # noqa: BLE001 - handed to result()
                future.set_exception(exc)

        threading.Thread(target=wait_for_the_end, daemon=True,
                         name=f"job-result-{self.job_name}").start()
        return CompletableFuture(future)

    def _execution_result(self) -> JobExecutionResult:
        self.wait()
        with self._lock:
            if self._error is not None:
                if isinstance(self._error, JobExecutionError):
                    raise self._error
                raise JobExecutionError(
                    f"job {self.job_name!r} failed: {self._error}") from self._error
            if self._status is JobStatus.CANCELED:
                raise JobExecutionError(f"job {self.job_name!r} was canceled")
            assert self._result is not None
            return self._result

    def cancel(self) -> CompletableFuture:
        """Stop every query now, without a savepoint (state stays in the checkpoints).

        Returns:
            A completed future (of None), as PyFlink's.

        Raises:
            JobExecutionError: The job finishes on its own (available-now, once or bounded).
        """
        with self._lock:
            self._refresh()
            if self._status is not JobStatus.RUNNING:
                return CompletableFuture.completed(None)
            if self._thread is not None:
                raise JobExecutionError(
                    f"job {self.job_name!r} runs with trigger {self._job.trigger_kind()!r} "
                    "and finishes on its own; cancel() only stops processing-time jobs")
            for _, q in self._queries:
                if q.isActive:
                    q.stop()
            self._finish_queries(JobStatus.CANCELED)
        return CompletableFuture.completed(None)

    def trigger_savepoint(self, savepoint_directory: Optional[str] = None, *,
                          path: Optional[str] = None) -> CompletableFuture:
        """Write a savepoint of every keyed operator's state as of the last committed
        micro-batch of its query while the job keeps running; returns its path.

        Args:
            savepoint_directory: Where to write the savepoint (PyFlink's name; required here,
                as there is no cluster-wide default savepoint directory).
            path: The same, by this package's earlier keyword (give one of the two).

        Returns:
            A completed future of the savepoint's path, as PyFlink's.

        Raises:
            SavepointError: No path, or the job ran in BATCH or is not a running
                processing-time job, or it runs keyed operators in several queries (use
                ``stop_with_savepoint``).
            UnsupportedSparkFeatureError: Spark 3.5, which cannot read the state back.
        """
        if savepoint_directory is not None and path is not None:
            raise SavepointError(
                f"trigger_savepoint: give savepoint_directory ({savepoint_directory!r:.80}) or "
                f"path ({path!r:.80}), not both")
        path = savepoint_directory if path is None else path
        if not isinstance(path, str) or not path:
            raise SavepointError(
                f"trigger_savepoint: savepoint_directory must be a non-empty path, got "
                f"{path!r:.80}")
        with self._lock:
            self._check_savepoint("trigger_savepoint")
            self._refresh()
            if self._status is not JobStatus.RUNNING:
                raise SavepointError(
                    f"trigger_savepoint({path!r}): job {self.job_name!r} is {self._status.value}, "
                    "not RUNNING")
            keyed = [n for n, _ in self._queries if self._holds_state(n)]
            if len(keyed) > 1:
                raise SavepointError(
                    f"trigger_savepoint({path!r}): job {self.job_name!r} runs its keyed "
                    f"operators in several queries {keyed}; a running multi-stage job has "
                    "records in flight between them, use stop_with_savepoint")
            self._write(path)
            return CompletableFuture.completed(path)

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: Optional[str] = None) -> CompletableFuture:
        """Stop the queries (upstream first, each after its current micro-batch) and write
        a savepoint of their last committed state (PyFlink's argument order).

        Args:
            advance_to_end_of_event_time: Flink's drain (end of input, every timer fires):
                True is refused, a running Spark file stream cannot be signalled end of input.
            savepoint_directory: where the savepoint is written.

        Returns:
            A completed future of ``savepoint_directory``, as PyFlink's.

        Raises:
            SavepointError: a wrong-typed argument (e.g. the path first), True for
                ``advance_to_end_of_event_time``, a job not RUNNING, or no consistent cut.
            UnsupportedSparkFeatureError: Spark 3.5, which cannot read the state back.
        """
        if not isinstance(advance_to_end_of_event_time, bool):
            raise SavepointError(
                f"stop_with_savepoint(advance_to_end_of_event_time, savepoint_directory): "
                f"advance_to_end_of_event_time must be a bool, got "
                f"{advance_to_end_of_event_time!r:.80} (the savepoint path is the second "
                f"argument, as in PyFlink)")
        if not isinstance(savepoint_directory, str) or not savepoint_directory:
            raise SavepointError(
                f"stop_with_savepoint: savepoint_directory must be a non-empty path, got "
                f"{savepoint_directory!r:.80}")
        path, drain = savepoint_directory, advance_to_end_of_event_time
        with self._lock:
            self._check_savepoint("stop_with_savepoint")
            if drain:
                raise SavepointError(
                    f"stop_with_savepoint(True, {path!r}) is not supported: a running Spark "
                    "file stream cannot be signalled end of input; pass False, or "
                    "run the bounded job with env.execute(name, savepoint_path=...)")
            self._refresh()
            if self._status is not JobStatus.RUNNING:
                raise SavepointError(
                    f"stop_with_savepoint({path!r}): job {self.job_name!r} is "
                    f"{self._status.value}, not RUNNING")
            for i, (name, q) in enumerate(self._queries):
                if i > 0 and q.isActive:
                    q.processAllAvailable()  # what the stopped upstream queries wrote
                self._stop_after_batch(q)
                exc = q.exception()
                if exc is not None:
                    self._fail(name, exc)
                    raise SavepointError(
                        f"stop_with_savepoint({path!r}): no savepoint written") from self._error
                ahead = self._staged_ahead(name)
                if ahead is not None:
                    self._abort_torn_cut(path, name, *ahead)
            self._write(path)
            self._finish_queries(JobStatus.FINISHED)
            return CompletableFuture.completed(path)

    # -- helpers -------------------------------------------------------------------------------
    def _check_savepoint(self, what: str) -> None:
        if self._runtime_mode is RuntimeMode.BATCH:
            raise SavepointError(
                f"{what}: job {self.job_name!r} ran in BATCH mode, which cannot take a savepoint "
                "of a job (as in Flink); write one at the end of the input with "
                "env.execute(name, savepoint_path=...)")
        if self._thread is not None:
            raise SavepointError(
                f"{what}: job {self.job_name!r} runs with trigger "
                f"{self._job.trigger_kind()!r} or bounded sources and finishes on its own; "
                "write its savepoint with env.execute(name, savepoint_path=...), or run it "
                "with execution.streaming.trigger=processing-time=<interval> over unbounded "
                "sources")
        # before any query stops: a line without Spark's state data source cannot write it;
        # the session's (server's, over Connect) version, not the client library's
        spark = getattr(self._translator, "spark", None)
        require_feature("streaming_savepoint", getattr(spark, "version", None))

    def _holds_state(self, name: str) -> bool:
        return self._job.query_holds_state(name)

    def _staged_ahead(self, name: str) -> Optional[tuple[int, Optional[int]]]:
        """``(staged, committed)`` batch ids when query ``name`` stages its output for a
        downstream query (a file sink under ``<root>/<name>/data``) and its sink log holds
        a batch its commit log does not (a stop interrupted that batch between the two
        writes); None when its staged output and its committed state agree."""
        storage = self._job.storage
        data = self._job.query_staging(name)
        if not storage.exists(data):
            return None
        staged = _last_sink_batch(storage, data)
        committed = _last_committed_batch(storage, self._job.query_checkpoint(name))
        if staged is not None and (committed is None or staged > committed):
            return staged, committed
        return None

    def _abort_torn_cut(self, path: str, name: str, staged: int,
                        committed: Optional[int]) -> None:
        """Stop everything and raise: the stages no longer share one point of the input."""
        for _, q in self._queries:
            if q.isActive:
                q.stop()
        self._status = JobStatus.FAILED
        self._error = SavepointError(
            f"stop_with_savepoint({path!r}): query {name!r} was stopped inside micro-batch "
            f"{staged}: its output for the next stage is staged but its state is committed "
            f"only up to batch {committed}, so the stages have no consistent cut; no "
            "savepoint was written. The job is stopped; restarting it from its checkpoint "
            "directory re-runs that batch (exactly once), then stop it again")
        self._job.release()  # a temporary checkpoint ends with the job
        raise self._error

    @staticmethod
    def _stop_after_batch(query: Any) -> None:
        deadline = time.time() + _STOP_GRACE_S
        while query.isActive and query.status.get("isTriggerActive") and time.time() < deadline:
            time.sleep(0.1)
        if query.isActive:
            query.stop()

    def _write(self, path: str) -> int:
        """Write the savepoint under the job's storage (its ``s3.*`` keys, storage_conf.py)."""
        from ..spark_io.storage_conf import job_scope

        with job_scope(self._job.storage):  # called from the user's thread
            return self._write_in_scope(path)

    def _write_in_scope(self, path: str) -> int:
        from ..translation.streaming.queries import as_dict, progress_row

        t = self._job
        batch_ids: dict[str, int] = {}
        progress: list[dict[str, Any]] = []
        for name, q in self._queries:
            bid = _last_committed_batch(t.storage, t.query_checkpoint(name))
            if bid is None:
                continue
            batch_ids[name] = bid
            for p in q.recentProgress:
                d = as_dict(p)
                if d.get("batchId") is not None and int(d["batchId"]) <= bid:
                    progress.append(progress_row(name, d))
        # the final watermark as of the pinned batches, not of the batches run since
        version = t.write_savepoint_at(path, batch_ids, progress)
        log.info("job %r: savepoint %s (version %d) at batches %s", self.job_name, path,
                 version, batch_ids)
        return version
