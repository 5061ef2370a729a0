"""Async I/O against a plain ``map``: records looked up in a slow HTTP service.

``python -m benchmarks.async_io [--records 2000] [--delay-ms 50] [--capacity 100]`` starts the
suite's HTTP service (``integration_tests/http_service.py``, loopback, ephemeral port; each
call answers after ``--delay-ms``) and runs one BATCH job twice at parallelism 2 on a
``local[2]`` session: ``map`` calls the service with a blocking request per record (the
baseline); ``async`` is ``AsyncDataStream.unordered_wait`` with ``--capacity`` calls in flight
per parallel instance. Both results are checked against the service's documented answers.
The last line is JSON: ``async_speedup`` = map seconds / async seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARALLELISM = 2


def _service_module() -> Any:
    """``integration_tests/http_service.py`` (``main`` ships it to the Python workers)."""
    sys.path.insert(0, os.path.join(ROOT, "integration_tests"))
    import http_service

    return http_service


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2_000)
    parser.add_argument("--delay-ms", type=int, default=50)
    parser.add_argument("--capacity", type=int, default=100)
    parser.add_argument("--data", default=".bench-data", help="unused (the input is generated)")
    parser.add_argument("--quick", action="store_true", help="200 records (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records = 200

    from pyspark_datastream import (
        AsyncDataStream,
        AsyncFunction,
        Duration,
        RuntimeExecutionMode,
        StreamExecutionEnvironment,
        Types,
    )

    from benchmarks.common import load, local_session, timed_rounds

    http = _service_module()
    port, delay = None, args.delay_ms

    class Lookup(AsyncFunction):
        async def async_invoke(self, value: int) -> list[Any]:
            return [(value, v) for v in await http.lookup(port, value, delay)]

    def blocking(value: int) -> tuple[int, int]:
        return (value, http.blocking_lookup(port, value, delay)[0])

    ids = list(range(args.records))
    expected = Counter((i, http.answer(i)) for i in ids)
    # the functions below call the module in the Python workers too
    local_session().sparkContext.addPyFile(http.__file__)
    with http.SlowService() as service:
        port = service.port

        def job(kind: str) -> Any:
            env = StreamExecutionEnvironment.get_execution_environment()
            env.set_runtime_mode(RuntimeExecutionMode.BATCH)
            env.set_parallelism(PARALLELISM)
            ds = env.from_collection(ids, type_info=Types.LONG()).rebalance()
            if kind == "map":
                out = ds.map(blocking)
            else:
                out = AsyncDataStream.unordered_wait(ds, Lookup(), Duration.of_seconds(60),
                                                     args.capacity)
            with out.execute_and_collect(f"async-io-{kind}") as it:
                return list(it)

        def check(rows: list[Any]) -> None:
            if Counter(rows) != expected:
                raise SystemExit("async_io: a variant's lookups differ from the service's")

        service.reset()
        medians = timed_rounds({"map": (lambda: job("map"), check),
                                "async": (lambda: job("async"), check)},
                               repeat=1, warmup=not args.quick)
    map_s, async_s = medians["map"][0], medians["async"][0]
    print(json.dumps({
        "benchmark": "async_io", "quick": args.quick, "records": args.records,
        "delay_ms": args.delay_ms, "capacity": args.capacity, "parallelism": PARALLELISM,
        "map_s": round(map_s, 3), "async_s": round(async_s, 3),
        "async_speedup": round(map_s / async_s, 2),
        # calls in flight at once, as the service saw them (both instances together)
        "max_calls_in_flight": service.max_in_flight, "results_equal": True,
        "load": load(),
    }))


if __name__ == "__main__":
    main()
