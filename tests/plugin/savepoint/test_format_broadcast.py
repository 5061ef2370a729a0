"""Operator (broadcast) state in the savepoint metadata, without Spark."""

from __future__ import annotations

import json

from pyspark_datastream import MapStateDescriptor, Types
from pyspark_datastream.operators.broadcast import BroadcastSpec
from pyspark_datastream.operators.broadcast_functions import BroadcastProcessFunction
from pyspark_datastream.savepoint.format import (
    BROADCAST_KIND,
    OperatorMetadata,
    SavepointMetadata,
)

RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())


class Nothing(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        return None

    def process_broadcast_element(self, value, ctx):
        return None


def _metas():
    return tuple(BroadcastSpec(Nothing(), [RULES], False).meta_infos())


def test_broadcast_states_round_trip_through_the_metadata_json():
    meta = SavepointMetadata(128, {"op": OperatorMetadata("op", {"name": "k"}, (), False,
                                                          _metas())})
    back = SavepointMetadata.from_json(meta.to_json())
    assert back.operators["op"].broadcast_states == _metas()
    assert back.broadcast_states() == [("op", "rules")]
    assert back.kind_of() == {}  # keyed kinds only
    stored = back.operators["op"].broadcast_states[0]
    assert stored.kind.value == "map" and stored.user_key_serializer == \
        RULES.user_key_serializer.snapshot()
    assert BROADCAST_KIND == "broadcast"
    # a version-1 reader would take operator state rows for keyed entries: version 2
    assert meta.format_version == back.format_version == 2


def test_metadata_without_operator_state_is_unchanged_and_old_json_reads():
    plain = SavepointMetadata(128, {"op": OperatorMetadata("op", {"name": "k"}, ())})
    text = plain.to_json()
    assert "broadcast_states" not in text
    data = json.loads(text)
    assert set(data["operators"][0]) == {"uid", "key_serializer", "states", "generated_uid"}
    back = SavepointMetadata.from_json(text)
    assert back.operators["op"].broadcast_states == () and back.broadcast_states() == []
    assert plain.format_version == back.format_version == 1
