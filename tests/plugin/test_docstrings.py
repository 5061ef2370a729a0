"""Every public name of ``pyspark_datastream`` has a Google-style docstring.

The walk covers each name of ``pyspark_datastream.__all__`` and the public classes nested in
its classes (contexts, builders), the public methods and properties they define (or inherit from a project base class, checked once where defined) and the
modules that define them. A function taking parameters needs an ``Args:`` section naming each
one; a function annotated to return something needs ``Returns:`` or ``Yields:``. Properties
need a line of docstring only. An override without a docstring of its own is documented by the
project base-class method it overrides (as ``inspect.getdoc`` reads it), which is checked where
it is defined. An exported class whose constructor takes parameters documents them in the
class docstring's ``Args:`` (mkdocstrings merges ``__init__`` into the class), unless the
class is one programs obtain from the API, listed in ``NOT_CONSTRUCTED`` and saying so.
The checker itself is tested on deliberately undocumented code.
"""

from __future__ import annotations

import enum
import inspect
import re
import sys
import types
from collections.abc import Callable, Iterator

import pyspark_datastream

PACKAGE = "pyspark_datastream"
MAX_MODULE_DOCSTRING_LINES = 20
NO_RETURN = {"None", "NoReturn", "typing.NoReturn", "Never"}
SECTION = re.compile(r"^(\s*)(\w[\w ]*):\s*$")


def _own(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith(PACKAGE)


def _args_documented(doc: str) -> set[str]:
    """The parameter names listed under the ``Args:`` section of ``doc``."""
    names: set[str] = set()
    lines = doc.expandtabs().splitlines()
    for i, line in enumerate(lines):
        head = SECTION.match(line)
        if not head or head.group(2) not in ("Args", "Arguments", "Parameters"):
            continue
        indent = None
        for entry in lines[i + 1:]:
            if not entry.strip():
                continue
            depth = len(entry) - len(entry.lstrip())
            if depth <= len(head.group(1)):
                break
            indent = depth if indent is None else indent
            if depth == indent:
                names.add(entry.strip().split(":")[0].split(" (")[0].lstrip("*"))
    return names


def _has_section(doc: str, *titles: str) -> bool:
    return any((m := SECTION.match(line)) and m.group(2) in titles for line in doc.splitlines())


def _function_problems(func: Callable[..., object]) -> list[str]:
    doc = inspect.getdoc(func) if func.__doc__ else None
    if not doc:
        return ["missing docstring"]
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    params = [p.name for i, p in enumerate(signature.parameters.values())
              if not (i == 0 and p.name in ("self", "cls"))]
    problems = []
    missing = [p for p in params if p not in _args_documented(doc)]
    if missing:
        problems.append(f"missing Args for {', '.join(missing)}")
    returns = signature.return_annotation
    annotated = returns is not inspect.Signature.empty
    text = returns if isinstance(returns, str) else getattr(returns, "__name__", repr(returns))
    if annotated and returns is not None and text not in NO_RETURN and not _has_section(
            doc, "Returns", "Yields"):
        problems.append("missing Returns")
    return problems


def _documented_above(public: type, cls: type, name: str) -> bool:
    """True when a project class after ``cls`` in the MRO of ``cls`` or of the public class
    it was reached from defines ``name`` with a docstring (a mixin's override is documented
    by the base method it implements)."""
    after = public.__mro__[public.__mro__.index(cls) + 1:]
    for base in (*cls.__mro__[1:], *after):
        value = vars(base).get(name)
        if value is not None and _own(base) and (getattr(value, "__doc__", None) or getattr(
                getattr(value, "__func__", None), "__doc__", None)):
            return True
    return False


def _members(cls: type) -> Iterator[tuple[str, object]]:
    """The public methods and properties ``cls`` defines in its own body."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property) or inspect.isfunction(value):
            yield name, value


def offenders(names: dict[str, object]) -> list[str]:
    """Every problem of the public ``names`` (name -> object), as ``module.Name: problem``."""
    found: list[str] = []
    seen_classes: set[type] = set()
    modules: set[str] = set()

    def report(where: str, problems: list[str]) -> None:
        found.extend(f"{where}: {p}" for p in problems)

    queue = sorted(names.items())
    while queue:
        name, obj = queue.pop(0)
        if isinstance(obj, types.ModuleType) or not _own(obj):
            continue
        if inspect.isclass(obj):  # public nested classes (contexts, builders) too
            queue.extend((f"{name}.{n}", v) for n, v in vars(obj).items()
                         if inspect.isclass(v) and not n.startswith("_")
                         and v.__qualname__ == f"{obj.__qualname__}.{n}")
        module = obj.__module__
        modules.add(module)
        if inspect.isclass(obj):
            for cls in obj.__mro__:
                if cls in seen_classes or not _own(cls):
                    continue
                seen_classes.add(cls)
                modules.add(cls.__module__)
                where = f"{cls.__module__}.{cls.__qualname__}"
                if not vars(cls).get("__doc__") and not cls.__name__.startswith("_"):
                    report(where, ["missing docstring"])
                if issubclass(cls, enum.Enum):
                    continue
                for member, value in _members(cls):
                    if not value.__doc__ and _documented_above(obj, cls, member):
                        continue
                    if isinstance(value, property):
                        if not value.__doc__:
                            report(f"{where}.{member}", ["missing docstring"])
                    else:
                        report(f"{where}.{member}", _function_problems(value))  # type: ignore[arg-type]
        elif callable(obj):
            report(f"{module}.{name}", _function_problems(obj))
    for module in sorted(modules):
        doc = sys.modules[module].__doc__
        if not doc or not doc.strip():
            report(module, ["missing module docstring"])
        elif len(doc.strip().splitlines()) >= MAX_MODULE_DOCSTRING_LINES:
            report(module, [f"module docstring of {len(doc.strip().splitlines())} lines"
                            f" (keep it under {MAX_MODULE_DOCSTRING_LINES})"])
    return found


#: Exported classes a program obtains from the API (stream methods, builders, factories,
#: ``execute``) rather than by calling the class: their docstrings say how, with this phrase.
NOT_CONSTRUCTED_PHRASE = "not constructed directly"
NOT_CONSTRUCTED = frozenset({
    "AllWindowedStream", "BroadcastConnectedStream", "BroadcastStream", "BucketAssigner",
    "CachedDataStream", "Encoder", "FileSink", "FileSource", "FileSourceBuilder",
    "RollingPolicy", "StreamFormat",
    "CheckpointConfig", "CloseableIterator", "ConnectedStreams", "DataStream", "DataStreamSink",
    "ExecutionConfig", "JobClient", "JobExecutionResult", "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema", "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema", "KafkaSink", "KafkaSource", "KeyedStream",
    "PartitionWindowedStream", "RuntimeContext", "Savepoint", "StateTtlConfig",
    "TemporalListState", "TemporalValueState", "WatermarkStrategy", "WindowedStream",
})


def _constructor_params(cls: type) -> list[str]:
    """The public parameters of the project-defined ``__init__`` of ``cls`` (own or
    inherited; a dataclass's generated one included)."""
    init = cls.__init__  # type: ignore[misc]
    if init is object.__init__ or not (_own(init) or "__init__" in vars(cls)):
        return []
    try:
        signature = inspect.signature(init)
    except (TypeError, ValueError):
        return []
    return [p.name for i, p in enumerate(signature.parameters.values())
            if i > 0 and not p.name.startswith("_")]


def constructor_offenders(names: dict[str, object],
                          not_constructed: frozenset[str] = NOT_CONSTRUCTED) -> list[str]:
    """Each exported class of ``names`` whose constructor parameters the class docstring
    leaves out of ``Args:`` (or, if listed in ``not_constructed``, whose docstring does not
    say it is not constructed directly)."""
    found: list[str] = []
    for name, obj in sorted(names.items()):
        if not inspect.isclass(obj) or not _own(obj) or issubclass(obj, enum.Enum):
            continue
        doc = inspect.cleandoc(vars(obj).get("__doc__") or "")
        if name in not_constructed:
            if NOT_CONSTRUCTED_PHRASE not in " ".join(doc.split()):
                found.append(f"{name}: listed as not constructed directly; its docstring"
                             f" must say {NOT_CONSTRUCTED_PHRASE!r} and how it is obtained")
            continue
        missing = [p for p in _constructor_params(obj) if p not in _args_documented(doc)]
        if missing:
            found.append(f"{name}: class docstring lacks Args for {', '.join(missing)}")
    return found


def test_every_exported_constructor_documents_its_parameters() -> None:
    names = {name: getattr(pyspark_datastream, name) for name in pyspark_datastream.__all__}
    assert NOT_CONSTRUCTED <= set(names), sorted(NOT_CONSTRUCTED - set(names))
    problems = constructor_offenders(names)
    assert not problems, f"{len(problems)} constructor problems:\n" + "\n".join(problems)


def test_every_public_name_has_a_complete_docstring() -> None:
    names = {name: getattr(pyspark_datastream, name) for name in pyspark_datastream.__all__}
    problems = offenders(names)
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)


# --- the checker itself: each kind of gap is reported, a complete docstring is not -------------


def _fake_module() -> types.ModuleType:
    module = types.ModuleType(f"{PACKAGE}._docstring_probe", "A probe module.")
    code = '''
class Base:
    """A base."""

    def inherited(self, value: int) -> int:
        return value


class Probe(Base):
    """A probe."""

    @property
    def size(self) -> int:
        return 1

    @property
    def kind(self) -> str:
        """The kind."""
        return "k"

    def nothing(self, first: int, second: str) -> str:
        """Does nothing.

        Args:
            first: a number.

        """
        return second

    def complete(self, first: int, *rest: int, flag: bool = False, **extra: str) -> int:
        """Adds.

        Args:
            first: a number.
            *rest: more numbers.
            flag (bool): a flag, the type in brackets.
                Continued on a deeper line: not_a_param: is not a parameter.
            **extra: names.

        Returns:
            The sum.
        """
        return first

    def yields(self) -> Iterator[int]:
        """Counts.

        Yields:
            Numbers.
        """
        yield 1

    def procedure(self, value: int) -> None:
        """Sets.

        Args:
            value: the value.
        """

    @staticmethod
    def static(value: int) -> int:
        """Static, without sections."""
        return value

    def _private(self, value: int) -> int:
        return value


class Outer:
    """Holds a nested class."""

    class Context:
        """A nested context."""

        def timestamp(self) -> int:
            return 0


class Override(Probe):
    """Overrides documented and undocumented base methods."""

    def procedure(self, value: int) -> None:
        pass

    def inherited(self, value: int) -> int:
        return value + 1


def undocumented(x: int) -> int:
    return x
'''
    exec(compile("from collections.abc import Iterator\n" + code, module.__name__, "exec"),  # noqa: S102
         module.__dict__)
    sys.modules[module.__name__] = module
    return module


def test_the_checker_reports_each_gap_and_nothing_else() -> None:
    module = _fake_module()
    try:
        problems = offenders({"Override": module.Override, "Outer": module.Outer,
                              "undocumented": module.undocumented})
    finally:
        del sys.modules[module.__name__]
    prefix = f"{module.__name__}."
    assert sorted(p.removeprefix(prefix) for p in problems) == sorted([
        "Base.inherited: missing docstring",
        "Override.inherited: missing docstring",
        "Outer.Context.timestamp: missing docstring",
        "Probe.size: missing docstring",
        "Probe.nothing: missing Args for second",
        "Probe.nothing: missing Returns",
        "Probe.static: missing Args for value",
        "Probe.static: missing Returns",
        "undocumented: missing docstring",
    ])


def test_the_checker_reports_a_missing_or_long_module_docstring() -> None:
    module = _fake_module()
    try:
        module.__doc__ = None
        assert f"{module.__name__}: missing module docstring" in offenders({"Probe": module.Probe})
        module.__doc__ = "\n".join(f"line {i}" for i in range(25))
        assert any("module docstring of 25 lines" in p for p in offenders({"Probe": module.Probe}))
    finally:
        del sys.modules[module.__name__]


def test_args_section_parsing_reads_only_the_top_level_entries() -> None:
    doc = """What.

    Args:
        alpha: first.
            beta: a continuation line, not a parameter.
        gamma (int): typed.
        *args: rest.

    Returns:
        delta: not an argument.
    """
    assert _args_documented(inspect.cleandoc(doc)) == {"alpha", "gamma", "args"}


def test_the_constructor_checker_reports_each_gap_and_nothing_else() -> None:
    code = '''
from dataclasses import dataclass


class Plain:
    """No parameters."""


class Documented:
    """Documented.

    Args:
        size: a size.
        **options: more.
    """

    def __init__(self, size: int, *, _hidden: bool = False, **options: int) -> None:
        pass


class Undocumented(Documented):
    """Inherits a constructor whose parameters it does not document."""


@dataclass
class Data:
    """A dataclass without Args."""

    millis: int


class Built:
    """Built by a factory; not constructed
    directly."""

    def __init__(self, spec: dict) -> None:
        pass


class Unsaid:
    """Built by a factory."""

    def __init__(self, spec: dict) -> None:
        pass
'''
    module = types.ModuleType(f"{PACKAGE}._constructor_probe", "A probe module.")
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, module.__name__, "exec"), module.__dict__)  # noqa: S102
    finally:
        del sys.modules[module.__name__]
    names = {n: getattr(module, n) for n in
             ("Plain", "Documented", "Undocumented", "Data", "Built", "Unsaid")}
    problems = constructor_offenders(names, frozenset({"Built", "Unsaid"}))
    assert sorted(p.split(":")[0] for p in problems) == ["Data", "Undocumented", "Unsaid"]
    assert "Data: class docstring lacks Args for millis" in problems
    assert "Undocumented: class docstring lacks Args for size, options" in problems
