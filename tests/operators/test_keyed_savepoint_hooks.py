"""BATCH savepoint hooks of the keyed operators and the sorted driver (no Spark).

``savepoint_watermark`` (stop-with-savepoint without drain: only event timers <= it
fire at end of key, later ones stay in the key's snapshot), restore rows
(``RESTORE_INPUT``) and ``on_key_end`` returning outputs.
"""

from __future__ import annotations

import pytest
from pyspark_datastream import JobExecutionError
from pyspark_datastream.operators.base import MAX_WATERMARK, OperatorConfig, Output
from pyspark_datastream.operators.driver import RESTORE_INPUT, run_sorted_keyed
from pyspark_datastream.operators.functions import KeyedProcessFunction
from pyspark_datastream.operators.keyed_process import KeyedProcessOperator
from pyspark_datastream.operators.keyed_reduce import ReduceOperator
from pyspark_datastream.state_store.backends.single_key import SingleKeyStateBackend
from pyspark_datastream.state_store.descriptors import ValueStateDescriptor
from pyspark_datastream.state_store.types import Types

KEY_SER = Types.STRING().key_serializer()


class LastSeen(KeyedProcessFunction):
    """Stores the last timestamp; a timer 10 ms later emits it."""

    def open(self, rc):
        self.last = rc.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        self.last.update(ctx.timestamp())
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        return ()

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp)


def _rows(data):
    return [(KEY_SER.serialize(k), ts, v, 0) for k, ts, v in data]


def _run(operator, rows, watermark=None, snapshots=None, restore_meta=None):
    backend = SingleKeyStateBackend(KEY_SER, 128)
    if watermark is not None:
        operator.savepoint_watermark = watermark
    config = OperatorConfig.for_mode("BATCH", operator_name="op")

    def on_key_end(b):
        if snapshots is None:
            return None
        snapshots.extend(b.snapshot())
        return [Output("snap", b.get_current_key(), None)]

    try:
        return list(run_sorted_keyed(operator, backend, rows, KEY_SER, config,
                                     on_key_end=on_key_end, restore_meta=restore_meta)), backend
    finally:
        backend.close()


def test_savepoint_watermark_fires_only_due_timers_and_keeps_later_ones():
    snaps = []
    out, _ = _run(KeyedProcessOperator(LastSeen()),
                  _rows([("a", 5, 1), ("a", 50, 2), ("b", 95, 3)]), watermark=60, snapshots=snaps)
    # a: 15 and 60 fire (<= 60); b: 105 is pending; on_key_end outputs follow each key
    assert [(o.tag, o.value) for o in out] == [
        (None, ("a", 15)), (None, ("a", 60)), ("snap", "a"), ("snap", "b")]
    timers = sorted((e.key, e.state_name) for e in snaps if e.state_name.startswith("_timer"))
    assert timers == [(KEY_SER.serialize("b"), "_timer/event")]


def test_default_batch_fires_every_timer():
    out, _ = _run(KeyedProcessOperator(LastSeen()), _rows([("a", 5, 1), ("b", 95, 3)]))
    assert sorted(o.value for o in out) == [("a", 15), ("b", 105)]


def test_restore_rows_load_state_and_timers_before_records():
    snaps = []
    _run(KeyedProcessOperator(LastSeen()), _rows([("a", 50, 1), ("c", 70, 1)]), watermark=0,
         snapshots=snaps)
    metas = SingleKeyStateBackend(KEY_SER, 128)
    metas.get_state(ValueStateDescriptor("last", Types.LONG()))
    metas.timer_queue("event")
    meta_infos = metas.state_meta_infos()
    metas.close()
    by_key = {}
    for e in snaps:
        by_key.setdefault(e.key, []).append(e)
    a, c = KEY_SER.serialize("a"), KEY_SER.serialize("c")
    rows = [(a, None, by_key[a], RESTORE_INPUT), (a, 80, 2, 0), (c, None, by_key[c], RESTORE_INPUT)]
    out, _ = _run(KeyedProcessOperator(LastSeen()), rows, restore_meta=meta_infos)
    # a: the restored timer 60 and the new 90 fire; c exists only in the savepoint: 80 fires
    assert sorted(o.value for o in out) == [("a", 60), ("a", 90), ("c", 80)]


def test_restore_row_without_meta_is_refused():
    rows = [(KEY_SER.serialize("a"), None, [], RESTORE_INPUT)]
    with pytest.raises(JobExecutionError, match="no restore_meta"):
        _run(KeyedProcessOperator(LastSeen()), rows)


def test_reduce_in_savepoint_mode_emits_without_saving_its_internal_timer():
    snaps = []
    op = ReduceOperator(lambda x, y: x + y, Types.LONG())
    out, _ = _run(op, _rows([("a", 1, 2), ("a", 2, 3)]), watermark=100, snapshots=snaps)
    assert [(o.value, o.timestamp) for o in out if o.tag is None] == [(5, MAX_WATERMARK)]
    assert {e.state_name for e in snaps} == {"_reduce"}
    # restored: the running value continues, and a key only in the savepoint emits too
    metas = _meta_of_reduce()
    a = KEY_SER.serialize("a")
    out, _ = _run(ReduceOperator(lambda x, y: x + y, Types.LONG()),
                  [(a, None, snaps, RESTORE_INPUT), (a, 3, 10, 0)], restore_meta=metas)
    assert [o.value for o in out] == [15]
    out, _ = _run(ReduceOperator(lambda x, y: x + y, Types.LONG()),
                  [(a, None, snaps, RESTORE_INPUT)], restore_meta=metas)
    assert [o.value for o in out] == [5]


def _meta_of_reduce():
    backend = SingleKeyStateBackend(KEY_SER, 128)
    op = ReduceOperator(lambda x, y: x + y, Types.LONG())
    op.open(backend, OperatorConfig.for_mode("BATCH", operator_name="op"))
    try:
        return backend.state_meta_infos()
    finally:
        op.close()
        backend.close()
