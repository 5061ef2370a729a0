"""The package's structure rules, read from source with ``ast`` (no import, no third-party tool).

Every module of ``plugin/``, ``operators/`` and ``state_store/`` is parsed; every import counts,
including function-local and ``TYPE_CHECKING`` ones. The rules:

* no import cycle among the modules;
* imports point one way, down this order: api -> translation -> savepoint -> spark_io ->
  runtime -> plan/results -> operators -> state_store. The API builds a plan and hands it to
  translation, which ships runtime code to executors; so every driver layer may read the plan
  (plain data), and nothing below the API imports it. The package root, ``__main__``, ``demo``
  and ``temporal_functions`` belong to the api layer;
* nothing in runtime/, operators/ or state_store/ imports ``pyspark.sql``;
* no ``_private`` name imported from another module, and no ``obj._name`` read of a private
  member that the reading module does not define itself;
* no source file over :data:`NEW_MAX_LINES` lines, except those over it when that limit came
  (:data:`OVER_NEW_MAX`), which may not pass :data:`MAX_LINES` (and leave the list once
  split below the new limit);
* every backend folder (``state_store/backends/<folder>/registration.py``) is in the
  registry's ``BUILTIN_FOLDERS``, and every package of the three folders in ``setup.cfg``'s
  ``packages``;
* no comparison with a state backend's name (``kind == "rocksdb"``, ``name in ("hashmap",
  "heap")``) outside the backend registry: every layer asks the backend's registration
  (``state_store/backends/registry.py``);
* no comparison with a sink kind's name (``sink.kind == "print"``) outside the sink table
  (``translation/sinks.py``, whose ``SINK_KINDS`` keys are the names): every layer looks the
  kind up there;
* in ``translation/``, no import between a BATCH module (``batch/``) and a STREAMING one
  (``streaming/``), nor from the shared modules (the rest of ``translation/``) into either:
  what both use lives in the shared part;
* no parameter typed ``Any`` in a function or method ``translation/`` offers other modules
  (mypy checks ``translation/`` with its strict flags too: pyproject.toml);
* no string literal that is a runtime mode's name (``"BATCH"``, ``"STREAMING"``,
  ``"AUTOMATIC"``) outside the mode module (``operators/modes.py``): every layer carries
  ``RuntimeMode`` and writes its ``.value`` where a string leaves the program;
* every unit test file is named after what it tests: ``tests/<folder>/<package path>/``
  ``test_<module>.py`` (or ``test_<module>_<aspect>.py``) for a module or subpackage of
  ``<folder>/<package path>/`` (or that package itself), unless :data:`CROSS_MODULE_TESTS`
  lists it with what it covers.

The functions take the repository root so a test can run them on a deliberately broken copy.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MAX_LINES",
    "NEW_MAX_LINES",
    "OVER_NEW_MAX",
    "LAYERS",
    "Module",
    "layer_order",
    "load_modules",
    "import_edges",
    "cycles",
    "layer_violations",
    "spark_sql_violations",
    "private_violations",
    "long_files",
    "backend_name_comparisons",
    "backend_names",
    "builtin_backend_folders",
    "unregistered_backend_folders",
    "unpackaged_packages",
    "sink_kind_names",
    "sink_kind_comparisons",
    "mode_literals",
    "mode_crossings",
    "CROSS_MODULE_TESTS",
    "test_file_name_violations",
]

MAX_LINES = 800
ROOT_PACKAGE = "pyspark_datastream"
FOLDERS = {
    "plugin": ROOT_PACKAGE,
    "operators": f"{ROOT_PACKAGE}.operators",
    "state_store": f"{ROOT_PACKAGE}.state_store",
}
#: (layer name, module-name prefixes) from the top layer down; the first matching prefix wins.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("state_store", (f"{ROOT_PACKAGE}.state_store",)),
    ("operators", (f"{ROOT_PACKAGE}.operators",)),
    ("runtime", (f"{ROOT_PACKAGE}.runtime",)),
    ("spark_io", (f"{ROOT_PACKAGE}.spark_io",)),
    ("savepoint", (f"{ROOT_PACKAGE}.savepoint",)),
    ("translation", (f"{ROOT_PACKAGE}.translation",)),
    ("plan", (f"{ROOT_PACKAGE}.plan", f"{ROOT_PACKAGE}.results")),
    ("api", (ROOT_PACKAGE,)),
)
_ORDER = ("api", "translation", "savepoint", "spark_io", "runtime", "plan", "operators", "state_store")
#: the layers whose code runs on executors and therefore never imports pyspark.sql
NO_SPARK_SQL = ("runtime", "operators", "state_store")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    lines: int


#: source text -> its syntax tree: the checker's own tests load copies of the tree that differ
#: from it in a file or two, so every other file's tree is parsed once per process (the
#: rules only read the trees)
_TREES: dict[str, ast.Module] = {}


def _tree(text: str, path: Path) -> ast.Module:
    tree = _TREES.get(text)
    if tree is None:
        tree = _TREES[text] = ast.parse(text, str(path))
    return tree


def load_modules(root: Path) -> dict[str, Module]:
    """Every module of the three folders under ``root``, by its import name."""
    modules: dict[str, Module] = {}
    for folder, prefix in FOLDERS.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            name = ".".join((prefix, *parts))
            text = path.read_text()
            modules[name] = Module(name, path, is_package, _tree(text, path), text.count("\n") + 1)
    return modules


def layer_order() -> tuple[str, ...]:
    """The layers from the top (the API) down (state_store)."""
    return _ORDER


def layer_of(name: str) -> str:
    for layer, prefixes in LAYERS:
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return layer
    raise ValueError(name)


def _absolute(module: Module, level: int, target: str | None) -> str:
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _owner(name: str, modules: dict[str, Module]) -> str | None:
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in modules else None


def _imports(module: Module, modules: dict[str, Module]) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import of a project module."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == ROOT_PACKAGE and (owner := _owner(alias.name, modules)):
                    found.append((owner, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _absolute(module, node.level, node.module)
            elif node.module and node.module.split(".")[0] == ROOT_PACKAGE:
                base = node.module
            else:
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.append((f"{base}.{alias.name}", None, node.lineno))
                elif owner := _owner(base, modules):
                    found.append((owner, alias.name, node.lineno))
    return found


def import_edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a package's ``__init__`` counts as a module)."""
    return {
        name: {target for target, _, _ in _imports(module, modules) if target != name}
        for name, module in modules.items()
    }


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    edges = import_edges(modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return found


def layer_violations(modules: dict[str, Module]) -> list[str]:
    """Imports that point up the layer order."""
    bad = []
    for name, module in modules.items():
        own = _ORDER.index(layer_of(name))
        for target, _, line in _imports(module, modules):
            if _ORDER.index(layer_of(target)) < own:
                bad.append(f"{module.path}:{line}: {layer_of(name)} module {name} imports "
                           f"{layer_of(target)} module {target}")
    return bad


def spark_sql_violations(modules: dict[str, Module]) -> list[str]:
    """Executor-side modules importing pyspark.sql (they may use ``pyspark.TaskContext``)."""
    bad = []
    for name, module in modules.items():
        if layer_of(name) not in NO_SPARK_SQL:
            continue
        for node in ast.walk(module.tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(t == "pyspark.sql" or t.startswith("pyspark.sql.") for t in targets):
                bad.append(f"{module.path}:{node.lineno}: {name} imports pyspark.sql")
    return bad


#: namedtuple's public API, underscored only to avoid clashing with field names
_NAMEDTUPLE_API = frozenset({"_fields", "_replace", "_asdict", "_make", "_field_defaults"})


def _private(name: str) -> bool:
    return (name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            and name not in _NAMEDTUPLE_API)


def _own_object(node: ast.expr) -> bool:
    """``self``/``cls``/``super()``: an object's own members, wherever its base class lives."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _member_names(module: Module) -> set[str]:
    """Private members the module's own classes define: methods, class attributes,
    ``self._x`` assignments and ``__slots__``/field-name strings inside class bodies."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(module.tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and _own_object(node.value):
                names.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.isidentifier():
                names.add(node.value)
    return {n for n in names if _private(n)}


def _defined_private_names(module: Module) -> set[str]:
    """Every private name a module defines anywhere (functions, classes, attributes)."""
    names: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if _private(n)}


def private_violations(modules: dict[str, Module]) -> list[str]:
    """``from x import _name`` across modules, and ``obj._name`` reads of another module's privates.

    A read counts when ``_name`` is a private name of the project, the object is not
    ``self``/``cls``/``super()`` (a subclass uses its base's members), and no class of the
    reading module defines a member of that name (the object may be one of the module's own
    instances: a class may use its own module's privates). Without types this is a
    heuristic: a read of a foreign object's member that shares its name with one of the
    module's own members goes unseen.
    """
    project_privates = set().union(*(_defined_private_names(m) for m in modules.values()))
    bad = []
    for name, module in modules.items():
        for target, imported, line in _imports(module, modules):
            if imported is not None and _private(imported) and target != name:
                bad.append(f"{module.path}:{line}: {name} imports private {target}.{imported}")
        own = _member_names(module)
        for node in ast.walk(module.tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and not _own_object(node.value)
                    and node.attr in project_privates and node.attr not in own):
                bad.append(f"{module.path}:{node.lineno}: {name} reads another module's private "
                           f"member .{node.attr}")
    return bad


#: the line limit of a source file
NEW_MAX_LINES = 600
#: the files over :data:`NEW_MAX_LINES` when it came, by module: they may grow to
#: :data:`MAX_LINES`, and a change that takes one past it splits it by responsibility
OVER_NEW_MAX = frozenset(f"{ROOT_PACKAGE}.{m}" for m in (
    "operators.chain", "operators.functions", "operators.harness",
    "operators.windows.assigners", "api.datastream", "api.file_connectors", "plan.config",
    "runtime.passes", "translation.batch.translator",
    "state_store.backends.rocksdb.sorted_state",
))


def long_files(modules: dict[str, Module]) -> list[str]:
    """Files over their line limit, and entries of :data:`OVER_NEW_MAX` that are no longer
    over the new one (or gone): ``"<path>: <n> lines (over <limit>)"``."""
    found = []
    for name, m in sorted(modules.items()):
        limit = MAX_LINES if name in OVER_NEW_MAX else NEW_MAX_LINES
        if m.lines > limit:
            found.append(f"{m.path}: {m.lines} lines (over {limit})")
    for name in sorted(OVER_NEW_MAX):
        module = modules.get(name)
        if module is None or module.lines <= NEW_MAX_LINES:
            found.append(f"{name}: listed in OVER_NEW_MAX, but "
                         + ("gone" if module is None else f"{module.lines} lines: take it off"))
    return found


BACKEND_REGISTRY = f"{ROOT_PACKAGE}.state_store.backends.registry"
BACKENDS = f"{ROOT_PACKAGE}.state_store.backends"


def _constant_strings(node: ast.expr | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [v for e in node.elts for v in _constant_strings(e)]
    return []


def builtin_backend_folders(modules: dict[str, Module]) -> tuple[str, ...]:
    """The registry's ``BUILTIN_FOLDERS``: the built-in backends' folders."""
    for node in ast.walk(modules[BACKEND_REGISTRY].tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "BUILTIN_FOLDERS" for t in node.targets):
            return tuple(_constant_strings(node.value))
    raise LookupError(f"{BACKEND_REGISTRY} has no BUILTIN_FOLDERS tuple")


def backend_names(modules: dict[str, Module]) -> frozenset[str]:
    """The built-in backends' names and aliases, read from the ``StateBackendType(name=...,
    aliases=...)`` call in each registered folder's ``registration.py``; only the registry
    may compare strings with them."""
    names: set[str] = set()
    for folder in builtin_backend_folders(modules):
        for node in ast.walk(modules[f"{BACKENDS}.{folder}.registration"].tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "StateBackendType":
                for keyword in node.keywords:
                    if keyword.arg in ("name", "aliases"):
                        names.update(n.lower() for n in _constant_strings(keyword.value))
    return frozenset(names)


def unregistered_backend_folders(modules: dict[str, Module]) -> list[str]:
    """Backend folders (a subpackage of ``state_store/backends`` with a ``registration.py``)
    missing from the registry's ``BUILTIN_FOLDERS``, and names there with no such folder."""
    folders = {n.split(".")[-2] for n in modules
               if n.startswith(BACKENDS + ".") and n.endswith(".registration")}
    listed = set(builtin_backend_folders(modules))
    return ([f"state_store/backends/{f}: not in the registry's BUILTIN_FOLDERS"
             for f in sorted(folders - listed)]
            + [f"BUILTIN_FOLDERS names {f!r}, which has no registration.py"
               for f in sorted(listed - folders)])


def unpackaged_packages(root: Path, modules: dict[str, Module]) -> list[str]:
    """Packages of the three folders that ``setup.cfg``'s ``packages`` leaves out (the wheel
    would ship without them), and packages it lists that do not exist."""
    lines = (root / "setup.cfg").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("packages ="))
    listed: set[str] = set()
    for line in lines[start + 1:]:
        if not line.startswith((" ", "\t")) or not line.strip():
            break
        listed.add(line.strip())
    packages = {n for n, m in modules.items() if m.is_package}
    return ([f"{p}: not in setup.cfg's packages" for p in sorted(packages - listed)]
            + [f"setup.cfg lists {p}, which is no package" for p in sorted(listed - packages)])


def _named_strings(node: ast.expr, names: frozenset[str]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value.lower() in names else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _named_strings(e, names)]
    return []


def _name_comparisons(modules: dict[str, Module], names: frozenset[str], owner: str,
                      what: str) -> list[str]:
    """Comparisons (``==``, ``!=``, ``in``, ``not in``, ``is``) of anything with one of
    ``names`` outside the module ``owner``: ``"<module>:<line> compares with <what> '<name>'"``."""
    found: list[str] = []
    for name, module in sorted(modules.items()):
        if name == owner:
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Compare):
                continue
            for operand in (node.left, *node.comparators):
                for value in _named_strings(operand, names):
                    found.append(f"{name}:{node.lineno} compares with {what} {value!r}")
    return found


def backend_name_comparisons(modules: dict[str, Module]) -> list[str]:
    """Comparisons of anything with a backend name outside the registry:
    ``"<module>:<line> compares with backend name '<name>'"``."""
    return _name_comparisons(modules, backend_names(modules), BACKEND_REGISTRY, "backend name")


#: the module holding the sink table; its ``SINK_KINDS`` dict's keys are the sink kinds' names
SINK_TABLE = f"{ROOT_PACKAGE}.translation.sinks"


def sink_kind_names(modules: dict[str, Module]) -> frozenset[str]:
    """The string keys of the ``SINK_KINDS = {...}`` dict in :data:`SINK_TABLE`."""
    for node in ast.walk(modules[SINK_TABLE].tree):
        target = (node.target if isinstance(node, ast.AnnAssign)
                  else node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "SINK_KINDS" and isinstance(value, ast.Dict):
            return frozenset(k.value.lower() for k in value.keys
                             if isinstance(k, ast.Constant) and isinstance(k.value, str))
    raise LookupError(f"{SINK_TABLE} has no SINK_KINDS dict literal")


def sink_kind_comparisons(modules: dict[str, Module]) -> list[str]:
    """Comparisons of anything with a sink kind's name outside the sink table:
    ``"<module>:<line> compares with sink kind '<name>'"``."""
    return _name_comparisons(modules, sink_kind_names(modules), SINK_TABLE, "sink kind")



#: the module that alone spells the runtime modes' names
MODE_MODULE = f"{ROOT_PACKAGE}.operators.modes"
#: the runtime modes' names (``execution.runtime-mode``'s values)
MODE_NAMES = frozenset({"BATCH", "STREAMING", "AUTOMATIC"})


def mode_literals(modules: dict[str, Module]) -> list[str]:
    """String literals spelling a runtime mode's name (as configuration and JSON spell it,
    upper case) outside :data:`MODE_MODULE`:
    ``"<module>:<line> spells mode '<name>'"``."""
    found: list[str] = []
    for name, module in sorted(modules.items()):
        if name == MODE_MODULE:
            continue
        for node in ast.walk(module.tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.strip() in MODE_NAMES):
                found.append(f"{name}:{node.lineno} spells mode {node.value!r}")
    return found



#: ``translation/``'s subpackages of one mode; its other modules are the shared part
MODE_PACKAGES = {"BATCH": "batch", "STREAMING": "streaming"}
SHARED = "shared"


def _translation_part(name: str) -> str | None:
    """BATCH, STREAMING or :data:`SHARED` for a ``translation/`` module, None outside it."""
    prefix = f"{ROOT_PACKAGE}.translation."
    if not name.startswith(prefix):
        return None
    top = name[len(prefix):].split(".")[0]
    return next((mode for mode, package in MODE_PACKAGES.items() if top == package), SHARED)


def mode_crossings(modules: dict[str, Module]) -> list[str]:
    """Imports from a ``translation/`` module of one mode into one of the other, or from the
    shared part into either: ``"<module> (<part>) imports <module> (<part>)"``."""
    found: list[str] = []
    for name, targets in sorted(import_edges(modules).items()):
        part = _translation_part(name)
        if part is None:
            continue
        for target in sorted(targets):
            other = _translation_part(target)
            if other is not None and other not in (part, SHARED):
                found.append(f"{name} ({part}) imports {target} ({other})")
    return found


def any_parameters(modules: dict[str, Module]) -> list[str]:
    """Parameters typed ``Any`` of the functions and methods ``translation/`` offers other
    modules (names without a leading underscore, in classes without one): its seams say what
    they take (a Protocol, a Spark or Arrow type, ``object`` for a user's value passed on).
    ``"<module>:<line> <function>(<parameter>: Any)"``."""
    found: list[str] = []
    prefix = f"{ROOT_PACKAGE}.translation"
    for name, module in sorted(modules.items()):
        if name != prefix and not name.startswith(prefix + "."):
            continue

        def visit(body: list[ast.stmt], owner: str, name: str = name) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    visit(node.body, f"{owner}{node.name}.", name)
                elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and (not node.name.startswith("_") or node.name == "__init__")):
                    args = node.args
                    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                *([args.vararg] if args.vararg else []),
                                *([args.kwarg] if args.kwarg else [])]:
                        if arg.annotation is not None and ast.unparse(arg.annotation) == "Any":
                            found.append(f"{name}:{node.lineno} {owner}{node.name}"
                                         f"({arg.arg}: Any)")

        visit(module.tree.body, "")
    return found


#: unit test files that test more than one module, by path under ``tests/``, with what they cover
CROSS_MODULE_TESTS: dict[str, str] = {
    "test_structure.py": "the structure rules, over the whole source tree",
    "test_exceptions.py": "the error classes of every layer and the package root's exports",
    "test_layering.py": "operators/ and state_store/ import without pyspark",
    "plugin/test_docs.py": "every python block of the documentation site",
    "plugin/test_readme.py": "the README and the documentation site against the code",
    "plugin/api/test_pyflink_environment_calls.py":
        "PyFlink's environment, checkpoint and session-resource calls (environment, checkpointing, "
        "session_resources)",
    "plugin/api/test_pyflink_small_items.py":
        "PyFlink's smaller names across the API (types, Row kinds, descriptors, job status, "
        "configuration)",
    "plugin/test_docstrings.py": "the docstrings of every public name of the package root",
    "plugin/test_pyflink_api.py":
        "the package root's exports against PyFlink's recorded API (docs/pyflink_api.json)",
    "plugin/test_site_render.py": "the built documentation site in a headless browser",
    "plugin/translation/test_config_and_tracing.py":
        "configuration resolution, lambda tracing and graph checks that need no SparkSession",
    "state_store/test_sorted_state_benchmark.py": "benchmarks/: the sorted-state benchmark's core",
    "state_store/test_state_ops_benchmark.py": "benchmarks/: the ValueState benchmark",
    "state_store/backends/test_backend_conformance.py": "the conformance suite of every backend",
    "state_store/backends/test_sorted_state_machine.py": "BinarySortedState on every backend",
}


def _module_names(package: Path) -> set[str]:
    """The modules and subpackages of the source folder ``package``, underscores trimmed
    (``__main__`` is ``main``), and the package's own name."""
    names = {package.name.strip("_")}
    for child in package.iterdir():
        if child.suffix == ".py" and child.stem != "__init__":
            names.add(child.stem.strip("_"))
        elif child.is_dir() and (child / "__init__.py").exists():
            names.add(child.name)
    return names


def test_file_name_violations(root: Path) -> list[str]:
    """The ``test_*.py`` files of ``root/tests`` named after no module of the package their
    folder mirrors, and not in :data:`CROSS_MODULE_TESTS`: ``"<path>: <why>"``."""
    tests = root / "tests"
    found: list[str] = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests).as_posix()
        if relative in CROSS_MODULE_TESTS:
            continue
        parts = path.relative_to(tests).parts
        if len(parts) == 1:
            found.append(f"{relative}: a test of no package folder, not listed as cross-module")
            continue
        package = root.joinpath(*parts[:-1])
        if parts[0] not in FOLDERS or not (package / "__init__.py").exists():
            found.append(f"{relative}: tests/{'/'.join(parts[:-1])} mirrors no package of the source")
            continue
        stem = path.stem[len("test_"):]
        if not any(stem == m or stem.startswith(m + "_") for m in _module_names(package)):
            found.append(f"{relative}: named after no module of {'/'.join(parts[:-1])}/")
    return found
