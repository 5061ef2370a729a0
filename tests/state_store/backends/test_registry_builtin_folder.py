"""Adding a backend to the package is its folder plus its name in ``BUILTIN_FOLDERS``: shown on
a copy of the source tree, which the structure rules check and a fresh interpreter imports."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests import structure_rules as rules

ROOT = Path(__file__).resolve().parents[3]

_REGISTRATION = '''\
"""The toy backend's registration: the heap backend under another name."""

from __future__ import annotations

from typing import Any, Optional

from ...backend import KeyedStateBackend
from ..base import StateBackendType

__all__ = ["TOY", "REGISTRATION"]


def _create(key_serializer: Any, max_parallelism: int,
            key_group_range: Optional[range] = None) -> KeyedStateBackend:
    from .backend import ToyBackend

    return ToyBackend(key_serializer, max_parallelism, key_group_range)


TOY = StateBackendType(name="toy", create_backend=_create, aliases=("plaything",),
                       description="the heap backend under another name")

REGISTRATION = TOY
'''

_BACKEND = '''\
"""The toy backend: the heap backend, named ``toy``."""

from __future__ import annotations

from ..heap.backend import HeapKeyedStateBackend


class ToyBackend(HeapKeyedStateBackend):
    backend_name = "toy"
'''

_RUN = textwrap.dedent('''\
    import pyspark_datastream
    from pyspark_datastream import KeyedProcessFunction, Types, ValueStateDescriptor
    from pyspark_datastream.operators.harness import KeyedProcessFunctionTestHarness
    from pyspark_datastream.state_store.backends import get_backend, registered_backends

    class RunningCount(KeyedProcessFunction):
        def open(self, ctx):
            self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            self.count.update((self.count.value() or 0) + 1)
            yield value[0], self.count.value()

    toy = get_backend("PlayThing")
    with KeyedProcessFunctionTestHarness(RunningCount(), lambda e: e[0], backend="toy") as h:
        for event in [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5)]:
            h.process_element(event, event[1])
        print(pyspark_datastream.__file__)
        print(toy.name, [b.name for b in registered_backends()], type(h.backend).__name__)
        print(h.get_output())
''')


def _tree(tmp_path: Path) -> Path:
    """The three folders and ``setup.cfg`` copied, with the toy backend's folder added."""
    for folder in (*rules.FOLDERS, "setup.cfg"):
        source = ROOT / folder
        if source.is_dir():
            shutil.copytree(source, tmp_path / folder,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, tmp_path / folder)
    toy = tmp_path / "state_store" / "backends" / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text('"""The toy backend."""\n')
    (toy / "registration.py").write_text(_REGISTRATION)
    (toy / "backend.py").write_text(_BACKEND)
    return tmp_path


def _add_line(path: Path, anchor: str, line: str) -> None:
    text = path.read_text()
    assert text.count(anchor) == 1, anchor
    path.write_text(text.replace(anchor, anchor + line))


def test_a_backend_folder_and_one_line_register_it(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    registry = tree / "state_store" / "backends" / "registry.py"
    modules = rules.load_modules(tree)
    # the folder alone: the structure rules say what is missing
    assert rules.unregistered_backend_folders(modules) == [
        "state_store/backends/toy: not in the registry's BUILTIN_FOLDERS"]
    assert rules.unpackaged_packages(tree, modules) == [
        "pyspark_datastream.state_store.backends.toy: not in setup.cfg's packages"]

    # the one registration line, and the package in setup.cfg
    _add_line(registry, 'BUILTIN_FOLDERS = ("heap", "rocksdb", "single_key"', ', "toy"')
    _add_line(tree / "setup.cfg", "    pyspark_datastream.state_store.backends.single_key\n",
              "    pyspark_datastream.state_store.backends.toy\n")
    (tree / "operators" / "functions.py").write_text(
        (tree / "operators" / "functions.py").read_text() + "\n\ndef _which(kind):\n"
        "    return kind == 'plaything'\n")
    modules = rules.load_modules(tree)
    assert rules.unregistered_backend_folders(modules) == []
    assert rules.unpackaged_packages(tree, modules) == []
    assert {"toy", "plaything"} <= rules.backend_names(modules)
    # its names are the registry's alone from now on
    assert rules.backend_name_comparisons(modules) == [
        "pyspark_datastream.operators.functions:"
        f"{len((tree / 'operators' / 'functions.py').read_text().splitlines())} "
        "compares with backend name 'plaything'"]

    # the package as installed: the three folders under their import names
    site = tmp_path / "site"
    shutil.copytree(tree / "plugin", site / "pyspark_datastream")
    shutil.copytree(tree / "operators", site / "pyspark_datastream" / "operators")
    shutil.copytree(tree / "state_store", site / "pyspark_datastream" / "state_store")
    done = subprocess.run([sys.executable, "-c", _RUN], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    where, names, output = done.stdout.splitlines()
    assert where.startswith(str(site))  # the copy ran, not the checkout
    # found by name and alias, registered after the other built-ins, the harness runs on it
    assert names == "toy ['hashmap', 'rocksdb', 'single_key', 'toy'] ToyBackend"
    assert output == "[('a', 1), ('b', 1), ('a', 2), ('a', 3), ('b', 2)]"  # running counts
