"""The broadcast state operator and its STREAMING key group runtime, without Spark.

Expected outputs come from a plain model of Flink's broadcast state pattern (rules in
force when an event is processed), not from the operator."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pyspark_datastream import (
    BroadcastProcessFunction,
    BroadcastState,
    BroadcastStateError,
    GraphBuildError,
    IncompatibleStateError,
    KeyedBroadcastProcessFunction,
    MapStateDescriptor,
    OutputTag,
    ReadOnlyBroadcastState,
    StateDescriptorError,
    StateError,
    Types,
    UserFunctionError,
    ValueStateDescriptor,
)
from pyspark_datastream.operators.base import OperatorConfig
from pyspark_datastream.operators.broadcast import (
    BROADCAST_INPUT,
    BroadcastProcessOperator,
    BroadcastSpec,
    emits_broadcast_outputs,
)
from pyspark_datastream.operators.broadcast_runtime import (
    BroadcastKeyGroupRuntime,
    unwrap_state,
    wrap_state,
)
from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import RocksDBKeyGroupStore
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import GenericKeySerializer

KS = GenericKeySerializer.INSTANCE
RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
COUNT = ValueStateDescriptor("count", Types.LONG())
ALERTS = OutputTag("alerts")


class RuleMatcher(KeyedBroadcastProcessFunction):
    """Rules ``(name, threshold)`` (threshold None removes the rule); an event
    ``(user, amount)`` emits ``(user, rule, amount)`` for every rule with amount >= threshold
    and counts the user's events; a rule named ``reset`` clears every user's count."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)

    def process_broadcast_element(self, value, ctx):
        name, threshold = value
        rules = ctx.get_broadcast_state(RULES)
        if name == "reset":
            ctx.apply_to_keyed_state(COUNT, lambda key, state: state.clear())
        elif threshold is None:
            rules.remove(name)
        else:
            rules.put(name, threshold)
        yield ("rule", name, threshold)

    def process_element(self, value, ctx):
        user, amount = value
        self.count.update((self.count.value() or 0) + 1)
        for name, threshold in sorted(ctx.get_broadcast_state(RULES).items()):
            if amount >= threshold:
                yield (ctx.get_current_key(), name, amount)


def _config(**kw: Any) -> OperatorConfig:
    kw.setdefault("operator_name", "rules-op")
    return OperatorConfig.for_mode("STREAMING", **kw)


def _runtime(function: Any = None, keyed: bool = True, **kw: Any) -> BroadcastKeyGroupRuntime:
    spec = BroadcastSpec(function or RuleMatcher(), [RULES], keyed)
    return BroadcastKeyGroupRuntime("broadcast", spec, KS, _config(**kw), **kw.get("extra", {}))


def _event(user: str, amount: int) -> tuple[bytes, None, Any, int]:
    return (KS.serialize(user), None, (user, amount), 0)


def _rule(name: str, threshold: Any) -> tuple[bytes, None, Any, int]:
    return (b"", None, (name, threshold), BROADCAST_INPUT)


def _model(batches: list[list[tuple[str, Any]]]) -> list[tuple[str, str, int]]:
    """Flink's semantics with the documented micro-batch order: a batch's rules first."""
    rules: dict[str, int] = {}
    out = []
    for batch in batches:
        for kind, item in batch:
            if kind == "rule":
                name, threshold = item
                if threshold is None:
                    rules.pop(name, None)
                elif name != "reset":
                    rules[name] = threshold
        for kind, item in batch:
            if kind == "event":
                user, amount = item
                out += [(user, n, amount) for n, t in sorted(rules.items()) if amount >= t]
    return out


def _rows(batch: list[tuple[str, Any]]) -> list[Any]:
    return [_rule(*item) if kind == "rule" else _event(*item) for kind, item in batch]


def test_rules_across_micro_batches_match_the_model_and_survive_in_the_state_bytes():
    batches = [
        [("rule", ("big", 100)), ("rule", ("small", 10))],
        [("event", ("ann", 5)), ("event", ("bob", 50)), ("event", ("ann", 150))],
        # an event before a rule change in the same micro-batch: the batch's rules come first
        [("event", ("bob", 20)), ("rule", ("small", 30)), ("rule", ("big", None))],
        [("event", ("ann", 100)), ("event", ("bob", 30))],
    ]
    runtime = _runtime()
    state = None
    got = []
    for batch in batches:
        result = runtime.run(state, _rows(batch), key_group=0)
        state = result.state
        got += [o.value for o in result.outputs if o.value[0] != "rule"]
    assert got == _model(batches)
    keyed, metas, entries = unwrap_state(state)
    assert [m.name for m in metas] == ["rules"]
    assert [(e.key_group, e.state_name, e.key, RULES.key_serializer.deserialize(e.user_key),
             RULES.value_serializer.deserialize(e.value)) for e in entries] == [
        (-1, "rules", b"", "small", 30)]
    assert keyed is not None  # the users' counts


def test_broadcast_outputs_are_kept_once_per_parallel_instance():
    # parallelism 2 over 128 key groups: subtask 0 holds 0..63, subtask 1 holds 64..127
    first = [kg for kg in range(128) if emits_broadcast_outputs(kg, 2, 128)]
    assert first == [0, 64]
    assert [kg for kg in range(10) if emits_broadcast_outputs(kg, 10, 10)] == list(range(10))
    emitted = []
    for kg in (0, 5, 64, 100):
        result = _runtime(parallelism=2).run(None, [_rule("big", 1)], key_group=kg)
        emitted.append([o.value for o in result.outputs])
        # every key group keeps the rule, whether or not it emits
        assert unwrap_state(result.state)[2][0].state_name == "rules"
    assert emitted == [[("rule", "big", 1)], [], [("rule", "big", 1)], []]


def test_process_element_cannot_write_broadcast_state():
    class Writer(RuleMatcher):
        def process_element(self, value, ctx):
            ctx.get_broadcast_state(RULES).put("sneaky", 1)
            yield value

    with pytest.raises(BroadcastStateError) as err:
        _runtime(Writer()).run(None, [_event("ann", 7)], key_group=0)
    message = str(err.value)
    assert "operator 'rules-op'" in message and "'rules'" in message
    assert "process_element" in message and "put('sneaky', 1)" in message
    assert "('ann', 7)" in message
    assert isinstance(err.value, StateError)


def test_undeclared_and_wrong_descriptors_are_refused_by_name():
    other = MapStateDescriptor("other", Types.STRING(), Types.LONG())

    class Reader(RuleMatcher):
        def __init__(self, descriptor):
            self.descriptor = descriptor

        def process_element(self, value, ctx):
            ctx.get_broadcast_state(self.descriptor)
            return None

    with pytest.raises(StateDescriptorError, match=r"no broadcast state 'other' was declared.*"
                                                   r"\['rules'\]"):
        _runtime(Reader(other)).run(None, [_event("ann", 1)], key_group=0)
    with pytest.raises(StateDescriptorError, match="needs the MapStateDescriptor"):
        _runtime(Reader(COUNT)).run(None, [_event("ann", 1)], key_group=0)
    # an equal descriptor built again is the same state
    again = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
    assert _runtime(Reader(again)).run(None, [_event("ann", 1)], key_group=0).outputs == []
    retyped = MapStateDescriptor("rules", Types.STRING(), Types.STRING())
    with pytest.raises(StateDescriptorError, match="was declared with key serializer"):
        _runtime(Reader(retyped)).run(None, [_event("ann", 1)], key_group=0)


def test_apply_to_keyed_state_visits_every_key_of_the_key_group_that_has_the_state():
    users = [u for u in (f"user{i}" for i in range(40)) if assign_key_group(KS.serialize(u), 4) == 1]
    runtime = _runtime(max_parallelism=4)
    result = runtime.run(None, [_event(u, 1) for u in users], key_group=1)
    visited = []

    class Visit(RuleMatcher):
        def process_broadcast_element(self, value, ctx):
            ctx.apply_to_keyed_state(COUNT, lambda key, state: visited.append((key, state.value())))
            ctx.apply_to_keyed_state(COUNT, lambda key, state: state.update(state.value() * 10))
            return None

    visit = BroadcastKeyGroupRuntime("broadcast", BroadcastSpec(Visit(), [RULES], True), KS,
                                     _config(max_parallelism=4))
    after = visit.run(result.state, [_rule("x", 1), _event(users[0], 1)], key_group=1)
    assert sorted(visited) == sorted((u, 1) for u in users)
    # the broadcast element ran before the micro-batch's event: 1 * 10 + 1
    keyed, _, _ = unwrap_state(after.state)
    from pyspark_datastream.operators.keygroup import decode_state

    counts = {KS.deserialize(e.key): COUNT.value_serializer.deserialize(e.value)
              for e in decode_state(keyed)[1] if e.state_name == "count"}
    assert counts == {u: (11 if u == users[0] else 10) for u in users}


def test_apply_to_keyed_state_takes_an_object_with_process_and_refuses_other_things():
    class Bad(RuleMatcher):
        def process_broadcast_element(self, value, ctx):
            ctx.apply_to_keyed_state(COUNT, 42)
            return None

    with pytest.raises(StateError, match="needs a function"):
        _runtime(Bad()).run(None, [_rule("a", 1)], key_group=0)


def test_timers_fire_with_read_only_broadcast_state():
    class Timed(RuleMatcher):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(100)
            return None

        def on_timer(self, timestamp, ctx):
            rules = ctx.get_broadcast_state(RULES)
            yield (ctx.get_current_key(), timestamp, sorted(rules.items()), ctx.time_domain().name)
            rules.put("late", 1)

    runtime = _runtime(Timed())
    first = runtime.run(None, [_rule("a", 1), _event("ann", 5)], key_group=0)
    assert first.next_event_timer == 100
    with pytest.raises(BroadcastStateError, match="read-only in on_timer"):
        runtime.run(first.state, [], watermark=100, key_group=0)


def test_non_keyed_function_has_no_keyed_state_and_no_key():
    class Enrich(BroadcastProcessFunction):
        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(RULES)[value[0]] = value[1]
            return None

        def process_element(self, value, ctx):
            rules = ctx.get_broadcast_state(RULES)
            yield (value, rules.get(value), ctx.timestamp())
            if value == "side":
                ctx.output(ALERTS, value)

    runtime = BroadcastKeyGroupRuntime("broadcast", BroadcastSpec(Enrich(), [RULES], False), KS,
                                       _config())
    result = runtime.run(None, [(b"", 7, "a", 0), (b"", None, ("a", 3), 1),
                                (b"", 8, "side", 0)], key_group=3)
    assert [tuple(o) for o in result.outputs] == [
        (None, ("a", 3, 7), 7), (None, ("side", None, 8), 8), ("alerts", "side", 8)]

    class UsesKeyedState(Enrich):
        def open(self, runtime_context):
            runtime_context.get_state(COUNT)

    with pytest.raises(StateError, match="needs key_by"):
        BroadcastKeyGroupRuntime("broadcast", BroadcastSpec(UsesKeyedState(), [RULES], False),
                                 KS, _config()).run(None, [(b"", None, "a", 0)], key_group=0)


def test_user_errors_name_the_call_and_the_element():
    class Fails(RuleMatcher):
        def process_broadcast_element(self, value, ctx):
            raise ValueError("bad rule")

    with pytest.raises(UserFunctionError, match=r"process_broadcast_element failed on \('x', 1\)"):
        _runtime(Fails()).run(None, [_rule("x", 1)], key_group=0)


def test_spec_checks_the_function_kind_and_descriptors():
    with pytest.raises(GraphBuildError, match="needs a KeyedBroadcastProcessFunction"):
        BroadcastSpec(object(), [RULES], True)
    with pytest.raises(GraphBuildError, match="distinct names"):
        BroadcastSpec(RuleMatcher(), [RULES, RULES], True)
    spec = pickle.loads(pickle.dumps(BroadcastSpec(RuleMatcher(), [RULES], True)))
    assert [d.name for d in spec.descriptors] == ["rules"]


def test_restore_checks_serializers_and_keeps_undeclared_states():
    operator = BroadcastProcessOperator(BroadcastSpec(RuleMatcher(), [RULES], True), "op")
    other = MapStateDescriptor("old", Types.STRING(), Types.STRING())
    other_meta = BroadcastSpec(RuleMatcher(), [other], True).meta_infos()
    state = wrap_state(None, operator.spec.meta_infos() + other_meta, [])
    assert state is None  # nothing to keep
    from pyspark_datastream.state_store.entries import StateEntry

    entries = [StateEntry(-1, "old", b"", b"", other.key_serializer.serialize("k"),
                          other.value_serializer.serialize("v")),
               StateEntry(-1, "rules", b"", b"", RULES.key_serializer.serialize("r"),
                          RULES.value_serializer.serialize(5))]
    operator.broadcast_states.restore(operator.spec.meta_infos() + other_meta, entries)
    assert operator.broadcast_states.snapshot() == entries
    assert [m.name for m in operator.broadcast_states.meta_infos()] == ["old", "rules"]
    wrong = BroadcastSpec(RuleMatcher(), [MapStateDescriptor("rules", Types.STRING(),
                                                             Types.STRING())], True).meta_infos()
    with pytest.raises(IncompatibleStateError, match="broadcast state 'rules'"):
        operator.broadcast_states.restore(wrong, [])


def test_rocksdb_key_groups_keep_keyed_and_broadcast_state(tmp_path):
    store = RocksDBKeyGroupStore(str(tmp_path / "state"), KS, 128, local_dir=str(tmp_path / "l"))
    spec = BroadcastSpec(RuleMatcher(), [RULES], True)
    runtime = BroadcastKeyGroupRuntime("broadcast", spec, KS, _config(), store=store)
    kg = assign_key_group(KS.serialize("ann"), 128)
    first = runtime.run(None, [_rule("a", 1)], key_group=kg)
    second = runtime.run(first.state, [_event("ann", 3)], key_group=kg)
    assert [o.value for o in second.outputs] == [("ann", "a", 3)]


def test_generic_subscripts_as_in_pyflink():
    class Typed(KeyedBroadcastProcessFunction[str, tuple, tuple, str]):
        def process_element(self, value, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext):
            return None

        def process_broadcast_element(self, value, ctx: KeyedBroadcastProcessFunction.Context):
            return None

    assert isinstance(Typed(), KeyedBroadcastProcessFunction)
    assert BroadcastProcessFunction[int, int, int] is not None
    assert BroadcastState[str, int] is not None and ReadOnlyBroadcastState[str, int] is not None
