"""A watermark strategy assigned below a keyed stage, in the one-query mapping.

Spark refuses to redefine a query's watermark after a stateful operator, so the keyed
stages reading such a strategy's records take their watermark in band: the keying pass in
front of each hands every key group the greatest timestamp the strategy's assigner gave,
less its bound (runtime/inband.py). A running count per user (its own watermark from the
source) feeds, through a second strategy that shifts each record's event time, a probe
that records the watermark each record meets and an event-time tumbling window per bucket
of users that records the watermark it fires at. One file per micro-batch, out of order
inside each: the probe's watermarks and the windows' firing equal Flink's semantics
computed from the files alone (the greatest shifted timestamp of the micro-batches before,
less the bound, less 1 ms) and the windows fire without data of their own; the one
query's savepoint, restored into the per-stage mapping, fires the windows it held with
every record they held. A filter after the assigner drops the first file's records: the
watermark still moves with them, as Flink's assigner saw them. The running counts are
written too: the one query carries them through the stage below the strategy. Below the
windows, a third keyed stage takes the watermark the windows forward (as Flink forwards a
watermark from operator to operator): each window's result meets the watermark of the
micro-batch before the one it fired in, and a timer a window later fires without records
of its own; the windows' results are carried through it to their own sink (the run whose
savepoint the per-stage mapping restores, leaving that stage out).
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

import pytest
from helpers import (
    KV_SCHEMA,
    ByV,
    QueryCounter,
    add_file,
    delta_rows,
    out_of_order_files,
    spark_line,
)
from pyspark_datastream import (
    KeyedProcessFunction,
    ProcessWindowFunction,
    Time,
    TumblingEventTimeWindows,
    Types,
    ValueStateDescriptor,
    WatermarkStrategy,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS, SPAN, FILES, PER_FILE = 30, 10_000, 4, 120
SHIFT, BOUND, WIDTH = 1_000_000, 2_500, 4_000  # the second strategy
MIN_WATERMARK = -(2**63)
END = 100_000_000_000_000  # a watermark at or above it: the end of input
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])
TRIPLE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
QUAD = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])


class Count(KeyedProcessFunction):
    """Each record as (user, event time, the user's count so far)."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield value[0], value[1], self.count.value()


class Probe(KeyedProcessFunction):
    """Each record's (bucket, timestamp, count, the watermark it meets); a timer at the
    last ms of the record's tumbling window, which emits (bucket, its time, -1, the
    watermark it fires at)."""

    def process_element(self, value, ctx):
        ts = ctx.timestamp()
        ctx.timer_service().register_event_time_timer(ts // WIDTH * WIDTH + WIDTH - 1)
        yield ctx.get_current_key(), ts, value[2], ctx.timer_service().current_watermark()

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, -1, ctx.timer_service().current_watermark()


class After(KeyedProcessFunction):
    """Below the windows: each window's (bucket, start, records, the watermark it meets); a
    timer a window later, which emits (bucket, its time, -1, the watermark it fires at)."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 2 * WIDTH - 1)
        yield value[0], value[1], value[2], ctx.timer_service().current_watermark()

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, -1, ctx.timer_service().current_watermark()


class Fired(ProcessWindowFunction):
    """(bucket, window start, records, the watermark the window fired at)."""

    def process(self, key, context, elements):
        yield key, context.window().start, len(list(elements)), context.current_watermark()


def bucket(record) -> int:
    return int(record[0][1:]) % 4


def program(env, records, out: str, stage: str, below: bool = False) -> None:
    """The running count, the second strategy, and the probe or the windows (with ``below``,
    and the stage below them) below it."""
    source_ws = WatermarkStrategy.for_bounded_out_of_orderness(SPAN).with_timestamp_assigner(
        ByV())
    counted = (records.assign_timestamps_and_watermarks(source_ws).key_by(lambda r: r[0])
               .process(Count(), TRIPLE).uid("count"))
    counted.sink_to_delta(f"{out}/counted")  # carried through the stage below the strategy
    shifted = counted.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(BOUND)
        .with_timestamp_assigner(lambda r, ts: r[1] + SHIFT)).filter(lambda r: r[1] >= SPAN)
    keyed = shifted.key_by(bucket, key_type=Types.LONG())
    if stage == "probe":
        keyed.process(Probe(), QUAD).uid("probe").sink_to_delta(f"{out}/probe")
    else:
        windows = (keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(WIDTH)))
                   .process(Fired(), QUAD).uid("windows"))
        windows.sink_to_delta(f"{out}/windows")  # carried through the stage below
        if not below:
            return
        (windows.key_by(lambda r: r[0], key_type=Types.LONG()).process(After(), QUAD)
         .uid("after").sink_to_delta(f"{out}/after"))


def model(files: list[list[tuple[str, int]]], bounded: bool
          ) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The probe's rows, the windows' (bucket, start, count, fired at) and the rows of the
    stage below them, Flink's semantics with one micro-batch per file. A timer or window the
    watermark does not reach fires at the end of input (None) of a bounded input, and not at
    all while an unbounded one runs. Below the windows (unbounded only), a window's result
    meets the watermark the windows forwarded in the micro-batch before the one it fired
    in; its timer fires in the first micro-batch from that one whose watermark reaches it."""
    probe, counts, before = [], Counter(), MIN_WATERMARK
    fired_at: dict[tuple[int, int], Optional[int]] = {}
    fired_in: dict[tuple[int, int], int] = {}
    sizes: Counter = Counter()
    marks: list[int] = []  # the watermark after each micro-batch
    for rows in files:
        for user, ts in rows:
            counts[user] += 1
            if ts < SPAN:  # the first file: dropped after the assigner, which saw it
                continue
            window = (bucket((user,)), (ts + SHIFT) // WIDTH * WIDTH)
            probe.append((window[0], ts + SHIFT, counts[user], before))
            sizes[window] += 1
        before = max(before, max(ts for _, ts in rows) + SHIFT - BOUND - 1)
        marks.append(before)
        for window in sizes:  # fires once the watermark reaches the window's last ms
            if window not in fired_at and before >= window[1] + WIDTH - 1:
                fired_at[window], fired_in[window] = before, len(marks) - 1
    if bounded:
        fired_at.update({w: None for w in sizes if w not in fired_at})
    windows = [(b, s, n, fired_at[(b, s)]) for (b, s), n in sizes.items() if (b, s) in fired_at]
    timers = [(b, s + WIDTH - 1, -1, fired_at[(b, s)]) for (b, s) in sizes if (b, s) in fired_at]
    after = []
    for (b, s), k in fired_in.items():
        after.append((b, s, sizes[(b, s)], marks[k - 1] if k else MIN_WATERMARK))
        due = s + 2 * WIDTH - 1
        fires = [m for m in marks[k:] if m >= due]
        if fires:
            after.append((b, due, -1, fires[0]))
    return (sorted(probe + timers, key=repr), sorted(windows, key=repr),
            sorted(after, key=repr))


def _ended(rows: list[tuple]) -> list[tuple]:
    """``rows`` with a watermark at the end of input as None, sorted."""
    return sorted(((*r[:3], None if r[3] >= END else r[3]) for r in rows), key=repr)


@pytest.mark.compat
def test_a_watermark_strategy_below_a_keyed_stage_runs_in_one_query(
        spark, env_factory, tmp_path):
    if spark_line(spark) < (4, 0):
        pytest.skip("the one-query mapping needs Spark 4.0+ (test_one_query shows the refusal)")
    files = out_of_order_files(5, FILES + 2, PER_FILE, USERS, SPAN)
    files, later = files[:FILES], files[-1]  # the last: after a gap, for the restored job
    src = str(tmp_path / "in")
    for i, rows in enumerate(files):
        add_file(src, rows, f"f{i}")
    want_probe, want_windows, want_after = model(files, bounded=False)
    seen: Counter = Counter()
    counted = sorted((u, ts, seen.update([u]) or seen[u]) for rows in files for u, ts in rows)
    # some fire before the end of input, without records of their own in that micro-batch
    assert want_windows and len(want_windows) < len(model(files, bounded=True)[1])

    def run(stage: str, mapping: str, bounded: bool = False, folder: str = src,
            savepoint: str = None, restore: str = None, below: bool = False) -> list[tuple]:
        name = f"{stage}-{mapping}-{bounded}-{bool(restore)}"
        out = str(tmp_path / name)
        env = env_factory("STREAMING", {
            "execution.checkpointing.dir": str(tmp_path / f"ckpt-{name}"),
            "execution.streaming.query-mapping": mapping,
            # the stage below the windows, in the savepoint, is left out of the restored job
            **({"execution.savepoint.path": restore,
                "execution.savepoint.ignore-unclaimed-state": "true"} if restore else {})})
        env.set_parallelism(2)
        if bounded:  # one micro-batch, then the end of input
            records = env.from_collection([r for rows in files for r in rows], PAIR)
        else:
            records = env.from_dataframe(spark.readStream.schema(KV_SCHEMA).option(
                "maxFilesPerTrigger", 1).parquet(folder))
        program(env, records, out, stage, below)
        with QueryCounter(spark) as queries:
            env.execute(f"inband-{name}", savepoint_path=savepoint)
        if mapping == "one-query":
            assert len(queries.started) == 1, queries.started
        if not restore:
            assert delta_rows(f"{out}/counted") == counted
        outputs[stage] = out
        return delta_rows(f"{out}/{stage}")

    outputs: dict[str, str] = {}

    assert _ended(run("probe", "one-query")) == want_probe
    savepoint = str(tmp_path / "savepoint")
    assert _ended(run("windows", "one-query", savepoint=savepoint, below=True)) == want_windows
    # below the windows: results meet a forwarded watermark, timers fire on one
    assert any(r[2] == -1 for r in want_after)
    assert any(r[3] > MIN_WATERMARK for r in want_after if r[2] != -1)
    assert sorted(delta_rows(f"{outputs['windows']}/after"), key=repr) == want_after
    # a bounded input: what the watermark does not reach fires at the end of input
    everything = [[r for rows in files for r in rows]]
    assert _ended(run("windows", "one-query", bounded=True)) == model(everything, True)[1]

    # the one query's savepoint holds the windows not fired yet: restored into the per-stage
    # mapping, a later file fires them with every record they held
    add_file(str(tmp_path / "later"), later, "f0")
    _, after, _ = model([*files, later], bounded=False)
    fired = [w[:3] for w in after if w[:2] not in {v[:2] for v in want_windows}]
    assert fired and any(s < FILES * SPAN + SHIFT for _, s, _ in fired)  # some held
    assert sorted(w[:3] for w in run("windows", "per-stage", folder=str(tmp_path / "later"),
                                     restore=savepoint)) == sorted(fired)
