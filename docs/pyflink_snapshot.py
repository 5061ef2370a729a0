"""Snapshot PyFlink's DataStream API into docs/pyflink_api.json.

``python docs/pyflink_snapshot.py`` creates a throw-away venv in a temporary directory,
pip-installs ``apache-flink`` there (PyFlink is never a dependency of this project), and
writes every public class and public method (with its parameters, in order) of the modules a
DataStream program imports. docs/gen_porting.py turns the committed snapshot into the porting
reference, so neither the suite nor ``make docs`` needs the network.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyflink_api.json")

# The modules a DataStream program imports from, each with the names it uses. ``None`` takes
# every public class the module or one of its submodules defines (not what it imports from
# elsewhere); a list takes those names.
MODULES: dict[str, list[str] | None] = {
    "pyflink.datastream": None,
    "pyflink.datastream.functions": None,
    "pyflink.datastream.state": None,
    "pyflink.datastream.window": None,
    "pyflink.datastream.timerservice": None,
    "pyflink.datastream.output_tag": None,
    "pyflink.datastream.checkpoint_config": None,
    "pyflink.datastream.state_backend": None,
    "pyflink.datastream.connectors": None,
    "pyflink.datastream.connectors.file_system": None,
    "pyflink.datastream.connectors.kafka": None,
    "pyflink.datastream.connectors.number_seq": None,
    "pyflink.datastream.formats.csv": None,
    "pyflink.datastream.formats.json": None,
    "pyflink.common": [
        "Configuration", "Duration", "Time", "Types", "Row", "RowKind", "WatermarkStrategy",
        "TimestampAssigner", "Watermark", "ExecutionConfig", "RestartStrategies",
        "SimpleStringSchema", "Encoder", "TypeInformation", "TypeSerializer",
    ],
}

# Runs inside the throw-away venv: prints the JSON snapshot.
INTROSPECT = textwrap.dedent(
    """
    import importlib, inspect, json, sys
    from importlib.metadata import version

    modules = json.loads(sys.argv[1])

    def params(func):
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            return None
        out = []
        for p in sig.parameters.values():
            if p.name in ("self", "cls"):
                continue
            kind = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}.get(p.kind.name, "")
            out.append({"name": kind + p.name, "default": p.default is not p.empty})
        return out

    def members(cls):
        found = []
        for name in sorted(dir(cls)):
            if name.startswith("_") and name != "__init__":
                continue
            if name in ("mro",):
                continue
            raw = inspect.getattr_static(cls, name, None)
            if raw is None or not any(name in vars(k) for k in cls.__mro__ if
                                      k.__module__.startswith("pyflink")):
                continue
            if isinstance(raw, (staticmethod, classmethod)):
                func = raw.__func__
            elif inspect.isfunction(raw):
                func = raw
            elif isinstance(raw, property):
                found.append({"name": name, "kind": "property", "params": []})
                continue
            else:
                continue
            found.append({"name": name, "kind": "method", "params": params(func)})
        return found

    result = {"pyflink_version": version("apache-flink"),
              "python": sys.version.split()[0], "modules": {}}
    for module_name, wanted in modules.items():
        mod = importlib.import_module(module_name)
        names = wanted or sorted(
            n for n in getattr(mod, "__all__", dir(mod))
            if not n.startswith("_") and inspect.isclass(getattr(mod, n, None))
            and (getattr(getattr(mod, n), "__module__", "") + ".").startswith(module_name + "."))
        classes = {}
        for n in names:
            obj = getattr(mod, n, None)
            if not inspect.isclass(obj):
                continue
            classes[n] = {"defined_in": obj.__module__, "members": members(obj)}
        result["modules"][module_name] = classes
    print(json.dumps(result))
    """
)


def snapshot(venv_dir: str, spec: str) -> dict:
    """Install ``spec`` into a venv at ``venv_dir`` and introspect its DataStream API.

    Args:
        venv_dir: Where to create the venv (reused when it already has a python).
        spec: The pip requirement, e.g. ``apache-flink`` or ``apache-flink==2.1.0``.

    Returns:
        The snapshot: PyFlink version, Python version and, per module, class -> members.
    """
    python = os.path.join(venv_dir, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv_dir], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", spec], check=True)
    out = subprocess.run(
        [python, "-c", INTROSPECT, json.dumps(MODULES)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def main(argv: list[str]) -> int:
    """Write docs/pyflink_api.json from a fresh install of PyFlink.

    Args:
        argv: ``--spec`` (pip requirement, default ``apache-flink``) and ``--venv`` (keep the
            venv in that directory instead of a temporary one).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spec", default="apache-flink")
    parser.add_argument("--venv", default=None)
    args = parser.parse_args(argv)
    if args.venv:
        data = snapshot(args.venv, args.spec)
    else:
        with tempfile.TemporaryDirectory(prefix="pyflink-snapshot-") as tmp:
            data = snapshot(os.path.join(tmp, "venv"), args.spec)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    total = sum(len(c) for c in data["modules"].values())
    print(f"PyFlink {data['pyflink_version']}: {total} classes written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
