"""FLIP-220's benchmark in Python: temporal sort and temporal join, BinarySortedState vs MapState.

Each workload is implemented twice and run on the RocksDB keyed backend through
the runtime's keyed operators (``KeyedProcessOperator`` /
``KeyedCoProcessOperator``), no Spark, in one process:

* **sorted**: the examples' functions (:class:`pyspark_datastream.temporal_functions.TemporalSort`,
  :class:`~pyspark_datastream.temporal_functions.TemporalJoin`): ``BinarySortedState`` keyed by
  event time, ``add`` appends without reading, timers read and clear ranges, the
  join finds its rate with ``last_entry(order_time)``. On RocksDB an ``add`` is
  kept pending in memory (written in one batch when a read needs it in the
  database or ``_BATCH_LIMIT`` rows wait); a timer's ``read_range_until`` of a key
  whose every sort key the state's cache knows is served from that cache (pending
  rows from memory, written ones with one multi-get; no iterator), and the
  ``clear_range_until`` that follows drops the pending rows it read unwritten and
  stages deletes for the others (no second scan). Other reads are bounded
  iterators starting past the already cleared front.
* **map**: the pattern FLIP-220 replaces, written as well as that pattern allows
  (modelled on Flink's ``RowTimeSortOperator`` and ``TemporalRowTimeJoinOperator``):
  ``MapState<long, list>`` with a read-modify-write of the whole list on every
  add; a sort timer reads and removes its one timestamp (a point ``get``, no
  scan); a join timer with orders due, or at a rate's time, scans the rate map's
  keys once to find the closest rate at or before the timer's time and to prune
  older rates in the same pass (other timers skip the scan).

Both implementations see the same events in the same arrival order, the same
watermarks (bounded out-of-orderness, advanced every ``--watermark-every``
events), do the same late-record check, register the same timers, and must
produce the same outputs (checked on every run). The key bytes are
pre-serialized, as the runtime does. Each implementation is timed ``--repeat``
(default 5) times, alternating, on a fresh RocksDB; the best time counts. Times are the
process's CPU time (``time.process_time``, RocksDB's background threads
included), not wall time: on a shared machine wall time mostly measures the
other tenants. Writes a backend still holds back in a batch at the end are
written inside the timed region (``backend.flush()``).

What drives the speedups (reported, not tuned away; ``--sweep`` prints them):
the sort gains with the number of events per timestamp (``--dup``). Per value
the sorted variant pays one serialization and one deserialization (plus, for a
row already written when it is cleared, a memtable put and delete), while the map variant decodes and re-encodes the whole list of
its timestamp on every add (a cost growing with the list); per timestamp the
sorted variant pays one cache lookup where the map variant pays one point
``get``. So with one event per timestamp both cost about the same (~1.0x), at
the default 8 events per timestamp ~2.7x (2.5-3.1x over 10 runs, best of 5 each, on
a quiet 2-core machine; more at 16 and 32, see ``--sweep``). Rows added and cleared within
one out-of-orderness bound never reach RocksDB in the sorted variant, which is the
point of staging them; the map variant rewrites its list in RocksDB on every add.
The join gains with the number of rate entries alive per
key (rates per time unit x out-of-orderness), which the map variant scans on
every timer, and loses when few rates are alive (the scan is then cheaper than
the sorted state's seeks). The defaults (8 events per timestamp; 4 orders per
timestamp and a rate every 20 ms with 1 s out-of-orderness) are middle-of-the-road
values, not the best case. The join speedup also grows with the data size: the
map variant's scans start at the front of the rate map and walk the tombstones
of every pruned rate still in RocksDB's memtable (nothing is flushed at these
sizes), while the sorted state seeks past its cleared front.

Usage: ``python -m benchmarks.sorted_state [--quick]``. The last line printed is
one JSON object ``{"sort_speedup": ..., "join_speedup": ..., ...}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.functions import KeyedCoProcessFunction, KeyedProcessFunction
from pyspark_datastream.operators.keyed import AbstractKeyedOperator
from pyspark_datastream.operators.keyed_process import KeyedCoProcessOperator, KeyedProcessOperator
from pyspark_datastream.state_store.backends.rocksdb import RocksDBKeyedStateBackend
from pyspark_datastream.state_store.descriptors import MapStateDescriptor
from pyspark_datastream.state_store.types import Types
from pyspark_datastream.temporal_functions import TemporalJoin, TemporalSort

from examples.temporal_join import ORDER_TYPE, RATE_TYPE, convert
from examples.temporal_sort import EVENT_TYPE

__all__ = [
    "sorted_sort",
    "sorted_join",
    "SortWithMapState",
    "JoinWithMapState",
    "Workload",
    "sort_workload",
    "join_workload",
    "run_once",
    "compare",
    "run",
    "main",
]

#: (key, key bytes, value, timestamp, input index)
Record = tuple[str, bytes, Any, int, int]


def sorted_sort() -> TemporalSort:
    """The BinarySortedState temporal sort, as the example runs it."""
    return TemporalSort(EVENT_TYPE)


def sorted_join() -> TemporalJoin:
    """The BinarySortedState temporal join, as the example runs it."""
    return TemporalJoin(ORDER_TYPE, RATE_TYPE, convert)


# -- the MapState<long, list> variants ---------------------------------------------------------

class SortWithMapState(KeyedProcessFunction):
    """Temporal sort on ``MapState<long, list>`` (Flink's RowTimeSortOperator pattern)."""

    def open(self, runtime_context: Any) -> None:
        self.buffer = runtime_context.get_map_state(
            MapStateDescriptor("buffer", Types.LONG(), Types.LIST(EVENT_TYPE))
        )
        self.dropped_late = 0

    def process_element(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        timers = ctx.timer_service()
        if timestamp <= timers.current_watermark():
            self.dropped_late += 1
            return
        # read-modify-write of the whole list: the cost FLIP-220 removes
        events = self.buffer.get(timestamp)
        if events is None:
            events = [value]
        else:
            events.append(value)
        self.buffer.put(timestamp, events)
        timers.register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        # one timer per timestamp, fired in order: everything due sits under this key
        events = self.buffer.get(timestamp)
        if events is None:
            return iter(())
        self.buffer.remove(timestamp)
        return iter(events)


class JoinWithMapState(KeyedCoProcessFunction):
    """Temporal join on ``MapState<long, list>`` orders and ``MapState<long, rate>`` rates."""

    def open(self, runtime_context: Any) -> None:
        self.orders = runtime_context.get_map_state(
            MapStateDescriptor("orders", Types.LONG(), Types.LIST(ORDER_TYPE))
        )
        self.rates = runtime_context.get_map_state(
            MapStateDescriptor("rates", Types.LONG(), RATE_TYPE)
        )

    def process_element1(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        timers = ctx.timer_service()
        if timestamp <= timers.current_watermark():
            return
        orders = self.orders.get(timestamp)
        if orders is None:
            orders = [value]
        else:
            orders.append(value)
        self.orders.put(timestamp, orders)
        timers.register_event_time_timer(timestamp)

    def process_element2(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        self.rates.put(timestamp, value)
        ctx.timer_service().register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        orders = self.orders.get(timestamp)
        if orders is not None:
            self.orders.remove(timestamp)
        elif not self.rates.contains(timestamp):
            return iter(())  # neither orders due nor a rate becoming valid: no scan
        # one scan over the rate times (values stay serialized): the closest at or before
        # the timer, and the older ones to prune in the same pass
        best_time: int | None = None
        older: list[int] = []
        for rate_time in self.rates.keys():
            if rate_time <= timestamp:
                if best_time is None or rate_time > best_time:
                    if best_time is not None:
                        older.append(best_time)
                    best_time = rate_time
                else:
                    older.append(rate_time)
        for rate_time in older:
            self.rates.remove(rate_time)
        if orders is None or best_time is None:
            return iter(())
        rate = self.rates.get(best_time)
        return iter([convert(order, rate) for order in orders])


# -- workloads ---------------------------------------------------------------------------------

@dataclass
class Workload:
    """Records in arrival order plus the watermark schedule."""

    name: str
    records: list[Record]
    bound_ms: int
    watermark_every: int
    describe: str


def _key_bytes(key: str) -> bytes:
    return Types.STRING().key_serializer().serialize(key)


def sort_workload(
    keys: int, events_per_key: int, dup: int, bound_ms: int = 1_000, step_ms: int = 100,
    watermark_every: int = 200, seed: int = 1,
) -> Workload:
    """Events ``(key, time, payload)``: per key, ``dup`` events per timestamp on average,
    timestamps ``step_ms`` apart, arriving up to ``bound_ms`` late (never beyond the
    watermark bound, so nothing is dropped)."""
    rng = random.Random(seed)
    arrivals: list[tuple[float, Record]] = []
    key_bytes = {f"k{k}": _key_bytes(f"k{k}") for k in range(keys)}
    for key, data in key_bytes.items():
        for i in range(events_per_key):
            t = (i // dup) * step_ms + rng.randrange(0, 2) * step_ms
            arrival = t + rng.uniform(0, bound_ms * 0.9)
            arrivals.append((arrival, (key, data, (key, t, f"{key}/{i}"), t, 0)))
    arrivals.sort(key=lambda pair: pair[0])
    records = [record for _, record in arrivals]
    return Workload("sort", records, bound_ms, watermark_every,
                    f"{keys} keys x {events_per_key} events, ~{dup}/timestamp, "
                    f"{bound_ms} ms out of order, watermark every {watermark_every} events")


def join_workload(
    currencies: int, orders_per_currency: int, orders_per_ts: int, rate_every_ms: int,
    bound_ms: int = 1_000, step_ms: int = 100, watermark_every: int = 200, seed: int = 2,
) -> Workload:
    """Orders ``orders_per_ts`` per timestamp (``step_ms`` apart) and one rate update every
    ``rate_every_ms`` per currency over the same span, both up to ``bound_ms`` late."""
    rng = random.Random(seed)
    arrivals: list[tuple[float, Record]] = []
    for c in range(currencies):
        currency = f"C{c}"
        data = _key_bytes(currency)
        span = (orders_per_currency // orders_per_ts + 1) * step_ms
        for t in range(0, span, rate_every_ms):
            rate = round(rng.uniform(0.5, 2.0), 4)
            arrivals.append((t + rng.uniform(0, bound_ms * 0.9),
                             (currency, data, (currency, rate, t), t, 1)))
        for i in range(orders_per_currency):
            t = (i // orders_per_ts) * step_ms
            order = (f"{currency}/{i}", currency, float(rng.randint(1, 500)), t)
            arrivals.append((t + rng.uniform(0, bound_ms * 0.9), (currency, data, order, t, 0)))
    arrivals.sort(key=lambda pair: pair[0])
    records = [record for _, record in arrivals]
    return Workload("join", records, bound_ms, watermark_every,
                    f"{currencies} currencies x {orders_per_currency} orders, "
                    f"{orders_per_ts}/timestamp, a rate every {rate_every_ms} ms, "
                    f"{bound_ms} ms out of order, watermark every {watermark_every} events")


# -- driver ------------------------------------------------------------------------------------

def _operator(function: Any) -> AbstractKeyedOperator:
    if isinstance(function, KeyedCoProcessFunction):
        return KeyedCoProcessOperator(function)
    return KeyedProcessOperator(function)


def run_once(function: Any, workload: Workload) -> tuple[list[Any], float]:
    """Run ``function`` over ``workload`` on a fresh RocksDB backend: (outputs, seconds)."""
    key_serializer = Types.STRING().key_serializer()
    backend = RocksDBKeyedStateBackend(key_serializer, 128)
    operator = _operator(function)
    operator.open(backend, OperatorConfig.for_mode("STREAMING", operator_name=workload.name))
    outputs: list[Any] = []
    extend = outputs.extend
    set_key = backend.set_current_key
    process = operator.process_element
    bound = workload.bound_ms
    every = workload.watermark_every
    max_time = -(1 << 62)
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for i, (key, key_bytes, value, timestamp, side) in enumerate(workload.records, 1):
            set_key(key, key_bytes)
            extend(process(value, timestamp, side))
            if timestamp > max_time:
                max_time = timestamp
            if i % every == 0:
                extend(operator.advance_watermark(max_time - bound - 1))
        extend(operator.end_input())
        backend.flush()  # writes held back in batches are part of the work
        elapsed = time.process_time() - start
    finally:
        gc.enable()
        operator.close()
        backend.close()
    return [out.value for out in outputs], elapsed


def compare(
    sorted_factory: Callable[[], Any], map_factory: Callable[[], Any], workload: Workload,
    repeat: int,
) -> dict[str, Any]:
    """Time both implementations (alternating, best of ``repeat``); outputs must match."""
    best = {"sorted": float("inf"), "map": float("inf")}
    first: dict[str, list[Any]] = {}
    for _ in range(repeat):
        for name, factory in (("map", map_factory), ("sorted", sorted_factory)):
            outputs, seconds = run_once(factory(), workload)
            first.setdefault(name, outputs)
            best[name] = min(best[name], seconds)
        if first["sorted"] != first["map"]:
            raise AssertionError(
                f"{workload.name}: the BinarySortedState and MapState implementations produced "
                f"different outputs ({len(first['sorted'])} vs {len(first['map'])} records)"
            )
    reference = first["sorted"]
    n = len(workload.records)
    return {
        "records": n,
        "outputs": len(reference),
        "sorted_s": best["sorted"],
        "map_s": best["map"],
        "sorted_rec_per_s": n / best["sorted"],
        "map_rec_per_s": n / best["map"],
        "speedup": best["map"] / best["sorted"],
    }


def run(quick: bool = False, repeat: int | None = None, scale: float = 1.0,
        dup: int = 8, orders_per_ts: int = 4, rate_every_ms: int = 20,
        watermark_every: int = 200) -> dict[str, Any]:
    """Both workloads; returns ``{"sort_speedup", "join_speedup", "sort", "join"}``."""
    factor = (0.25 if quick else 1.0) * scale
    rounds = repeat if repeat is not None else 5
    sort_load = sort_workload(keys=20, events_per_key=max(dup, int(1_000 * factor)), dup=dup,
                              watermark_every=watermark_every)
    join_load = join_workload(currencies=10, orders_per_currency=max(1, int(1_000 * factor)),
                              orders_per_ts=orders_per_ts, rate_every_ms=rate_every_ms,
                              watermark_every=watermark_every)
    sort_result = compare(sorted_sort, SortWithMapState, sort_load, rounds)
    join_result = compare(sorted_join, JoinWithMapState, join_load, rounds)
    sort_result["workload"] = sort_load.describe
    join_result["workload"] = join_load.describe
    return {
        "sort_speedup": round(sort_result["speedup"], 2),
        "join_speedup": round(join_result["speedup"], 2),
        "sort": sort_result,
        "join": join_result,
    }


#: ``--sweep``: events per timestamp (sort) and (orders per timestamp, rate period ms) (join).
SWEEP_SORT = (1, 4, 8, 16, 32)
SWEEP_JOIN = ((1, 100), (4, 100), (1, 20), (4, 20), (16, 20), (4, 5))


def sweep(repeat: int = 2) -> list[dict[str, Any]]:
    """Speedups over the workload parameters that decide them (smaller data than ``run``)."""
    rows: list[dict[str, Any]] = []
    for dup in SWEEP_SORT:
        load = sort_workload(keys=10, events_per_key=640, dup=dup)
        result = compare(sorted_sort, SortWithMapState, load, repeat)
        rows.append({"workload": f"sort, {dup} events/timestamp", **result})
    for orders_per_ts, rate_every_ms in SWEEP_JOIN:
        load = join_workload(currencies=5, orders_per_currency=400, orders_per_ts=orders_per_ts,
                             rate_every_ms=rate_every_ms)
        result = compare(sorted_join, JoinWithMapState, load, repeat)
        alive = load.bound_ms // rate_every_ms
        rows.append({"workload": f"join, {orders_per_ts} orders/timestamp, a rate every "
                                 f"{rate_every_ms} ms (~{alive} rates alive per key)", **result})
    return rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: print a table, then the JSON summary as the last line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the data")
    parser.add_argument("--repeat", type=int, default=None, help="rounds, best counts (default 5)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the data size")
    parser.add_argument("--dup", type=int, default=8, help="sort: events per timestamp")
    parser.add_argument("--orders-per-ts", type=int, default=4, help="join: orders per timestamp")
    parser.add_argument("--rate-every-ms", type=int, default=20, help="join: rate update period")
    parser.add_argument("--watermark-every", type=int, default=200)
    parser.add_argument("--sweep", action="store_true",
                        help="also print the speedups over events/orders per timestamp and "
                             "rate frequency")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.sweep:
        print("sweep (CPU seconds, best of 2; speedup = map / sorted):")
        for row in sweep():
            print(f"  {row['workload']:62s} {row['records']:6d} records  sorted "
                  f"{row['sorted_s']:6.3f} s  map {row['map_s']:6.3f} s  "
                  f"speedup {row['speedup']:5.2f}x")
    results = run(args.quick, args.repeat, args.scale, args.dup, args.orders_per_ts,
                  args.rate_every_ms, args.watermark_every)
    for name in ("sort", "join"):
        r = results[name]
        print(f"{name}: {r['workload']}")
        print(f"  BinarySortedState {r['sorted_rec_per_s']:10.0f} rec/s ({r['sorted_s']:.2f} s)  "
              f"MapState<long, list> {r['map_rec_per_s']:10.0f} rec/s ({r['map_s']:.2f} s)  "
              f"speedup {r['speedup']:.2f}x  ({r['outputs']} outputs, identical)")
    print(f"total {time.perf_counter() - started:.1f} s wall (timings above are CPU time)")
    summary = {"sort_speedup": results["sort_speedup"], "join_speedup": results["join_speedup"]}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":  # pragma: no cover - command line entry
    main()
