"""The package root imports each public name on first use: what type checkers read (the
``TYPE_CHECKING`` imports) and what runs (the module map) name the same objects, and
importing the runtime alone does not import the API."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pyspark_datastream

INIT = os.path.join(os.path.dirname(pyspark_datastream.__file__), "__init__.py")


def _type_checking_imports() -> dict[str, str]:
    with open(INIT, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and ast.unparse(n.test) == "TYPE_CHECKING")
    return {alias.asname or alias.name: "." + node.module
            for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_the_type_checkers_imports_and_the_module_map_agree() -> None:
    seen = _type_checking_imports()
    assert len(seen) > 250
    assert seen == pyspark_datastream._LAZY
    assert set(pyspark_datastream.__all__) == set(seen)


def test_every_public_name_resolves_to_its_module_object() -> None:
    for name, module in pyspark_datastream._LAZY.items():
        value = getattr(pyspark_datastream, name)
        assert value is getattr(sys.modules[f"pyspark_datastream{module}"], name), name
    assert set(pyspark_datastream.__all__) <= set(dir(pyspark_datastream))


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    try:
        pyspark_datastream.NoSuchThing  # noqa: B018
    except AttributeError as e:
        assert "'NoSuchThing'" in str(e) and "pyspark_datastream" in str(e)
    else:
        raise AssertionError("an unknown name resolved")


def test_the_runtime_alone_does_not_import_the_api() -> None:
    code = ("import sys, pyspark_datastream.runtime.tws_processor; "
            "print(sorted(m for m in sys.modules if m.startswith('pyspark_datastream.api')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
