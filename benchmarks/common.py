"""What every Spark benchmark here shares: the session, the timing rule, peak RSS sampling.

* :func:`local_session`: the local SparkSession a program gets from
  ``StreamExecutionEnvironment.get_execution_environment()`` (``local[2]`` unless one is
  active), with Spark's log quieted; optionally with a given JVM heap (``--driver-memory``).
* :func:`timed_rounds`: an untimed round of every variant (the JVM compiles its code paths,
  Python workers start and import the library), then ``repeat`` rounds running every
  variant in turn; each variant's median counts and every timed run is kept for the JSON.
  Each run's result is checked.
* :class:`RssSampler`: a background thread sampling the resident set size of this process
  (the driver), of the JVM it started and of the Python workers under the JVM, keeping the
  peak of each (a worker's RSS counts pages it shares with the daemon it forked from, so
  the workers' sum is an upper bound). Per phase, ``python_workers`` counts the workers that
  ran in it (their CPU time grew): Spark keeps idle workers of earlier jobs alive for reuse,
  and counting them would credit one variant with another's memory.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

__all__ = ["local_session", "timed_rounds", "progress", "load", "RssSampler"]


def local_session(driver_memory: str | None = None) -> Any:
    """The SparkSession a DataStream program gets by default (``local[2]``, 4 shuffle partitions).

    ``driver_memory`` (e.g. ``"2g"``) sizes the JVM's heap the way ``spark-submit
    --driver-memory`` does (local mode runs every task in that JVM); it needs a JVM not yet
    started, so it raises if a session is already active with another heap.
    """
    from pyspark.sql import SparkSession
    from pyspark_datastream import StreamExecutionEnvironment

    active = SparkSession.getActiveSession()
    if driver_memory is not None and active is not None:
        heap = active.sparkContext.getConf().get("spark.driver.memory", "1g")
        if heap != driver_memory:
            raise RuntimeError(f"driver_memory={driver_memory!r}: a SparkSession is already "
                               f"active, its JVM heap is fixed ({heap})")
    elif driver_memory is not None:
        submit = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")  # keep other options
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {driver_memory} {submit}"

    spark = StreamExecutionEnvironment.get_execution_environment().spark
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def progress(message: str) -> None:
    """One line on stderr (stdout's last line is the JSON)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def timed_rounds(variants: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]],
                 repeat: int, warmup: bool = True,
                 rss: RssSampler | None = None) -> dict[str, tuple[float, list[float]]]:
    """Each variant's median seconds over ``repeat`` rounds, and its timed runs.

    ``variants`` maps a name to ``(run, check)``; ``check`` gets the run's result (outside
    the timing) and raises when it is wrong. A round runs every variant once, in the given
    order, so a slow spell of the machine falls on all of them alike rather than on the
    variant that happened to be running; with ``warmup`` an untimed round goes first (the
    JVM compiles its code paths, Python workers start and import the library). With
    ``rss``, each run is sampled as a phase of its variant's name. Each run's time goes to
    stderr as it ends.
    """
    times: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(repeat + warmup):
        for name, (run, check) in variants.items():
            with rss.phase(name) if rss is not None else nullcontext():
                start = time.perf_counter()
                result = run()
                seconds = time.perf_counter() - start
            check(result)
            if i >= warmup:
                times[name].append(seconds)
            progress(f"{name} {'warm-up' if i < warmup else f'run {i + 1 - warmup}'}: "
                     f"{seconds:.2f} s, checked")
    return {name: (statistics.median(runs), runs) for name, runs in times.items()}


def load() -> list[float]:
    """The 1/5/15-minute load average: other work on the machine skews every ratio."""
    return [round(x, 2) for x in os.getloadavg()]


class RssSampler:
    """Peak RSS (MiB) of the driver, the JVM and the Python workers, sampled every ``interval``
    seconds in a daemon thread, overall and per phase (``with sampler.phase("name"):``)."""

    KINDS = ("driver", "jvm", "python_workers")

    def __init__(self, interval: float = 0.25) -> None:
        import psutil

        self._psutil = psutil
        self._me = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.peak: dict[str, float] = dict.fromkeys(self.KINDS, 0.0)
        self.phases: dict[str, dict[str, float]] = {}
        self._current: str | None = None
        self._cpu_at_start: dict[int, float] = {}  # worker pid -> CPU seconds as the phase began
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        # the workers alive now, and their CPU time so far
        at_start = {pid: cpu for pid, (_, cpu) in self.sample().items()}
        with self._lock:
            self._cpu_at_start = at_start
            self._current = name
            self.phases.setdefault(name, dict.fromkeys(self.KINDS, 0.0))
        try:
            yield
        finally:
            self.sample()  # a short phase still gets one sample
            with self._lock:
                self._current = None

    def sample(self) -> dict[int, tuple[int, float]]:
        """Take one sample now (the thread calls this every interval); returns each Python
        worker's pid -> (RSS bytes, CPU seconds)."""
        ps = self._psutil
        sizes = dict.fromkeys(self.KINDS, 0)
        try:
            sizes["driver"] = self._me.memory_info().rss
            children = self._me.children(recursive=True)
        except ps.Error:
            return {}
        jvms = []
        for proc in children:
            try:
                if proc.name() == "java":
                    jvms.append(proc)
                    sizes["jvm"] += proc.memory_info().rss
            except ps.Error:
                continue
        workers: dict[int, tuple[int, float]] = {}
        for jvm in jvms:
            try:
                procs = jvm.children(recursive=True)
            except ps.Error:
                continue
            for proc in procs:
                try:  # a worker that exits meanwhile is skipped, not the ones after it
                    with proc.oneshot():
                        if proc.name().startswith("python"):
                            cpu = proc.cpu_times()
                            workers[proc.pid] = (proc.memory_info().rss, cpu.user + cpu.system)
                except ps.Error:
                    continue
        sizes["python_workers"] = sum(rss for rss, _ in workers.values())
        mib = {k: v / 2**20 for k, v in sizes.items()}
        with self._lock:
            for k, v in mib.items():
                self.peak[k] = max(self.peak[k], v)
            if self._current is not None:
                start = self._cpu_at_start
                ran = sum(rss for pid, (rss, cpu) in workers.items()
                          if pid not in start or cpu > start[pid]) / 2**20
                peaks = self.phases[self._current]
                for k, v in {**mib, "python_workers": ran}.items():
                    peaks[k] = max(peaks[k], v)
        return workers

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def summary(self) -> dict[str, Any]:
        """``{"driver": MiB, "jvm": MiB, "python_workers": MiB}`` peaks, rounded."""
        with self._lock:
            return {k: round(v) for k, v in self.peak.items()}

    def by_phase(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {name: {k: round(v) for k, v in peaks.items()}
                    for name, peaks in self.phases.items()}
