"""Progress a user can follow: BATCH stage counts and times, heartbeats for long phases.

BATCH jobs run as a few Spark actions (one per sink, savepoint staging, the savepoint write);
every stage of a job (source, fused Python pass, sorted keyed operator, native aggregation,
sink, savepoint) runs inside one of them. Row counts are taken with
``DataFrame.observe`` (a :class:`pyspark.sql.Observation` per stage boundary): the counts are
aggregated while the action runs, with no extra Spark job and no second pass over the data,
and it works on Spark Connect (no SparkContext, accumulators or RDDs). Each stage is logged
at INFO once the action that ran it has finished, e.g.::

    BATCH job 'x' stage 3/4 sort+keyed process 'sessions' (shuffle into 2 partitions by key
    group, sorted by key, timestamp): 1,000 in -> 12 out; ran in sink 'out' (3.2 s)

and kept as a dict row (:meth:`BatchProgress.rows`, ``JobExecutionResult.get_progress()``).
Stages are pipelined inside an action, so a stage's time is the wall-clock time of the
action that ran it.

:class:`Heartbeat` logs "still ... N s elapsed" from a daemon thread while a long phase runs
(a Spark action, a savepoint write or commit); it never polls Spark.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..operators.metrics import merge
from ..plan.config import RuntimeMode

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "HEARTBEAT_SECONDS",
    "COUNT_KEYS",
    "METRICS_KEY",
    "Heartbeat",
    "Stage",
    "BatchProgress",
    "observe",
    "observed_metrics",
    "fmt_count",
]

log = logging.getLogger("pyspark_datastream")

#: Interval of :class:`Heartbeat` lines (seconds); a phase shorter than this logs none.
HEARTBEAT_SECONDS = 10.0

#: Count columns of a progress row (None when not measured for that stage).
COUNT_KEYS = ("rows_in", "rows_out", "side_rows_out", "entries_in", "entries_out",
              "key_groups_in_approx")

#: Observed by a Python pass's stage: its tasks' metrics records (JSON lines); a progress
#: row's ``metrics`` are the user metrics of the stage's operators, combined over subtasks
#: (``operators.metrics.merge``)
METRICS_KEY = "metrics"


def fmt_count(n: Optional[int]) -> str:
    """``1,234,567`` (or ``?`` when unknown)."""
    return "?" if n is None else f"{int(n):,}"


_active = threading.local()  # per thread: the stack of open heartbeats


class Heartbeat:
    """Context manager: while its block runs, log ``still <what>: N s elapsed`` every
    ``interval`` seconds from a daemon thread (stopped on exit, also on errors).

    Nested heartbeats of one thread share the outermost one's thread, which reports the
    innermost phase (one line per interval, naming the most precise phase)."""

    def __init__(self, what: str, interval: Optional[float] = None,
                 logger: logging.Logger = log) -> None:
        self.what = what
        self.interval = HEARTBEAT_SECONDS if interval is None else float(interval)
        self.logger = logger
        self.beats = 0
        self._start = 0.0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._stack: list[Heartbeat] = []

    @property
    def elapsed(self) -> float:
        """Seconds since the block started."""
        return time.monotonic() - self._start

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beats += 1
            current = self._stack[-1] if self._stack else self
            current.logger.info("still %s: %.0f s elapsed", current.what, current.elapsed)

    def __enter__(self) -> Heartbeat:
        self._start = time.monotonic()
        stack = getattr(_active, "stack", None)
        if stack is None:
            stack = _active.stack = []
        self._stack = stack
        owner = not stack
        stack.append(self)
        if owner and self.interval > 0:
            self._thread = threading.Thread(target=self._run, name="pyspark-datastream-heartbeat",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._stack and self._stack[-1] is self:
            self._stack.pop()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def observe(df: DataFrame, label: str, metrics: dict[str, Column]) -> tuple[DataFrame, Any]:
    """``df`` with the aggregate ``metrics`` observed under a unique name, and the Observation
    (None, and ``df`` unchanged, when Spark refuses the observation: progress never fails a job)."""
    from pyspark.sql import Observation

    if not metrics:
        return df, None
    name = f"pyspark_datastream {label} {uuid.uuid4().hex[:10]}"
    try:
        obs = Observation(name)
        return df.observe(obs, *[c.alias(k) for k, c in metrics.items()]), obs
    except Exception as exc:  # noqa: BLE001 - e.g. a streaming DataFrame: just no counts
        log.debug("progress: cannot observe %s: %s", label, exc)
        return df, None


def _observed(jo: Any) -> bool:
    """Whether the JVM Observation ``jo`` has its metrics (so ``get`` returns at once)."""
    try:
        future = jo.future()
    except Exception:  # noqa: BLE001 - Spark 3.5's Observation has no future(): its field
        field = jo.getClass().getDeclaredField("metrics")  # (a Scala Option) says it
        field.setAccessible(True)
        return bool(field.get(jo).isDefined())
    return bool(future.isCompleted())


def observed_metrics(obs: Any) -> Optional[dict[str, Any]]:
    """The metrics of ``obs`` if the first action over it has finished, else None. Never
    blocks (``Observation.get`` of classic PySpark waits for an action that may never come)."""
    if obs is None:
        return None
    jo = getattr(obs, "_jo", None)
    if jo is not None:  # classic: the JVM Observation's future completes when the action ends
        try:
            if not _observed(jo):
                return None
            got = obs.get
        except Exception:  # noqa: BLE001 - the action failed
            return None
        return dict(got) if got else None
    if hasattr(obs, "_result"):  # Spark Connect: filled from the action's response
        try:
            got = obs.get
        except Exception:  # noqa: BLE001
            return None
        return dict(got) if got else None
    return None


@dataclass
class Stage:
    """One stage of a BATCH job: what it is, its counts, and the action that ran it."""

    index: int
    kind: str  # source | pass | keyed | aggregate | sink | collect | savepoint
    label: str  # e.g. "sort+keyed process"
    names: list[str]
    detail: str = ""
    counts: dict[str, Optional[int]] = field(default_factory=dict)
    #: the user metrics of the stage's operators: {operator: {metric: value}}
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: observation group ("in" / "out") -> Observations (one per materialization)
    observations: dict[str, list[Any]] = field(default_factory=dict)
    completed: bool = False  # counts set explicitly (sinks, savepoints)
    action: Optional[str] = None
    duration_ms: Optional[int] = None
    done: bool = False
    logged: bool = False

    @property
    def name(self) -> str:
        quoted = " -> ".join(repr(n) for n in self.names)
        return f"{self.label} {quoted}" if quoted else self.label

    def resolve(self) -> bool:
        """Take the counts of finished observations; True once every group has some."""
        if self.completed:
            return True
        if not self.observations:
            return False
        ready = True
        for group in self.observations.values():
            got = None
            for obs in group:
                got = observed_metrics(obs)
                if got is not None:
                    break
            if got is None:
                ready = False
                continue
            for k, v in got.items():
                if k == METRICS_KEY:  # JSON lines (translation/batch/translator.py)
                    self.metrics = merge([json.loads(r) for r in str(v or "").split("\n") if r])
                else:
                    self.counts[k] = None if v is None else int(v)
        return ready


class BatchProgress:
    """Stages, actions and their log lines for one BATCH job (see module docstring)."""

    def __init__(self, job_name: str, mode: RuntimeMode = RuntimeMode.BATCH,
                 logger: logging.Logger = log, heartbeat_seconds: Optional[float] = None) -> None:
        self.job_name = job_name
        #: the mode's configuration string, as log lines and progress rows name it
        self.mode = mode.value
        self.logger = logger
        self.heartbeat_seconds = heartbeat_seconds
        self.stages: list[Stage] = []
        self.actions: list[tuple[str, int]] = []
        #: the progress rows, filled by :meth:`finish` (the same list object throughout)
        self.rows: list[dict[str, Any]] = []
        self._planned = False
        self._start = time.monotonic()
        self._finished = False

    # -- building --------------------------------------------------------------------
    def add_stage(self, kind: str, label: str, names: Optional[list[str]] = None,
                  detail: str = "") -> Stage:
        """Register a stage (numbered in registration order, i.e. graph order)."""
        stage = Stage(len(self.stages) + 1, kind, label, list(names or []), detail)
        self.stages.append(stage)
        return stage

    def stage(self, index: Optional[int]) -> Optional[Stage]:
        """The stage numbered ``index`` (None for None)."""
        return None if index is None else self.stages[index - 1]

    def observe(self, df: DataFrame, stage: Optional[Stage], group: str,
                metrics: dict[str, Column]) -> DataFrame:
        """``df`` observed for ``stage``'s ``group`` ("in"/"out") counts."""
        if stage is None:
            return df
        df, obs = observe(df, f"stage {stage.index} {group}", metrics)
        if obs is not None:
            stage.observations.setdefault(group, []).append(obs)
        return df

    def complete(self, stage: Optional[Stage], detail: Optional[str] = None,
                 **counts: Optional[int]) -> None:
        """Set counts known without observation (rows a sink wrote, entries saved)."""
        if stage is None:
            return
        stage.counts.update(counts)
        if detail is not None:
            stage.detail = detail
        stage.completed = True

    # -- running ---------------------------------------------------------------------
    def planned(self) -> None:
        """Every stage is registered: from now on the totals in the log lines are final."""
        self._planned = True
        self._log_done()

    @contextmanager
    def action(self, label: str) -> Iterator[None]:
        """Time one Spark action (with a heartbeat); afterwards, the stages it ran are done
        and logged. On failure the stages stay unresolved."""
        start = time.monotonic()
        with Heartbeat(f"running {label} of {self.mode} job {self.job_name!r}",
                       self.heartbeat_seconds, self.logger):
            yield
        ms = int((time.monotonic() - start) * 1000)
        self.actions.append((label, ms))
        for stage in self.stages:
            if not stage.done and stage.resolve():
                stage.done = True
                stage.action = label
                stage.duration_ms = ms
        self._log_done()

    def _log_done(self) -> None:
        if not self._planned:
            return
        for stage in self.stages:
            if stage.done and not stage.logged:
                stage.logged = True
                self.logger.info("%s", self.line(stage))

    def line(self, stage: Stage) -> str:
        """The log line of a stage."""
        c = stage.counts
        head = (f"{self.mode} job {self.job_name!r} stage {stage.index}/{len(self.stages)} "
                f"{stage.name}" + (f" ({stage.detail})" if stage.detail else ""))
        secs = "" if stage.duration_ms is None else f"{stage.duration_ms / 1000:.1f} s"
        if not stage.done:
            return f"{head}: not run (no Spark action read it)"
        if stage.kind == "sink":
            return f"{head}: {fmt_count(c.get('rows_in'))} rows written in {secs}"
        if stage.kind == "collect":
            return f"{head}: {fmt_count(c.get('rows_in'))} rows collected in {secs}"
        if stage.kind == "savepoint":
            return f"{head}: {fmt_count(c.get('entries_out'))} state entries written in {secs}"
        if stage.kind == "source":
            body = f"{fmt_count(c.get('rows_out'))} rows read"
        else:
            body = f"{fmt_count(c.get('rows_in'))} in -> {fmt_count(c.get('rows_out'))} out"
        if c.get("side_rows_out") is not None:
            body += f" (+{fmt_count(c['side_rows_out'])} side-output rows)"
        if c.get("entries_in") is not None:
            body += (f", {fmt_count(c['entries_in'])} savepoint state entries restored (about "
                     f"{fmt_count(c.get('key_groups_in_approx'))} key groups)")
        if c.get("entries_out") is not None:
            body += f", {fmt_count(c['entries_out'])} state entries for the savepoint"
        line = f"{head}: {body}; ran in {stage.action} ({secs})"
        if stage.metrics:
            line += "; metrics " + "; ".join(f"{op!r}: {values}"
                                             for op, values in stage.metrics.items())
        return line

    def row(self, stage: Stage) -> dict[str, Any]:
        """A flat dict for a notebook DataFrame (keys as STREAMING's progress rows where they
        mean the same: rows_in, rows_out, duration_ms)."""
        out: dict[str, Any] = {
            "job": self.job_name, "mode": self.mode, "stage": stage.index,
            "stages": len(self.stages), "kind": stage.kind, "name": stage.name,
            "detail": stage.detail,
        }
        for k in COUNT_KEYS:
            out[k] = stage.counts.get(k)
        out["action"] = stage.action
        out["duration_ms"] = stage.duration_ms
        out[METRICS_KEY] = stage.metrics
        return out

    def finish(self, succeeded: bool = True) -> list[dict[str, Any]]:
        """Log what is left and a summary; fill :attr:`rows` (once)."""
        if self._finished:
            return self.rows
        self._finished = True
        self._planned = True
        self._log_done()
        for stage in self.stages:
            if not stage.done:
                (self.logger.info if succeeded else self.logger.debug)("%s", self.line(stage))
        secs = time.monotonic() - self._start
        self.logger.info("%s job %r %s: %d stages, %d Spark actions, %.1f s", self.mode,
                         self.job_name, "progress done" if succeeded else "failed",
                         len(self.stages), len(self.actions), secs)
        self.rows.extend(self.row(s) for s in self.stages)
        return self.rows
