"""Dynamic alert rules with broadcast state (Flink's broadcast state pattern).

A low-volume stream of rules ``(rule, threshold)`` is broadcast to every parallel
instance of a ``KeyedBroadcastProcessFunction`` that checks card transactions
``(card, amount, time)`` keyed by card:

* ``process_broadcast_element`` keeps the rules in a broadcast ``MapState`` (a negative
  threshold deletes the rule; the rule ``reset`` clears every card's running spend with
  ``ctx.apply_to_keyed_state``);
* ``process_element`` reads the rules (read-only), adds the amount to the card's running
  spend (keyed ``ValueState``) and emits ``(card, rule, amount, spend)`` for every rule whose
  threshold the transaction's amount reaches; a card whose spend exceeds 1,000 also goes
  to the ``over-limit`` side output.

In BATCH every rule is applied before any transaction (Flink's rule for broadcast
inputs); in STREAMING a micro-batch's rules are applied before its transactions. Here
both inputs are bounded collections, so both modes give the same alerts.

Run it: ``python -m examples.broadcast_rules [--mode BATCH|STREAMING] [--cards N]
[--transactions N]``. Tests call :func:`build_job` with their own environment.
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
    KeyedBroadcastProcessFunction,
    MapStateDescriptor,
    OutputTag,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

__all__ = [
    "ALERT_TYPE",
    "OVER_LIMIT",
    "RULES",
    "RuleAlerts",
    "build_job",
    "generate",
    "main",
]

#: The broadcast state: rule name -> threshold.
RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
#: A card's running spend.
SPEND = ValueStateDescriptor("spend", Types.LONG())
#: Cards whose running spend passed :data:`LIMIT`: ``(card, spend)``.
OVER_LIMIT = OutputTag("over-limit", Types.TUPLE([Types.STRING(), Types.LONG()]))
LIMIT = 1_000
#: An alert: ``(card, rule, amount, running spend)``.
ALERT_TYPE = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG(), Types.LONG()])


class RuleAlerts(KeyedBroadcastProcessFunction):
    """Transactions checked against the rules in force (see the module docstring)."""

    def open(self, runtime_context: Any) -> None:
        self.spend = runtime_context.get_state(SPEND)

    def process_broadcast_element(self, value: Any, ctx: Any) -> None:
        rule, threshold = value
        if rule == "reset":
            ctx.apply_to_keyed_state(SPEND, lambda card, spend: spend.clear())
        elif threshold < 0:
            ctx.get_broadcast_state(RULES).remove(rule)
        else:
            ctx.get_broadcast_state(RULES).put(rule, threshold)

    def process_element(self, value: Any, ctx: Any) -> Any:
        card, amount, _time = value
        spend = (self.spend.value() or 0) + amount
        self.spend.update(spend)
        for rule, threshold in sorted(ctx.get_broadcast_state(RULES).items()):
            if amount >= threshold:
                yield (card, rule, amount, spend)
        if spend > LIMIT >= spend - amount:
            yield OVER_LIMIT, (card, spend)


def build_job(env: StreamExecutionEnvironment, rules: Sequence[tuple[str, int]],
              transactions: Sequence[tuple[str, int, int]]) -> DataStream:
    """The alert stream over ``rules`` and ``transactions`` on ``env`` (its side output
    :data:`OVER_LIMIT` holds the cards over the limit)."""
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
                .with_timestamp_assigner(lambda t, _: t[2]))
    broadcast_rules = env.from_collection(list(rules)).broadcast(RULES)
    return (env.from_collection(list(transactions))
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda t: t[0], key_type=Types.STRING())
            .connect(broadcast_rules)
            .process(RuleAlerts(), output_type=ALERT_TYPE)
            .name("RuleAlerts").uid("rule-alerts"))


def generate(cards: int, transactions: int, seed: int = 7
             ) -> tuple[list[tuple[str, int]], list[tuple[str, int, int]]]:
    """Rules (updated, one deleted, a reset) and transactions in time order."""
    rng = random.Random(seed)
    rules = [("large", 400), ("medium", 150), ("small", 50), ("reset", 0), ("small", -1),
             ("medium", 200)]
    out = []
    for i in range(transactions):
        out.append((f"card-{rng.randrange(cards):02d}", rng.choice((20, 60, 180, 250, 420, 600)),
                    1_000 * i))
    return rules, out


def _expected(rules: Sequence[tuple[str, int]], transactions: Sequence[tuple[str, int, int]]
              ) -> list[tuple[str, str, int, int]]:
    in_force: dict[str, int] = {}
    for rule, threshold in rules:  # every rule first; the reset has no spend to clear yet
        if threshold < 0:
            in_force.pop(rule, None)
        elif rule != "reset":
            in_force[rule] = threshold
    spend: dict[str, int] = {}
    out = []
    for card, amount, _ in transactions:
        spend[card] = spend.get(card, 0) + amount
        out += [(card, r, amount, spend[card]) for r, t in sorted(in_force.items()) if amount >= t]
    return sorted(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Check generated transactions against the rules on Spark and print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("BATCH", "STREAMING"), default="BATCH")
    parser.add_argument("--cards", type=int, default=5)
    parser.add_argument("--transactions", type=int, default=40)
    args = parser.parse_args(argv)

    rules, transactions = generate(args.cards, args.transactions)
    conf = Configuration()
    with tempfile.TemporaryDirectory(prefix="broadcast-rules-") as checkpoints:
        conf.set_string("execution.checkpointing.dir", checkpoints)
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.set_runtime_mode(RuntimeExecutionMode[args.mode])
        env.set_parallelism(2)
        alerts = sorted(build_job(env, rules, transactions)
                        .execute_and_collect(f"broadcast-rules-{args.mode.lower()}"))

    expected = _expected(rules, transactions)
    print(f"broadcast rules ({args.mode}): {len(rules)} rule updates, {len(transactions)} "
          f"transactions of {args.cards} cards -> {len(alerts)} alerts "
          f"({'as expected' if alerts == expected else 'NOT as expected'})")
    for alert in alerts[:6]:
        print(f"    {alert}")
    return 0 if alerts == expected else 1


if __name__ == "__main__":  # pragma: no cover - command line entry
    raise SystemExit(main())
