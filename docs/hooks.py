"""MkDocs hook: the package tree mkdocstrings reads.

``pyspark_datastream`` spans three folders (setup.cfg's package_dir: plugin/, operators/,
state_store/). Static analysis finds a package by its folder, so this builds
build/docs-src/pyspark_datastream from symlinks into those folders when mkdocs loads its
configuration; mkdocs.yml's mkdocstrings ``paths`` points there.
"""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = os.path.join(ROOT, "build", "docs-src", "pyspark_datastream")
SUBPACKAGES = {"operators": "operators", "state_store": "state_store"}


def _link(target: str, name: str) -> None:
    path = os.path.join(TREE, name)
    if os.path.islink(path) and os.readlink(path) == target:
        return
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


def build_tree() -> None:
    """Link every entry of plugin/ and the two other folders into one package folder."""
    os.makedirs(TREE, exist_ok=True)
    plugin = os.path.join(ROOT, "plugin")
    wanted = {e: os.path.join(plugin, e) for e in os.listdir(plugin) if e != "__pycache__"}
    wanted.update({name: os.path.join(ROOT, folder) for name, folder in SUBPACKAGES.items()})
    for entry in os.listdir(TREE):
        if entry not in wanted:
            os.remove(os.path.join(TREE, entry))
    for name, target in wanted.items():
        _link(target, name)


build_tree()
