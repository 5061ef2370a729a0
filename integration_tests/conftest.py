"""One local[2] SparkSession for the whole integration suite."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

#: The suite's longest files (a minute or more each on 2 cores, ``--durations`` at f9936c2),
#: longest first. ``make test`` hands whole files to its two xdist workers in collection
#: order, so these start first and the many short files fill in after them: a long file
#: started last would leave the other worker idle for its length.
LONGEST_FIRST = (
    "test_delta_exactly_once.py", "test_savepoint_multistage.py", "test_side_output_sweep.py",
    "test_cluster.py", "test_storage_s3.py", "test_one_query_mixed_inputs.py",
    "test_spark_delta.py", "test_pyflink_ports.py", "test_windows.py", "test_batch.py",
    "test_one_query_carried.py", "test_one_query_branches.py", "test_kafka_exactly_once.py",
    "test_one_query.py", "test_notebooks.py", "test_row_records.py", "test_docs.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run :data:`LONGEST_FIRST` first; every other file keeps its place (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


#: the folder :func:`pytest_configure` made (a process whose parent made it has none)
_OWN_TMPDIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Before anything in this process starts a JVM (a page of ``tests/plugin/test_docs.py``
    does, on the same xdist worker): this folder on the Python workers' path, since they
    import test modules (functions defined in them are pickled by reference) and a JVM
    hands its workers the path it started with; and a folder of this run for the Spark
    drivers' temporary files (``jvm_options.py``)."""
    from jvm_options import TMPDIR_ENV

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.environ.get("PYTHONPATH", "")
    if here not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, path) if p)
    if TMPDIR_ENV not in os.environ:
        os.environ[TMPDIR_ENV] = tempfile.mkdtemp(prefix="pds-jvm-tmp-")
        config.stash[_OWN_TMPDIR] = os.environ[TMPDIR_ENV]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove that folder with whatever the drivers left in it."""
    from jvm_options import TMPDIR_ENV

    own = config.stash.get(_OWN_TMPDIR, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)
        os.environ.pop(TMPDIR_ENV, None)


def _java_ok() -> bool:
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark():
    if not _java_ok():
        pytest.fail("java (17+) is not on PATH; Spark needs it (see README: make setup)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from jars import delta_spark_conf
    from jvm_options import checkpoint_conf, driver_options
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in delta_spark_conf().items():  # Spark's Delta and s3a (make setup)
        builder = builder.config(key, value)
    for key, value in checkpoint_conf().items():  # no fork per checkpoint file (jvm_options.py)
        builder = builder.config(key, value)
    session = (
        builder.master("local[2]")
        .appName("pyspark-datastream-tests")
        # Two, as many as the cores: every STREAMING keyed stage runs one task per partition
        # each micro-batch, and on 2 cores 4 ran in two waves (the row-record and multi-stage
        # savepoint files took 258 s with 4 and 208 s with 2). Still several partitions, so
        # key groups spread over more than one; tests that need another count set their own.
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", driver_options(jars=True))  # jvm_options.py
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")
        # Spark's Delta rebuilds a snapshot with 50 tasks by default: slow on 2 cores.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        # The session has Spark's Delta, so "auto" would pick it; the suite's default stays
        # delta-rs (the writer of sessions without Delta) and `spark_delta` switches per test.
        .config("pyspark_datastream.delta.writer", "delta-rs")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server(spark):
    """A real S3 server (moto, loopback, ephemeral port) for the session; the shared
    session's Hadoop configuration points s3a at it, and nothing else: the project's Python
    side finds the endpoint and credentials there (spark_io/storage_conf.py)."""
    import s3_server as server_module

    s3 = server_module.start()
    hadoop = spark._jsc.hadoopConfiguration()
    for key, value in s3.hadoop_conf().items():
        hadoop.set(key, value)
    yield s3
    for key in s3.hadoop_conf():
        hadoop.unset(key)
    s3.stop()


@pytest.fixture
def s3_proxy(spark, s3_server):
    """A TCP proxy in front of ``s3_server`` that a test can stop for a few seconds
    (``s3_proxy.py``), with a bucket of its own that Spark's s3a reaches only through it
    (``fs.s3a.bucket.<name>.endpoint``; the Python side: the job's ``s3.endpoint``)."""
    import uuid

    import s3_proxy as proxy_module

    proxy = proxy_module.start(s3_server, f"fault-{uuid.uuid4().hex[:10]}")
    hadoop = spark._jsc.hadoopConfiguration()
    key = f"fs.s3a.bucket.{proxy.bucket}.endpoint"
    hadoop.set(key, proxy.endpoint)
    yield proxy
    hadoop.unset(key)
    proxy.stop()


def _skip_without(connector: str, what: str) -> None:
    """Skip the test when ``make setup`` resolved no ``connector`` jars (``"delta"`` or
    ``"kafka"``, jars.available()) for the installed pyspark: its line has none on Maven
    Central (4.3 has neither yet)."""
    import jars

    if not jars.available()[connector]:
        pytest.skip(f"{what}: `make setup` resolved no {connector} jars for Spark "
                    f"{jars.spark_line()} into {jars.jar_dir()} (its line has none on Maven "
                    "Central; see integration_tests/jars.py)")


@pytest.fixture
def spark_delta(spark):
    """The shared session with Spark's own Delta Lake as the project's Delta writer and
    reader (``pyspark_datastream.delta.writer=spark``) for one test; skipped on a line
    without Spark's Delta jars."""
    _skip_without("delta", "Spark's Delta Lake")
    spark.conf.set("pyspark_datastream.delta.writer", "spark")
    try:
        yield spark
    finally:
        spark.conf.set("pyspark_datastream.delta.writer", "delta-rs")


@pytest.fixture
def env_factory(spark):
    """Build a StreamExecutionEnvironment on the shared session in a given mode."""
    from helpers import env_on

    def make(mode: str = "BATCH", config: dict | None = None):
        return env_on(spark, mode, config)

    return make


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A single-node KRaft Kafka broker on loopback (kafka_broker.py), stopped at the end;
    skipped on a line without Spark's Kafka connector (the broker comes with it)."""
    _skip_without("kafka", "Spark's Kafka connector")
    from kafka_broker import KafkaBroker

    broker = KafkaBroker(str(tmp_path_factory.mktemp("kafka"))).start()
    try:
        yield broker
    finally:
        broker.stop()
