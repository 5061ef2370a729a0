"""The job of ``test_metrics_reported.py``, run as its own driver process so that the test reads what
the Python workers log on the driver's stderr (local mode: the executor's log).

``python metrics_job.py CKPT N`` runs a BATCH job, then a STREAMING one (one JVM start), each
at parallelism 2 over ``N`` records ``(k, v)``: a non-keyed map and a keyed process function
that register counters, a meter, a distribution and a gauge, named ``seen-<MODE>`` and
``per-key-<MODE>``. It prints each result as ``PDS-REC <key> <value>`` (print sink), and
``PDS-PROGRESS <MODE> <JSON>``: the metrics of the job's progress rows, by operator.
"""

from __future__ import annotations

import json
import sys

from pyspark_datastream import (
    Configuration,
    KeyedProcessFunction,
    MapFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


class Seen(MapFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group()
        self.records = group.counter("records")
        self.rate = group.add_group("io").meter("events")

    def map(self, value):
        self.records.inc()
        self.rate.mark_event()
        return value


class PerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group()
        self.records = group.counter("records")
        self.values = group.distribution("values")
        self.odd = group.add_group("parity", "odd").counter("records")
        self.keys = set()
        group.gauge("keys", lambda: len(self.keys))

    def process_element(self, value, ctx):
        self.records.inc()
        self.values.update(value[1])
        self.keys.add(value[0])
        if value[1] % 2:
            self.odd.inc()
        yield value


def main() -> None:
    ckpt, n = sys.argv[1], int(sys.argv[2])
    data = [(f"k{i % 7}", i) for i in range(n)]
    for mode in ("BATCH", "STREAMING"):
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_string("execution.checkpointing.dir", ckpt))
        env.set_runtime_mode(RuntimeExecutionMode[mode])
        env.set_parallelism(2)
        (env.from_collection(data, type_info=PAIR)
         .map(Seen(), output_type=PAIR).name(f"seen-{mode}")
         .key_by(lambda r: r[0]).process(PerKey(), output_type=PAIR).name(f"per-key-{mode}")
         .map(lambda r: f"PDS-REC {r[0]} {r[1]}", output_type=Types.STRING()).name("format")
         .print())
        result = env.execute(f"metrics-{mode}")
        metrics: dict = {}
        for row in result.get_progress():
            metrics.update(row["metrics"])
        print(f"PDS-PROGRESS {mode} {json.dumps(metrics)}", flush=True)


if __name__ == "__main__":
    main()
