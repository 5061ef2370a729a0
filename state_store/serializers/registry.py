"""Serializer lookup by snapshot name, for savepoint restore.

``serializer_from_snapshot`` rebuilds any serializer from its ``snapshot()``;
each serializer module registers its classes here when it is imported (the
package imports all of them, so every name is known once any serializer is).
``registered`` and ``Stateless`` are the registration decorator and the snapshot
mixin of the serializers that have no parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from ..exceptions import SerializationError
from .base import TypeSerializer

__all__ = ["register_serializer", "serializer_from_snapshot", "registered", "Stateless"]

_REGISTRY: dict[str, Callable[[dict[str, Any]], TypeSerializer[Any]]] = {}


def register_serializer(
    name: str, factory: Callable[[dict[str, Any]], TypeSerializer[Any]]
) -> None:
    """Make ``serializer_from_snapshot`` able to rebuild serializers named ``name``.

    ``factory(params)`` gets the snapshot's ``params`` dict. Other layers use this
    for their own serializers (e.g. window namespaces).
    """
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not factory:
        raise SerializationError(f"a serializer named {name!r} is already registered")
    _REGISTRY[name] = factory


def serializer_from_snapshot(snapshot: dict[str, Any]) -> TypeSerializer[Any]:
    """Rebuild a serializer from its :meth:`TypeSerializer.snapshot` (savepoint restore)."""
    if not isinstance(snapshot, dict) or "name" not in snapshot:
        raise SerializationError(
            f"not a serializer snapshot (expected a dict with 'name' and 'params'): {snapshot!r}"
        )
    name = snapshot["name"]
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SerializationError(
            f"unknown serializer {name!r} in snapshot {snapshot!r}; known: {sorted(_REGISTRY)}"
        )
    params = snapshot.get("params") or {}
    try:
        return factory(params)
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SerializationError(f"invalid params for serializer {name!r}: {params!r}") from exc


_S = TypeVar("_S", bound="type[Stateless]")


def registered(cls: _S) -> _S:
    """Class decorator: register a parameterless serializer class by its NAME."""
    instance = cls()
    if not isinstance(instance, TypeSerializer):
        raise SerializationError(f"@registered: {cls.__name__} is not a TypeSerializer")
    cls.INSTANCE = instance
    register_serializer(cls.NAME, lambda params: instance)
    return cls


class Stateless:
    """Mixin: snapshot of a serializer without parameters."""

    NAME: ClassVar[str]
    #: The shared instance (set by the registration decorator).
    INSTANCE: ClassVar[Any]

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.NAME, "params": {}}
