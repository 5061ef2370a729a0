"""Which changes of a STREAMING job's program may resume its checkpoint (Flink's rules).

State follows operators, not graphs: a checkpoint written by one version of a program is
resumed by the next whenever Flink would restore it. Each stateful operator (keyed, two-input
keyed, broadcast) is identified by its ``uid``, else by its position among the stateful
operators (Flink's generated id); sources may gain columns, stateless operators may be added,
removed or changed, sinks added. Refused when the job is built, before anything runs:

* a stateful operator that is gone: :class:`UnclaimedStateError`, unless
  ``execution.savepoint.ignore-unclaimed-state`` (its state is dropped, and the log says so);
* a stateful operator whose kind, key type or state descriptors changed incompatibly:
  :class:`IncompatibleStateError` naming the operator, the state and both types;
* what Spark's own checkpoints cannot follow — the inputs of a stateful operator's or a
  sink's query changed (Structured Streaming refuses a query whose sources change), another
  max parallelism or state backend (the key-group layout of the state files), another
  parallelism or number of partitions (where key groups run, :func:`check_placement`):
  :class:`CheckpointMismatchError` naming the rule and the way over, a savepoint.

The manifest (``_job.json``) keeps what these checks need under ``"evolution"``
(:func:`evolution_info`); the docs' table of changes is in user-guide/streaming-jobs.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Optional

from ..plan.config import PER_STAGE
from ..plan.graph import (
    SideOutputNode,
    SinkNode,
    SourceNode,
    Transformation,
    UnionNode,
    consumers,
    is_keyed,
)
from ..savepoint.exceptions import UnclaimedStateError
from ..savepoint.format import OperatorMetadata, SavepointMetadata, check_restore
from ..state_store.entries import StateMetaInfo
from ..state_store.exceptions import IncompatibleStateError
from .exceptions import CheckpointMismatchError

__all__ = ["EVOLUTION_VERSION", "ProgramStates", "check_evolution", "check_placement",
           "evolution_info", "stage_names"]

log = logging.getLogger("pyspark_datastream")

#: the version of the manifest's ``"evolution"`` entry
EVOLUTION_VERSION = 1
#: stage name -> (key serializer, the meta infos of the states its operator registers)
ProgramStates = Callable[[], Mapping[str, tuple[Any, list[StateMetaInfo]]]]


def stage_names(nodes: list[Transformation]) -> dict[int, str]:
    """Node id -> the identity of each stateful operator's state: its uid, else ``stage<i>``
    (its position among the stateful operators, as Flink generates ids for operators
    without one). The STREAMING translator names the operator's queries and state files so."""
    return {n.id: (n.uid or f"stage{i}") for i, n in enumerate(n for n in nodes if is_keyed(n))}


def _boundaries(node: Transformation, names: dict[int, str], sources: dict[int, str]
                ) -> list[str]:
    """What the query of ``node`` reads: the sources and stateful operators above it,
    walking through stateless operators (a side output names its operator and tag)."""
    found: set[str] = set()
    todo, seen = list(node.inputs), set()
    while todo:
        n = todo.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if isinstance(n, SourceNode):
            found.add(sources[n.id])
        elif is_keyed(n):
            found.add(names[n.id])
        elif isinstance(n, SideOutputNode) and n.inputs and is_keyed(n.inputs[0]):
            found.add(f"{names[n.inputs[0].id]}[side output {n.name}]")
        else:
            todo.extend(n.inputs)
    return sorted(found)


def _host(node: Transformation, names: dict[int, str], sinks: dict[int, str],
          readers: dict[int, list[Transformation]]) -> str:
    """Which Spark query runs the stateful ``node`` (and so holds its state): its own
    ``<stage>-output`` query when several read it, else the query of what its one reader
    leads to through stateless operators (the next stateful operator's input, a sink, a
    union or connect of several stateful inputs, or a fan-out)."""
    below = readers.get(node.id, [])
    if len(below) != 1:
        return f"{names[node.id]}-output" if below else "no reader"
    edge, current = node, below[0]
    while True:
        if is_keyed(current):
            return f"input {current.inputs.index(edge) if edge in current.inputs else 0} of " \
                   f"{names[current.id]}"
        if isinstance(current, SinkNode):
            return sinks[current.id]
        if len(current.inputs) > 1 or isinstance(current, UnionNode):
            return f"input {current.inputs.index(edge)} of {current.uid or current.name}"
        nxt = readers.get(current.id, [])
        if len(nxt) != 1:
            return f"the readers of {current.uid or current.name}"
        edge, current = current, nxt[0]


def evolution_info(nodes: list[Transformation], description: Mapping[str, Any],
                   states: Optional[Mapping[str, tuple[Any, list[StateMetaInfo]]]],
                   placement: Optional[Mapping[str, int]] = None) -> dict[str, Any]:
    """What the manifest keeps to judge the next version of the program.

    Args:
        nodes: The job graph.
        description: :func:`~.job_identity.describe_graph` of ``nodes``.
        states: :data:`ProgramStates` of the program, or None when they are not known.
        placement: Where the keyed operators' key groups run: ``{"parallelism": p,
            "partitions": n}`` (:func:`check_placement`); None: not recorded.

    Returns:
        A JSON-able dict: per stateful operator (by stage name) its label, kind, key
        serializer, the queries it reads and its states; per sink query the same inputs.
    """
    names = stage_names(nodes)
    sources = {n.id: f"source {i}" for i, n in
               enumerate(n for n in nodes if isinstance(n, SourceNode))}
    sink_queries = {n.id: f"sink-{n.uid or i}" for i, n in
                    enumerate(n for n in nodes if isinstance(n, SinkNode))}
    readers = consumers(nodes)
    stateful: dict[str, Any] = {}
    for n in nodes:
        if not is_keyed(n):
            continue
        stage = names[n.id]
        entry: dict[str, Any] = {"label": n.uid or n.name, "node": type(n).__name__,
                                 "op": getattr(n, "op", None),
                                 "inputs": _boundaries(n, names, sources),
                                 # the one-query mapping runs every stage in its query
                                 "query": (placement or {}).get("query")
                                 or _host(n, names, sink_queries, readers)}
        if states is not None and stage in states:
            key_serializer, metas = states[stage]
            entry["key_serializer"] = key_serializer.snapshot()
            entry["states"] = [m.to_dict() for m in metas]
        stateful[stage] = entry
    sinks = {sink_queries[n.id]: {"label": n.uid or n.name,
                                  "inputs": _boundaries(n, names, sources)}
             for n in nodes if isinstance(n, SinkNode)}
    info = {"version": EVOLUTION_VERSION, "stateful": stateful, "sinks": sinks,
            "max_parallelism": description.get("max_parallelism"),
            "backend": description.get("backend")}
    if placement is not None:
        info["placement"] = dict(placement)
    return info


def check_placement(job: str, folder: str, old: Optional[Mapping[str, Any]],
                    new: Optional[Mapping[str, Any]], stateful: bool) -> None:
    """Refuse a program whose keyed operators' key groups would run elsewhere than in the
    checkpoint: Spark keeps a key group's state under its grouping key, which places it on
    its subtask's partition (spark_io/key_group_ranges.py), so another parallelism or number
    of partitions would leave the state where no call reads it.

    Args:
        job: The job name (for messages).
        folder: The job folder (for messages).
        old: The checkpoint's placement; None for a checkpoint of a release that recorded
            none, whose keyed operators ran one subtask per Spark partition.
        new: The program's placement (None: not known, nothing checked).
        stateful: The program has stateful operators.

    Raises:
        CheckpointMismatchError: the parallelism or the number of partitions changed.
    """
    if new is None or not stateful or not new.get("partitions"):
        return
    where = f"STREAMING job {job!r} (checkpoint {folder})"
    # an earlier release's checkpoint (no record) was written by the per-stage mapping
    before, after = (old or {}).get("mapping", PER_STAGE), new.get("mapping", PER_STAGE)
    if old is None and before == after:
        if new.get("parallelism") != new.get("partitions"):
            raise CheckpointMismatchError(
                f"{where}: the checkpoint was written by an earlier release, which ran each "
                "keyed operator with one parallel instance per Spark partition "
                "(spark.sql.shuffle.partitions); this job runs them with parallelism "
                f"{new.get('parallelism')} over {new.get('partitions')} partitions, which "
                "places key groups elsewhere than their state. Build the job with "
                f"env.set_parallelism({new.get('partitions')}) to resume, or to carry the state "
                f"over, {_way_over(job)}")
        return
    if before != after or old is None:
        raise CheckpointMismatchError(
            f"{where}: the checkpoint was written by the {before} query mapping and this job "
            f"runs with execution.streaming.query-mapping={after}; Spark's checkpoint of one "
            f"holds the keyed state where the other does not read it. Run it with {before} to "
            f"resume, or to carry the state over, {_way_over(job)}")
    if old.get("query") != new.get("query"):
        raise CheckpointMismatchError(
            f"{where}: the checkpoint was written by an earlier build of the one-query "
            f"mapping, which named its query after its sink ({old.get('query')!r} -> "
            f"{new.get('query')!r}); this job would start over without its state. To carry the "
            f"state over, {_way_over(job)}")
    if "sources" in old and old.get("sources") != new.get("sources"):
        raise CheckpointMismatchError(
            f"{where}: its sources changed, {old.get('sources')} -> {new.get('sources')}; the "
            "one-query mapping reads every source in the job's one query, and Spark's "
            "checkpoint of a streaming query cannot follow a change of its input sources "
            "(Structured Streaming: changes in the number or type of input sources are not "
            f"allowed). To carry the state over, {_way_over(job)}")
    if old.get("stages") != new.get("stages"):
        raise CheckpointMismatchError(
            f"{where}: its keyed stages changed, {old.get('stages')} -> {new.get('stages')}; "
            "the one-query mapping keeps each stage's state under its place in the query, so "
            f"another set of stages would read another stage's state. To carry the state over, "
            f"{_way_over(job)}")
    for key, what in (("partitions", "number of Spark partitions of its keyed operators "
                                     "(spark.sql.shuffle.partitions when the checkpoint began)"),
                      ("parallelism", "parallelism of its keyed operators")):
        if old.get(key) != new.get(key):
            raise CheckpointMismatchError(
                f"{where}: the {what} changed, {old.get(key)!r} -> {new.get(key)!r}; Spark's "
                "checkpoint keeps each key group's state on the partition it started on, so "
                f"build the job with the checkpoint's {key} ({old.get(key)!r}) to resume, or to "
                f"carry the state over (Flink's rescaling), {_way_over(job)}")


def _way_over(job: str) -> str:
    return (f"stop the old program with a savepoint (stop_with_savepoint, or execute("
            f"{job!r}, savepoint_path=...)) and start this one from it "
            "(execution.savepoint.path) under another job name, or give this job another name "
            "to start afresh")


def check_evolution(job: str, folder: str, old: Mapping[str, Any], new: Mapping[str, Any],
                    program: Optional[ProgramStates], ignore_unclaimed: bool) -> list[str]:
    """Refuse a program that cannot resume the checkpoint ``old`` describes (module doc).

    Args:
        job: The job name (for messages).
        folder: The job folder (for messages).
        old: The manifest's ``"evolution"`` entry.
        new: :func:`evolution_info` of the program.
        program: The program's states, asked only when a stored operator's states are known.
        ignore_unclaimed: ``execution.savepoint.ignore-unclaimed-state``.

    Returns:
        What changed that the job may follow, one phrase each (logged by the caller).

    Raises:
        CheckpointMismatchError: a change Spark's checkpoints cannot follow.
        UnclaimedStateError: a stateful operator is gone and ``ignore_unclaimed`` is false.
        IncompatibleStateError: a stateful operator's kind, key or states changed.
    """
    where = f"STREAMING job {job!r} (checkpoint {folder})"
    for key, what in (("max_parallelism", "max parallelism (the key groups its state is "
                                          "split into)"),
                      ("backend", "state backend (the format of its state files)")):
        if old.get(key) != new.get(key):
            raise CheckpointMismatchError(
                f"{where}: the {what} changed, {old.get(key)!r} -> {new.get(key)!r}; a "
                f"checkpoint keeps the old one. To carry the state over, {_way_over(job)}")
    check_placement(job, folder, old.get("placement"), new.get("placement"),
                    bool(old.get("stateful")) and bool(new.get("stateful")))
    before, after = old.get("stateful") or {}, new.get("stateful") or {}
    notes: list[str] = []
    gone = sorted(set(before) - set(after))
    if gone:
        labels = [f"{s!r} ({before[s].get('label')})" for s in gone]
        if not ignore_unclaimed:
            raise UnclaimedStateError(
                f"{where}: the checkpoint holds the state of stateful operator(s) "
                f"{', '.join(labels)}, which no operator of the program claims (by uid, or by "
                f"position for operators without one; the program's: {sorted(after)}); set "
                "execution.savepoint.ignore-unclaimed-state=true to drop that state")
        log.warning("%s: dropping the state of operator(s) %s, which no operator claims "
                    "(execution.savepoint.ignore-unclaimed-state=true)", where, ", ".join(labels))
        notes.append(f"state of {', '.join(labels)} dropped")
    stored: dict[str, OperatorMetadata] = {}
    for stage in sorted(set(before) & set(after)):
        was, now = before[stage], after[stage]
        if (was.get("node"), was.get("op")) != (now.get("node"), now.get("op")):
            raise IncompatibleStateError(
                f"{where}: stateful operator {stage!r} was a {was.get('node')} "
                f"({was.get('op') or 'its function'}) and is now a {now.get('node')} "
                f"({now.get('op') or 'its function'}): its state cannot move to another kind "
                "of operator. Give the new operator another uid (and drop the old state with "
                "execution.savepoint.ignore-unclaimed-state=true)")
        if was.get("inputs") != now.get("inputs"):
            raise CheckpointMismatchError(
                f"{where}: the query of stateful operator {stage!r} read "
                f"{', '.join(was.get('inputs') or []) or 'nothing'} and would now read "
                f"{', '.join(now.get('inputs') or []) or 'nothing'}: Spark's checkpoint of a "
                "streaming query cannot follow a change of its input sources (Structured "
                f"Streaming: changes in the number or type of input sources are not allowed). "
                f"To carry the state over, {_way_over(job)}")
        if was.get("query") != now.get("query"):
            raise CheckpointMismatchError(
                f"{where}: stateful operator {stage!r} ran in the Spark query of "
                f"{was.get('query')} and would now run in that of {now.get('query')} (what "
                "reads its output changed): its state lives in the first query's checkpoint, "
                "which Spark cannot hand to another query. Keep what reads the operator as it "
                f"was, or to carry the state over, {_way_over(job)}")
        if "key_serializer" in was:
            stored[stage] = OperatorMetadata(
                stage, dict(was["key_serializer"]),
                tuple(StateMetaInfo.from_dict(m) for m in was.get("states") or ()))
    sinks_before, sinks_after = old.get("sinks") or {}, new.get("sinks") or {}
    for query in sorted(set(sinks_before) & set(sinks_after)):
        if sinks_before[query].get("inputs") != sinks_after[query].get("inputs"):
            raise CheckpointMismatchError(
                f"{where}: the query of sink {query!r} read "
                f"{', '.join(sinks_before[query].get('inputs') or [])} and would now read "
                f"{', '.join(sinks_after[query].get('inputs') or [])}: Spark's checkpoint of a "
                "streaming query cannot follow a change of its input sources. Give the sink "
                f"a new uid (a new query), or {_way_over(job)}")
    if stored and program is not None:
        states = program()
        try:
            check_restore(SavepointMetadata(int(old.get("max_parallelism") or 128), stored),
                          {s: states[s] for s in stored if s in states})
        except IncompatibleStateError as exc:
            # check_restore speaks of a savepoint; here the stored state is the checkpoint's
            raise IncompatibleStateError(
                f"{where} cannot resume: {str(exc).replace('savepoint', 'checkpoint')}. To "
                f"carry the state over in another form, migrate it through a savepoint "
                "(Savepoint reader, SavepointWriter) or give the operator another uid") from exc
    added = sorted(set(after) - set(before))
    if added:
        notes.append(f"stateful operator(s) {', '.join(added)} start with empty state")
    return notes
