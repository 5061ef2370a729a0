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
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from ..backend import KeyedStateBackend
from ..exceptions import ConfigurationError
from .base import KeyGroupStore, StateBackendType

__all__ = ["BUILTIN_FOLDERS", "HEAP", "ROCKSDB", "SINGLE_KEY", "BackendChoice",
           "backend_reference", "get_backend", "register_backend", "registered_backends"]

#: the built-in backends, by folder: each folder's ``registration.py`` names its
#: :class:`~.base.StateBackendType` ``REGISTRATION``. Adding a backend to the package is its
#: folder and its name here (and its package in ``setup.cfg``, which a structure test checks).
BUILTIN_FOLDERS = ("heap", "rocksdb", "single_key")

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


class BackendChoice(NamedTuple):
    """A job's state backend: how executors find its registration, and its checked options.

    It travels with the job to the executors; :meth:`backend_type` and :meth:`create` are the
    way from it to a backend."""

    #: the registration's name, or the ``"module:attr"`` path it was imported by
    reference: str
    #: the backend's options (checked against the registration's; read, never changed)
    options: Mapping[str, Any]

    @classmethod
    def of(cls, backend_type: StateBackendType,
           options: Optional[Mapping[str, Any]] = None) -> BackendChoice:
        """The choice of ``backend_type`` with ``options`` (checked).

        Args:
            backend_type: a registration.
            options: its options (None: none).
        Returns:
            the choice, referring to the registration as executors find it.
        Raises:
            ConfigurationError: an option the registration does not take.
        """
        own = dict(options or {})
        backend_type.check_options(own)
        return cls(backend_reference(backend_type), own)

    def backend_type(self) -> StateBackendType:
        """The registration chosen (:func:`get_backend`).

        Returns:
            the registration.
        """
        return get_backend(self.reference)

    def create(self, key_serializer: Any, max_parallelism: int,
               key_group_range: Optional[range] = None) -> KeyedStateBackend:
        """A new, empty keyed backend of the choice, with its options.

        Args:
            key_serializer: as :meth:`StateBackendType.create` takes it.
            max_parallelism: as there.
            key_group_range: as there (None: every key group).
        Returns:
            the backend.
        """
        return self.backend_type().create(key_serializer, max_parallelism, key_group_range,
                                          **self.options)

    def create_key_group_store(self, checkpoint_dir: Optional[str], key_serializer: Any,
                               max_parallelism: int, storage: Any) -> Optional[KeyGroupStore]:
        """The choice's STREAMING key-group store (``StateBackendType.create_key_group_store``).

        Args:
            checkpoint_dir: the keyed stage's state folder.
            key_serializer: the keys' serializer.
            max_parallelism: the number of key groups.
            storage: the storage layer of ``checkpoint_dir``.
        Returns:
            the store, or None when state travels as full snapshots.
        """
        return self.backend_type().create_key_group_store(
            checkpoint_dir, key_serializer, max_parallelism, storage, self.options)


def _builtin(folder: str) -> StateBackendType:
    module = importlib.import_module(f"{__package__}.{folder}.registration")
    registration: StateBackendType = module.REGISTRATION
    return register_backend(registration)


for _folder in BUILTIN_FOLDERS:
    _builtin(_folder)

#: the built-in registrations the package itself names
HEAP = get_backend("hashmap")
ROCKSDB = get_backend("rocksdb")
SINGLE_KEY = get_backend("single_key")
