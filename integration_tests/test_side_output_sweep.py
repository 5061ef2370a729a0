"""Randomized graphs whose side outputs are consumed in several ways, each sink's records
compared with a plain-Python model of Flink's semantics.

A seeded generator picks, per graph: the splitting stage (a ProcessFunction, a
KeyedProcessFunction, a CoProcessFunction or a KeyedCoProcessFunction, with or without an
``output_type``), the input (a few hundred records over a few dozen keys) and a set of
consumers of the main output and of both side outputs: a sink on the main output itself, a
union of main and side, a connect of side and main, a broadcast of a side output read by the
main output, a keyed reduce over a side output, Delta sinks, ``execute_and_collect()``,
``to_dataframe()`` and a savepoint-writing run. Every consumer feeds a sink of the same job
(one ``execute``), so several sinks read the same tagged stream: a sink of its own in BATCH;
in STREAMING, where each sink is one query, the main output's and the ``five`` side output's
own sinks and one shared by the other consumers (a union of their records tagged with the
consumer's name).

The model computes what each consumer must receive from the input alone: the splitter is a
pure function of the record (its keyed variants also count per key, an order-free total), a
reduce's final value per key, and STREAMING's intermediate values as a count.
"""

from __future__ import annotations

import random

import pytest
from deltalake import DeltaTable
from pyspark_datastream import (
    BroadcastProcessFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    MapStateDescriptor,
    OutputTag,
    ProcessFunction,
    Types,
)

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
LOW = OutputTag("low", PAIR)  # (key, value) of records with value % 3 == 0
FIVE = OutputTag("five", Types.LONG())  # the value of records with value % 5 == 0 (also)
RULES = MapStateDescriptor("rules", Types.LONG(), Types.LONG())


def _split(value):
    """The splitter's outputs for one record: (main or None, low or None, five or None)."""
    k, v = value[0], value[1]
    main = None if v % 3 == 0 else (k, v * 2)
    low = (k, v) if v % 3 == 0 else None
    five = v if v % 5 == 0 else None
    return main, low, five


def _emit(value, ctx):
    main, low, five = _split(value)
    if low is not None:
        ctx.output(LOW, low)
    if five is not None:
        ctx.output(FIVE, five)
    if main is not None:
        yield main


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        yield from _emit(value, ctx)


class KeyedSplit(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield from _emit(value, ctx)


class CoSplit(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield from _emit(value, ctx)

    def process_element2(self, value, ctx):
        yield from _emit(value, ctx)


class KeyedCoSplit(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield from _emit(value, ctx)

    def process_element2(self, value, ctx):
        yield from _emit(value, ctx)


class Tag(CoMapFunction):
    def map1(self, value):
        return ("low", value[1])

    def map2(self, value):
        return ("main", value[1])


class ReadRules(BroadcastProcessFunction):
    """Main records pass through (the broadcast side only fills broadcast state)."""

    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value, value)


CONSUMERS = ("main", "union", "connect", "broadcast", "reduce", "five")


def _graph(seed: int):
    rng = random.Random(seed)
    n_keys = rng.randint(5, 40)
    data = [(f"k{rng.randrange(n_keys)}", rng.randrange(1000)) for _ in range(rng.randint(150, 400))]
    cut = rng.randrange(len(data))
    kind = rng.choice(["process", "keyed", "co", "keyed_co"])
    typed = rng.random() < 0.5
    consumers = rng.sample(CONSUMERS, rng.randint(2, len(CONSUMERS)))
    return data, cut, kind, typed, consumers


def _model(data, consumer, mode):
    mains, lows, fives = [], [], []
    for record in data:
        main, low, five = _split(record)
        if main is not None:
            mains.append(main)
        if low is not None:
            lows.append(low)
        if five is not None:
            fives.append(five)
    if consumer == "main":
        return sorted(mains)
    if consumer == "union":
        return sorted(mains + lows)
    if consumer == "connect":
        return sorted([("low", v) for _, v in lows] + [("main", v) for _, v in mains])
    if consumer == "broadcast":
        return sorted(mains)
    if consumer == "five":
        return sorted(fives)
    totals: dict[str, int] = {}
    for k, v in lows:
        totals[k] = totals.get(k, 0) + v
    return sorted(totals.items())


SEEDS = [7, 17, 29, 37]  # their splitters: keyed, process, co, keyed_co
TAGGED = Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()])  # consumer, key, value


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_consumer_of_a_split_stream_gets_exactly_its_records(spark, env_factory, tmp_path,
                                                                  mode, seed):
    """In BATCH every consumer has a Delta sink of its own. In STREAMING (where each sink is
    one query) the main output and the ``five`` side output keep theirs, and the other
    consumers, tagged with their name, share one sink through a union: three sinks, two of
    them reading the main output's tagged stream."""
    data, cut, kind, typed, consumers = _graph(seed)
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    first = env.from_collection(data[:cut], type_info=PAIR)
    second = env.from_collection(data[cut:], type_info=PAIR)
    out_type = PAIR if typed else None
    if kind == "process":
        main = first.union(second).process(Split(), output_type=out_type)
    elif kind == "keyed":
        main = first.union(second).key_by(lambda r: r[0]).process(KeyedSplit(),
                                                                 output_type=out_type)
    elif kind == "co":
        main = first.connect(second).process(CoSplit(), output_type=out_type)
    else:
        main = first.connect(second).key_by(lambda r: r[0], lambda r: r[0]) \
            .process(KeyedCoSplit(), output_type=out_type)
    low, five = main.get_side_output(LOW), main.get_side_output(FIVE)
    streams = {
        "main": main,
        "union": main.union(low),
        "connect": low.connect(main).map(Tag()),
        "broadcast": main.connect(five.broadcast(RULES)).process(ReadRules()),
        "reduce": low.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])),
        "five": five,
    }
    types = {"connect": Types.TUPLE([Types.STRING(), Types.LONG()]), "five": Types.LONG()}
    tables, tagged = {}, []
    for name in consumers:
        if mode == "STREAMING" and name not in ("main", "five"):
            tagged.append(streams[name].map(lambda r, name=name: (name, r[0], r[1]),
                                            output_type=TAGGED))
            continue
        if name == "five" or (name == "main" and typed):  # the sink on the stream itself
            typed_out = streams[name]
        else:  # a map gives the stream a type a Delta sink can write
            typed_out = streams[name].map(lambda r: r, output_type=types.get(name, PAIR))
        tables[name] = str(tmp_path / f"out_{name}")
        typed_out.sink_to_delta(tables[name])
    if tagged:
        shared = tagged[0].union(*tagged[1:]) if len(tagged) > 1 else tagged[0]
        shared.sink_to_delta(str(tmp_path / "out_tagged"))
    savepoint = str(tmp_path / "sp") if (kind in ("keyed", "keyed_co") and seed % 2) else None
    env.execute(f"sweep {seed}", savepoint_path=savepoint)
    got_of = {}
    for name in tables:
        table = DeltaTable(tables[name]).to_pyarrow_table()
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        got_of[name] = sorted(zip(*columns)) if len(columns) > 1 else sorted(columns[0])
    if tagged:
        rows = DeltaTable(str(tmp_path / "out_tagged")).to_pyarrow_table().to_pylist()
        for name in consumers:
            if name not in tables:
                got_of[name] = sorted((r["f1"], r["f2"]) for r in rows if r["f0"] == name)
        assert {r["f0"] for r in rows} <= set(consumers)
    assert sorted(got_of) == sorted(consumers)
    for name in consumers:
        got, expected = got_of[name], _model(data, name, mode)
        if name == "reduce" and mode == "STREAMING":  # every running value: keep the last
            last: dict[str, int] = {}
            for k, v in got:
                last[k] = max(last.get(k, 0), v)
            assert len(got) == sum(1 for r in data if r[1] % 3 == 0), (seed, name)
            got = sorted(last.items())
        assert got == expected, (seed, kind, typed, name)

    if seed != SEEDS[0]:  # the same job for every seed: run once per mode
        return
    # the main output once more, collected and (BATCH) as a DataFrame, in a new job
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt2")})
    main = env.from_collection(data, type_info=PAIR).key_by(lambda r: r[0]).process(
        KeyedSplit(), output_type=PAIR)
    main.get_side_output(LOW).print()
    assert sorted(main.execute_and_collect()) == _model(data, "main", mode)
    if mode == "BATCH":
        assert sorted(tuple(r) for r in main.to_dataframe().collect()) == _model(
            data, "main", mode)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_an_identity_map_over_a_shared_typed_side_output(env_factory, tmp_path, mode):
    """Found by the sweep: a LONG side output read by two consumers is kept as a typed
    one-column stream, and ``map(lambda r: r)`` over it (traced as the whole record) failed
    to build with an AttributeError."""
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    data = [("a", 5), ("b", 3), ("c", 10), ("d", 7)]
    main = env.from_collection(data, type_info=PAIR).process(Split(), output_type=PAIR)
    five = main.get_side_output(FIVE)
    five.map(lambda r: r, output_type=Types.LONG()).sink_to_delta(str(tmp_path / "a"))
    five.map(lambda r: r * 2, output_type=Types.LONG()).sink_to_delta(str(tmp_path / "b"))
    env.execute("identity")
    assert sorted(DeltaTable(str(tmp_path / "a")).to_pyarrow_table().column(0).to_pylist()) \
        == [5, 10]
    assert sorted(DeltaTable(str(tmp_path / "b")).to_pyarrow_table().column(0).to_pylist()) \
        == [10, 20]
