"""The README stays true: its config table and its harness example."""

from __future__ import annotations

import os
import re

from pyspark_datastream.plan.config import OPTIONS

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def _readme() -> str:
    with open(README, encoding="utf-8") as f:
        return f.read()


def test_every_configuration_key_is_documented():
    text = _readme()
    table_keys = set(re.findall(r"^\| `([a-z0-9_.\-]+)`", text, flags=re.M))
    missing = set(OPTIONS) - table_keys
    assert not missing, f"README configuration table lacks {sorted(missing)}"


def test_readme_starts_with_the_two_commands():
    head = _readme()[:800]
    assert "make demo" in head and "make test" in head


def test_harness_example_from_readme_runs():
    text = _readme()
    block = text.split("## Testing your functions without a cluster", 1)[1].split("```python", 1)[1]
    code = block.split("```", 1)[0]
    sessionize = text.split("```python", 2)[1].split("env = ", 1)[0]
    namespace: dict = {}
    exec(compile(sessionize + code, "README", "exec"), namespace)  # noqa: S102


def test_layout_names_every_package_and_the_layer_order_the_structure_test_enforces():
    from tests import structure_rules

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    text = _readme()
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    for entry in sorted(os.listdir(os.path.join(root, "plugin"))):
        if os.path.isfile(os.path.join(root, "plugin", entry, "__init__.py")):
            assert f"{entry}/" in layout, f"README Layout does not show plugin/{entry}/"
    order = " -> ".join(layer if layer != "plan" else "plan/results" for layer in structure_rules.layer_order())
    assert order in " ".join(layout.replace("`", "").split()), order
