"""The temporal sort, temporal join, state TTL, broadcast rules and Kafka pipeline examples on
real Spark (the Kafka one against a real broker), in BATCH and STREAMING.

Expected outputs are computed here from the input data alone (a stable sort per
key; the greatest rate time <= order time per order), not by the examples' code.
Each example runs once per mode (Spark queries cost seconds each on 2 cores).
"""

from __future__ import annotations

import json
import random
import uuid
from collections import defaultdict
from typing import Any

import pytest
from helpers import env_on

from examples import broadcast_rules, kafka_pipeline, temporal_join, temporal_sort, ttl_example

MODES = ("BATCH", "STREAMING")


def _env(spark: Any, mode: str, tmp_path: Any) -> Any:
    """:func:`helpers.env_on` checkpointing under ``tmp_path`` (module-scoped fixtures)."""
    return env_on(spark, mode, {"execution.checkpointing.dir": str(tmp_path / f"ckpt-{mode}")})


# -- temporal sort ------------------------------------------------------------------------------

def _sort_input() -> list[tuple[str, int, str]]:
    events = temporal_sort.generate_events(keys=3, events_per_key=10, seed=3)
    # hand-made key: ties, a timestamp at 0, a large jump, arrival far from time order
    events += [("tie", 7_000, "t1"), ("tie", 0, "t0"), ("tie", 7_000, "t2"),
               ("tie", 3_000, "t3"), ("tie", 7_000, "t4"), ("tie", 1 << 40, "t5")]
    return events


def _per_key(records: list[tuple[str, int, str]]) -> dict[str, list[tuple[str, int, str]]]:
    out: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for record in records:
        out[record[0]].append(record)
    return dict(out)


@pytest.fixture(scope="module")
def sorted_outputs(spark: Any, tmp_path_factory: Any) -> dict[str, list[Any]]:
    events = _sort_input()
    tmp = tmp_path_factory.mktemp("sort")
    return {
        mode: list(temporal_sort.build_job(_env(spark, mode, tmp), events)
                   .execute_and_collect(f"temporal-sort-{mode.lower()}"))
        for mode in MODES
    }


def test_temporal_sort_streaming_emits_each_key_in_time_order_ties_in_arrival_order(
        sorted_outputs: dict[str, list[Any]]) -> None:
    # sorted() is stable: events with equal times keep their arrival order
    expected = {key: sorted(events, key=lambda e: e[1])
                for key, events in _per_key(_sort_input()).items()}
    assert _per_key(sorted_outputs["STREAMING"]) == expected
    assert [e[2] for e in expected["tie"]] == ["t0", "t3", "t1", "t2", "t4", "t5"]


def test_temporal_sort_batch_equals_streaming(sorted_outputs: dict[str, list[Any]]) -> None:
    batch, streaming = _per_key(sorted_outputs["BATCH"]), _per_key(sorted_outputs["STREAMING"])
    assert set(batch) == set(streaming) == {"sensor-000", "sensor-001", "sensor-002", "tie"}
    for key, records in streaming.items():
        # BATCH sorts its input by (key, time) with Spark: the order of ties is unspecified
        assert [r[1] for r in batch[key]] == [r[1] for r in records]
        assert sorted(batch[key]) == sorted(records)


# -- temporal join ------------------------------------------------------------------------------

def _join_input() -> tuple[list[Any], list[Any]]:
    orders, rates = temporal_join.generate_orders_and_rates(
        currencies=2, orders_per_currency=12, rates_per_currency=4, seed=9)
    first_c00 = min(t for c, _, t in rates if c == "C00")
    orders += [
        ("at-rate-time", "C00", 3.0, first_c00),    # a rate valid from exactly its time
        ("before-rates", "C00", 2.0, first_c00 - 1),  # no rate yet: inner join drops it
        ("no-rates", "XXX", 1.0, 500),               # a currency without any rate
        ("zero", "C01", 4.0, 0),
    ]
    rates += [("C01", 1.25, 0), ("YYY", 9.0, 100)]  # a rate at time 0; a rate without orders
    return orders, rates


def _expected_join(orders: list[Any], rates: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for order_id, currency, amount, order_time in orders:
        valid = [(t, r) for c, r, t in rates if c == currency and t <= order_time]
        if valid:
            rate_time, rate = max(valid)
            out.append((order_id, currency, amount, order_time, rate, rate_time, amount * rate))
    return sorted(out)


@pytest.fixture(scope="module")
def joined_outputs(spark: Any, tmp_path_factory: Any) -> dict[str, list[Any]]:
    orders, rates = _join_input()
    tmp = tmp_path_factory.mktemp("join")
    return {
        mode: sorted(temporal_join.build_job(_env(spark, mode, tmp), orders, rates)
                     .execute_and_collect(f"temporal-join-{mode.lower()}"))
        for mode in MODES
    }


@pytest.mark.parametrize("mode", MODES)
def test_temporal_join_uses_the_rate_valid_at_each_order(
        joined_outputs: dict[str, list[Any]], mode: str) -> None:
    orders, rates = _join_input()
    expected = _expected_join(orders, rates)
    assert joined_outputs[mode] == expected
    ids = {record[0] for record in expected}
    assert "at-rate-time" in ids and "zero" in ids
    assert "before-rates" not in ids and "no-rates" not in ids
    assert len(expected) >= 20


def test_temporal_join_batch_equals_streaming(joined_outputs: dict[str, list[Any]]) -> None:
    assert joined_outputs["BATCH"] == joined_outputs["STREAMING"]


# -- state TTL: deduplication within a time-to-live ----------------------------------------------

def test_ttl_dedup_drops_repeats_within_the_ttl_and_forgets_ids_after_it(spark, tmp_path):
    outputs = ttl_example.run_rounds(spark, ttl_example.ROUNDS, ttl_ms=1_500,
                                     work_dir=str(tmp_path))
    # each round runs more than the TTL after the previous one: every id is new again in it,
    # and its own repeats (one micro-batch, one processing time) are within the TTL
    expected = [sorted(dict.fromkeys(events)) for events in ttl_example.ROUNDS]
    assert [sorted(out) for out in outputs] == expected
    assert [len(out) for out in outputs] == [3, 3]


# -- broadcast rules ----------------------------------------------------------------------------

def _rule_alerts(rules: list[Any], transactions: list[Any]) -> tuple[list[Any], list[Any]]:
    """Flink's semantics stated directly: every rule update applies before any transaction
    (BATCH's rule; in STREAMING both bounded inputs arrive in one micro-batch, whose rules come
    first); a card's spend accumulates in time order; the reset finds no spend yet."""
    thresholds: dict[str, int] = {}
    for name, threshold in rules:
        if name == "reset":
            continue
        if threshold < 0:
            thresholds.pop(name, None)
        else:
            thresholds[name] = threshold
    spend: dict[str, int] = defaultdict(int)
    alerts, over = [], []
    for card, amount, _time in sorted(transactions, key=lambda t: t[2]):
        spend[card] += amount
        alerts += [(card, name, amount, spend[card])
                   for name, threshold in sorted(thresholds.items()) if amount >= threshold]
        if spend[card] > 1_000 >= spend[card] - amount:
            over.append((card, spend[card]))
    return sorted(alerts), sorted(over)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_rules_alerts_match_the_rules_in_force(spark: Any, tmp_path: Any,
                                                         mode: str) -> None:
    rules, transactions = broadcast_rules.generate(cards=4, transactions=30)
    expected, over = _rule_alerts(rules, transactions)
    assert {a[1] for a in expected} == {"large", "medium"}  # "small" was deleted
    assert over
    job = broadcast_rules.build_job(_env(spark, mode, tmp_path), rules, transactions)
    if mode == "BATCH":
        assert sorted(job.get_side_output(broadcast_rules.OVER_LIMIT)
                      .execute_and_collect("broadcast-rules-over")) == over
    assert sorted(job.execute_and_collect(f"broadcast-rules-{mode.lower()}")) == expected


def test_broadcast_rules_example_runs_as_a_program(spark: Any, capsys: Any) -> None:
    assert broadcast_rules.main(["--mode", "STREAMING", "--cards", "3",
                                 "--transactions", "12"]) == 0
    assert "as expected" in capsys.readouterr().out


# -- Kafka pipeline (exactly-once, two runs) ------------------------------------------------------

def _payments(seed: int, n: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)  # withdrawals outweigh deposits now and then: overdrafts
    return [(f"acct-{rng.randrange(5)}", rng.randint(-120, 100)) for _ in range(n)]


def _balances(payments: list[tuple[str, int]]) -> list[tuple[str, int, bool]]:
    """Per account in arrival order: the balance after each payment, and whether it is the
    account's first one below zero."""
    balance: dict[str, int] = defaultdict(int)
    alerted: set[str] = set()
    out = []
    for account, amount in payments:
        balance[account] += amount
        first = balance[account] < 0 and account not in alerted
        if first:
            alerted.add(account)
        out.append((account, balance[account], first))
    return out


def test_kafka_pipeline_writes_each_balance_once_across_two_runs(
        spark: Any, kafka_broker: Any, tmp_path: Any) -> None:
    from kafka_broker import consume_all, produce

    name = uuid.uuid4().hex[:8]
    payments_topic, balances_topic = f"payments-{name}", f"balances-{name}"
    kafka_broker.create_topic(payments_topic, 3)
    kafka_broker.create_topic(balances_topic, 2)
    first, second = _payments(11, 60), _payments(12, 40)
    for batch in (first, second):
        # keyed by account: Kafka keeps each account's payments in order in one partition
        produce(kafka_broker.bootstrap_servers, payments_topic,
                [(a, json.dumps({"account": a, "amount": amount})) for a, amount in batch])
        env = _env(spark, "STREAMING", tmp_path)
        kafka_pipeline.build_job(env, kafka_broker.bootstrap_servers, payments_topic,
                                 balances_topic)
        env.execute("kafka-balances")  # the same job: the second run resumes its checkpoint
    got = [json.loads(v) for v in consume_all(kafka_broker.bootstrap_servers, balances_topic)]
    # each balance depends on every earlier payment of its account, in order, across runs
    expected = _balances(first + second)
    assert sorted((r["account"], r["balance"], r["overdraft"]) for r in got) == sorted(expected)
    assert any(flag for _, _, flag in expected)  # the data exercises the alert
