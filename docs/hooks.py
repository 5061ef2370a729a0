"""MkDocs hooks: the package tree mkdocstrings reads, and Sphinx roles shown as code.

``pyspark_datastream`` spans three folders (setup.cfg's package_dir: plugin/, operators/,
state_store/). Static analysis finds a package by its folder, so this builds
build/docs-src/pyspark_datastream from symlinks into those folders when mkdocs loads its
configuration; mkdocs.yml's mkdocstrings ``paths`` points there. Docstrings name other
objects with Sphinx roles (``:class:`X```), which Markdown leaves as text: each page shows
them as the code they wrap.
"""

from __future__ import annotations

import os
import re
from typing import Any

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


_ROLE = re.compile(r":(?:class|data|func|mod|meth|attr|exc|obj):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    name = match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)
    return f"<code>{name}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """A rendered page with ``:role:`name``` shown as ``name`` in code."""
    return _ROLE.sub(_code, html)


build_tree()
