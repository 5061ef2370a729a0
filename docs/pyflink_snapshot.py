"""Snapshot PyFlink's DataStream API into docs/pyflink_api.json.

``python docs/pyflink_snapshot.py`` creates a throw-away venv in a temporary directory,
pip-installs ``apache-flink`` there (PyFlink is never a dependency of this project), and
writes every public class and public method (with its parameters, in order) of
``pyflink.datastream`` and ``pyflink.common`` and all their public submodules. docs/gen_porting.py turns the committed snapshot into the porting
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

# The packages of PyFlink's DataStream API. Every public module under them (walked with
# pkgutil, private ``_`` modules skipped) is introspected, and each gives the public classes
# it or one of its submodules defines (not what it imports from elsewhere), so a class is
# recorded under every public module a program may import it from; docs/gen_porting.py lists
# it once, under the shortest of them.
PACKAGES = ("pyflink.datastream", "pyflink.common")
# The PyFlink release the committed snapshot records (the issue measured this one).
SPEC = "apache-flink==2.3.0"

# Runs inside the throw-away venv: prints the JSON snapshot.
INTROSPECT = textwrap.dedent(
    """
    import importlib, inspect, json, sys
    from importlib.metadata import version

    import pkgutil

    packages = json.loads(sys.argv[1])
    modules, skipped = [], {}
    for package in packages:
        modules.append(package)
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(pkg.__path__, package + ".",
                                          onerror=lambda name: None):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            modules.append(info.name)

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
    for module_name in sorted(modules):
        try:
            mod = importlib.import_module(module_name)
        except Exception as exc:  # a module that needs what is not installed
            skipped[module_name] = f"{type(exc).__name__}: {exc}"
            continue
        names = sorted(
            n for n in getattr(mod, "__all__", dir(mod))
            if not n.startswith("_") and inspect.isclass(getattr(mod, n, None))
            and (getattr(getattr(mod, n), "__module__", "") + ".").startswith(module_name + "."))
        classes = {}
        for n in names:
            obj = getattr(mod, n, None)
            if not inspect.isclass(obj):
                continue
            classes[n] = {"defined_in": obj.__module__, "members": members(obj)}
        if classes:
            result["modules"][module_name] = classes
    result["not_importable"] = skipped
    print(json.dumps(result))
    """
)


def snapshot(venv_dir: str, spec: str) -> dict:
    """Install ``spec`` into a venv at ``venv_dir`` and introspect its DataStream API.

    Args:
        venv_dir: Where to create the venv (reused when it already has a python).
        spec: The pip requirement, e.g. ``apache-flink==2.3.0``.

    Returns:
        The snapshot: PyFlink version, Python version and, per module, class -> members.
    """
    python = os.path.join(venv_dir, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv_dir], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", spec], check=True)
    out = subprocess.run(
        [python, "-c", INTROSPECT, json.dumps(PACKAGES)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def main(argv: list[str]) -> int:
    """Write docs/pyflink_api.json from a fresh install of PyFlink.

    Args:
        argv: ``--spec`` (pip requirement, default ``SPEC``) and ``--venv`` (keep the
            venv in that directory instead of a temporary one).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spec", default=SPEC)
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
    classes = {(info["defined_in"], name) for module in data["modules"].values()
               for name, info in module.items()}
    print(f"PyFlink {data['pyflink_version']}: {len(classes)} classes written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
