"""A BATCH keyed pass that writes a savepoint: its records and each key's state entries
come out together (in bulk, across Arrow batch boundaries), the records as a plain pass
gives them, one entry per key that holds state, and one meta-info row."""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor
from pyspark_datastream.runtime.encoding import KEY, TS, typed_encoding
from pyspark_datastream.runtime.passes import KeyedSpec, PassSpec, run_pass
from pyspark_datastream.runtime.savepoint_rows import SP_COLUMNS, SP_META
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KS = GenericKeySerializer.INSTANCE
PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


class Total(KeyedProcessFunction):
    """Keeps each key's total; emits it per record; a total over 100 is cleared."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        if total > 100:
            self.total.clear()
        else:
            self.total.update(total)
        yield value[0], total


def _input(rows, size):
    enc = typed_encoding(PAIR)
    for start in range(0, len(rows), size):
        part = rows[start:start + size]
        yield pa.RecordBatch.from_arrays(
            [pa.array([KS.serialize(k) for k, _ in part], pa.binary()),
             pa.array(list(range(start, start + len(part))), pa.int64()),
             pa.array([k for k, _ in part], pa.string()),
             pa.array([v for _, v in part], pa.int64())],
            names=[KEY, TS, *enc.columns])


def test_records_and_entries_of_a_savepoint_pass():
    keys = [f"k{i:05d}" for i in range(6000)]  # 12,000 records + ~entries: > one Arrow batch
    rows = sorted(((k, 1 + (i * 7) % 90) for i, k in enumerate(keys * 2)),
                  key=lambda r: KS.serialize(r[0]))
    enc = typed_encoding(PAIR)
    spec = PassSpec(name="Total", input_enc=enc, output_enc=enc,
                    config={"mode": "BATCH", "parallelism": 1, "max_parallelism": 128},
                    keyed=KeyedSpec("process", Total(), KS, True, ("hashmap", {}),
                                    savepoint_write=True, savepoint_watermark=None),
                    max_parallelism=128)
    out = pa.Table.from_batches(list(run_pass(spec, _input(rows, 5000), subtask=0)))
    sp_names = [n for n, _, _ in SP_COLUMNS]
    table = out.to_pylist()
    records = [(r["f0"], r["f1"]) for r in table if r["_spsn"] is None]
    entries = [r for r in table if r["_spsn"] is not None and r["_spsn"] != SP_META]
    metas = [r for r in table if r["_spsn"] == SP_META]

    totals, expected = {}, []
    for k, v in rows:
        total = totals.get(k, 0) + v
        totals[k] = 0 if total > 100 else total
        expected.append((k, total))
    assert records == expected
    held = {KS.serialize(k): t for k, t in totals.items() if t}
    assert len(entries) == len(held)
    value_serializer = ValueStateDescriptor("total", Types.LONG()).value_serializer
    for e in entries:
        assert e["_spsn"] == "total" and e["_spk"] in held
        assert value_serializer.deserialize(e["_spv"]) == held[e["_spk"]]
        assert e["f0"] is None and e["f1"] is None and e[TS] is None
    assert {e["_spk"] for e in entries} == set(held)
    assert len(metas) == 1
    assert "total" in [m["name"] for m in json.loads(metas[0]["_spv"])]
    assert set(sp_names) <= set(out.column_names)
