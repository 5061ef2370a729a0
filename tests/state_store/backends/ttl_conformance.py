"""State TTL cases of the backend conformance suite (mixed into ``TestBackendConformance``).

Expected values follow Flink's documented TTL semantics, with an injected clock:

* a value is expired once ``last access + ttl <= now`` (processing time);
* the timestamp is set on create/write, and on read too with ``OnReadAndWrite``;
* ``NeverReturnExpired``: an expired value is invisible; ``ReturnExpiredIfNotCleanedUp``:
  the read that finds it expired still returns it, and removes it;
* lists expire per element, maps per entry; a list whose elements all expired is removed;
* reducing/aggregating: adding to an expired value starts over (``NeverReturnExpired``).

The single-key backend is sorted BATCH execution, where Flink's BATCH state backend does not
apply TTL: values there never expire (their timestamps are still kept for savepoints).
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark_datastream import IncompatibleStateError, StateDescriptorError
from pyspark_datastream.api.time import Duration, Time
from pyspark_datastream.state_store.backend import KeyedStateBackend
from pyspark_datastream.state_store.backends import HEAP, get_backend
from pyspark_datastream.state_store.descriptors import (
    AggregatingStateDescriptor,
    BinarySortedStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from pyspark_datastream.state_store.entries import decode_index, is_canonical
from pyspark_datastream.state_store.functions import AggregateFunction
from pyspark_datastream.state_store.namespaces import TimeWindow, TimeWindowSerializer
from pyspark_datastream.state_store.serializers import LexicographicLongSerializer, TtlSerializer
from pyspark_datastream.state_store.serializers.ttl import TTL_TIMESTAMP
from pyspark_datastream.state_store.ttl import ttl_time_provider
from pyspark_datastream.state_store.ttl_config import StateTtlConfig
from pyspark_datastream.state_store.types import Types
from statebackend_helpers import make_backend

TTL = 100
VISIBILITY = StateTtlConfig.StateVisibility
UPDATE = StateTtlConfig.UpdateType


class Clock:
    """The injected processing time of a backend's TTL states."""

    def __init__(self, backend: KeyedStateBackend, now: int = 0) -> None:
        self.now = now
        ttl_time_provider(backend).use(lambda: self.now)

    def at(self, now: int) -> Clock:
        self.now = now
        return self


def ttl_config(update: Any = UPDATE.OnCreateAndWrite, visibility: Any = VISIBILITY.NeverReturnExpired,
               background: bool = False, **strategies: Any) -> StateTtlConfig:
    builder = (StateTtlConfig.new_builder(Time.milliseconds(TTL))
               .set_update_type(update).set_state_visibility(visibility))
    if not background:
        builder.disable_cleanup_in_background()
    if strategies.get("full_snapshot"):
        builder.cleanup_full_snapshot()
    if "incremental" in strategies:
        builder.cleanup_incrementally(*strategies["incremental"])
    return builder.build()


def with_ttl(descriptor: StateDescriptor, config: StateTtlConfig | None = None) -> Any:
    descriptor.enable_time_to_live(config or ttl_config())
    return descriptor


def heap_cleanup(backend: KeyedStateBackend) -> bool:
    """The backend's registration cleans up TTL state incrementally over keys, as the heap's."""
    return get_backend(backend.backend_name).ttl_cleanup is HEAP.ttl_cleanup


def expires(backend: KeyedStateBackend) -> bool:
    """False on the single-key (sorted BATCH) backend, where TTL does not apply."""
    return not backend.holds_one_key


class Average(AggregateFunction):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


class TtlConformance:
    """TTL per state kind, both update types and both visibilities, on every backend."""

    # -- value -------------------------------------------------------------------------------
    def test_ttl_value_expires_after_last_write(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(ValueStateDescriptor("v", Types.LONG())))
        backend.set_current_key("k")
        state.update(5)
        clock.at(TTL - 1)
        assert state.value() == 5  # a read does not prolong under OnCreateAndWrite
        clock.at(80)
        state.update(6)  # a write does
        clock.at(80 + TTL - 1)
        assert state.value() == 6
        clock.at(80 + TTL)
        assert state.value() == (6 if not expires(backend) else None)

    def test_ttl_value_on_read_and_write(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(
            with_ttl(ValueStateDescriptor("v", Types.LONG()), ttl_config(UPDATE.OnReadAndWrite)))
        backend.set_current_key("k")
        state.update(5)
        assert clock.at(60) and state.value() == 5  # restamped at 60
        assert clock.at(159) and state.value() == 5  # restamped at 159
        assert clock.at(258) and state.value() == 5
        clock.at(358 + TTL)
        assert state.value() == (5 if not expires(backend) else None)

    def test_ttl_value_return_expired_if_not_cleaned_up(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            ValueStateDescriptor("v", Types.LONG()),
            ttl_config(visibility=VISIBILITY.ReturnExpiredIfNotCleanedUp)))
        backend.set_current_key("k")
        state.update(5)
        clock.at(TTL)
        assert state.value() == 5  # expired, still stored: returned, and cleaned up
        assert state.value() == (5 if not expires(backend) else None)

    def test_ttl_update_none_clears(self, backend: KeyedStateBackend) -> None:
        Clock(backend)
        state = backend.get_state(with_ttl(ValueStateDescriptor("v", Types.LONG())))
        backend.set_current_key("k")
        state.update(5)
        state.update(None)
        assert state.value() is None
        state.update(6)
        state.clear()
        assert state.value() is None

    # -- list ---------------------------------------------------------------------------------
    def test_ttl_list_expires_per_element(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(ListStateDescriptor("l", Types.LONG())))
        backend.set_current_key("k")
        state.add(1)
        clock.at(50)
        state.add_all([2, 3])
        clock.at(TTL)
        assert state.get() == ([1, 2, 3] if not expires(backend) else [2, 3])
        clock.at(50 + TTL)
        assert state.get() == ([1, 2, 3] if not expires(backend) else [])
        state.add(4)
        assert state.get() == ([1, 2, 3, 4] if not expires(backend) else [4])
        state.update([7, 8])
        clock.at(50 + 2 * TTL - 1)
        assert state.get() == [7, 8]

    def test_ttl_list_on_read_and_write(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(
            with_ttl(ListStateDescriptor("l", Types.LONG()), ttl_config(UPDATE.OnReadAndWrite)))
        backend.set_current_key("k")
        state.add(1)
        clock.at(50)
        state.add(2)
        clock.at(90)
        assert state.get() == [1, 2]  # both restamped at 90
        clock.at(90 + TTL - 1)
        assert state.get() == [1, 2]
        clock.at(90 + 3 * TTL)
        assert state.get() == ([1, 2] if not expires(backend) else [])

    def test_ttl_list_return_expired(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            ListStateDescriptor("l", Types.LONG()),
            ttl_config(visibility=VISIBILITY.ReturnExpiredIfNotCleanedUp)))
        backend.set_current_key("k")
        state.add(1)
        clock.at(50)
        state.add(2)
        clock.at(TTL)
        # element 1 expired but the list still has an unexpired one: nothing is cleaned up
        assert state.get() == [1, 2]
        assert state.get() == [1, 2]
        clock.at(50 + TTL)
        assert state.get() == [1, 2]  # all expired: returned once, then the list is removed
        assert state.get() == ([1, 2] if not expires(backend) else [])

    # -- map ----------------------------------------------------------------------------------
    def test_ttl_map_expires_per_entry(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(MapStateDescriptor("m", Types.STRING(), Types.LONG())))
        backend.set_current_key("k")
        state.put("a", 1)
        clock.at(50)
        state.put_all({"b": 2, "c": 3})
        clock.at(TTL)
        if expires(backend):
            assert state.get("a") is None and not state.contains("a") and "a" not in state
            assert sorted(state.items()) == [("b", 2), ("c", 3)]
            assert sorted(state.keys()) == ["b", "c"] and sorted(state.values()) == [2, 3]
            assert not state.is_empty()
            clock.at(50 + TTL)
            assert state.is_empty() and list(state.items()) == []
        else:
            assert sorted(state.items()) == [("a", 1), ("b", 2), ("c", 3)]
            clock.at(50 + TTL)
            assert not state.is_empty()

    def test_ttl_map_on_read_and_return_expired(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            MapStateDescriptor("m", Types.STRING(), Types.LONG()),
            ttl_config(UPDATE.OnReadAndWrite, VISIBILITY.ReturnExpiredIfNotCleanedUp)))
        backend.set_current_key("k")
        state.put("a", 1)
        state.put("b", 2)
        clock.at(60)
        assert state.get("a") == 1  # restamps "a" only
        clock.at(TTL)
        assert state.get("b") == 2  # expired: returned once and removed
        assert state.get("b") == (2 if not expires(backend) else None)
        assert state.contains("a")
        clock.at(TTL + 59)
        assert sorted(state.items()) == ([("a", 1)] if expires(backend) else [("a", 1), ("b", 2)])

    # -- reducing / aggregating ------------------------------------------------------------------
    def test_ttl_reducing(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            ReducingStateDescriptor("r", lambda a, b: a + b, Types.LONG())))
        backend.set_current_key("k")
        state.add(3)
        clock.at(50)
        state.add(4)  # reduced value stamped 50
        clock.at(50 + TTL - 1)
        assert state.get() == 7
        clock.at(50 + TTL)
        state.add(10)  # the expired 7 is not reduced into
        assert state.get() == (17 if not expires(backend) else 10)

    def test_ttl_reducing_return_expired(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            ReducingStateDescriptor("r", lambda a, b: a + b, Types.LONG()),
            ttl_config(visibility=VISIBILITY.ReturnExpiredIfNotCleanedUp)))
        backend.set_current_key("k")
        state.add(3)
        clock.at(TTL)
        state.add(4)  # an expired value not cleaned up yet is still used
        assert state.get() == 7

    def test_ttl_aggregating(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            AggregatingStateDescriptor("a", Average(), Types.PICKLED_BYTE_ARRAY()),
            ttl_config(UPDATE.OnReadAndWrite)))
        backend.set_current_key("k")
        state.add(2)
        state.add(4)
        clock.at(TTL - 1)
        assert state.get() == 3.0  # restamped at 99
        clock.at(2 * TTL - 2)
        assert state.get() == 3.0
        clock.at(4 * TTL)
        if expires(backend):
            assert state.get() is None
            state.add(10)
            assert state.get() == 10.0
        else:
            assert state.get() == 3.0

    # -- binary sorted / temporal -----------------------------------------------------------------
    def test_ttl_binary_sorted_state(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_binary_sorted_state(with_ttl(BinarySortedStateDescriptor(
            "s", LexicographicLongSerializer.INSTANCE, Types.STRING())))
        backend.set_current_key("k")
        state.add(1, "a")
        state.add(2, "c")
        clock.at(50)
        state.add(1, "b")
        state.add(3, "d")
        clock.at(TTL)
        if not expires(backend):
            assert state.first_entry() == (1, ["a", "b"])
            return
        assert state.values_at(2) is None
        assert state.first_entry() == (1, ["b"])
        assert state.last_entry(2) == (1, ["b"])
        assert list(state.read_range_from(0)) == [(1, ["b"]), (3, ["d"])]
        assert list(state.read_range(0, 3, True)) == [(1, ["b"]), (3, ["d"])]
        clock.at(50 + TTL)
        assert state.first_entry() is None and state.last_entry() is None

    def test_ttl_temporal_value_state(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        temporal = backend.get_temporal_value_state(
            with_ttl(ValueStateDescriptor("t", Types.STRING())))
        backend.set_current_key("k")
        temporal.update(10, "x")
        clock.at(50)
        temporal.update(20, "y")
        clock.at(TTL)
        assert temporal.value_at_or_before(30) == (20, "y")
        assert temporal.value_at_or_before(15) == (None if expires(backend) else (10, "x"))

    # -- namespaces -------------------------------------------------------------------------------
    def test_ttl_merge_namespaces_keeps_timestamps(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        state = backend.get_state(with_ttl(ListStateDescriptor("w", Types.LONG())),
                                  TimeWindowSerializer())
        backend.set_current_key("k")
        one, two = TimeWindow(0, 10), TimeWindow(5, 15)
        state.set_current_namespace(one)
        state.add(1)
        clock.at(50)
        state.set_current_namespace(two)
        state.add(2)
        state.merge_namespaces(two, [one])
        clock.at(TTL)
        assert sorted(state.get()) == ([2] if expires(backend) else [1, 2])

    # -- meta info, compatibility ------------------------------------------------------------------
    def test_ttl_meta_info_and_disabled_config(self, backend: KeyedStateBackend) -> None:
        descriptor = with_ttl(ValueStateDescriptor("v", Types.LONG()))
        plain = ValueStateDescriptor("p", Types.LONG())
        plain.enable_time_to_live(
            StateTtlConfig.new_builder(Duration.of_seconds(1)).set_update_type(UPDATE.Disabled).build())
        backend.get_state(descriptor)
        backend.get_state(plain)
        metas = {m.name: m for m in backend.state_meta_infos()}
        assert metas["v"].value_serializer == TtlSerializer(Types.LONG().create_serializer()).snapshot()
        assert metas["p"].value_serializer == Types.LONG().create_serializer().snapshot()

    def test_ttl_enabled_and_disabled_descriptors_do_not_share_a_name(
            self, backend: KeyedStateBackend) -> None:
        backend.get_state(with_ttl(ValueStateDescriptor("v", Types.LONG())))
        with pytest.raises(StateDescriptorError, match="'v' is already registered"):
            backend.get_state(ValueStateDescriptor("v", Types.LONG()))

    @pytest.mark.parametrize("saved_with_ttl", [True, False], ids=["ttl-to-plain", "plain-to-ttl"])
    def test_ttl_mismatch_on_restore_is_refused(self, backend: KeyedStateBackend,
                                                saved_with_ttl: bool) -> None:
        source = make_backend("heap")
        saved = ValueStateDescriptor("v", Types.LONG())
        if saved_with_ttl:
            saved.enable_time_to_live(ttl_config())
        source.get_state(saved)
        source.set_current_key("k")
        source.get_state(saved).update(1)
        metas, entries = source.state_meta_infos(), list(source.snapshot())
        source.close()
        backend.restore(metas, entries)
        program = ValueStateDescriptor("v", Types.LONG())
        if not saved_with_ttl:
            program.enable_time_to_live(ttl_config())
        with pytest.raises(IncompatibleStateError, match="state 'v'.*TtlValue"):
            backend.get_state(program)

    # -- snapshots ------------------------------------------------------------------------------
    def test_ttl_snapshot_keeps_timestamps_across_backends(
            self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend, now=1_000)
        descriptors = [with_ttl(ValueStateDescriptor("v", Types.LONG())),
                       with_ttl(ListStateDescriptor("l", Types.LONG())),
                       with_ttl(MapStateDescriptor("m", Types.STRING(), Types.LONG()))]
        value, items, mapping = (backend.get_state(d) for d in descriptors)
        backend.set_current_key("k")
        value.update(1)
        items.add(1)
        mapping.put("a", 1)
        clock.at(1_050)
        items.add(2)
        mapping.put("b", 2)
        entries = list(backend.snapshot())
        stamps = sorted((e.state_name, TTL_TIMESTAMP.unpack_from(e.value)[0]) for e in entries)
        assert stamps == [("l", 1_000), ("l", 1_050), ("m", 1_000), ("m", 1_050), ("v", 1_000)]
        for target_name in ("heap", "rocksdb", "single_key"):
            target = make_backend(target_name)
            try:
                Clock(target, now=1_000 + TTL)
                target.restore(backend.state_meta_infos(), entries)
                states = [target.get_state(d) for d in descriptors]
                target.set_current_key("k")
                live = expires(target)
                assert states[0].value() == (None if live else 1)
                assert states[1].get() == ([2] if live else [1, 2])
                assert dict(states[2].items()) == ({"b": 2} if live else {"a": 1, "b": 2})
            finally:
                target.close()

    def test_ttl_full_snapshot_cleanup(self, backend: KeyedStateBackend) -> None:
        clock = Clock(backend)
        config = ttl_config(full_snapshot=True)
        items = backend.get_state(with_ttl(ListStateDescriptor("l", Types.LONG()), config))
        value = backend.get_state(with_ttl(ValueStateDescriptor("v", Types.LONG()), config))
        backend.set_current_key("k")
        items.add_all([1, 2])
        value.update(1)
        clock.at(50)
        items.add(3)
        clock.at(TTL)
        entries = list(backend.snapshot())
        assert is_canonical(entries)
        if not expires(backend):
            assert len(entries) == 4
            return
        # the expired elements are left out and the list renumbered; the value is gone too
        assert [(e.state_name, decode_index(e.user_key)) for e in entries] == [("l", 0)]
        # the local state still holds them until read (Flink: the local state is not cleaned)
        clock.at(TTL - 1)
        assert items.get() == [1, 2, 3]

    def test_ttl_background_cleanup_removes_other_keys(self, backend: KeyedStateBackend) -> None:
        """Heap: incremental cleanup over the state's keys on access; RocksDB: the emulated
        compaction filter over its rows; both on by default (background cleanup)."""
        if not expires(backend):
            pytest.skip("the single-key backend holds one key and does not apply TTL")
        clock = Clock(backend)
        config = StateTtlConfig.new_builder(Time.milliseconds(TTL)).return_expired_if_not_cleaned_up()
        if heap_cleanup(backend):
            config.cleanup_incrementally(10, False)
        state = backend.get_state(with_ttl(ValueStateDescriptor("v", Types.LONG()), config.build()))
        for key in ("a", "b", "c"):
            backend.set_current_key(key)
            state.update(1)
        clock.at(TTL)
        backend.set_current_key("z")
        # accesses clean up the expired values of a, b, c: on the heap the first one (10 keys
        # per access); on RocksDB each access checks 5 rows or key groups, over 128 groups
        for _ in range(1 if heap_cleanup(backend) else 128 // 5 + 1):
            state.update(2)
        assert sorted(e.key for e in backend.snapshot()) == [
            Types.STRING().create_serializer().serialize("z")]
        backend.set_current_key("a")
        assert state.value() is None  # cleaned up: not returned even though visibility allows

    def test_ttl_without_background_cleanup_keeps_expired_rows(
            self, backend: KeyedStateBackend) -> None:
        if not expires(backend):
            pytest.skip("the single-key backend holds one key and does not apply TTL")
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            ValueStateDescriptor("v", Types.LONG()),
            ttl_config(visibility=VISIBILITY.ReturnExpiredIfNotCleanedUp)))
        for key in ("a", "b"):
            backend.set_current_key(key)
            state.update(1)
        clock.at(TTL)
        backend.set_current_key("z")
        state.update(2)
        assert len(list(backend.snapshot())) == 3
        backend.set_current_key("a")
        assert state.value() == 1  # expired, not cleaned up yet: returned once
        assert state.value() is None

    def test_ttl_incremental_cleanup_for_every_record(self, backend: KeyedStateBackend) -> None:
        if not heap_cleanup(backend):
            pytest.skip("incremental cleanup is the heap backend's (as in Flink)")
        clock = Clock(backend)
        state = backend.get_state(with_ttl(
            ValueStateDescriptor("v", Types.LONG()),
            ttl_config(incremental=(5, True))))
        for key in ("a", "b"):
            backend.set_current_key(key)
            state.update(1)
        clock.at(TTL)
        backend.set_current_key("z")  # a record of another key: no access of the state
        assert list(backend.snapshot()) == []
