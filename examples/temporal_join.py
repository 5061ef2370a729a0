"""Event-time temporal join with BinarySortedState (FLIP-220's temporal join example).

Orders are joined to the currency rate that was valid at the order's event time
(``FOR SYSTEM_TIME AS OF order_time`` in SQL terms): the rate with the greatest
timestamp ``<=`` the order's. Rates arrive as a second stream; both are keyed by
currency and processed by
:class:`pyspark_datastream.temporal_functions.TemporalJoin` (orders wait in a
sorted state until the watermark passes them, then look up
``last_entry(order_time)`` among the rates; rates no order can still need are
pruned). It is an inner join: an order with no rate at or before its time
produces nothing; orders that arrive already late are dropped. Output records
are ``(order_id, currency, amount, order_time, rate, rate_time, amount * rate)``.

Run it: ``python -m examples.temporal_join [--mode BATCH|STREAMING]``. Tests
call :func:`build_job` with their own environment.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections.abc import Sequence
from typing import Any

from pyspark_datastream import (
    Configuration,
    DataStream,
    Duration,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    TimestampAssigner,
    Types,
    WatermarkStrategy,
)
from pyspark_datastream.temporal_functions import TemporalJoin

__all__ = [
    "ORDER_TYPE",
    "RATE_TYPE",
    "JOINED_TYPE",
    "OrderTime",
    "RateTime",
    "convert",
    "build_job",
    "generate_orders_and_rates",
    "main",
]

#: An order: ``(order_id, currency, amount, order_time_ms)``.
ORDER_TYPE = Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE(), Types.LONG()])
#: A rate update: ``(currency, rate, valid_from_ms)``.
RATE_TYPE = Types.TUPLE([Types.STRING(), Types.DOUBLE(), Types.LONG()])
#: A joined order: ``(order_id, currency, amount, order_time, rate, rate_time, converted)``.
JOINED_TYPE = Types.TUPLE([
    Types.STRING(), Types.STRING(), Types.DOUBLE(), Types.LONG(), Types.DOUBLE(), Types.LONG(),
    Types.DOUBLE(),
])


class OrderTime(TimestampAssigner):
    """Event time of an order is field 3."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[3])


class RateTime(TimestampAssigner):
    """Event time of a rate is field 2."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[2])


def convert(order: tuple[str, str, float, int], rate: tuple[str, float, int]) -> tuple[Any, ...]:
    """The joined record of an order and the rate valid at its time."""
    order_id, currency, amount, order_time = order
    return (order_id, currency, amount, order_time, rate[1], rate[2], amount * rate[1])


def build_job(
    env: StreamExecutionEnvironment,
    orders: Sequence[tuple[str, str, float, int]],
    rates: Sequence[tuple[str, float, int]],
    max_out_of_orderness_ms: int = 5_000,
) -> DataStream:
    """The join job on ``env``: the stream of joined orders."""
    bound = Duration.of_millis(max_out_of_orderness_ms)
    order_stream = env.from_collection(list(orders), ORDER_TYPE).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(bound).with_timestamp_assigner(OrderTime())
    )
    rate_stream = env.from_collection(list(rates), RATE_TYPE).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(bound).with_timestamp_assigner(RateTime())
    )
    return (
        order_stream.connect(rate_stream)
        .key_by(lambda order: order[1], lambda rate: rate[0], key_type=Types.STRING())
        .process(TemporalJoin(ORDER_TYPE, RATE_TYPE, convert), output_type=JOINED_TYPE)
        .name("TemporalJoin")
    )


def generate_orders_and_rates(
    currencies: int, orders_per_currency: int, rates_per_currency: int, seed: int = 5
) -> tuple[list[tuple[str, str, float, int]], list[tuple[str, float, int]]]:
    """Deterministic, out-of-order orders and rate updates over the same time span."""
    rng = random.Random(seed)
    span = 60_000
    orders: list[tuple[str, str, float, int]] = []
    rates: list[tuple[str, float, int]] = []
    for c in range(currencies):
        currency = f"C{c:02d}"
        stamps = sorted(rng.sample(range(0, span, 10), rates_per_currency))
        for t in stamps:
            rates.append((currency, round(rng.uniform(0.5, 2.0), 4), t))
        for i in range(orders_per_currency):
            orders.append((f"{currency}-o{i}", currency, float(rng.randint(1, 500)),
                           rng.randrange(0, span)))
    rng.shuffle(orders)
    rng.shuffle(rates)
    return orders, rates


def main(argv: Sequence[str] | None = None) -> int:
    """Join generated orders and rates on a local Spark session and print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("BATCH", "STREAMING"), default="BATCH")
    parser.add_argument("--currencies", type=int, default=3)
    parser.add_argument("--orders", type=int, default=20, help="orders per currency")
    parser.add_argument("--rates", type=int, default=8, help="rate updates per currency")
    args = parser.parse_args(argv)

    orders, rates = generate_orders_and_rates(args.currencies, args.orders, args.rates)
    conf = Configuration()
    with tempfile.TemporaryDirectory(prefix="temporal-join-") as checkpoints:
        conf.set_string("execution.checkpointing.dir", checkpoints)
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.set_runtime_mode(RuntimeExecutionMode[args.mode])
        env.set_parallelism(2)
        joined = sorted(build_job(env, orders, rates).execute_and_collect("temporal-join"))

    print(f"temporal join ({args.mode}): {len(orders)} orders, {len(rates)} rate updates over "
          f"{args.currencies} currencies -> {len(joined)} joined "
          f"({len(orders) - len(joined)} orders before the first rate of their currency)")
    for record in joined[:6]:
        order_id, currency, amount, order_time, rate, rate_time, converted = record
        print(f"    {order_id}: {amount:g} {currency} at t={order_time} x rate {rate} "
              f"(valid from t={rate_time}) = {converted:.4f}")
    bad = [r for r in joined if r[5] > r[3]]
    return 0 if not bad else 1


if __name__ == "__main__":  # pragma: no cover - command line entry
    raise SystemExit(main())
