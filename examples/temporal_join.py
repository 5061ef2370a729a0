"""Event-time temporal join with BinarySortedState (FLIP-220's temporal join example).

Orders are joined to the currency rate that was valid at the order's event time
(``FOR SYSTEM_TIME AS OF order_time`` in SQL terms): the rate with the greatest
timestamp ``<=`` the order's. Rates arrive as a second stream; both are keyed by
currency and processed by one ``KeyedCoProcessFunction``:

* an order waits in a sorted state keyed by its event time, with an event-time
  timer at that time, until the watermark passes it (later rates might still
  arrive for it before that);
* a rate is stored in a sorted state keyed by its event time (one value per
  timestamp: the latest update wins), with a timer too, so old rates are pruned
  even when no order comes;
* a timer at ``t`` joins the orders due (``read_range_until(t, True)``) with
  the rate valid at their time (``rates.last_entry(order_time)``; one lookup at
  ``t`` serves every due order not older than that rate) and drops them
  (``clear_range_until(t, True)``);
* when a rate becomes valid (the timer at a rate's own time), every older rate
  is pruned (``clear_range_until(t, False)``): no order that can still come
  (time ``> watermark >= t``) needs them.

It is an inner join: an order with no rate at or before its time produces
nothing. Orders that arrive already late (time <= watermark) are dropped, since
the rates they need may have been pruned. Output records are
``(order_id, currency, amount, order_time, rate, rate_time, amount * rate)``.

Run it: ``python -m examples.temporal_join [--mode BATCH|STREAMING]``. Tests
call :func:`build_job` with their own environment.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark_datastream import (
    BinarySortedStateDescriptor,
    Configuration,
    DataStream,
    Duration,
    KeyedCoProcessFunction,
    LexicographicLongSerializer,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    TimestampAssigner,
    Types,
    WatermarkStrategy,
)

__all__ = [
    "ORDER_TYPE",
    "RATE_TYPE",
    "JOINED_TYPE",
    "OrderTime",
    "RateTime",
    "TemporalJoin",
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


class TemporalJoin(KeyedCoProcessFunction):
    """Joins each order (input 1) with the rate (input 2) valid at the order's time."""

    def open(self, runtime_context: Any) -> None:
        lex_long = LexicographicLongSerializer.INSTANCE
        self.orders = runtime_context.get_binary_sorted_state(
            BinarySortedStateDescriptor("orders", lex_long, ORDER_TYPE)
        )
        self.rates = runtime_context.get_binary_sorted_state(
            BinarySortedStateDescriptor("rates", lex_long, Types.DOUBLE())
        )

    def process_element1(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        timers = ctx.timer_service()
        if timestamp <= timers.current_watermark():
            return  # late: the rate valid then may already be pruned
        self.orders.add(timestamp, value)
        timers.register_event_time_timer(timestamp)

    def process_element2(self, value: Any, ctx: Any) -> None:
        timestamp = ctx.timestamp()
        self.rates.put(timestamp, [value[1]])
        ctx.timer_service().register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        # the rate valid at the timer's time is also the one valid for every due order
        # at or after it; only an order older than that rate needs its own lookup
        valid = self.rates.last_entry(timestamp)
        out = []
        due = list(self.orders.read_range_until(timestamp, True))
        for order_time, orders in due:
            if valid is None:
                break  # no rate at or before any due order
            entry = valid if valid[0] <= order_time else self.rates.last_entry(order_time)
            if entry is None:
                continue
            rate_time, rate = entry[0], entry[1][-1]
            for order_id, currency, amount, _ in orders:
                out.append((order_id, currency, amount, order_time, rate, rate_time, amount * rate))
        if due:
            self.orders.clear_range_until(timestamp, True)
        if valid is not None and valid[0] == timestamp:
            # a rate became valid: no order still to come (time > watermark >= timestamp)
            # can need an older one
            self.rates.clear_range_until(timestamp, False)
        return iter(out)


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
        .process(TemporalJoin(), output_type=JOINED_TYPE)
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
