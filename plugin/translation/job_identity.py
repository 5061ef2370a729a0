"""Job identity and checkpoint roots of STREAMING jobs.

The rules (docs: user-guide/streaming-jobs.md, configuration.md, limitations.md):

* **Root**: ``execution.checkpointing.dir``, else Spark's session-wide
  ``spark.sql.streaming.checkpointLocation``, else none.
* **Job folder** ``<root>/<job name>``: every query checkpoint, staging table, staged
  bounded source, RocksDB key-group file and savepoint restore folder of the job, plus
  the manifest ``_job.json`` (job name, graph fingerprint, graph description) written
  when the folder is first created.
* **Job name**: the name given to ``execute``/``execute_async``/``execute_and_collect``;
  by default (and always for ``to_dataframe()``) :func:`default_job_name`, a readable
  slug of the graph's operators plus a short hash of its :func:`describe_graph`.
  Running the same job (name + root) again resumes it.
* **Evolution**: a job folder whose manifest holds another fingerprint is resumed when
  Flink would restore the change (state follows operators: evolution.py), and the manifest
  then describes the new program; a change that cannot resume raises its typed error
  before any folder is created or any query starts. A manifest of an earlier release (no
  ``"evolution"`` entry) still needs the same graph (:class:`CheckpointMismatchError` naming
  what differs); resuming it with the same graph adds the entry.
* **Ephemeral**: a job whose sinks are only ``print()``, or a named
  ``execute_and_collect()``, runs on a temporary root (removed when the job ends) when no
  root is configured; an unnamed ``execute_and_collect()`` always does (a one-off job), in
  a ``<root>/_temporary-*`` folder when there is a root.
  Anything else without a root raises :class:`CheckpointRootError` saying what to set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import tempfile
import time
import types
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

from ..plan.config import PER_STAGE, RuntimeMode, resolve
from ..plan.graph import KeyByNode, SinkNode, SourceNode, Transformation
from ..state_store.backends import get_backend
from ..state_store.storage import Storage, normalize_uri
from .evolution import ProgramStates, check_evolution, check_placement, evolution_info
from .exceptions import CheckpointMismatchError, CheckpointRootError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..plan.config import Configuration

__all__ = [
    "MANIFEST",
    "recorded_mapping",
    "TO_DATAFRAME_KEEPS",
    "JobCheckpoint",
    "configured_root",
    "default_job_name",
    "describe_graph",
    "fingerprint",
    "graph_diff",
]

log = logging.getLogger("pyspark_datastream")

#: the job folder's manifest
MANIFEST = "_job.json"
#: how a job may use a temporary root: never, only without a configured root, always
EPHEMERAL_MODES = ("never", "if-no-root", "always")
#: what a STREAMING ``to_dataframe()`` may keep outside the caller's query
TO_DATAFRAME_KEEPS = (
    "state outside the query of the DataFrame that to_dataframe() returns (staged bounded "
    "sources, RocksDB key-group files, upstream keyed stages or savepoint restore rows) "
    "that the query's checkpoint will point to")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _clean(text: str) -> str:
    """``repr`` text without object addresses (stable across processes)."""
    return _ADDRESS.sub("", text)


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _function_name(function: Any) -> Optional[str]:
    """The class of a user function, plus the plain function it wraps (a lambda's module
    and ``<lambda>``), never its address."""
    if function is None:
        return None
    if isinstance(function, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return _qualified(function)
    name = _qualified(type(function))
    wrapped = [v for v in getattr(function, "__dict__", {}).values()
               if isinstance(v, (types.FunctionType, types.MethodType))]
    return f"{name}({_qualified(wrapped[0])})" if wrapped else name


def _dataframe_schema(node: SourceNode) -> str:
    try:
        return str(node.payload.schema.simpleString())
    except Exception:  # noqa: BLE001 - an unanalysable DataFrame fails later, clearly
        return "?"


def _kafka_topics(node: SourceNode) -> str:
    # its topics: another topic is another job (and checkpoint)
    return f"kafka {node.payload['topics'] or node.payload['topic_pattern']}"


#: what identifies a source's input, per source kind (others: their output type)
_SOURCE_INPUTS: dict[str, Callable[[SourceNode], str]] = {
    "dataframe": _dataframe_schema,
    "kafka": _kafka_topics,
}


def _source_schema(node: SourceNode) -> str:
    describe = _SOURCE_INPUTS.get(node.kind)
    return describe(node) if describe is not None else _clean(repr(node.output_type))


def describe_graph(nodes: list[Transformation], max_parallelism: int,
                   backend: str) -> dict[str, Any]:
    """The structure of a job graph (not its data): per source its kind, boundedness and
    schema; per operator its kind, name, uid, function class, key and output types and
    inputs; per sink its kind, name and uid; the max parallelism and state backend (both
    fix the layout of the checkpointed state). Entries are labelled by uid, else by name
    (``#2`` for the second of that name), so a diff names them."""
    labels: dict[int, str] = {}
    seen: dict[str, int] = {}
    sources: dict[str, Any] = {}
    operators: dict[str, Any] = {}
    sinks: dict[str, Any] = {}
    for n in nodes:
        if isinstance(n, SourceNode):
            base = f"source {sum(1 for v in labels.values() if v.startswith('source '))}"
        else:
            base = n.uid or n.name
        seen[base] = seen.get(base, 0) + 1
        label = base if seen[base] == 1 else f"{base} #{seen[base]}"
        labels[n.id] = label
        entry: dict[str, Any] = {"inputs": [labels.get(p.id, "?") for p in n.inputs]}
        if isinstance(n, SourceNode):
            entry.update(kind=n.kind, bounded=bool(n.bounded), schema=_source_schema(n))
            sources[label] = entry
            continue
        if isinstance(n, SinkNode):
            entry.update(kind=n.kind, name=n.name)
            sinks[label] = entry
            continue
        entry.update(node=type(n).__name__, name=n.name, uid=n.uid,
                     output_type=_clean(repr(n.output_type)) if n.output_type is not None else None)
        for attr in ("stage", "op", "tag_id", "keyed", "strategy"):
            if hasattr(n, attr):
                entry[attr] = getattr(n, attr)
        for attr in ("function", "partition_op", "key_selector", "partitioner"):
            if getattr(n, attr, None) is not None:
                entry[attr] = _function_name(getattr(n, attr))
        if isinstance(n, KeyByNode):
            entry["key_serializer"] = _clean(repr(n.key_serializer))
        descriptors = getattr(n, "descriptors", None)  # broadcast states
        if descriptors:
            entry["broadcast_states"] = [_clean(repr((d.name, d.user_key_serializer,
                                                      d.value_serializer))) for d in descriptors]
        ws = getattr(n, "watermark_strategy", None)
        if ws is not None:
            entry["watermark"] = str(getattr(ws, "kind", "?"))
        operators[label] = entry
    return {"sources": sources, "operators": operators, "sinks": sinks,
            "max_parallelism": int(max_parallelism),
            "backend": get_backend(backend).name}


def fingerprint(description: dict[str, Any]) -> str:
    """A short, stable hash of :func:`describe_graph`'s description."""
    text = json.dumps(description, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def default_job_name(nodes: list[Transformation], max_parallelism: int, backend: str) -> str:
    """``<operator names>-<fingerprint>``, e.g. ``map-sum_1-print-3fa2b1c4d5``."""
    words: list[str] = []
    for n in nodes:
        if isinstance(n, (SourceNode, KeyByNode)):
            continue
        word = re.sub(r"[^a-z0-9]+", "_", (n.uid or n.name).lower()).strip("_")
        if word and word not in words:
            words.append(word)
    slug = "-".join(words)[:40].rstrip("-_") or "job"
    return f"{slug}-{fingerprint(describe_graph(nodes, max_parallelism, backend))}"


def graph_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two descriptions, one phrase per difference."""
    out: list[str] = []
    for section in ("sources", "operators", "sinks"):
        before, after = old.get(section) or {}, new.get(section) or {}
        added = [k for k in after if k not in before]
        removed = [k for k in before if k not in after]
        if added:
            out.append(f"{section} added: {', '.join(added)}")
        if removed:
            out.append(f"{section} removed: {', '.join(removed)}")
        for k in after:
            if k in before and before[k] != after[k]:
                fields = sorted(set(before[k]) | set(after[k]))
                what = "; ".join(f"{f} {before[k].get(f)!r} -> {after[k].get(f)!r}"
                                 for f in fields if before[k].get(f) != after[k].get(f))
                out.append(f"{section[:-1]} {k!r} changed: {what}")
    for key in ("max_parallelism", "backend"):
        if old.get(key) != new.get(key):
            out.append(f"{key} {old.get(key)!r} -> {new.get(key)!r}")
    return out


def configured_root(config: Configuration, spark: SparkSession) -> tuple[Optional[str], str]:
    """``(root, where it came from)``: ``execution.checkpointing.dir``, else Spark's
    ``spark.sql.streaming.checkpointLocation``, else ``(None, "")``."""
    value = resolve(config, "execution.checkpointing.dir", RuntimeMode.STREAMING)
    if value:
        return str(value), "execution.checkpointing.dir"
    try:
        spark_value = spark.conf.get("spark.sql.streaming.checkpointLocation", None)
    except Exception:  # noqa: BLE001 - restricted sessions may refuse conf reads
        spark_value = None
    if spark_value:
        return str(spark_value), "spark.sql.streaming.checkpointLocation"
    return None, ""


def recorded_mapping(storage: Storage, root: Optional[str], root_source: str,
                     job_name: str) -> Optional[str]:
    """The STREAMING query mapping the job's checkpoint was written by, when it has one.

    Args:
        storage: the job's storage layer.
        root: the checkpoint root (:func:`configured_root`), or None.
        root_source: where the root came from (for its errors).
        job_name: the job's name (its folder under the root).

    Returns:
        The manifest's recorded mapping; ``"per-stage"`` for a manifest of a release that
        recorded none (it ran that mapping); None without a root or a readable manifest.
    """
    if not root:
        return None
    folder = Storage.join(normalize_uri(root, root_source or "checkpoint root"), safe_name(job_name))
    try:
        manifest = json.loads(storage.read_bytes(Storage.join(folder, MANIFEST)).decode("utf-8"))
    except (OSError, ValueError):  # none yet, or unreadable: JobCheckpoint names the latter
        return None
    placement = (manifest.get("evolution") or {}).get("placement") or {}
    return str(placement.get("mapping") or PER_STAGE)


def safe_name(name: str) -> str:
    """``name`` as a folder name: characters other than letters, digits and ``-_.`` as ``_``.

    Args:
        name: a job's name.

    Returns:
        The folder name (``"job"`` for an empty name).
    """
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "job"


def temporary_folder(root: Optional[str], local_prefix: str, root_prefix: str) -> str:
    """A new folder for what a job keeps for its run only: ``<root>/<root_prefix><id>`` under
    a checkpoint root (storage every host of a cluster reaches, and where Unity Catalog lets
    a query write), else a new folder in the driver's temporary folder. The job removes it
    with its storage layer's ``delete_dir`` when it ends.

    Args:
        root: the checkpoint root, normalized (:func:`configured_root`), or None.
        local_prefix: the local folder's name prefix.
        root_prefix: the name prefix of the folder under the root.

    Returns:
        The folder's path or URI (created locally; under a root, by its first writer).
    """
    if root is None:
        return tempfile.mkdtemp(prefix=local_prefix)
    return Storage.join(root, f"{root_prefix}{uuid.uuid4().hex[:12]}")


class JobCheckpoint:
    """The job folder of one STREAMING job: resolved, checked and created once."""

    def __init__(self, job_name: str, root: Optional[str], root_source: str,
                 description: dict[str, Any], storage: Optional[Storage] = None,
                 nodes: Optional[list[Transformation]] = None,
                 program: Optional[ProgramStates] = None,
                 ignore_unclaimed: bool = False,
                 placement: Optional[dict[str, Any]] = None) -> None:
        self.job_name = job_name
        #: the root as the storage layer keeps it (ConfigurationError for a scheme it cannot
        #: serve, here, before anything runs)
        self.root = normalize_uri(root, root_source or "checkpoint root") if root else None
        self.storage = storage or Storage()
        self.root_source = root_source
        self.description = description
        self.fingerprint = fingerprint(description)
        #: see :data:`EPHEMERAL_MODES`; set by :meth:`plan`
        self.ephemeral = "never"
        #: what the job keeps durably, for the error when there is no root
        self.purpose = "its checkpoints"
        self._folder: Optional[str] = None
        self._temp: Optional[str] = None
        #: the graph (None: resuming needs the same graph), the program's states (asked
        #: lazily, once) and execution.savepoint.ignore-unclaimed-state (evolution.py)
        self._nodes = nodes
        self._program = program
        self._states: Optional[Any] = None
        self.ignore_unclaimed = ignore_unclaimed
        #: where the keyed operators' key groups run (evolution.check_placement)
        self.placement = placement
        #: set by _check: the manifest must be rewritten for this program (an evolved graph,
        #: or a manifest of an earlier release); the changes it follows
        self._rewrite = False
        self.changes: list[str] = []
        #: the folder whose manifest _check accepted (plan() and folder() both ask)
        self._checked: Optional[str] = None

    def _program_states(self) -> Any:
        if self._states is None and self._program is not None:
            self._states = self._program()
        return self._states

    def _evolution(self, with_states: bool) -> Optional[dict[str, Any]]:
        if self._nodes is None:
            return None
        return evolution_info(self._nodes, self.description,
                              self._program_states() if with_states else None, self.placement)

    @property
    def is_temporary(self) -> bool:
        return self.ephemeral == "always" or (self.ephemeral == "if-no-root" and self.root is None)

    def durable_folder(self) -> Optional[str]:
        """``<root>/<job name>`` of a durable job (None for a temporary one)."""
        if self.is_temporary or self.root is None:
            return None
        return Storage.join(self.root, safe_name(self.job_name))

    def plan(self, ephemeral: str, purpose: str) -> None:
        """Fix how the job may keep its checkpoints (one of :data:`EPHEMERAL_MODES`) and
        what it keeps (for :meth:`require`'s message); check the manifest of a durable job
        folder. Nothing is created."""
        assert ephemeral in EPHEMERAL_MODES
        self.ephemeral, self.purpose = ephemeral, purpose
        folder = self.durable_folder()
        if folder is not None:
            self._check(folder)

    def require(self) -> None:
        """Raise :class:`CheckpointRootError` unless the job has somewhere to keep state."""
        if self.root is None and not self.is_temporary:
            raise CheckpointRootError(
                f"STREAMING job {self.job_name!r} keeps {self.purpose}, which must outlive "
                "this run, but no checkpoint root is configured: set execution.checkpointing.dir "
                "(a durable folder, e.g. on cloud storage) or Spark's "
                "spark.sql.streaming.checkpointLocation. Only jobs whose sinks are print() or "
                "execute_and_collect() run on a temporary checkpoint.")

    def _check(self, folder: str) -> None:
        if self._checked == folder:
            return
        path = Storage.join(folder, MANIFEST)
        try:
            manifest = json.loads(self.storage.read_bytes(path).decode("utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise CheckpointMismatchError(
                f"STREAMING job {self.job_name!r}: the manifest {path} of its checkpoint is "
                f"unreadable ({exc}); remove the folder {folder} to start the job afresh"
            ) from exc
        same = manifest.get("fingerprint") == self.fingerprint
        diff = [] if same else (graph_diff(manifest.get("graph") or {}, self.description)
                                or ["the graph"])
        stored = manifest.get("evolution")
        current = self._evolution(with_states=False)
        if same and (stored is None or current is None):
            if current is not None:  # a manifest of an earlier release: check, then add it
                check_placement(self.job_name, folder, None, self.placement,
                                bool(current.get("stateful")))
            self._rewrite = current is not None
            return
        if stored is None or current is None:
            raise CheckpointMismatchError(
                f"STREAMING job {self.job_name!r} would resume the checkpoint {folder}, written "
                f"by job {manifest.get('job_name')!r} with another graph (fingerprint "
                f"{manifest.get('fingerprint')} there, {self.fingerprint} now): "
                f"{'; '.join(diff)}. That checkpoint was written by an earlier release, which "
                "kept no record of its operators' state: run it once with its own program on "
                "this release, or give this job another name (or leave the name out: the "
                "default is derived from the graph), remove that folder to start afresh, or "
                "carry the state over with a savepoint (execute(name, savepoint_path=...), "
                "then execution.savepoint.path in the new job)")
        # the same graph may still carry other state descriptors (a function's parameters)
        self.changes = check_evolution(self.job_name, folder, stored, current,
                                       self._program_states, self.ignore_unclaimed)
        self.changes[:0] = diff
        now = json.loads(json.dumps(self._evolution(with_states=True), sort_keys=True))
        self._rewrite = bool(self.changes) or now != stored
        if self.changes:
            log.info("STREAMING job %r resumes its checkpoint %s with a changed program: %s",
                     self.job_name, folder, "; ".join(self.changes))
        self._checked = folder

    def folder(self) -> str:
        """The job folder, created (with its manifest) on first use."""
        if self._folder is not None:
            return self._folder
        self.require()
        durable = self.durable_folder()
        if durable is None:
            self._temp = temporary_folder(self.root, "pyspark-datastream-ckpt-", "_temporary-")
            folder = Storage.join(self._temp, safe_name(self.job_name))
            log.info("STREAMING job %r: temporary checkpoint %s (removed when the job ends)",
                     self.job_name, folder)
        else:
            self._check(durable)
            folder = durable
            log.info("STREAMING job %r: checkpoint %s (root from %s)", self.job_name, folder,
                     self.root_source)
        self.storage.makedirs(folder)
        manifest = Storage.join(folder, MANIFEST)
        created = not self.storage.exists(manifest)
        if created or self._rewrite:
            record: dict[str, Any] = {}
            if not created:
                record = json.loads(self.storage.read_bytes(manifest).decode("utf-8"))
                record["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            record.update({"job_name": self.job_name, "fingerprint": self.fingerprint,
                           "graph": self.description})
            record.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            # a temporary checkpoint is never resumed: its operators need not be opened here
            evolution = self._evolution(with_states=durable is not None)
            if evolution is not None:
                record["evolution"] = evolution
            self.storage.write_bytes(manifest, json.dumps(record, indent=1, sort_keys=True)
                                     .encode("utf-8"))
            self._rewrite = False
        self._folder = folder
        return folder

    def release(self) -> None:
        """Remove a temporary root (the job has ended); a durable folder stays."""
        temp, self._temp = self._temp, None
        if temp is None:
            return
        self._folder = None
        try:
            self.storage.delete_dir(temp)
        except Exception as exc:  # noqa: BLE001 - the job's outcome stands; the folder is named
            log.warning("STREAMING job %r: its temporary checkpoint %s could not be removed: %s",
                        self.job_name, temp, exc)
        else:
            log.info("STREAMING job %r: temporary checkpoint removed", self.job_name)
