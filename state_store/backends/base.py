"""What a state backend is to the rest of the project: :class:`StateBackendType` (one
registration per backend) and the :class:`KeyGroupStore` interface of STREAMING stores.

Each backend is a folder beside this file (``backend.py``: the keyed backend, ``ttl.py``: its
background TTL cleanup when it has one, ``registration.py``: its ``StateBackendType``); the
registry (``registry.py``) maps names to registrations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Protocol, cast

from ..backend import KeyedStateBackend
from ..descriptors import StateDescriptor
from ..entries import StateEntry, StateKind, StateMetaInfo
from ..exceptions import ConfigurationError, StateError
from ..internal_state import InternalKvState
from ..namespaces import VOID_NAMESPACE
from ..serializers import TypeSerializer
from ..ttl import TtlCleanup, create_ttl_state

__all__ = ["KeyGroupStore", "KeyGroupStoreFactory", "StateBackendType", "TableStateBackend"]


class TableStateBackend(KeyedStateBackend):
    """A keyed backend whose states come from a table of state classes by kind: the one
    state-creation path of the built-in backends (TTL wrapping included)."""

    #: state kind -> the backend's state class, called ``(backend, descriptor, namespace
    #: serializer)``
    STATE_CLASSES: ClassVar[Mapping[StateKind, Callable[..., InternalKvState]]] = {}
    #: the backend's background TTL cleanup (None: cleanup on read only)
    TTL_CLEANUP: ClassVar[Optional[TtlCleanup]] = None
    #: TTL expires values (False: they keep their timestamps and never expire)
    TTL_EXPIRES: ClassVar[bool] = True

    def _create_state(self, descriptor: StateDescriptor,
                      namespace_serializer: TypeSerializer[Any]) -> InternalKvState:
        if descriptor.ttl_enabled:
            return create_ttl_state(self, descriptor, namespace_serializer, self._create_plain,
                                    expires=self.TTL_EXPIRES, cleanup=type(self).TTL_CLEANUP)
        return self._create_plain(descriptor, namespace_serializer)

    def _create_plain(self, descriptor: StateDescriptor,
                      namespace_serializer: TypeSerializer[Any]) -> InternalKvState:
        state = self.STATE_CLASSES[descriptor.kind](self, descriptor, namespace_serializer)
        self._load_pending(descriptor.name, state)
        return state

    def _load_pending(self, name: str, state: Any) -> None:
        """Load the restored entries of state ``name`` that waited for its registration
        (none by default: a backend that stores entries where states find them)."""

    def _restore_entries(self, entries: Iterable[StateEntry]) -> None:
        """Load each entry into its registered state; keep the entries of states not
        registered yet (``_keep_pending``) for their registration."""
        for_registered: dict[str, list[StateEntry]] = {}
        for entry in entries:
            name = entry.state_name
            if name in self._states:
                for_registered.setdefault(name, []).append(entry)
            else:
                self._keep_pending(entry)
        for name, state_entries in for_registered.items():
            cast(_EntryLoader, self._states[name].state).load_entries(state_entries)

    def _keep_pending(self, entry: StateEntry) -> None:
        """Keep ``entry`` of a state not registered yet until its registration."""
        raise NotImplementedError

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterator[Any]:
        self._check_open()
        registration = self._states.get(state_name)
        if registration is not None:
            # the backend's own states, or TTL states forwarding it to theirs
            found = cast(_KeyLister, registration.state)._keys_in_namespace(namespace)
        else:
            pending = self._pending_entries(state_name)
            if pending is not None:
                ns_bytes = self._namespace_bytes_for(state_name, namespace)
                found = [(e.key_group, e.key) for e in pending if e.namespace == ns_bytes]
            elif state_name in self._restored_meta:
                found = []
            else:
                raise StateError(f"keys(): unknown state {state_name!r}")
        return self._key_values(found)

    def _pending_entries(self, state_name: str) -> Optional[Iterable[StateEntry]]:
        """The restored entries of state ``state_name`` waiting for its registration, None
        when there are none (by default: a backend that stores entries where states find
        them)."""
        return None

    def _key_values(self, found: list[tuple[int, bytes]]) -> Iterator[Any]:
        """The keys of ``found`` (key group and key bytes, maybe repeated), each once, in
        key group and key order."""
        deserialize = self.key_serializer.deserialize
        return iter([deserialize(key_bytes) for _, key_bytes in sorted(set(found))])


class _EntryLoader(Protocol):
    """A table backend's state (or a TTL state forwarding it): it loads restored entries."""

    def load_entries(self, entries: Iterable[StateEntry]) -> None: ...


class _KeyLister(Protocol):
    """A table backend's state: it lists the keys it holds in a namespace."""

    def _keys_in_namespace(self, namespace: Any) -> list[tuple[int, bytes]]: ...


class KeyGroupStore(Protocol):
    """Where a STREAMING keyed operator keeps the state of its key groups between
    micro-batches, for a backend whose state does not travel as full snapshots in Spark's
    GroupState. The GroupState then holds what :meth:`commit` returns (e.g. a pointer to
    files); the methods are called on executors, one key group at a time."""

    def acquire(self, key_group: int, state: Optional[bytes]) -> KeyedStateBackend:
        """The backend holding exactly the committed ``state`` of ``key_group`` (None: empty)."""

    def commit(self, key_group: int, backend: KeyedStateBackend) -> bytes:
        """Make ``backend``'s state the key group's next version; what GroupState keeps."""

    def abandon(self, key_group: int) -> None:
        """Give up the uncommitted changes of ``key_group`` (the call failed)."""

    def export_entries(self, key_group: int, state: bytes
                       ) -> tuple[list[StateMetaInfo], list[StateEntry]]:
        """Savepoint snapshot hook: the committed ``state`` as meta infos and unified entries."""

    def import_entries(self, key_group: int, metas: Iterable[StateMetaInfo],
                       entries: Iterable[StateEntry]) -> bytes:
        """Savepoint restore hook: a first committed version from unified entries."""


#: ``factory(checkpoint_dir, key_serializer, max_parallelism, storage, options)``: the
#: STREAMING key-group store of one keyed operator (``checkpoint_dir``: a folder of the job,
#: visible to every executor, on ``storage``, a ``state_store.storage.Storage``)
KeyGroupStoreFactory = Callable[[str, Any, int, Any, Mapping[str, Any]], KeyGroupStore]


@dataclass(frozen=True)
class StateBackendType:
    """One state backend as the project sees it: register it (``registry.register_backend``)
    and every layer finds it by name.

    Attributes:
        name: the one canonical name (in savepoint metadata and job identities).
        create_backend: ``create_backend(key_serializer, max_parallelism, key_group_range,
            **options)``: a new, empty keyed backend.
        description: one line for error messages and documentation.
        aliases: other names users may give it (e.g. ``heap`` for ``hashmap``).
        options: the option names ``create_backend`` (and the key-group store) accept.
        ttl_cleanup: the background TTL cleanup its states install (see ``state_store.ttl``);
            the backend passes it to ``create_ttl_state``. None: cleanup on read only.
        key_group_store: the STREAMING key-group store factory; None: a STREAMING key
            group's state is the backend's full snapshot, kept in Spark's GroupState.
        streaming: it runs STREAMING and hash-based BATCH jobs (False: only what its
            owner builds it for, e.g. sorted BATCH input).
        configurable: users may choose it (``state.backend.type``, ``set_state_backend``).
        snapshot_fast_paths: STREAMING may skip building this backend where a plain reduce
            can write the same full-snapshot bytes directly (the heap backend's state is
            nothing but those bytes between micro-batches).
    """

    name: str
    create_backend: Callable[..., KeyedStateBackend]
    description: str = ""
    aliases: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    ttl_cleanup: Optional[TtlCleanup] = None
    key_group_store: Optional[KeyGroupStoreFactory] = None
    streaming: bool = True
    configurable: bool = True
    snapshot_fast_paths: bool = False

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise a ConfigurationError naming the backend and any option it does not take.

        Args:
            options: the options given.
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            takes = ", ".join(self.options) if self.options else "none"
            raise ConfigurationError(
                f"the {self.name} state backend has no option {', '.join(unknown)} "
                f"(options: {takes})")

    def create(self, key_serializer: Any, max_parallelism: int,
               key_group_range: Optional[range] = None, **options: Any) -> KeyedStateBackend:
        """A new, empty keyed backend of this type.

        Args:
            key_serializer: the keys' serializer.
            max_parallelism: the number of key groups.
            key_group_range: the key groups it owns (None: all).
            **options: backend options (checked against ``options``).
        Returns:
            the backend.
        """
        self.check_options(options)
        return self.create_backend(key_serializer, max_parallelism, key_group_range, **options)

    def create_key_group_store(self, checkpoint_dir: Optional[str], key_serializer: Any,
                               max_parallelism: int, storage: Any,
                               options: Mapping[str, Any]) -> Optional[KeyGroupStore]:
        """The STREAMING key-group store of one keyed operator, or None when the state
        travels as full snapshots in GroupState.

        Args:
            checkpoint_dir: the operator's state folder (required with a store).
            key_serializer: the keys' serializer.
            max_parallelism: the number of key groups.
            storage: the storage layer of ``checkpoint_dir``.
            options: backend options.
        Returns:
            the store, or None.
        """
        if self.key_group_store is None:
            return None
        if checkpoint_dir is None:
            raise ConfigurationError(
                f"the {self.name} state backend keeps STREAMING state in files: "
                "it needs a state folder")
        self.check_options(options)
        return self.key_group_store(checkpoint_dir, key_serializer, max_parallelism, storage,
                                    options)
