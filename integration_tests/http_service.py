"""A slow HTTP lookup service on loopback for the async I/O tests and benchmark.

``GET /call?id=N&delay=MS&sub=S&fail=F&empty=E`` answers after ``delay`` ms: HTTP 503 for
the first ``F`` calls of id N, ``[]`` for the next ``E``, then ``[N * 3 + 1]``. The service
counts the calls it has in flight (overall and per ``sub``, the caller's subtask) and keeps
their maxima and each id's call times, so a test checks what the service itself saw.
``lookup`` is the client: one HTTP/1.0 request over ``asyncio.open_connection``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


def answer(record_id: int) -> int:
    """What the service answers for ``record_id`` (the tests' independent expectation)."""
    return record_id * 3 + 1


class SlowService:
    """The service and what it saw. Use as a context manager (it stops the server)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.in_flight_by_sub: dict[str, int] = defaultdict(int)
        self.max_by_sub: dict[str, int] = defaultdict(int)
        self.calls: dict[int, list[float]] = defaultdict(list)
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                q = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                rid, sub = int(q["id"]), q.get("sub", "-")
                with service.lock:
                    service.calls[rid].append(time.monotonic())
                    attempt = len(service.calls[rid])
                    service.in_flight += 1
                    service.in_flight_by_sub[sub] += 1
                    service.max_in_flight = max(service.max_in_flight, service.in_flight)
                    service.max_by_sub[sub] = max(service.max_by_sub[sub],
                                                  service.in_flight_by_sub[sub])
                try:
                    time.sleep(int(q.get("delay", "0")) / 1000)
                    fail, empty = int(q.get("fail", "0")), int(q.get("empty", "0"))
                    if attempt <= fail:
                        status, body = 503, b"unavailable"
                    elif attempt <= fail + empty:
                        status, body = 200, b"[]"
                    else:
                        status, body = 200, json.dumps([answer(rid)]).encode()
                finally:
                    with service.lock:
                        service.in_flight -= 1
                        service.in_flight_by_sub[sub] -= 1
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 512  # many concurrent connects: no SYN retries

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reset(self, wait_s: float = 30.0) -> None:
        """Forget what was seen (between jobs), once calls still in flight (a timed-out
        caller's) have ended, so they do not count towards the next job's."""
        deadline = time.monotonic() + wait_s
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        with self.lock:
            self.max_in_flight = 0
            self.max_by_sub.clear()
            self.calls.clear()

    def close(self) -> None:
        """Stop the server."""
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> SlowService:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ServiceError(Exception):
    """The service answered with an error status."""


async def lookup(port: int, record_id: int, delay_ms: int, sub: Any = "-", fail: int = 0,
                 empty: int = 0) -> list[Any]:
    """Call the service once; its JSON list, or ServiceError for a non-200 answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        path = f"/call?id={record_id}&delay={delay_ms}&sub={sub}&fail={fail}&empty={empty}"
        writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if status != 200:
        raise ServiceError(f"HTTP {status} for id {record_id}")
    return json.loads(body)


def blocking_lookup(port: int, record_id: int, delay_ms: int) -> list[Any]:
    """The same call, blocking (what a plain ``map`` does)."""
    from urllib.request import urlopen

    with urlopen(f"http://127.0.0.1:{port}/call?id={record_id}&delay={delay_ms}") as r:
        return json.loads(r.read())


def gaps_ms(times: list[float]) -> list[float]:
    """Milliseconds between consecutive calls."""
    return [(b - a) * 1000 for a, b in zip(times, times[1:])]
