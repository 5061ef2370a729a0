"""The main demo: sessionize a generated clickstream in BATCH and write a Delta table.

Runs on embedded defaults: a local SparkSession, delta-rs for Delta, and
prints what it did. ``python -m pyspark_datastream demo [--out DIR]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import time
from typing import Any, Iterator, Optional

__all__ = ["main", "generate_clicks", "Sessionize"]

from .operators.functions import KeyedProcessFunction
from .state_store.descriptors import ValueStateDescriptor
from .state_store.types import Types

SESSION_GAP_MS = 30_000


class Sessionize(KeyedProcessFunction):
    """Emits (user, session_start, session_end, clicks) when a user is idle for 30 s."""

    def open(self, runtime_context: Any) -> None:
        self.start = runtime_context.get_state(ValueStateDescriptor("start", Types.LONG()))
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))
        self.clicks = runtime_context.get_state(ValueStateDescriptor("clicks", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        ts = value[2]
        last = self.last.value()
        if last is not None and ts - last > SESSION_GAP_MS:
            yield (ctx.get_current_key(), self.start.value(), last, self.clicks.value())
            self.start.clear()
            self.clicks.clear()
        if self.start.value() is None:
            self.start.update(ts)
        self.clicks.update((self.clicks.value() or 0) + 1)
        self.last.update(ts)
        ctx.timer_service().register_event_time_timer(ts + SESSION_GAP_MS)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        last = self.last.value()
        if last is not None and last == timestamp - SESSION_GAP_MS:
            yield (ctx.get_current_key(), self.start.value(), last, self.clicks.value())
            self.start.clear()
            self.last.clear()
            self.clicks.clear()


def generate_clicks(users: int, clicks_per_user: int, seed: int = 7) -> list[tuple[str, str, int]]:
    """Deterministic clickstream: (user, page, event time ms) with idle gaps between sessions."""
    rng = random.Random(seed)
    pages = ["home", "search", "product", "cart", "checkout"]
    out = []
    for u in range(users):
        t = 1_700_000_000_000 + rng.randrange(0, 60_000)
        for _ in range(clicks_per_user):
            t += rng.choice([2_000, 5_000, 12_000, 45_000, 120_000])
            out.append((f"user-{u:04d}", rng.choice(pages), t))
    rng.shuffle(out)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    from . import StreamExecutionEnvironment
    from .api.environment import default_local_session
    from .api.time import Duration
    from .api.watermarks import WatermarkStrategy
    from .plan.config import RuntimeExecutionMode
    from .spark_io.delta_io import read_delta

    parser = argparse.ArgumentParser(prog="python -m pyspark_datastream demo")
    parser.add_argument("--out", default=".demo-output", help="output folder")
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--clicks", type=int, default=40)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")

    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    spark = default_local_session()
    spark.sparkContext.setLogLevel("ERROR") if hasattr(spark, "sparkContext") else None
    start = time.time()
    clicks = generate_clicks(args.users, args.clicks)
    parquet = os.path.join(out, "clicks.parquet")
    spark.createDataFrame(clicks, "user string, page string, ts bigint") \
        .write.mode("overwrite").parquet(parquet)
    print(f"[demo] generated {len(clicks):,} clicks for {args.users} users -> {parquet}")

    env = StreamExecutionEnvironment.get_execution_environment(spark=spark)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    ds = env.from_dataframe(spark.read.parquet(parquet))
    sessions = (
        ds.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
            .with_timestamp_assigner(lambda v, _ts: v[2]))
        .key_by(lambda c: c[0], key_type=Types.STRING())
        .process(Sessionize(), output_type=Types.ROW_NAMED(
            ["user", "session_start", "session_end", "clicks"],
            [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]))
    )
    table = os.path.join(out, "sessions_delta")
    sessions.sink_to_delta(table, mode="overwrite")
    result = env.execute("sessionize-demo")
    df = read_delta(spark, table)
    n = df.count()
    print(f"[demo] BATCH sessionization wrote {n:,} sessions to the Delta table {table} "
          f"in {result.net_runtime_ms / 1000:.1f} s")
    stats = df.selectExpr("count(distinct user) users", "avg(clicks) avg_clicks",
                          "max(session_end - session_start) / 1000 longest_s").collect()[0]
    print(f"[demo] users={stats['users']} avg clicks/session={stats['avg_clicks']:.2f} "
          f"longest session={stats['longest_s']:.0f} s")
    df.orderBy("user", "session_start").show(5, truncate=False)
    print(f"[demo] done in {time.time() - start:.1f} s")
    return 0
