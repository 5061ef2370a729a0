"""Records of ``Types.ROW`` / ``Types.ROW_NAMED`` streams are named Rows, as PyFlink gives
them (#16): from ``from_collection`` with ROW type info, after an operator declared a ROW
``output_type``, from ``from_dataframe``; a ported program reads ``value.info`` (it failed on
plain tuples) while code written for tuples keeps working."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    FlatMapFunction,
    GraphBuildError,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    OutputTypeError,
    ProcessFunction,
    Row,
    Time,
    TumblingEventTimeWindows,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

ROWS = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_named_rows_from_a_collection(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    data = [(1, "a"), Row(id=2, info="b"), {"id": 1, "info": "c"}]
    ds = env.from_collection(data, type_info=ROWS)
    described = ds.map(lambda v: f"{v.id}:{v.info}:{v[1]}:{v.as_dict()['id']}",
                       output_type=Types.STRING())
    assert sorted(described.execute_and_collect()) == ["1:a:a:1", "1:c:c:1", "2:b:b:2"]
    merged = ds.key_by(lambda v: v.id, key_type=Types.INT()).reduce(
        lambda a, b: Row(id=a.id, info="".join(sorted(a.info + b.info))))
    got = list(merged.execute_and_collect())  # STREAMING: every intermediate value too
    assert all(isinstance(r, Row) for r in got)
    assert {r.id: r for r in got} == {1: (1, "ac"), 2: (2, "b")}  # each key's last value


def test_unnamed_rows_and_elements_that_do_not_fit(env_factory):
    env = env_factory("BATCH")
    pair = Types.ROW([Types.INT(), Types.STRING()])
    ds = env.from_collection([(1, "x")], type_info=pair)
    assert list(ds.map(lambda v: (isinstance(v, Row), v.f1, v == (1, "x")))
                .execute_and_collect()) == [(True, "x", True)]
    with pytest.raises(GraphBuildError, match=r"element 1 \(1, 2, 3\) does not fit"):
        env.from_collection([(1, "x"), (1, 2, 3)], type_info=pair)


# --------------------------------------------------------------------------------------------
# Rows wherever PyFlink gives them: after a ROW/ROW_NAMED output_type, from a DataFrame, in
# keyed functions, windows, side outputs, collect and print. Expected values are computed
# here from the input data, not from the job.
# --------------------------------------------------------------------------------------------
EVENT = Types.ROW_NAMED(["user", "amount", "ts"], [Types.STRING(), Types.LONG(), Types.LONG()])
#: the same records with a field Spark cannot hold: they travel pickled between stages
EVENT_PICKLED = Types.ROW_NAMED(["user", "amount", "ts", "meta"],
                                [Types.STRING(), Types.LONG(), Types.LONG(),
                                 Types.PICKLED_BYTE_ARRAY()])
TOTAL = Types.ROW_NAMED(["user", "total", "fields"], [Types.STRING(), Types.LONG(), Types.INT()])
RAW = [("u1", 3, 10), ("u2", 5, 11), ("u1", 4, 12), ("u3", 1, 13), ("u2", 2, 14), ("u1", 6, 15)]
BIG = OutputTag("big", EVENT)


def _conf(tmp_path):
    return {"execution.checkpointing.dir": str(tmp_path / "ckpt")}


class RunningTotal(KeyedProcessFunction):
    """Reads its records only as Rows (attributes, as_dict); returns plain tuples for a
    declared ROW output type and for a ROW side output."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        if not isinstance(value, Row) or value.get_field_names()[:3] != ["user", "amount", "ts"]:
            raise TypeError(f"expected a named Row, got {value!r}")
        total = (self.total.value() or 0) + value.amount
        self.total.update(total)
        yield value.user, total, len(value.as_dict())
        if value.amount > 4:
            yield BIG, (value.user, value.amount, value.ts)


def _expected_totals(fields: int) -> list[tuple]:
    totals: dict[str, int] = {}
    out = []
    for user, amount, _ts in sorted(RAW, key=lambda r: r[2]):
        totals[user] = totals.get(user, 0) + amount
        out.append((user, totals[user], fields))
        if amount > 4:
            out.append((user, -amount, -1))
    return sorted(out)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
@pytest.mark.parametrize("row_type", [EVENT, EVENT_PICKLED], ids=["typed", "pickled"])
def test_rows_after_a_row_output_type_through_keyed_stages_side_outputs_and_collect(
        env_factory, tmp_path, mode, row_type):
    env = env_factory(mode, _conf(tmp_path))
    width = len(row_type.get_field_names())
    events = env.from_collection(RAW).map(
        lambda t: t + ({"source": "test"},) * (len(t) < width), output_type=row_type)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda r, _: r.ts)  # the timestamp assigner reads Rows too
    totals = (events.assign_timestamps_and_watermarks(strategy)
              .key_by(lambda r: r.user)
              .process(RunningTotal(), output_type=TOTAL))
    main = list(totals.filter(lambda r: r.total > 0).execute_and_collect())
    big = totals.get_side_output(BIG).map(lambda r: (r.user, -r.amount, -1), output_type=TOTAL)
    got = main + list(big.execute_and_collect())
    assert all(isinstance(r, Row) and r.get_field_names() == ["user", "total", "fields"]
               for r in got)
    assert sorted(got) == _expected_totals(width)  # a Row equals the tuple of its values


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_from_dataframe_records_are_named_rows_that_still_work_as_tuples(
        spark, env_factory, tmp_path, capsys, mode):
    rows = [("a", 1), ("b", 5), ("c", 7)]
    df = spark.createDataFrame(rows, "user string, amount bigint")
    env = env_factory(mode, _conf(tmp_path))
    ds = env.from_dataframe(df)
    doubled = ds.map(lambda r: r.amount * 2, output_type=Types.LONG())  # may run natively
    described = ds.map(
        lambda r: f"{r.user}:{r['amount']}:{r[1]}:{r.as_dict()['user']}:{type(r).__name__}",
        output_type=Types.STRING())
    tuple_code = ds.map(lambda r: (r == (r[0], r[1]), len(r), (lambda u, a: a)(*r)))
    assert sorted(doubled.execute_and_collect()) == sorted(a * 2 for _, a in rows)
    assert sorted(described.execute_and_collect()) == sorted(
        f"{u}:{a}:{a}:{u}:Row" for u, a in rows)
    assert sorted(tuple_code.execute_and_collect()) == sorted((True, 2, a) for _, a in rows)
    collected = list(ds.execute_and_collect())
    assert sorted(collected) == rows and all(r.get_field_names() == ["user", "amount"]
                                             for r in collected)
    ds.print("out")
    env.execute("print rows")
    printed = sorted(line for line in capsys.readouterr().out.splitlines()
                     if line.startswith("out> "))
    assert printed == [f"out> Row(user={u!r}, amount={a})" for u, a in rows]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_windows_and_reduce_over_rows(spark, env_factory, tmp_path, mode):
    clicks = [("a", 1, 0), ("a", 2, 3), ("b", 10, 4), ("a", 4, 7), ("b", 20, 8), ("b", 40, 9),
              ("a", 8, 12), ("b", 80, 15), ("a", 16, 16), ("a", 32, 19)]
    df = spark.createDataFrame(clicks, "user string, amount bigint, ts bigint")
    env = env_factory(mode, _conf(tmp_path))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda r, _: r.ts)
    keyed = env.from_dataframe(df).assign_timestamps_and_watermarks(strategy).key_by(
        lambda r: r.user)
    # each reduce returns a plain tuple and reads its previous result by field name
    windowed = keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(10))).reduce(
        lambda a, b: (a.user, a.amount + b.amount, max(a.ts, b.ts)))
    expected_windows: dict[tuple[str, int], list[int]] = {}
    for user, amount, ts in clicks:
        slot = expected_windows.setdefault((user, ts // 10), [0, ts])
        slot[0] += amount
        slot[1] = max(slot[1], ts)
    got = list(windowed.execute_and_collect())
    assert all(isinstance(r, Row) and r.get_field_names() == ["user", "amount", "ts"]
               for r in got)
    assert sorted(got) == sorted((u, s, t) for (u, _), (s, t) in expected_windows.items())
    reduced = keyed.reduce(lambda a, b: (a.user, a.amount + b.amount, b.ts))
    last = {r.user: r for r in reduced.execute_and_collect()}  # STREAMING: every update too
    assert last == {u: (u, sum(a for x, a, _ in clicks if x == u),
                        max(t for x, _, t in clicks if x == u)) for u in ("a", "b")}


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_row_outputs_keep_the_output_type_contract(env_factory, tmp_path, mode):
    env = env_factory(mode, _conf(tmp_path))
    pair = Types.ROW_NAMED(["user", "amount"], [Types.STRING(), Types.LONG()])
    src = env.from_collection([1, 2])
    wrong_type = src.map(lambda v: Row(user=5, amount=v), output_type=pair)
    with pytest.raises(OutputTypeError, match=r"operator 'Map': an output record does not "
                                              r"match the declared output_type .* field 'user' "
                                              r"is declared Types.STRING\(\) but holds 5 \(int\)"):
        list(wrong_type.execute_and_collect())
    wrong_arity = src.map(lambda v: ("x", v, 3), output_type=pair).map(lambda r: r.user)
    # either record may fail first: the two partitions run in parallel
    with pytest.raises(OutputTypeError, match=r"operator 'Map': record \('x', [12], 3\) has 3 "
                                              r"fields but the declared output_type has 2"):
        list(wrong_arity.execute_and_collect())


class CountWithTimeoutFunction(KeyedProcessFunction):
    """Flink's process-function documentation example, as its Python version writes it: the
    count of a key, kept in a Row in ValueState and changed in place, emitted once the key
    has had no update for 60 s of event time."""

    def __init__(self):
        self.state = None

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor(
            "my_state", Types.ROW([Types.STRING(), Types.LONG(), Types.LONG()])))

    def process_element(self, value, ctx):
        current = self.state.value()
        if current is None:
            current = Row(value.f0, 0, 0)
        current[1] += 1
        current[2] = ctx.timestamp()
        self.state.update(current)
        ctx.timer_service().register_event_time_timer(current[2] + 60000)

    def on_timer(self, timestamp, ctx):
        result = self.state.value()
        if timestamp == result[2] + 60000:
            yield result[0], result[1]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_flinks_count_with_timeout_function_changes_a_row_in_state(env_factory, tmp_path, mode):
    """Every key's events lie within 50 s, keys hours apart: each key emits (key, its count)
    once, after 60 s without an update (at the latest at the end of the input)."""
    env = env_factory(mode, _conf(tmp_path))
    env.set_parallelism(1)
    events = []
    for k in range(12):
        for j in range(k % 4 + 1):
            events.append((f"key{k}", k * 3_600_000 + j * 10_000))
    pair = Types.ROW([Types.STRING(), Types.LONG()])
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda r, _: r.f1)
    out = (env.from_collection(events, type_info=pair)
           .assign_timestamps_and_watermarks(strategy)
           .key_by(lambda r: r.f0)
           .process(CountWithTimeoutFunction(),
                    output_type=Types.TUPLE([Types.STRING(), Types.LONG()])))
    expected = sorted((f"key{k}", k % 4 + 1) for k in range(12))
    assert sorted(out.execute_and_collect()) == expected


# --------------------------------------------------------------------------------------------
# Flink with object reuse off (its default) hands each consumer of a stream its own copy of a
# record (CopyingBroadcastingOutputCollector, or serialization between tasks): a consumer that
# changes a Row in place never changes what another consumer sees. Expected values come from
# a plain-Python model in which every consumer gets a copy.
# --------------------------------------------------------------------------------------------
PAIR = Types.ROW_NAMED(["id", "n"], [Types.INT(), Types.LONG()])
SIDE = OutputTag("copy", PAIR)
PAIRS = [(i, 10 * i) for i in range(1, 9)]


class EmitToBoth(KeyedProcessFunction):
    """Emits the very same Row object to the main output and to a side output."""

    def process_element(self, value, ctx):
        row = Row(id=value.id, n=value.n)
        yield row
        yield SIDE, row


def _bump_by_index(offset):
    def consumer(r):
        r[1] += 1000  # in place, by index
        return Row(id=r.id + offset, n=r.n)
    return consumer


def _bump_by_name(offset):
    def consumer(r):
        r["n"] += 5000  # in place, by name
        return Row(id=r.id + offset, n=r.n)
    return consumer


def _read(offset):
    def consumer(r):
        return Row(id=r.id + offset, n=r.n)
    return consumer


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_each_consumer_of_a_stream_gets_its_own_copy_of_a_row(env_factory, tmp_path, capsys,
                                                              mode):
    """Five maps over the main and the side output of one operator (three of them change
    their input in place) and the main output itself, beside the maps that change it,
    united into one print sink."""
    env = env_factory(mode, _conf(tmp_path))
    env.set_parallelism(2)
    emitted = (env.from_collection(PAIRS, type_info=PAIR).key_by(lambda r: r.id % 3)
               .process(EmitToBoth(), output_type=PAIR))
    side = emitted.get_side_output(SIDE)
    consumers = [emitted.map(_bump_by_index(100), output_type=PAIR),
                 emitted.map(_read(200), output_type=PAIR),
                 side.map(_bump_by_name(300), output_type=PAIR),
                 side.map(_read(400), output_type=PAIR),
                 side.map(_bump_by_index(500), output_type=PAIR)]
    consumers[0].union(*consumers[1:], emitted).print("out")
    env.execute("copy per consumer")
    printed = sorted(line for line in capsys.readouterr().out.splitlines()
                     if line.startswith("out> "))
    # the model: each consumer changes its own copy
    expected = ([(i + 100, n + 1000) for i, n in PAIRS] + [(i + 200, n) for i, n in PAIRS]
                + [(i + 300, n + 5000) for i, n in PAIRS]
                + [(i + 400, n) for i, n in PAIRS]
                + [(i + 500, n + 1000) for i, n in PAIRS] + PAIRS)  # the main output unchanged
    assert printed == sorted(f"out> Row(id={i}, n={n})" for i, n in expected)


# --------------------------------------------------------------------------------------------
# PyFlink encodes a record (or hands it to the next chained operator) when a function yields
# it: changing a Row after emitting it does not change what was emitted. The expected values
# come from a plain-Python model that runs the same functions and copies each record at the
# moment it is emitted.
# --------------------------------------------------------------------------------------------
CHANGED = OutputTag("changed", PAIR)


def _model(emitted):
    """What Flink keeps of each emitted record: its values when it is emitted."""
    return [tuple(r) for r in emitted]


def _yield_then_change(value):
    r = Row(id=value.id, n=value.n)
    yield r
    r[1] += 1
    yield r


class YieldThenChange(FlatMapFunction):
    def flat_map(self, value):
        return _yield_then_change(value)


class YieldThenChangeProcess(ProcessFunction):
    def process_element(self, value, ctx):
        yield from _yield_then_change(value)
        side = Row(id=value.id, n=-value.n)
        ctx.output(CHANGED, side)
        side[1] = 0  # after ctx.output: not seen


def _twice(value):
    r = Row(id=value.id, n=value.n)
    return [r, r]


def _add_thousand(r):
    r[1] += 1000
    return r


class RunningTotalInSelf(MapFunction):
    """One Row kept in ``self`` as a running total, returned after each update."""

    def open(self, runtime_context):
        self.total = Row(id=0, n=0)

    def map(self, value):
        self.total[1] += value.n
        return self.total


class RunningTotalInState(KeyedProcessFunction):
    """A running total kept as a Row in a ValueState and changed in place."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(
            ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        total = self.state.value()
        if total is None:
            total = Row(id=value.id, n=0)
        total[1] += value.n
        self.state.update(total)
        yield total
        ctx.output(CHANGED, total)  # the next record of the key changes this Row


ONES = [(k, 1) for k in (1, 2, 3) for _ in range(4)]  # running totals independent of order


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_row_changed_after_it_is_emitted(env_factory, tmp_path, mode):
    env = env_factory(mode, _conf(tmp_path))
    env.set_parallelism(1)
    src = env.from_collection(PAIRS, type_info=PAIR)
    flat = src.flat_map(YieldThenChange(), output_type=PAIR)
    plain = src.flat_map(_yield_then_change, output_type=PAIR)  # the plain-function path
    processed = src.process(YieldThenChangeProcess(), output_type=PAIR)
    twice = src.flat_map(_twice, output_type=PAIR).map(_add_thousand, output_type=PAIR)
    got = {name: sorted(ds.execute_and_collect()) for name, ds in [
        ("flat", flat), ("plain", plain), ("process", processed), ("twice", twice),
        ("side", processed.get_side_output(CHANGED))]}
    inputs = [Row(id=i, n=n) for i, n in PAIRS]
    changed = sorted(_model(r for v in inputs for r in _yield_then_change(v)))
    assert changed[:2] == [(1, 10), (1, 11)]
    assert got["flat"] == got["plain"] == got["process"] == changed
    assert got["side"] == sorted((i, -n) for i, n in PAIRS)
    assert got["twice"] == sorted(_model(_add_thousand(Row(*r)) for v in inputs
                                         for r in _twice(v)))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_running_total_row_emitted_after_each_update(env_factory, tmp_path, mode):
    env = env_factory(mode, _conf(tmp_path))
    env.set_parallelism(1)
    src = env.from_collection(ONES, type_info=PAIR)
    # one key: every record reaches the same subtask, so one function instance
    in_self = src.key_by(lambda r: 0).map(RunningTotalInSelf(), output_type=PAIR)
    in_state = src.key_by(lambda r: r.id).process(RunningTotalInState(), output_type=PAIR)
    got_self = sorted(in_self.execute_and_collect())
    got_state = sorted(in_state.execute_and_collect())
    got_side = sorted(in_state.get_side_output(CHANGED).execute_and_collect())

    model = RunningTotalInSelf()
    model.open(None)
    assert got_self == sorted(_model(model.map(Row(id=k, n=n)) for k, n in ONES))
    assert got_self == [(0, n) for n in range(1, 13)]
    totals: dict[int, int] = {}
    expected = []
    for k, n in ONES:  # the keyed model: a copy of the total per emission
        totals[k] = totals.get(k, 0) + n
        expected.append((k, totals[k]))
    assert got_state == got_side == sorted(expected)
