"""Layering: ``operators`` and ``state_store`` never import pyspark (they run without Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ISOLATED = textwrap.dedent(
    """
    import importlib, json, pathlib, sys, types

    class Blocker:
        # any attempt to import pyspark / py4j fails loudly, naming the importer chain
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pyspark", "py4j"):
                raise ImportError(f"forbidden import of {name!r}")
            return None

    sys.meta_path.insert(0, Blocker())
    # a stub parent package: plugin/__init__.py (which may import Spark lazily) never runs
    stub = types.ModuleType("pyspark_datastream")
    stub.__path__ = []
    sys.modules["pyspark_datastream"] = stub
    root = pathlib.Path(sys.argv[1])
    imported = []
    for package, folder in (("operators", root / "operators"), ("state_store", root / "state_store")):
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(("pyspark_datastream", package) + parts)
            importlib.import_module(name)
            imported.append(name)
    print(json.dumps({"imported": imported,
                      "spark": sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))}))
    """
)

_PLAIN = textwrap.dedent(
    """
    import json, sys
    import pyspark_datastream.operators.driver, pyspark_datastream.operators.harness
    import pyspark_datastream.operators.keygroup, pyspark_datastream.operators.aggregations
    import pyspark_datastream.operators.co
    import pyspark_datastream.state_store.backends.heap, pyspark_datastream.state_store.backends.single_key
    import pyspark_datastream.state_store.backends.rocksdb
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))))
    """
)


def test_every_operators_and_state_store_module_imports_without_pyspark() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _ISOLATED, str(ROOT)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["spark"] == []
    assert "pyspark_datastream.operators.keyed" in result["imported"]
    assert "pyspark_datastream.state_store.backends.heap" in result["imported"]


def test_importing_operators_and_state_store_leaves_pyspark_unimported() -> None:
    proc = subprocess.run([sys.executable, "-c", _PLAIN], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
