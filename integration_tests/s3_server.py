"""A real S3-compatible server for the suite: moto in server mode on loopback, at an
ephemeral port, with one bucket; and the Hadoop ``fs.s3a.*`` settings that point Spark's
s3a connector (and, through them, the project's Python side) at it."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

ACCESS_KEY = "testing-access"
SECRET_KEY = "testing-secret"
REGION = "us-east-1"


def stop_process(process: Any) -> None:
    """Terminate a server process started by a fixture; kill it if it does not exit."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except Exception:  # noqa: BLE001 - it did not exit: kill it
        process.kill()
        process.wait(timeout=10)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """A started moto server process and its bucket."""

    process: Any
    port: int
    bucket: str

    def stop(self) -> None:
        """Stop the server process (by its own id)."""
        stop_process(self.process)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hadoop_conf(self) -> dict[str, str]:
        """The ``fs.s3a.*`` settings of this server (set them on a session's Hadoop conf or
        as ``spark.hadoop.*``)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.aws.credentials.provider":
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            # fail fast while the server is down (fault tests) instead of minutes of retries
            "fs.s3a.attempts.maximum": "2",
            "fs.s3a.retry.limit": "2",
            # milliseconds: Hadoop 3.3 (Spark 3.5) reads it as an int, refusing "5s"
            "fs.s3a.connection.establish.timeout": "5000",
            # moto answers a PUT's "Expect: 100-continue" with a response the AWS SDK counts
            # as a failed upload (status 100; seen on Spark's RocksDB state store files).
            # Hadoop 3.4+ reads this; 3.3 (Spark 3.5) ignores it
            "fs.s3a.connection.expect.continue": "false",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` in the bucket."""
        out: list[str] = []
        for page in self.client().get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix):
            out.extend(o["Key"] for o in page.get("Contents", []))
        return out


#: moto's server, without the interim "100 Continue" its HTTP server (werkzeug) writes for a
#: request with "Expect: 100-continue": the AWS SDK of Hadoop 3.4+ sends that header on a
#: file upload without waiting for the answer (fs.s3a.connection.expect.continue=false) and
#: then takes the interim answer for the final one (status 100: Spark's RocksDB state store
#: failed to upload its files). S3 itself answers such a request as the SDK expects.
_SERVE = """
import sys
from werkzeug.serving import WSGIRequestHandler
from moto.server import main

_run = WSGIRequestHandler.run_wsgi


def run_wsgi(self):
    del self.headers["Expect"]
    return _run(self)


WSGIRequestHandler.run_wsgi = run_wsgi
main(sys.argv[1:])
"""


def start(bucket: str = "pds-test") -> S3Server:
    """Start moto's server in its own process on 127.0.0.1 at a free port and create
    ``bucket``. Its own process: delta-rs may hold the GIL while it waits for an answer,
    which a server thread in the same process could then never give."""
    import subprocess
    import sys
    import time

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVE, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"moto server did not start on port {port}") from None
            time.sleep(0.2)
    s3 = S3Server(process, port, bucket)
    s3.client().create_bucket(Bucket=bucket)
    return s3
