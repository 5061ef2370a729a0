"""A real cluster: a Spark standalone master and two workers started from the installed
pyspark package (loopback, ephemeral ports) run a STREAMING rocksdb job over a Parquet file
stream in two available-now runs over one checkpoint; one worker (its JVM, its executor JVM
and their Python workers) is SIGKILLed while a micro-batch of the second run is in flight on
it. The job must finish on the surviving worker and its Delta outputs must equal what an
uninterrupted run emits, computed here by a plain-Python model of the program.

What runs on the survivor alone after the kill: the retried task of the interrupted
sessionizing micro-batch (its state reloaded from the checkpoint), that query's timer
batch, and the whole running-reduce query of the second run (the dead executor's key
groups included). A third run would repeat this at ~15 s more on 2 busy cores.

The driver runs in its own process (``cluster_job.py``): this pytest process may already
have a local SparkContext (the suite's session), and a process has one.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cluster_job import EVENT, GAP, OOO, PAUSE_LIMIT_S
from spark_cluster import StandaloneCluster, is_running, java_available

HERE = os.path.dirname(os.path.abspath(__file__))
ROUND_MS = 100_000  # event time covered by one round
ROUNDS = 2  # available-now runs; the worker dies during the second
KEYS = [f"u{i:02d}" for i in range(12)]
CLOCK_KEY = "zz"  # one late-in-time record: the final watermark closes every other session


def make_input(seed: int = 13) -> list[list[list[tuple[str, int, int]]]]:
    """rounds -> files -> (k, ts, v) rows. Each key's timeline runs across all rounds with
    steps either well inside the session gap or well beyond it (no ties with GAP); event time
    only grows from round to round (nothing is ever late) and within a round a key lives in
    one file, in time order — so per-key processing order is time order."""
    rng = random.Random(seed)
    rounds: list[list[list[tuple[str, int, int]]]] = [[[], []] for _ in range(ROUNDS)]
    for i, k in enumerate(KEYS):
        ts = rng.randrange(0, 5_000)
        while ts < ROUNDS * ROUND_MS - OOO:
            rounds[ts // ROUND_MS][i % 2].append((k, ts, rng.randrange(1, 100)))
            ts += rng.randrange(200, GAP // 2) if rng.random() < 0.8 else \
                rng.randrange(2 * GAP, 5 * GAP)
    rounds[-1][1].append((CLOCK_KEY, ROUNDS * ROUND_MS + 5 * GAP, 1))
    for files in rounds:
        for rows in files:
            rows.sort(key=lambda r: (r[1], r[0]))
    return rounds


def model(rounds) -> tuple[list[tuple], list[tuple]]:
    """What the program emits when nothing fails: every running (k, sum v, count) and every
    closed session (k, start, end, count, sum v); the clock key's session stays open."""
    per_key: dict[str, list[tuple[int, int]]] = {}
    for files in rounds:
        for rows in files:
            for k, ts, v in rows:
                per_key.setdefault(k, []).append((ts, v))
    totals, sessions = [], []
    for k, events in per_key.items():
        total = count = 0
        session: list[tuple[int, int]] = []
        for ts, v in sorted(events):
            total, count = total + v, count + 1
            totals.append((k, total, count))
            if session and ts - session[-1][0] > GAP:
                sessions.append(_session(k, session))
                session = []
            session.append((ts, v))
        if k != CLOCK_KEY:
            sessions.append(_session(k, session))
    return sorted(totals), sorted(sessions)


def _session(k, events):
    return (k, events[0][0], events[-1][0], len(events), sum(v for _, v in events))


def _read_delta(path: str) -> list[tuple]:
    from deltalake import DeltaTable

    return sorted(tuple(r.values()) for r in DeltaTable(path).to_pyarrow_table().to_pylist())


def _wait_for(path: str, proc: subprocess.Popen, timeout: float, log: str) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"driver exited ({proc.returncode}) before {path} appeared:\n"
                                 f"{_tail(log)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout} s:\n{_tail(log)}")
        time.sleep(0.1)


def _events(log: str) -> list[dict]:
    with open(log, errors="replace") as f:
        return [json.loads(line.split(EVENT, 1)[1]) for line in f if EVENT in line]


def _tail(path: str, n: int = 6000) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def test_model_is_not_trivial():
    """The input exercises what the cluster test relies on (sessions spanning rounds, several
    sessions per key, the pause record in the second round)."""
    rounds = make_input()
    totals, sessions = model(rounds)
    assert len(totals) == sum(len(rows) for files in rounds for rows in files)
    by_key = Counter(s[0] for s in sessions)
    assert all(by_key[k] >= 2 for k in KEYS)
    spanning = [s for s in sessions if s[1] // ROUND_MS != s[2] // ROUND_MS]
    assert spanning, "no session spans two rounds"
    k, ts = _pause_record(rounds)
    assert ts // ROUND_MS == 1
    assert any(s[0] == k and s[1] < ROUND_MS <= ts <= s[2] for s in sessions)


def _pause_record(rounds) -> tuple[str, int]:
    """A record in the middle of the longest session that started in round 0 and goes on in
    round 1: when its worker dies, the session being extended holds state from before."""
    _, sessions = model(rounds)
    k, _start, end, _n, _sum = max((s for s in sessions if s[1] < ROUND_MS <= s[2]),
                                   key=lambda s: s[3])
    later = [ts for rows in rounds[1] for key, ts, _ in rows if key == k and ts <= end]
    return k, later[len(later) // 2]


@pytest.fixture
def cluster(tmp_path):
    """A standalone master + two workers (not started yet); at teardown — pass or fail —
    every process it started or adopted is SIGKILLed (process groups and every descendant
    seen) and none may be left alive."""
    why = java_available()
    if why:
        pytest.skip(f"no Spark standalone cluster possible here: {why}")
    c = StandaloneCluster(str(tmp_path / "cluster"), workers=2)
    try:
        yield c
    finally:
        alive = c.stop()
        assert not alive, f"processes survived teardown: {alive}"
        assert not [p for p in c.seen.values() if is_running(p)]


def _alive(pid: int) -> bool:
    try:
        return is_running(psutil.Process(pid))
    except psutil.Error:
        return False


@pytest.mark.slow
def test_streaming_job_survives_a_worker_sigkill_mid_batch(cluster, tmp_path):
    started = time.monotonic()
    rounds = make_input()
    expected_totals, expected_sessions = model(rounds)
    staging, marker = tmp_path / "staging", tmp_path / "marker"
    marker.mkdir()
    for r, files in enumerate(rounds):
        (staging / str(r)).mkdir(parents=True)
        for j, rows in enumerate(files):
            pq.write_table(pa.table({
                "k": [x[0] for x in rows], "ts": pa.array([x[1] for x in rows], pa.int64()),
                "v": pa.array([x[2] for x in rows], pa.int64())}),
                staging / str(r) / f"r{r}-f{j}.parquet")
    pause_key, pause_ts = _pause_record(rounds)
    driver_log = str(tmp_path / "driver.log")

    # the driver boots while the workers register; it waits for its two executors
    cluster.start(timeout=90, wait_for_workers=False)
    env = cluster.env()
    marks = {"master up": time.monotonic() - started}
    with open(driver_log, "wb") as log:
        driver = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "cluster_job.py"),
             "--master", cluster.master_url, "--staging", str(staging),
             "--src", str(tmp_path / "in"), "--ckpt", str(tmp_path / "ckpt"),
             "--out", str(tmp_path / "out"), "--marker", str(marker),
             "--pause", f"{pause_key},{pause_ts}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=str(tmp_path), start_new_session=True)
    cluster.adopt(driver)  # killed with the cluster at teardown, whatever happens
    cluster.wait_for_workers(2, timeout=90)
    marks["workers up"] = time.monotonic() - started

    # a task of round 1's sessionizing micro-batch is now inside process_element, on the
    # record ``pause``: the micro-batch is in flight on one executor
    _wait_for(str(marker / "paused.json"), driver, 300, driver_log)
    paused = json.loads((marker / "paused.json").read_text())
    cluster.snapshot()
    victim = cluster.worker_of(paused["pid"])
    assert victim is not None, f"the paused Python worker {paused} runs under no worker"
    assert cluster.alive_workers() == 2
    assert not list(marker.glob("resumed-*.json"))
    marks["paused"] = time.monotonic() - started
    # still sleeping inside process_element, and round 1 not reported finished
    assert time.time() - paused["at"] < PAUSE_LIMIT_S - 30
    assert [e["round"] for e in _events(driver_log) if e["event"] == "round"] == [0]
    killed = cluster.kill_worker(victim)  # worker JVM, executor JVM, Python daemon + workers
    assert paused["pid"] in killed and not _alive(paused["pid"])
    assert any("CoarseGrainedExecutorBackend" in c for c in killed.values()), killed
    assert driver.poll() is None  # the kill happened before the job ended

    try:
        rc = driver.wait(timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the job did not finish after the kill:\n{_tail(driver_log)}")
    marks["job done"] = time.monotonic() - started
    assert rc == 0, f"driver failed ({rc}):\n{_tail(driver_log)}\n{cluster.logs()}"
    events = _events(driver_log)
    by_kind = [(e["event"], e.get("round"), e.get("executors")) for e in events]
    # both executors ran round 0; round 1 (the killed one) finished on the survivor alone
    assert by_kind == [("executors", None, None), ("round", 0, 2),
                       *[("round", r, 1) for r in range(1, ROUNDS)], ("done", None, None)], by_kind
    # the record being processed when the worker died was processed again, by a Python
    # worker under the surviving worker's JVM
    resumed = [json.loads(p.read_text()) for p in marker.glob("resumed-*.json")]
    assert resumed, "the interrupted micro-batch was never retried"
    survivor = cluster.workers[1 - victim].pid
    assert all(survivor in r["ancestors"] for r in resumed), (resumed, survivor)
    assert cluster.alive_workers() == 1

    totals = _read_delta(str(tmp_path / "out" / "totals"))
    sessions = _read_delta(str(tmp_path / "out" / "sessions"))
    # Compared as deduplicated sets first (STREAMING sinks are documented at-least-once),
    # then for duplicates: here only tasks were retried, no micro-batch ran twice, so even
    # an at-least-once sink must not write a row twice — a duplicate is a bug, not noise.
    assert sorted(set(totals)) == expected_totals
    assert sorted(set(sessions)) == expected_sessions
    dups = {r: n for r, n in Counter(totals + sessions).items() if n > 1}
    assert not dups, f"rows written more than once after the worker kill: {dups}"
    print(f"cluster test: {({k: round(v, 1) for k, v in marks.items()})}; driver: {events}")
