"""A TCP proxy between S3 clients and the suite's S3 server, for outage tests.

The proxy runs in its own process (as the server does: delta-rs may hold the GIL while it
waits for an answer) on loopback at an ephemeral port, and forwards every connection to the
server. It can be *stopped* for a few seconds — its listening socket closed and every open
connection dropped, so clients get refused connections and reset streams — and started
again on the same port; the server keeps its data. A control port takes one-line commands:

* ``down <seconds>``: stop now, answer ``ok`` once stopped, start again after ``seconds``.
* ``arm <seconds> <text>``: stop (for ``seconds``) when a client next sends a request
  containing ``text``, dropping that request unsent; answers ``ok`` at once.
* ``outages``: the number of outages so far.

Run as ``python s3_proxy.py <upstream port>``; it prints ``<port> <control port>``.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional


class Proxy:
    """The proxy's state (inside its process)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.lock = threading.Lock()
        self.conns: set[socket.socket] = set()
        self.listener: Optional[socket.socket] = None
        self.port = 0
        self.armed: Optional[tuple[float, bytes]] = None
        self.outages = 0
        self.up = threading.Event()

    def start(self) -> None:
        if self.up.is_set():
            return
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self.port = s.getsockname()[1]
        with self.lock:
            self.listener = s
        self.up.set()
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def stop(self) -> None:
        with self.lock:
            listener, self.listener = self.listener, None
            conns, self.conns = list(self.conns), set()
            self.up.clear()
            self.outages += 1
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        for c in conns:
            try:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def outage(self, seconds: float) -> None:
        """Stop now; start again after ``seconds`` (in the background)."""
        self.stop()

        def later() -> None:
            time.sleep(seconds)
            self.start()

        threading.Thread(target=later, daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.listener is not listener:  # stopped meanwhile
                    client.close()
                    server.close()
                    continue
                self.conns.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_client and self.armed is not None:
                    seconds, text = self.armed
                    if text in data:
                        self.armed = None
                        self.outage(seconds)  # the request is dropped unsent
                        return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with self.lock:
                self.conns.discard(src)
                self.conns.discard(dst)

    def control(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rw") as f:
            for line in f:
                words = line.split(maxsplit=2)
                if not words:
                    continue
                if words[0] == "down":
                    self.outage(float(words[1]))
                    f.write("ok\n")
                elif words[0] == "arm":
                    self.armed = (float(words[1]), words[2].strip().encode())
                    f.write("ok\n")
                elif words[0] == "outages":
                    f.write(f"{self.outages}\n")
                else:
                    f.write("unknown\n")
                f.flush()


def main() -> None:
    proxy = Proxy(int(sys.argv[1]))
    proxy.start()
    ctl = socket.socket()
    ctl.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ctl.bind(("127.0.0.1", 0))
    ctl.listen(16)
    print(proxy.port, ctl.getsockname()[1], flush=True)
    while True:
        conn, _ = ctl.accept()
        threading.Thread(target=proxy.control, args=(conn,), daemon=True).start()


def command(control_port: int, line: str) -> str:
    """Send one command to a proxy's control port; its answer.

    Args:
        control_port: the proxy's control port.
        line: the command.
    Returns:
        the answer line.
    """
    with socket.create_connection(("127.0.0.1", control_port), timeout=30) as s, \
            s.makefile("rw") as f:
        f.write(line + "\n")
        f.flush()
        return f.readline().strip()


@dataclass
class ProxyProcess:
    """A started proxy process (the test's side), with a bucket of its own on the server."""

    process: Any
    port: int
    control_port: int
    bucket: str

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def down(self, seconds: float) -> None:
        """Stop the proxy now, for ``seconds``."""
        assert command(self.control_port, f"down {seconds}") == "ok"

    def arm(self, seconds: float, text: str) -> None:
        """Stop the proxy for ``seconds`` when a request next contains ``text``."""
        assert command(self.control_port, f"arm {seconds} {text}") == "ok"

    def outages(self) -> int:
        """How many times the proxy was stopped."""
        return int(command(self.control_port, "outages"))

    def wait_up(self, timeout: float = 60) -> None:
        """Return once the proxy accepts connections again."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """End the proxy process (by its own id)."""
        from s3_server import stop_process

        stop_process(self.process)


def start(server: Any, bucket: str) -> ProxyProcess:
    """Start a proxy process in front of ``server`` (``s3_server.S3Server``) and create
    ``bucket`` there.

    Args:
        server: the S3 server.
        bucket: a new bucket's name.
    Returns:
        the proxy.
    """
    import subprocess

    process = subprocess.Popen([sys.executable, __file__, str(server.port)],
                               stdout=subprocess.PIPE, text=True)
    port, control = (int(w) for w in process.stdout.readline().split())
    server.client().create_bucket(Bucket=bucket)
    return ProxyProcess(process, port, control, bucket)


if __name__ == "__main__":
    main()
