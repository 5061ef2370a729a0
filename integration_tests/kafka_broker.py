"""A single-node Kafka broker (KRaft, broker and controller in one JVM) for the Kafka tests.

Runs ``kafka.Kafka`` from the jars ``make setup`` put in ``<venv>/kafka-broker`` (jars.py),
on loopback at ephemeral ports, its log dir in a temporary folder; the suite's JVM options
(jvm_options.py) and a small heap keep it light on 2 cores. Tests produce and consume with
confluent-kafka (:func:`produce`, :func:`consume_all`).
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable
from typing import Optional

from jars import broker_class_path
from jvm_options import JVM_OPTS

__all__ = ["KafkaBroker", "produce", "consume_all"]

_HEAP = "-Xms64m -Xmx320m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    """One KRaft broker process; :meth:`start` waits until it serves metadata requests.

    Args:
        folder: A temporary folder for its properties, log dir and output (made when None).
    """

    def __init__(self, folder: Optional[str] = None) -> None:
        self.folder = folder or tempfile.mkdtemp(prefix="kafka-broker-")
        self.port = _free_port()
        self.controller_port = _free_port()
        self.process: Optional[subprocess.Popen[bytes]] = None

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker's PLAINTEXT listener."""
        return f"127.0.0.1:{self.port}"

    def _properties(self) -> str:
        path = os.path.join(self.folder, "server.properties")
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": os.path.join(self.folder, "logs"),
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "2",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "2",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.enable": "false",
        }
        with open(path, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in lines.items())
        return path

    def _java(self, main: str, *args: str) -> list[str]:
        return ["java", *JVM_OPTS.split(), *_HEAP.split(), "-cp", broker_class_path(),
                main, *args]

    def start(self, timeout: float = 90.0) -> KafkaBroker:
        """Format the KRaft storage, start the broker and wait until it answers.

        Args:
            timeout: Seconds to wait for the broker to serve metadata.

        Returns:
            This broker.

        Raises:
            RuntimeError: When the broker exits or does not answer in time (its output named).
        """
        props = self._properties()
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        fmt = subprocess.run(self._java("kafka.tools.StorageTool", "format",
                                        f"--cluster-id={cluster_id}", "-c", props),
                             capture_output=True, text=True)
        if fmt.returncode != 0:
            raise RuntimeError(f"formatting the Kafka storage failed: {fmt.stdout}{fmt.stderr}")
        out = os.path.join(self.folder, "broker.out")
        with open(out, "wb") as log:
            self.process = subprocess.Popen(self._java("kafka.Kafka", props), stdout=log,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Kafka broker did not start in {timeout} s (exit code "
                                   f"{self.process.returncode}): {open(out).read()[-2000:]}")
            time.sleep(0.5)
        return self

    def _answers(self) -> bool:
        """Whether the listener accepts connections and the broker serves metadata."""
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        try:
            return bool(admin.list_topics(timeout=5).brokers)
        except Exception:  # noqa: BLE001 - up but not serving yet
            return False

    def create_topic(self, name: str, partitions: int) -> None:
        """Create ``name`` with ``partitions`` partitions (replication factor 1) and wait.

        Args:
            name: The topic.
            partitions: Its number of partitions.
        """
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(30)

    def stop(self) -> None:
        """Terminate the broker and wait for it (killed after 30 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def produce(bootstrap: str, topic: str, records: Iterable[tuple[Optional[str], str]],
            partition_of: Optional[dict[str, int]] = None) -> None:
    """Write ``(key, value)`` string records to ``topic`` and flush.

    Args:
        bootstrap: The broker's ``host:port``.
        topic: The topic.
        records: ``(key, value)`` pairs; the key picks the partition (Kafka's partitioner).
        partition_of: Optional explicit partition per key.
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for key, value in records:
        extra = {} if partition_of is None or key is None else {"partition": partition_of[key]}
        producer.produce(topic, value=value.encode(), key=None if key is None else key.encode(),
                         **extra)
    assert producer.flush(30) == 0, "records left unflushed"


def consume_all(bootstrap: str, topic: str, isolation: str = "read_committed",
                timeout: float = 60.0) -> list[str]:
    """Every value of ``topic``, from the start of each partition to its end, as UTF-8.

    Args:
        bootstrap: The broker's ``host:port``.
        topic: The topic.
        isolation: ``read_committed`` or ``read_uncommitted``.
        timeout: Seconds before giving up on reaching every partition's end.

    Returns:
        The values, partition after partition, each in offset order.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})
    partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    values: dict[int, list[str]] = {p: [] for p in partitions}
    ended: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while ended != set(partitions):
            if time.monotonic() > deadline:
                raise RuntimeError(f"consuming {topic}: partitions {set(partitions) - ended} "
                                   f"did not end in {timeout} s")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(msg.partition())
                    continue
                raise RuntimeError(f"consuming {topic}: {msg.error()}")
            values[msg.partition()].append(msg.value().decode())
    finally:
        consumer.close()
    return [v for p in partitions for v in values[p]]
