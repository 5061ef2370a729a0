"""A Kafka pipeline as a PyFlink user writes it: ``KafkaSource`` -> keyed process ->
``KafkaSink`` with ``DeliveryGuarantee.EXACTLY_ONCE``.

Payments arrive on a topic as JSON objects ``{"account": ..., "amount": ...}``. Per account, a
``KeyedProcessFunction`` keeps the running balance in ``ValueState`` and emits it with every
payment; the first time an account's balance goes below zero it also emits an overdraft
alert (a second ``ValueState`` remembers that it did). The results go to a second topic as
JSON objects, each exactly once for ``read_committed`` consumers, across restarts.

The job runs in STREAMING mode; each run reads what arrived since the last one (the offsets
live in the checkpoint) and continues the balances, as a scheduled ``available-now`` job
does. Only the imports differ from the PyFlink program.

Run it: ``python -m examples.kafka_pipeline --bootstrap-servers HOST:PORT --input payments
--output balances --checkpoints DIR --jars file:///.../spark-sql-kafka-0-10_2.13-<spark>.jar,...``
(Spark's Kafka connector and its dependencies, as ``env.add_jars`` takes them; ``make setup``
puts them in ``<venv>/jars``). Tests call :func:`build_job` with their own session.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pyspark_datastream import (
    Configuration,
    DeliveryGuarantee,
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KeyedProcessFunction,
    Row,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

__all__ = ["PAYMENT", "BALANCE", "Balances", "build_job", "main"]

#: A payment: the account and the amount (negative: a withdrawal).
PAYMENT = Types.ROW_NAMED(["account", "amount"], [Types.STRING(), Types.LONG()])
#: A result: the account, its balance after the payment, and whether this payment is the
#: account's first overdraft.
BALANCE = Types.ROW_NAMED(["account", "balance", "overdraft"],
                          [Types.STRING(), Types.LONG(), Types.BOOLEAN()])


class Balances(KeyedProcessFunction):
    """Emits each account's balance after every payment, flagging its first overdraft."""

    def open(self, runtime_context: Any) -> None:
        self.balance = runtime_context.get_state(ValueStateDescriptor("balance", Types.LONG()))
        self.alerted = runtime_context.get_state(ValueStateDescriptor("alerted", Types.BOOLEAN()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        balance = (self.balance.value() or 0) + value.amount
        self.balance.update(balance)
        overdraft = balance < 0 and not self.alerted.value()
        if overdraft:
            self.alerted.update(True)
        yield Row(account=value.account, balance=balance, overdraft=overdraft)


def build_job(env: StreamExecutionEnvironment, bootstrap_servers: str, input_topic: str,
              output_topic: str) -> None:
    """Declare the pipeline on ``env`` (``env.execute`` runs it).

    Args:
        env: A STREAMING environment with a checkpoint directory.
        bootstrap_servers: The Kafka brokers.
        input_topic: The payments topic.
        output_topic: The balances topic.
    """
    source = (KafkaSource.builder()
              .set_bootstrap_servers(bootstrap_servers)
              .set_topics(input_topic)
              .set_group_id("balances")
              .set_starting_offsets(KafkaOffsetsInitializer.earliest())
              .set_value_only_deserializer(
                  JsonRowDeserializationSchema.builder().type_info(PAYMENT).build())
              .build())
    sink = (KafkaSink.builder()
            .set_bootstrap_servers(bootstrap_servers)
            .set_record_serializer(
                KafkaRecordSerializationSchema.builder()
                .set_topic(output_topic)
                .set_value_serialization_schema(
                    JsonRowSerializationSchema.builder().with_type_info(BALANCE).build())
                .build())
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .set_transactional_id_prefix(f"balances-{output_topic}")
            .build())
    (env.from_source(source, WatermarkStrategy.no_watermarks(), "Payments")
        .key_by(lambda payment: payment.account, key_type=Types.STRING())
        .process(Balances(), output_type=BALANCE)
        .name("Balances")
        .sink_to(sink))


def main(argv: Sequence[str] | None = None) -> None:
    """Run the pipeline once over what the input topic holds (see the module docstring).

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--jars", default="", help="comma-separated jar URLs for add_jars")
    args = parser.parse_args(argv)
    config = Configuration()
    config.set_string("execution.checkpointing.dir", args.checkpoints)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    if args.jars:
        env.add_jars(*args.jars.split(","))
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    build_job(env, args.bootstrap_servers, args.input, args.output)
    env.execute("kafka-balances")


if __name__ == "__main__":
    main()
