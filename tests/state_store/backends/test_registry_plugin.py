"""A backend from the test folder alone (``counting_backend``) is a first-class backend: the
registry finds it by its ``"module:attr"`` path, the conformance suites run on it
(``statebackend_helpers``), the user API and the test harness run keyed functions on it, and
the registry refuses bad names, paths and options with a ConfigurationError naming them."""

from __future__ import annotations

from collections import Counter

import counting_backend
import pytest
from pyspark_datastream import (
    Configuration,
    KeyedProcessFunctionTestHarness,
    StreamExecutionEnvironment,
    Types,
)
from pyspark_datastream.state_store.backends import (
    HEAP,
    ROCKSDB,
    SINGLE_KEY,
    StateBackendType,
    backend_reference,
    get_backend,
    register_backend,
    registered_backends,
)
from pyspark_datastream.state_store.exceptions import ConfigurationError
from statebackend_helpers import BACKEND_NAMES


def test_the_path_registers_the_test_folders_backend_for_every_suite() -> None:
    found = get_backend(counting_backend.PATH)
    assert found is counting_backend.COUNTING
    assert get_backend("counting") is found and get_backend("Counting-Heap") is found
    assert backend_reference(found) == counting_backend.PATH
    assert found in registered_backends()
    assert "counting" in BACKEND_NAMES  # the conformance suites' parameters


def test_one_canonical_name_per_builtin_backend() -> None:
    assert [b.name for b in registered_backends()][:3] == ["hashmap", "rocksdb", "single_key"]
    assert get_backend("heap") is HEAP and get_backend("HashMap") is HEAP
    assert get_backend("rocksdb") is ROCKSDB and get_backend("single_key") is SINGLE_KEY
    assert backend_reference(HEAP) == "hashmap"
    serializer = Types.STRING().create_serializer()
    assert HEAP.create(serializer, 8).backend_name == "hashmap"
    assert SINGLE_KEY.create(serializer, 8).holds_one_key


def test_the_harness_runs_a_keyed_function_on_it() -> None:
    before = Counter(counting_backend.CALLS)
    events = [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5)]
    with KeyedProcessFunctionTestHarness(counting_backend.RunningCount(), lambda e: e[0],
                                         backend=counting_backend.PATH) as harness:
        for event in events:
            harness.process_element(event, event[1])
        output = harness.get_output()
    seen: Counter[str] = Counter()
    expected = []
    for key, _ in events:  # plain Python: the running count per key
        seen[key] += 1
        expected.append((key, seen[key]))
    assert output == expected
    calls = counting_backend.CALLS - before
    changes = sum(1 for i, (key, _) in enumerate(events) if i == 0 or events[i - 1][0] != key)
    assert calls["set_current_key"] >= changes  # at least once per change of key
    assert calls["create_state"] == 1


def test_the_user_api_accepts_the_path_and_refuses_unknown_options() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"state.backend.type": counting_backend.PATH}))
    assert env.get_state_backend() == (counting_backend.PATH, {})
    with pytest.raises(ConfigurationError, match="counting state backend has no option colour"):
        counting_backend.COUNTING.create(Types.STRING().create_serializer(), 8, colour="red")


@pytest.mark.parametrize("name, message", [
    ("nope", "unknown state backend 'nope'"),
    ("no_such_module_xyz:THING", "cannot import module 'no_such_module_xyz'"),
    ("counting_backend:CALLS", "counting_backend.CALLS is not a StateBackendType"),
    ("counting_backend", "unknown state backend 'counting_backend'"),
])
def test_bad_names_and_paths_are_refused(name: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        get_backend(name)


def test_users_cannot_choose_the_single_key_backend() -> None:
    with pytest.raises(ConfigurationError, match="state.backend.type must be one of hashmap"):
        Configuration({"state.backend.type": "single_key"})


def test_a_name_of_another_registration_is_refused() -> None:
    clash = StateBackendType(name="other", aliases=("heap",),
                             create_backend=HEAP.create_backend)
    with pytest.raises(ConfigurationError, match="'heap' is already registered"):
        register_backend(clash)
    assert get_backend("heap") is HEAP
