"""The registry of state backends: every layer finds a backend here, by name.

The built-in registrations are ``hashmap`` (alias ``heap``), ``rocksdb`` and ``single_key``.
Another backend is registered with :func:`register_backend`, or named by an importable
``"module:attr"`` path (``attr`` a :class:`~.base.StateBackendType`) wherever a backend name
is accepted: :func:`get_backend` imports the module and registers what it finds. Such a path
travels with a job to the executors, which import the same module (ship it with the job,
e.g. Spark's ``--py-files`` or ``SparkContext.addPyFile``).
"""

from __future__ import annotations

import importlib

from ..exceptions import ConfigurationError
from .base import StateBackendType
from .heap.registration import HEAP
from .rocksdb.registration import ROCKSDB
from .single_key.registration import SINGLE_KEY

__all__ = ["HEAP", "ROCKSDB", "SINGLE_KEY", "backend_reference", "get_backend",
           "register_backend", "registered_backends"]

#: canonical name -> registration, in registration order
_REGISTERED: dict[str, StateBackendType] = {}
#: every accepted name (canonical names and aliases, lower case; paths as given) -> canonical
_NAMES: dict[str, str] = {}
#: canonical name -> the path a registration was imported by (what executors resolve)
_PATHS: dict[str, str] = {}


def register_backend(backend_type: StateBackendType) -> StateBackendType:
    """Register ``backend_type`` under its name and aliases (again: a no-op).

    Args:
        backend_type: the registration.
    Returns:
        ``backend_type``.
    Raises:
        ConfigurationError: it is not a StateBackendType, or one of its names belongs to
            another registration.
    """
    if not isinstance(backend_type, StateBackendType):
        raise ConfigurationError(
            f"a state backend registration must be a StateBackendType, got {backend_type!r}")
    names = [n.lower() for n in (backend_type.name, *backend_type.aliases)]
    for name in names:
        if not name or ":" in name:
            raise ConfigurationError(
                f"state backend name {name!r} of {backend_type!r}: a name is non-empty "
                "and has no ':'")
        owner = _NAMES.get(name)
        if owner is not None and _REGISTERED[owner] is not backend_type:
            raise ConfigurationError(
                f"state backend name {name!r} is already registered (by {owner!r})")
    _REGISTERED[backend_type.name.lower()] = backend_type
    for name in names:
        _NAMES[name] = backend_type.name.lower()
    return backend_type


def _import(path: str) -> StateBackendType:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"state backend path {path!r} must be 'module:attribute'")
    try:
        module = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise ConfigurationError(
            f"state backend {path!r}: cannot import module {module_name!r}: {exc}") from exc
    found = getattr(module, attr.strip(), None)
    if not isinstance(found, StateBackendType):
        raise ConfigurationError(
            f"state backend {path!r}: {module_name}.{attr} is not a StateBackendType, "
            f"got {found!r}")
    register_backend(found)
    _NAMES[path] = found.name.lower()
    _PATHS.setdefault(found.name.lower(), path)
    return found


def get_backend(name: str) -> StateBackendType:
    """The registration named ``name``: a canonical name, an alias (any case) or a
    ``"module:attr"`` path (imported and registered on first use).

    Args:
        name: the backend's name or path.
    Returns:
        its registration.
    Raises:
        ConfigurationError: no backend has that name, or the path does not lead to one.
    """
    if not isinstance(name, str):
        raise ConfigurationError(f"a state backend name must be a string, got {name!r}")
    key = name.strip()
    canonical = _NAMES.get(key) or _NAMES.get(key.lower())
    if canonical is not None:
        return _REGISTERED[canonical]
    if ":" in key:
        return _import(key)
    known = ", ".join(sorted(n for n in _NAMES if ":" not in n))
    raise ConfigurationError(
        f"unknown state backend {name!r}; registered: {known}, or a 'module:attr' path")


def backend_reference(backend_type: StateBackendType) -> str:
    """How executors find ``backend_type``: the path it was imported by, else its name.

    Args:
        backend_type: a registration.
    Returns:
        the name or path to give :func:`get_backend`.
    """
    return _PATHS.get(backend_type.name.lower(), backend_type.name)


def registered_backends() -> tuple[StateBackendType, ...]:
    """Every registration, built-ins first.

    Returns:
        the registrations.
    """
    return tuple(_REGISTERED.values())


for _builtin in (HEAP, ROCKSDB, SINGLE_KEY):
    register_backend(_builtin)
