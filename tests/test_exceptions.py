"""Every public error is a DataStreamError, importable from the package root, and defined in
the ``exceptions`` module of the lowest layer that raises it (so each layer can raise its
own errors without importing a layer above it)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pyspark_datastream
import pytest
from pyspark_datastream import DataStreamError
from pyspark_datastream.translation.failures import embedded_error

from tests import structure_rules as rules

ROOT = Path(__file__).resolve().parents[1]
EXCEPTION_MODULES = (
    "pyspark_datastream.state_store.exceptions",
    "pyspark_datastream.operators.exceptions",
    "pyspark_datastream.savepoint.exceptions",
    "pyspark_datastream.translation.exceptions",
    "pyspark_datastream.api.exceptions",
    "pyspark_datastream.spark_io.exceptions",
)


def _defined() -> dict[str, type]:
    """Every class the exceptions modules define (not re-export), by name."""
    found: dict[str, type] = {}
    for name in EXCEPTION_MODULES:
        module = importlib.import_module(name)
        for cls_name in module.__all__:
            cls = getattr(module, cls_name)
            assert cls.__module__ == name, f"{name} lists {cls_name} defined in {cls.__module__}"
            assert cls_name not in found, f"{cls_name} is defined twice"
            found[cls_name] = cls
    return found


def _root_errors() -> dict[str, type]:
    exported = {name: getattr(pyspark_datastream, name) for name in pyspark_datastream.__all__}
    return {name: value for name, value in exported.items()
            if isinstance(value, type) and issubclass(value, BaseException)}


def test_the_root_exports_exactly_the_errors_the_exceptions_modules_define() -> None:
    defined = _defined()
    assert len(defined) == 27 and "StorageError" in defined
    assert _root_errors() == defined


@pytest.mark.parametrize("name", sorted(_defined()))
def test_every_error_is_a_datastream_error_and_root_importable(name: str) -> None:
    cls = getattr(pyspark_datastream, name)
    assert issubclass(cls, DataStreamError)
    assert cls.__module__.rsplit(".", 1)[-1] == "exceptions"
    assert cls.__module__ in EXCEPTION_MODULES


def _using_layers(modules: dict[str, rules.Module]) -> dict[str, set[str]]:
    """Error name -> the layers of the modules that raise, build or catch it."""
    names = set(_defined())
    found: dict[str, set[str]] = {name: set() for name in names}
    for module_name, module in modules.items():
        if module_name in EXCEPTION_MODULES:
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Name) and node.id in names:
                found[node.id].add(rules.layer_of(module_name))
    return found


def test_each_error_lives_in_the_lowest_layer_that_needs_it() -> None:
    # the lowest layer that raises (or catches) an error defines it: a layer below that would
    # hold a class nobody at that level uses, a layer above would break the one-way imports.
    # A base class sits at or below its subclasses.
    modules = rules.load_modules(ROOT)
    order = rules.layer_order()
    used = _using_layers(modules)
    defined = _defined()
    home = {name: rules.layer_of(cls.__module__) for name, cls in defined.items()}
    wrong = []
    for name, cls in defined.items():
        needed = set(used[name])
        needed |= {home[sub] for sub, sub_cls in defined.items()
                   if sub_cls is not cls and issubclass(sub_cls, cls)}
        lowest = max(needed, key=order.index) if needed else "state_store"
        if home[name] != lowest:
            wrong.append(f"{name} is defined in {home[name]}, needed down to {lowest}")
    assert wrong == []


def test_worker_tracebacks_name_each_layers_errors_back() -> None:
    # a worker's Python traceback ends in ``<module>.<class>: <message>``; the driver raises
    # the same class with the same message
    for cls in _defined().values():
        if cls.__module__ == "pyspark_datastream.api.exceptions":
            continue  # raised while a program is declared, on the driver: never in a worker
        text = (f"Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                f"{cls.__module__}.{cls.__name__}: operator 'counts' failed on (1, 2)\n"
                f"\tat org.apache.spark.api.python.BasePythonRunner")
        found = embedded_error(RuntimeError(text))
        assert type(found) is cls
        assert str(found) == "operator 'counts' failed on (1, 2)"
