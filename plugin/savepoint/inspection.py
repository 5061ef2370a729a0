"""Inspecting a savepoint without Spark: the summary behind ``savepoint inspect PATH``.

``python -m pyspark_datastream savepoint inspect PATH`` prints the format version, the
metadata, entry counts and bytes per state, and the Delta history. Reading is pyarrow
only (column chunks streamed), so the CLI starts no Spark session.
"""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa

from .format import BROADCAST_KIND, METADATA_KIND
from .reader import open_table, read_metadata, savepoint_versions

__all__ = ["inspect_savepoint", "format_inspection"]


def inspect_savepoint(path: str, version: Optional[int] = None) -> dict[str, Any]:
    """Summary of a savepoint: format version, metadata, per state entry counts and bytes,
    Delta versions. Reads with pyarrow (no Spark): fine for a CLI, streams column chunks."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    metadata = read_metadata(path, version)
    table = open_table(path, version)
    counts: dict[tuple[str, str, bool], list[int]] = {}
    dataset = table.to_pyarrow_dataset()
    scanner = dataset.scanner(columns=["kind", "operator_uid", "state_name", "key", "namespace",
                                       "user_key", "value"],
                              filter=ds.field("kind") != METADATA_KIND)
    for batch in scanner.to_batches():
        if not batch.num_rows:
            continue
        size = pc.add(pc.add(pc.binary_length(batch.column("key")),
                             pc.binary_length(batch.column("namespace"))),
                      pc.add(pc.binary_length(batch.column("user_key")),
                             pc.binary_length(batch.column("value"))))
        t = pa.table({"u": batch.column("operator_uid"), "s": batch.column("state_name"),
                      "o": pc.equal(batch.column("kind"), BROADCAST_KIND), "b": size})
        agg = t.group_by(["u", "s", "o"]).aggregate([("b", "count"), ("b", "sum")])
        for u, s, o, c, b in zip(*(agg.column(i).to_pylist() for i in range(5))):
            slot = counts.setdefault((u, s, bool(o)), [0, 0])
            slot[0] += c
            slot[1] += b or 0
    operators = []
    for uid in sorted(metadata.operators):
        op = metadata.operators[uid]
        operators.append({
            "uid": uid,
            "key_serializer": op.key_serializer,
            "states": [{"name": m.name, "kind": m.kind.value,
                        "entries": counts.get((uid, m.name, False), [0, 0])[0],
                        "bytes": counts.get((uid, m.name, False), [0, 0])[1]} for m in op.states]
            + [{"name": m.name, "kind": BROADCAST_KIND,
                "entries": counts.get((uid, m.name, True), [0, 0])[0],
                "bytes": counts.get((uid, m.name, True), [0, 0])[1]} for m in op.broadcast_states],
        })
    return {
        "path": path,
        "format_version": metadata.format_version,
        "version": int(table.version()),
        "max_parallelism": metadata.max_parallelism,
        "mode": metadata.mode,
        "backend": metadata.backend,
        "job_name": metadata.job_name,
        "created_ms": metadata.created_ms,
        "final_watermark": metadata.final_watermark,
        "operators": operators,
        "delta_versions": savepoint_versions(path),
    }


def format_inspection(info: dict[str, Any]) -> str:
    """Human-readable text of :func:`inspect_savepoint`."""
    lines = [
        f"savepoint {info['path']}",
        f"  format version {info['format_version']}, Delta version {info['version']}, "
        f"max parallelism {info['max_parallelism']}",
        f"  written by job {info['job_name']!r} in {info['mode']} mode, backend "
        f"{info['backend']}, final watermark {info['final_watermark']}",
        "  operators:",
    ]
    for op in info["operators"]:
        lines.append(f"    {op['uid']}  (key serializer {op['key_serializer'].get('name')})")
        for s in op["states"]:
            lines.append(f"      {s['name']:<28} {s['kind']:<12} {s['entries']:>10} entries "
                         f"{s['bytes']:>12} bytes")
    lines.append("  Delta versions:")
    for h in info["delta_versions"]:
        lines.append(f"    {h['version']}  {h['operation']}  {h['timestamp']}")
    return "\n".join(lines)
