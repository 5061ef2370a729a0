"""The README and the documentation site stay true: the configuration reference, the harness
example, the architecture page and the README's own example."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

from pyspark_datastream.plan.config import OPTIONS

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DOCS = os.path.join(ROOT, "docs")


def _read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_configuration_page_lists_every_key_of_options():
    text = _read("docs", "configuration.md")
    table_keys = re.findall(r"^\| `([a-z0-9_.\-]+)`", text, flags=re.M)
    missing = set(OPTIONS) - set(table_keys)
    assert not missing, f"docs/configuration.md lacks {sorted(missing)}"
    for option in OPTIONS.values():
        assert option.description in text, option.key


def test_configuration_page_is_what_the_generator_writes_from_options():
    # make docs regenerates the page; this fails when OPTIONS changed and the page was not
    done = subprocess.run([sys.executable, os.path.join(DOCS, "gen_config.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _gen_porting():
    spec = importlib.util.spec_from_file_location("gen_porting", os.path.join(DOCS, "gen_porting.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_porting_reference_is_what_the_generator_writes_from_the_snapshot():
    # the page is regenerated in memory from the committed PyFlink snapshot and this package
    gen = _gen_porting()
    page = _read("docs", "porting-reference.md")
    expected = gen.render(page, gen.load_snapshot())
    assert page == expected, (
        f"docs/porting-reference.md is out of date: run {gen.COMMAND} (make docs runs it)")


def test_porting_reference_reports_a_real_snapshot_and_every_status():
    gen = _gen_porting()
    snapshot = gen.load_snapshot()
    assert snapshot["pyflink_version"] and snapshot["modules"]["pyflink.datastream"]
    page = _read("docs", "porting-reference.md")
    for status in (gen.UNCHANGED, gen.DIFFERENT, gen.NO_EFFECT, gen.REFUSED):
        assert f"| {status} |" in page
    assert f"| {gen.MISSING} |" not in page  # every PyFlink name is present (issue 55)
    # key_by is PyFlink's and ours with the same parameters; a made-up signature differs
    assert re.search(r"^\| `key_by\(key_selector, key_type=…\)` \| ports unchanged \|", page, re.M)
    assert gen.compare([{"name": "a", "default": False}], [{"name": "b", "default": False}])
    assert not gen.compare([{"name": "a", "default": True}],
                           [{"name": "a", "default": True}, {"name": "c", "default": True}])


def test_readme_starts_with_the_two_commands():
    head = _read("README.md")[:800]
    assert "make demo" in head and "make test" in head


def test_readme_fits_in_1200_words():
    assert len(_read("README.md").split()) <= 1200


def test_readme_links_into_the_site_resolve():
    links = re.findall(r"\]\((docs/[^)#]+)", _read("README.md"))
    assert links
    for link in links:
        assert os.path.isfile(os.path.join(ROOT, link)), link


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def test_readme_example_function_and_the_testing_page_harness_example_run():
    """The README's Sessionize, driven by the harness example of docs/user-guide/testing.md."""
    sessionize = _python_blocks(_read("README.md"))[0].split("env = ", 1)[0]
    harness = _python_blocks(_read("docs", "user-guide", "testing.md"))[-1]
    assert "KeyedProcessFunctionTestHarness" in harness
    namespace: dict = {}
    exec(compile(sessionize + harness, "README+testing.md", "exec"), namespace)  # noqa: S102


def test_readme_example_is_the_getting_started_example():
    readme = _python_blocks(_read("README.md"))[0]
    page = _python_blocks(_read("docs", "getting-started.md"))[0]
    assert page == readme


def test_architecture_names_every_package_and_the_layer_order_the_structure_test_enforces():
    from tests import structure_rules

    layout = _read("docs", "architecture.md")
    for entry in sorted(os.listdir(os.path.join(ROOT, "plugin"))):
        if os.path.isfile(os.path.join(ROOT, "plugin", entry, "__init__.py")):
            assert f"{entry}/" in layout, f"docs/architecture.md does not show plugin/{entry}/"
    order = " -> ".join(layer if layer != "plan" else "plan/results" for layer in structure_rules.layer_order())
    assert order in " ".join(layout.replace("`", "").split()), order


def test_architecture_paths_exist():
    """Every repository path the architecture page names for adding something exists."""
    text = _read("docs", "architecture.md").split("## Where to add what", 1)[1]
    paths = set(re.findall(r"`((?:plugin|operators|state_store|tests)/[\w/]+(?:\.py|/))`", text))
    assert paths
    for path in sorted(paths):
        assert os.path.exists(os.path.join(ROOT, path)), path
