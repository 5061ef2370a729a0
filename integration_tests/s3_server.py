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


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """A started moto server and its bucket."""

    server: Any
    port: int
    bucket: str

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
            "fs.s3a.connection.establish.timeout": "5s",
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


def start(bucket: str = "pds-test") -> S3Server:
    """Start moto's server on 127.0.0.1 at a free port and create ``bucket``."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server.start()
    s3 = S3Server(server, port, bucket)
    s3.client().create_bucket(Bucket=bucket)
    return s3
