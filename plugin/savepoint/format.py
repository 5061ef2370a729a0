"""The savepoint format: one Delta table of unified keyed entries plus its metadata row.

The specification (columns, operator state, atomicity, versions) is docs/savepoint-format.md.
This module is pure Python (pyarrow only): it defines the schema, the metadata, the restore
checks and the per-key decoding used by the State Processor API; the Spark side is
:mod:`pyspark_datastream.savepoint.writer` and :mod:`pyspark_datastream.savepoint.reader`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import pyarrow as pa

from ..operators.modes import RuntimeMode
from ..state_store.descriptors import StateDescriptor
from ..state_store.entries import (
    TIMER_STATE_PREFIX,
    StateEntry,
    StateKind,
    StateMetaInfo,
    decode_timestamp,
)
from ..state_store.exceptions import (
    IncompatibleStateError,
    SavepointFormatError,
    SerializationError,
)
from ..state_store.keygroups import assign_key_group, check_max_parallelism
from ..state_store.serializers import TypeSerializer, serializer_from_snapshot
from ..state_store.serializers.ttl import is_ttl_snapshot
from .exceptions import UnclaimedStateError

__all__ = [
    "BOOTSTRAP",
    "FORMAT_VERSION",
    "READABLE_FORMAT_VERSIONS",
    "required_format_version",
    "METADATA_KIND",
    "BROADCAST_KIND",
    "SAVEPOINT_COLUMNS",
    "ENTRY_COLUMNS",
    "savepoint_arrow_schema",
    "savepoint_ddl",
    "entries_ddl",
    "OperatorMetadata",
    "SavepointMetadata",
    "metadata_row",
    "check_restore",
    "entries_from_batch",
    "entries_to_batch",
    "group_by_key",
    "decode_key_states",
    "decode_timers",
]

#: The newest version of this layout (2: version 1 plus TTL state values, which start with
#: their 8-byte last-access timestamp, and operator (broadcast) state rows); a savepoint is
#: written with the lowest version that holds its states (:func:`required_format_version`).
FORMAT_VERSION = 2
#: Versions this library reads; readers refuse others.
READABLE_FORMAT_VERSIONS = (1, 2)
#: ``kind`` of the metadata row.
METADATA_KIND = "metadata"
#: ``kind`` of operator (broadcast) state rows; their key group is -1.
BROADCAST_KIND = "broadcast"

#: (name, arrow type) of every column of a savepoint table, in order.
SAVEPOINT_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("kind", pa.string()),
    ("operator_uid", pa.string()),
    ("key_group", pa.int32()),
    ("key", pa.binary()),
    ("state_name", pa.string()),
    ("namespace", pa.binary()),
    ("user_key", pa.binary()),
    ("value", pa.binary()),
)
#: Columns of an entries DataFrame given to ``write_savepoint`` (kind is derived).
ENTRY_COLUMNS: tuple[str, ...] = (
    "operator_uid", "key_group", "key", "state_name", "namespace", "user_key", "value",
)
_SPARK_TYPES = {"string": "string", "int32": "int", "binary": "binary"}


def savepoint_arrow_schema() -> pa.Schema:
    """Arrow schema of a savepoint table."""
    return pa.schema([pa.field(n, t) for n, t in SAVEPOINT_COLUMNS])


def savepoint_ddl() -> str:
    """Spark DDL of a savepoint table."""
    return ", ".join(f"{n} {_SPARK_TYPES[str(t)]}" for n, t in SAVEPOINT_COLUMNS)


def entries_ddl() -> str:
    """Spark DDL of an entries DataFrame (``ENTRY_COLUMNS``)."""
    types = dict(SAVEPOINT_COLUMNS)
    return ", ".join(f"{n} {_SPARK_TYPES[str(types[n])]}" for n in ENTRY_COLUMNS)


# --------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OperatorMetadata:
    """One operator of a savepoint: its uid, key serializer, keyed states (timers included)
    and broadcast (operator) states."""

    uid: str
    key_serializer: dict[str, Any]
    states: tuple[StateMetaInfo, ...]
    generated_uid: bool = False
    broadcast_states: tuple[StateMetaInfo, ...] = ()

    def kind_of(self) -> dict[str, str]:
        """``state name -> kind`` of every state of this operator."""
        return {m.name: m.kind.value for m in self.states}

    def state(self, name: str) -> StateMetaInfo:
        """Meta info of state ``name``; ``SavepointFormatError`` naming the known ones if absent."""
        for meta in self.states:
            if meta.name == name:
                return meta
        raise SavepointFormatError(
            f"operator {self.uid!r} has no state {name!r} in the savepoint; it has "
            f"{sorted(m.name for m in self.states)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``broadcast_states`` only when there are some)."""
        data = {
            "uid": self.uid,
            "key_serializer": self.key_serializer,
            "states": [m.to_dict() for m in self.states],
            "generated_uid": self.generated_uid,
        }
        if self.broadcast_states:
            data["broadcast_states"] = [m.to_dict() for m in self.broadcast_states]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OperatorMetadata:
        """Inverse of :meth:`to_dict`."""
        try:
            return cls(
                uid=str(data["uid"]),
                key_serializer=dict(data["key_serializer"]),
                states=tuple(StateMetaInfo.from_dict(s) for s in data["states"]),
                generated_uid=bool(data.get("generated_uid", False)),
                broadcast_states=tuple(StateMetaInfo.from_dict(s)
                                       for s in data.get("broadcast_states", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, SavepointFormatError):
                raise
            raise SavepointFormatError(f"malformed operator metadata {data!r:.200}: {exc}") from exc


#: ``SavepointMetadata.mode`` of a savepoint the State Processor API bootstrapped
BOOTSTRAP = "BOOTSTRAP"


@dataclass(frozen=True)
class SavepointMetadata:
    """Everything about a savepoint besides its entries (stored as its metadata row)."""

    max_parallelism: int
    operators: dict[str, OperatorMetadata]
    final_watermark: Optional[int] = None
    #: what wrote it: a ``RuntimeMode``'s value, or :data:`BOOTSTRAP` (the JSON's string)
    mode: str = RuntimeMode.BATCH.value
    backend: str = "single_key"
    job_name: str = ""
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    #: raised on construction to :func:`required_format_version` of the operators
    format_version: int = 1

    def __post_init__(self) -> None:
        needed = required_format_version(self.operators.values())
        if self.format_version < needed:
            object.__setattr__(self, "format_version", needed)

    def operator(self, uid: str) -> OperatorMetadata:
        """Metadata of operator ``uid``; ``SavepointFormatError`` naming the known uids if absent."""
        op = self.operators.get(uid)
        if op is None:
            raise SavepointFormatError(
                f"the savepoint has no operator with uid {uid!r}; it has {sorted(self.operators)}"
            )
        return op

    def to_json(self) -> str:
        """Canonical JSON (sorted keys)."""
        return json.dumps(
            {
                "format_version": self.format_version,
                "max_parallelism": self.max_parallelism,
                "final_watermark": self.final_watermark,
                "mode": self.mode,
                "backend": self.backend,
                "job_name": self.job_name,
                "created_ms": self.created_ms,
                "operators": [self.operators[u].to_dict() for u in sorted(self.operators)],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> SavepointMetadata:
        """Parse :meth:`to_json`; ``SavepointFormatError`` on malformed JSON or an unknown version."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SavepointFormatError(f"savepoint metadata is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise SavepointFormatError(f"savepoint metadata must be a JSON object, got {data!r:.100}")
        version = data.get("format_version")
        if version not in READABLE_FORMAT_VERSIONS or isinstance(version, bool):
            raise SavepointFormatError(
                f"savepoint format version {version!r} is not supported (this library reads "
                f"versions {', '.join(map(str, READABLE_FORMAT_VERSIONS))})"
            )
        try:
            ops = [OperatorMetadata.from_dict(o) for o in data["operators"]]
            watermark = data.get("final_watermark")
            return cls(
                max_parallelism=check_max_parallelism(int(data["max_parallelism"])),
                operators={o.uid: o for o in ops},
                final_watermark=None if watermark is None else int(watermark),
                mode=str(data.get("mode", "")),
                backend=str(data.get("backend", "")),
                job_name=str(data.get("job_name", "")),
                created_ms=int(data.get("created_ms", 0)),
                format_version=int(version),
            )
        except SavepointFormatError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise SavepointFormatError(f"malformed savepoint metadata: {exc}") from exc

    def kind_of(self) -> dict[tuple[str, str], str]:
        """``(uid, state name) -> kind`` of every state."""
        return {(u, name): kind for u, op in self.operators.items()
                for name, kind in op.kind_of().items()}

    def broadcast_states(self) -> list[tuple[str, str]]:
        """``(uid, state name)`` of every broadcast (operator) state."""
        return sorted((u, m.name) for u, op in self.operators.items()
                      for m in op.broadcast_states)


def required_format_version(operators: Iterable[OperatorMetadata]) -> int:
    """2 when any keyed state of ``operators`` has TTL (its value serializer is the
    ``TtlValue`` one) or any operator has broadcast state (a version-1 reader would take its
    rows for keyed entries), else 1."""
    for op in operators:
        if op.broadcast_states or any(is_ttl_snapshot(m.value_serializer) for m in op.states):
            return 2
    return 1


def metadata_row(metadata: SavepointMetadata) -> dict[str, Any]:
    """The metadata row of a savepoint table (column name -> value)."""
    return {
        "kind": METADATA_KIND,
        "operator_uid": None,
        "key_group": -1,
        "key": b"",
        "state_name": "",
        "namespace": b"",
        "user_key": b"",
        "value": metadata.to_json().encode("utf-8"),
    }


# --------------------------------------------------------------------------------------------
# Restore checks
# --------------------------------------------------------------------------------------------
def check_restore(
    metadata: SavepointMetadata,
    program: Mapping[str, tuple[TypeSerializer[Any], Iterable[StateMetaInfo]]],
    ignore_unclaimed: bool = False,
) -> None:
    """Refuse a restore before anything runs.

    ``program`` maps each keyed operator uid of the program to its key serializer
    and the meta infos of the states it registers (known at open time). Raises
    :class:`IncompatibleStateError` (naming operator, state and both snapshots)
    when a stored serializer cannot be read by the program's, and
    :class:`UnclaimedStateError` when a savepoint operator has no uid in the
    program, unless ``ignore_unclaimed``.
    """
    unclaimed = sorted(set(metadata.operators) - set(program))
    if unclaimed and not ignore_unclaimed:
        raise UnclaimedStateError(
            f"savepoint state of operator(s) {unclaimed} is not claimed by any operator of the "
            f"program (program uids: {sorted(program)}); set "
            "execution.savepoint.ignore-unclaimed-state=true to drop it"
        )
    for uid, (key_serializer, metas) in program.items():
        stored = metadata.operators.get(uid)
        if stored is None:
            continue
        if not key_serializer.is_compatible_with(stored.key_serializer):
            raise IncompatibleStateError(
                f"operator {uid!r}: the savepoint's key serializer {stored.key_serializer!r} is "
                f"incompatible with the program's {key_serializer.snapshot()!r}"
            )
        stored_states = {m.name: m for m in stored.states}
        for current in metas:
            old = stored_states.get(current.name)
            if old is None:
                continue
            problems = []
            if old.kind is not current.kind:
                problems.append(f"kind {old.kind.value} (savepoint) != {current.kind.value} (program)")
            old_ttl, new_ttl = (is_ttl_snapshot(old.value_serializer),
                                is_ttl_snapshot(current.value_serializer))
            if old_ttl != new_ttl:
                problems.append(
                    "the savepoint's state has time-to-live but the program's descriptor does not "
                    "enable_time_to_live" if old_ttl else
                    "the program's descriptor enables time-to-live but the savepoint's state has "
                    "none")
            for attr in ("user_key_serializer", "value_serializer", "namespace_serializer"):
                a, b = getattr(old, attr), getattr(current, attr)
                if a != b:
                    problems.append(f"{attr}: savepoint {a!r} != program {b!r}")
            if problems:
                raise IncompatibleStateError(
                    f"operator {uid!r}, state {current.name!r}: savepoint state is incompatible "
                    f"with the program: {'; '.join(problems)}"
                )


# --------------------------------------------------------------------------------------------
# Arrow <-> entries
# --------------------------------------------------------------------------------------------
def entries_to_batch(
    uid: str, entries: Iterable[StateEntry], kinds: Optional[Mapping[str, str]] = None
) -> pa.RecordBatch:
    """Entries of operator ``uid`` as an Arrow batch with :data:`ENTRY_COLUMNS`; with
    ``kinds`` (state name -> kind) the whole savepoint row, ``kind`` first (a state
    missing there is a :class:`SavepointFormatError`)."""
    cols: list[list[Any]] = [[] for _ in ENTRY_COLUMNS]
    for e in entries:
        cols[0].append(uid)
        cols[1].append(e.key_group)
        cols[2].append(e.key)
        cols[3].append(e.state_name)
        cols[4].append(e.namespace)
        cols[5].append(e.user_key)
        cols[6].append(e.value)
    types = dict(SAVEPOINT_COLUMNS)
    names = list(ENTRY_COLUMNS)
    if kinds is not None:
        try:
            cols.insert(0, [kinds[name] for name in cols[3]])
        except KeyError as exc:
            raise SavepointFormatError(
                f"savepoint entry of state {exc.args[0]!r} of operator {uid!r} has no state "
                f"meta info in the savepoint metadata") from None
        names.insert(0, "kind")
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=types[n]) for c, n in zip(cols, names)],
        schema=pa.schema([pa.field(n, types[n]) for n in names]),
    )


def entries_from_batch(
    batch: pa.RecordBatch, max_parallelism: Optional[int] = None
) -> Iterator[StateEntry]:
    """Entries of an Arrow batch with (at least) the entry columns.

    With ``max_parallelism`` the key group is recomputed from the key bytes
    (restore under another max parallelism); else the stored one is kept.
    """
    keys = batch.column("key").to_pylist()
    names = batch.column("state_name").to_pylist()
    nss = batch.column("namespace").to_pylist()
    uks = batch.column("user_key").to_pylist()
    vals = batch.column("value").to_pylist()
    if max_parallelism is None:
        kgs: Iterable[int] = batch.column("key_group").to_pylist()
    else:
        kgs = (assign_key_group(k, max_parallelism) for k in keys)
    for kg, k, n, ns, uk, v in zip(kgs, keys, names, nss, uks, vals):
        yield StateEntry(kg, n, k, ns or b"", uk or b"", v or b"")


def group_by_key(entries: Iterable[StateEntry]) -> Iterator[tuple[bytes, list[StateEntry]]]:
    """Consecutive entries of the same key, as ``(key bytes, entries)`` (input sorted by key)."""
    current = b""
    group: list[StateEntry] = []
    for e in entries:
        if not group or e.key != current:
            if group:
                yield current, group
            current, group = e.key, []
        group.append(e)
    if group:
        yield current, group


# --------------------------------------------------------------------------------------------
# Decoding (State Processor API)
# --------------------------------------------------------------------------------------------
def _read_state(backend: Any, descriptor: StateDescriptor) -> Any:
    kind = descriptor.kind
    if kind is StateKind.SORTED:
        state = backend.get_binary_sorted_state(descriptor)
        first = state.first_entry()
        if first is None:
            return None
        return [(k, list(v)) for k, v in state.read_range_from(first[0])]
    state = backend.get_state(descriptor)
    if kind is StateKind.VALUE:
        return state.value()
    if kind is StateKind.LIST:
        values = state.get()
        return list(values) if values else None
    if kind is StateKind.MAP:
        items = dict(state.items())
        return items or None
    return state.get_internal()  # reducing / aggregating: the stored value / accumulator


def decode_key_states(
    operator: OperatorMetadata,
    max_parallelism: int,
    key_bytes: bytes,
    entries: list[StateEntry],
    descriptors: Iterable[StateDescriptor],
    key_serializer: Optional[TypeSerializer[Any]] = None,
) -> tuple[Any, list[Any]]:
    """Decode one key's entries: ``(key, [state value per descriptor])``.

    The entries are restored into a single-key backend and read through the
    descriptors, so decoding is exactly what a restored program would see; a
    descriptor that does not match the stored state raises
    :class:`IncompatibleStateError`. Only the void namespace is read.
    """
    from ..state_store.backends import SINGLE_KEY

    serializer = key_serializer or serializer_from_snapshot(operator.key_serializer)
    backend = SINGLE_KEY.create(serializer, max_parallelism)
    try:
        entries = [e if e.key_group == assign_key_group(e.key, max_parallelism)
                   else e._replace(key_group=assign_key_group(e.key, max_parallelism))
                   for e in entries]
        backend.restore(operator.states, entries)
        if not entries:
            backend.set_current_key(serializer.deserialize(key_bytes), key_bytes)
        values = []
        for d in descriptors:
            try:
                values.append(_read_state(backend, d))
            except IncompatibleStateError as exc:
                raise IncompatibleStateError(f"operator {operator.uid!r}: {exc}") from exc
        return backend.get_current_key(), values
    finally:
        backend.close()


def decode_timers(
    operator: OperatorMetadata, entries: Iterable[StateEntry]
) -> Iterator[tuple[Any, str, int, Any]]:
    """``(key, queue name, timestamp, namespace)`` of every timer entry among ``entries``."""
    key_ser = serializer_from_snapshot(operator.key_serializer)
    ns_sers: dict[str, TypeSerializer[Any]] = {}
    for e in entries:
        if not e.state_name.startswith(TIMER_STATE_PREFIX):
            continue
        ns_ser = ns_sers.get(e.state_name)
        if ns_ser is None:
            ns_ser = serializer_from_snapshot(operator.state(e.state_name).namespace_serializer)
            ns_sers[e.state_name] = ns_ser
        try:
            key = key_ser.deserialize(e.key)
            namespace = ns_ser.deserialize(e.namespace)
        except Exception as exc:  # noqa: BLE001 - foreign decoding failure
            raise SerializationError(
                f"operator {operator.uid!r}: cannot decode timer of {e.state_name!r}: {exc}"
            ) from exc
        yield key, e.state_name[len(TIMER_STATE_PREFIX):], decode_timestamp(e.user_key), namespace
