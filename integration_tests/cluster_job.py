"""The STREAMING job of ``test_cluster.py``, run as its own driver process against a
standalone cluster (a process has one SparkContext; the pytest process has a local one).

``python cluster_job.py --master spark://... --staging DIR --src DIR --ckpt DIR --out DIR
--marker DIR --pause KEY,TS [--hadoop-conf JSON] [--conf KEY=VALUE ...]``

``--ckpt`` and ``--out`` may be ``s3a://`` URIs: ``--hadoop-conf`` (``fs.s3a.*`` settings as
a JSON object) then goes to the session as ``spark.hadoop.*``, with the s3a jars
(``jars.py``) on the driver's and the executors' class path; the project's Python side reads
the same settings from the session.

Before round ``r`` the driver moves the Parquet files of ``<staging>/<r>/`` into the source
folder (mtimes strictly increasing), then runs one available-now execution of the same named
job over the same checkpoint. The program: event time from ``ts``; a running reduce of
``(k, v, 1)`` per key into ``out/totals`` and a sessionizing KeyedProcessFunction (value
state, event-time timers) into ``out/sessions``, both on the rocksdb backend. When the
sessionizer meets the record ``--pause`` for the first time it writes ``marker/paused.json``
(its pid and ancestors) and sleeps, so a micro-batch is in flight while the test kills the
worker running it; the retry of that record elsewhere writes ``marker/resumed-<pid>.json``.
Every process that handles the pause key writes ``marker/holder-<pid>.json`` once.
One line per event goes to stdout: ``PDS-EVENT {json}``, among them each micro-batch's
progress as Spark reports it (:func:`listen`): per stateful operator its state store
instances, rows and the RocksDB state store's load and file metrics (:data:`STORE_METRICS`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from jvm_options import checkpoint_conf, driver_options

GAP = 10_000  # session gap (ms)
OOO = 1_000  # bounded out-of-orderness (ms)
SCHEMA = "k string, ts long, v long"
PAUSE_LIMIT_S = 100  # the victim sleeps at most this long (the test kills it long before)


EVENT = "PDS-EVENT "
#: the custom metrics of Spark's RocksDB state store kept from a micro-batch's progress (each
#: summed over the operator's state store instances): the stores loaded from the checkpoint
#: in the micro-batch (a store that stayed open on its executor since the last one is not),
#: the load time, the size of the stores' SST files after the micro-batch, and the files and
#: bytes the commit copied (to the checkpoint, with changelog checkpointing off)
STORE_METRICS = ("rocksdbNumLoadedFromDfs", "rocksdbLoadLatencyMs", "rocksdbSstFileSize",
                 "rocksdbFilesCopied", "rocksdbBytesCopied", "rocksdbFilesReused")


def say(**event: object) -> None:
    """One event line, in one write (the progress listener's thread writes too)."""
    sys.stdout.write(EVENT + json.dumps(event) + "\n")
    sys.stdout.flush()


def _ancestors() -> list[int]:
    import psutil

    return [p.pid for p in psutil.Process().parents()]


def _write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def listen(spark) -> list:
    """Report each streaming micro-batch's progress (``event: progress``: the query run, the
    batch id, its input rows and per stateful operator its name, ``numStateStoreInstances``,
    ``numRowsTotal``, ``numRowsUpdated`` and :data:`STORE_METRICS`) and each query's end
    (``event: terminated``); returns the list of ended query runs, filled as they end."""
    from pyspark.sql.streaming import StreamingQueryListener

    ended: list = []

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event):  # noqa: N802 - Spark's name
            pass

        def onQueryProgress(self, event):  # noqa: N802
            p = json.loads(event.progress.json)
            say(event="progress", run=p["runId"], batch=p["batchId"], rows=p["numInputRows"],
                ops=[{"name": op.get("operatorName"),
                      "instances": op.get("numStateStoreInstances"),
                      "rows": op.get("numRowsTotal"), "updated": op.get("numRowsUpdated"),
                      **{m: op.get("customMetrics", {}).get(m) for m in STORE_METRICS}}
                     for op in p.get("stateOperators", [])])

        def onQueryIdle(self, event):  # noqa: N802
            pass

        def onQueryTerminated(self, event):  # noqa: N802
            say(event="terminated", run=str(event.runId))
            ended.append(str(event.runId))

    spark.streams.addListener(Progress())
    return ended


def build_sessionize(pause: tuple[str, int], marker: str):
    from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor

    class Sessionize(KeyedProcessFunction):
        """Emits (key, start, end, count, sum of v) when a key's session closes: a record more
        than GAP after the last one, or the watermark passing last + GAP."""

        def open(self, runtime_context):
            get = runtime_context.get_state
            self.start = get(ValueStateDescriptor("start", Types.LONG()))
            self.last = get(ValueStateDescriptor("last", Types.LONG()))
            self.count = get(ValueStateDescriptor("count", Types.LONG()))
            self.total = get(ValueStateDescriptor("total", Types.LONG()))

        def _close(self, key):
            out = (key, self.start.value(), self.last.value(), self.count.value(),
                   self.total.value())
            for s in (self.start, self.last, self.count, self.total):
                s.clear()
            return out

        def process_element(self, value, ctx):
            key, ts, v = value
            if key == pause[0]:
                self._holder()
            if (key, ts) == pause:
                self._pause()
            last = self.last.value()
            if last is not None and ts - last > GAP:
                yield self._close(key)
            if self.start.value() is None:
                self.start.update(ts)
            self.last.update(ts)
            self.count.update((self.count.value() or 0) + 1)
            self.total.update((self.total.value() or 0) + v)
            ctx.timer_service().register_event_time_timer(ts + GAP)

        def on_timer(self, timestamp, ctx):
            last = self.last.value()
            if last is not None and last + GAP == timestamp:
                yield self._close(ctx.get_current_key())

        @staticmethod
        def _holder():
            """``marker/holder-<pid>.json`` (its ancestors) the first time this process
            handles the pause key: the processes that ever held that key's state."""
            path = os.path.join(marker, f"holder-{os.getpid()}.json")
            if not os.path.exists(path):
                _write_json(path, {"pid": os.getpid(), "ancestors": _ancestors(),
                                   "at": time.time()})

        @staticmethod
        def _pause():
            first = os.path.join(marker, "paused.json")
            info = {"pid": os.getpid(), "ancestors": _ancestors(), "at": time.time()}
            if os.path.exists(first):  # the retry, after the kill
                _write_json(os.path.join(marker, f"resumed-{os.getpid()}.json"), info)
                return
            _write_json(first, info)
            deadline = time.monotonic() + PAUSE_LIMIT_S
            while time.monotonic() < deadline:  # until SIGKILL ends this process
                time.sleep(0.1)

    return Sessionize()


def _s3_publisher(args: argparse.Namespace):
    """``publish(local_file, name)``: upload into the ``s3a://`` source folder ``--src``
    (the server of ``--hadoop-conf``)."""
    from pyarrow import fs

    conf = json.loads(args.hadoop_conf)
    endpoint = conf["fs.s3a.endpoint"]
    s3 = fs.S3FileSystem(access_key=conf["fs.s3a.access.key"],
                         secret_key=conf["fs.s3a.secret.key"],
                         endpoint_override=endpoint.split("://", 1)[1],
                         scheme=endpoint.split("://", 1)[0],
                         region=conf["fs.s3a.endpoint.region"])
    folder = args.src.split("://", 1)[1].rstrip("/")

    def publish(path: str, name: str) -> None:
        fs.copy_files(path, f"{folder}/{name}", source_filesystem=fs.LocalFileSystem(),
                      destination_filesystem=s3)

    return publish


def run(args: argparse.Namespace) -> None:
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    builder = SparkSession.builder
    if args.hadoop_conf:
        from jars import class_path

        builder = (builder.config("spark.driver.extraClassPath", class_path())
                   .config("spark.executor.extraClassPath", class_path()))
        for key, value in json.loads(args.hadoop_conf).items():
            builder = builder.config(f"spark.hadoop.{key}", value)
    for key, value in checkpoint_conf().items():  # as conftest.py's session
        builder = builder.config(key, value)
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = (builder.master(args.master).appName("pds-cluster-test")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.memory", "1g")
             .config("spark.executor.memory", "1g")
             .config("spark.executor.cores", "1")
             .config("spark.cores.max", "2")
             .config("spark.pyspark.python", sys.executable)
             # Python workers forked from a daemon that imported pandas, pyarrow and the
             # project once (a fresh worker per task is cheap with worker.reuse=false)
             .config("spark.python.daemon.module", "preload_daemon")
             # short jobs on 2 busy cores: C1 only, serial GC (less JIT/GC CPU per JVM);
             # driver and executors map the class-data archive of their class path, which
             # has the suite's jars first with --hadoop-conf (jvm_options.py)
             .config("spark.driver.extraJavaOptions", driver_options(jars=bool(args.hadoop_conf)))
             .config("spark.executor.extraJavaOptions",
                     driver_options(jars=bool(args.hadoop_conf)))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state."
                     "HDFSBackedStateStoreProvider")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    sc = spark.sparkContext

    def executors() -> int:  # block managers minus the driver's
        return sc._jsc.sc().getExecutorMemoryStatus().size() - 1

    deadline = time.monotonic() + 90
    while executors() < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {executors()} executors registered in 90 s")
        time.sleep(0.2)
    say(event="executors", n=executors(), seconds=round(time.monotonic() - t0, 1))
    ended = listen(spark)
    run_rounds(spark, args, executors)
    # the listener bus delivers a query's progress before its end: wait for every run's end
    deadline = time.monotonic() + 30
    while len(ended) < len(os.listdir(args.staging)) and time.monotonic() < deadline:
        time.sleep(0.1)
    spark.stop()
    say(event="done", seconds=round(time.monotonic() - t0, 1))


def run_rounds(spark, args: argparse.Namespace, executors=lambda: 0) -> None:
    """The rounds of the job in ``spark`` (any session); ``args`` as :func:`main` parses
    them; ``executors()`` is reported after each round."""
    from pyspark_datastream import (
        Configuration,
        Duration,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        TimestampAssigner,
        Types,
        WatermarkStrategy,
    )

    class ByTs(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    pause_key, pause_ts = args.pause.split(",")
    sessionize = build_sessionize((pause_key, int(pause_ts)), args.marker)
    mtime = 1_700_000_000
    rounds = sorted(os.listdir(args.staging), key=int)
    publish = _s3_publisher(args) if args.src.startswith("s3a://") else None
    if publish is None:
        os.makedirs(args.src, exist_ok=True)
    for r in rounds:
        for name in sorted(os.listdir(os.path.join(args.staging, r))):
            mtime += 10
            path = os.path.join(args.staging, r, name)
            if publish is not None:  # an object's time is its upload: after every earlier round
                publish(path, name)
                continue
            os.utime(path, (mtime, mtime))
            os.replace(path, os.path.join(args.src, name))
        t = time.monotonic()
        conf = Configuration()
        conf.set_string("execution.checkpointing.dir", args.ckpt)
        conf.set_string("state.backend.type", "rocksdb")
        env = StreamExecutionEnvironment.get_execution_environment(conf, spark=spark)
        env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        env.set_parallelism(2)
        ws = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OOO))
              .with_timestamp_assigner(ByTs()))
        events = (env.from_dataframe(spark.readStream.schema(SCHEMA).parquet(args.src))
                  .assign_timestamps_and_watermarks(ws))
        # sessions first: its query (sink-0) is the one paused and killed in round 1, so the
        # totals query of that round runs on the surviving executor only
        (events.key_by(lambda e: e[0], key_type=Types.STRING())
         .process(sessionize, output_type=Types.TUPLE(
             [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()]))
         .uid("sessions")
         .sink_to_delta(os.path.join(args.out, "sessions")))
        triple = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
        (events.map(lambda e: (e[0], e[2], 1), output_type=triple)
         .key_by(lambda e: e[0], key_type=Types.STRING())
         .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])).uid("totals")
         .sink_to_delta(os.path.join(args.out, "totals")))
        env.execute("cluster-sessions")
        say(event="round", round=int(r), executors=executors(),
            seconds=round(time.monotonic() - t, 1))


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("master", "staging", "src", "ckpt", "out", "marker", "pause"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--hadoop-conf", default=None)
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE, a Spark setting")
    run(p.parse_args())


if __name__ == "__main__":
    main()
