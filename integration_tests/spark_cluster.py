"""A Spark standalone cluster (one master, N workers) started from the installed pyspark
package, on loopback only, for tests that need executors in separate JVMs.

Every JVM is started in its own session (process group); :meth:`StandaloneCluster.stop`
SIGKILLs every process group it started plus every descendant it has seen (the pyspark
daemon under an executor moves itself into its own process group), and reports any
process that is still alive afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Callable, Optional

import psutil
from jvm_options import driver_options

__all__ = ["free_port", "spark_home", "java_available", "StandaloneCluster", "kill_tree",
           "is_running"]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """An ephemeral TCP port free on loopback right now (bind port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def java_available() -> Optional[str]:
    """None if ``java`` and ``bin/spark-class`` are usable, else why not."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "java is not on PATH (and JAVA_HOME is unset)"
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    if not os.access(spark_class, os.X_OK):
        return f"{spark_class} is missing or not executable"
    return None


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def kill_tree(procs: list[psutil.Process], pgids: list[int]) -> list[psutil.Process]:
    """SIGKILL ``procs`` and the process groups ``pgids``; return those still alive after 10 s."""
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    deadline = time.monotonic() + 10
    alive = list(procs)
    while True:
        alive = [p for p in alive if is_running(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def is_running(p: psutil.Process) -> bool:
    """Alive and not a zombie (a killed orphan may wait a while for its reaper)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class StandaloneCluster:
    """``with StandaloneCluster(workdir, workers=2) as c:`` — master + workers on 127.0.0.1.

    Each worker has its own working directory, Spark scratch, temporary directory and work
    directory (:meth:`worker_dirs`), as on separate machines: no local disk is shared
    between workers."""

    def __init__(self, workdir: str, workers: int = 2, worker_cores: int = 1,
                 worker_memory: str = "2g") -> None:
        self.workdir = workdir
        self.n_workers = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.master_port = free_port()
        self.master_ui_port = free_port()
        self.master_url = f"spark://{LOOPBACK}:{self.master_port}"
        self.master: Optional[subprocess.Popen] = None
        self.workers: list[subprocess.Popen] = []
        self.worker_ui_ports: list[int] = []
        #: every process started here or seen under one, by pid (to kill and check at stop)
        self.seen: dict[int, psutil.Process] = {}
        self._pgids: list[int] = []
        self._adopted: list[subprocess.Popen] = []

    # -- lifecycle -------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # never attach to (or configure) the calling process's own Spark gateway
        for k in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "PYSPARK_SUBMIT_ARGS"):
            env.pop(k, None)
        tmp = os.path.join(self.workdir, "tmp")
        os.makedirs(tmp, exist_ok=True)
        env.update({
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOCAL_HOSTNAME": "localhost",
            "SPARK_LOG_DIR": os.path.join(self.workdir, "logs"),
            "SPARK_LOCAL_DIRS": os.path.join(self.workdir, "local"),
            "SPARK_NO_DAEMONIZE": "1",
            # master and workers only: C1-compiled small-heap JVMs start faster on 2 cores,
            # mapping the class-data archive of pyspark's class path, theirs (jvm_options.py)
            "SPARK_DAEMON_MEMORY": "512m",
            "SPARK_DAEMON_JAVA_OPTS": driver_options(),
            "TMPDIR": tmp,
            "PYSPARK_PYTHON": sys.executable,
            # executors' Python workers unpickle functions of test modules by reference
            "PYTHONPATH": os.pathsep.join(
                p for p in (os.path.dirname(os.path.abspath(__file__)),
                            os.environ.get("PYTHONPATH", "")) if p),
        })
        return env

    def worker_dirs(self, i: int) -> dict[str, str]:
        """Worker ``i``'s own folders, shared with no other process of the cluster: ``root``
        (its working directory, and its executors'), ``local`` (``SPARK_LOCAL_DIRS``: Spark's
        scratch of its executors), ``tmp`` (``TMPDIR`` of it, its executors and their Python
        workers) and ``work`` (``--work-dir``: executor logs)."""
        root = os.path.join(self.workdir, f"worker{i}")
        return {"root": root, **{d: os.path.join(root, d) for d in ("local", "tmp", "work")}}

    def _spawn(self, name: str, args: list[str], env: Optional[dict[str, str]] = None,
               cwd: Optional[str] = None) -> subprocess.Popen:
        log_dir = os.path.join(self.workdir, "logs")
        os.makedirs(log_dir, exist_ok=True)
        with open(os.path.join(log_dir, f"{name}.out"), "ab") as log:
            proc = subprocess.Popen(
                [os.path.join(spark_home(), "bin", "spark-class"), *args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env or self.env(), cwd=cwd or self.workdir, start_new_session=True)
        self._pgids.append(proc.pid)
        self.remember(proc.pid)
        return proc

    def adopt(self, proc: subprocess.Popen) -> None:
        """Kill ``proc``'s process group and tree at :meth:`stop` too (start it with
        ``start_new_session=True``)."""
        self._pgids.append(proc.pid)
        self._adopted.append(proc)
        self.remember(proc.pid)

    def remember(self, pid: int) -> None:
        """Track ``pid`` and its current descendants so that :meth:`stop` kills them."""
        for p in [psutil.Process(pid), *_descendants(pid)] if psutil.pid_exists(pid) else []:
            self.seen.setdefault(p.pid, p)

    def start(self, timeout: float = 90, wait_for_workers: bool = True) -> StandaloneCluster:
        """Start the master and the workers at once (a worker retries its registration
        until the master is up); wait until the master is ALIVE and, unless told not to,
        until every worker has registered."""
        os.makedirs(self.workdir, exist_ok=True)
        props = os.path.join(self.workdir, "spark-daemons.conf")
        with open(props, "w") as f:
            # no REST submission server (it would bind the fixed port 6066)
            f.write("spark.master.rest.enabled false\n")
        self.master = self._spawn("master", [
            "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
            "--port", str(self.master_port), "--webui-port", str(self.master_ui_port),
            "--properties-file", props])
        for i in range(self.n_workers):
            self.start_worker(i)
        self._wait(lambda s: s.get("status") == "ALIVE", "the master to be ALIVE", timeout)
        if wait_for_workers:
            self.wait_for_workers(self.n_workers, timeout)
        return self

    def start_worker(self, i: int) -> subprocess.Popen:
        """Start worker ``i`` (a new one, or in place of worker ``i`` once it exited)."""
        ui = free_port()
        dirs = self.worker_dirs(i)
        for d in dirs.values():
            os.makedirs(d, exist_ok=True)
        env = self.env()
        env.update({"SPARK_LOCAL_DIRS": dirs["local"], "TMPDIR": dirs["tmp"]})
        proc = self._spawn(f"worker{i}", [
            "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", LOOPBACK,
            "--port", str(free_port()), "--webui-port", str(ui),
            "--cores", str(self.worker_cores), "--memory", self.worker_memory,
            "--work-dir", dirs["work"]], env=env, cwd=dirs["root"])
        if i < len(self.workers):
            self.workers[i], self.worker_ui_ports[i] = proc, ui
        else:
            self.workers.append(proc)
            self.worker_ui_ports.append(ui)
        return proc

    def replace_dead_workers(self) -> list[int]:
        """Start a new worker in place of every worker that exited (killed by a test), on
        an emptied root folder, as a replacement machine would be: no file of the dead one
        survives. Returns the indexes replaced; they register with the master on their own
        (:meth:`wait_for_workers`)."""
        dead = [i for i, w in enumerate(self.workers) if w.poll() is not None]
        for i in dead:
            shutil.rmtree(self.worker_dirs(i)["root"])
            self.start_worker(i)
        return dead

    def kill_adopted(self) -> list[psutil.Process]:
        """SIGKILL the adopted processes (drivers) and their trees, forget them; return
        whatever is still alive (should be [])."""
        procs = []
        for p in self._adopted:
            if p.poll() is None:
                self.remember(p.pid)
                procs += [self.seen[p.pid], *_descendants(p.pid)]
        alive = kill_tree(procs, [p.pid for p in self._adopted if p.poll() is None])
        for p in self._adopted:
            self._pgids.remove(p.pid)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self._adopted = []
        return alive

    def state(self) -> dict:
        """The master's ``/json`` status (workers, applications)."""
        url = f"http://{LOOPBACK}:{self.master_ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def wait_for_workers(self, n: int, timeout: float) -> None:
        """Until ``n`` workers are ALIVE in the master's ``/json`` (bounded)."""
        self._wait(lambda s: sum(w.get("state") == "ALIVE" for w in s.get("workers", [])) == n,
                   f"{n} workers to register with {self.master_url}", timeout)

    def _wait(self, ready: Callable[[dict], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            for p in [self.master, *self.workers]:
                if p is not None and p.poll() is not None:
                    raise RuntimeError(f"a cluster JVM exited with {p.returncode} while waiting "
                                       f"for {what}\n{self.logs()}")
            try:
                last = self.state()
                if ready(last):
                    return
            except (OSError, ValueError) as exc:  # web UI not up yet, or an empty answer
                last = exc
            time.sleep(0.3)
        raise TimeoutError(f"timed out after {timeout} s waiting for {what} (last: {last!r})\n"
                           f"{self.logs()}")

    def worker_of(self, pid: int) -> Optional[int]:
        """Index of the worker whose process tree holds ``pid`` (None if none does)."""
        for i, w in enumerate(self.workers):
            if pid == w.pid or any(d.pid == pid for d in _descendants(w.pid)):
                return i
        return None

    def kill_worker(self, i: int) -> dict[int, str]:
        """SIGKILL worker ``i``: its JVM, its executor JVMs and their Python workers.
        Returns ``{pid: command line}`` of the processes killed (all verified dead)."""
        w = self.workers[i]
        tree = [psutil.Process(w.pid), *_descendants(w.pid)]
        cmdlines = {}
        for p in tree:
            self.seen.setdefault(p.pid, p)
            try:
                cmdlines[p.pid] = " ".join(p.cmdline())
            except psutil.Error:
                cmdlines[p.pid] = "?"
        alive = kill_tree(tree, [w.pid])
        w.wait(10)
        if alive:
            raise RuntimeError(f"still alive after SIGKILL: {alive}")
        return cmdlines

    def snapshot(self) -> None:
        """Remember every current descendant of every started or adopted process."""
        for p in [self.master, *self.workers, *self._adopted]:
            if p is not None and p.poll() is None:
                self.remember(p.pid)

    def stop(self) -> list[psutil.Process]:
        """Kill everything started here; return whatever is still alive (should be [])."""
        self.snapshot()
        alive = kill_tree(list(self.seen.values()), self._pgids)
        for p in [self.master, *self.workers, *self._adopted]:
            if p is not None:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        return alive

    def logs(self, tail: int = 3000) -> str:
        out = []
        log_dir = os.path.join(self.workdir, "logs")
        for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []:
            with open(os.path.join(log_dir, name), errors="replace") as f:
                out.append(f"--- {name}\n{f.read()[-tail:]}")
        return "\n".join(out)

    def __enter__(self) -> StandaloneCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        alive = self.stop()
        if alive:
            raise RuntimeError(f"cluster processes survived SIGKILL: {alive}")
