"""A Parquet source's files checked against the schema the program reads it with.

Spark reads a file whose column type differs from the read schema only when an action or
query runs, and fails it with ``FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH`` deep in
a Java trace. Where the project runs the action it turns that into a
:class:`SourceSchemaError` (failures.py); a DataFrame the user runs themselves
(``to_dataframe()``) is checked here instead, when it is built: every Parquet file then read
by a source (a BATCH read's listed files, a streaming read's folders) whose column holds a
string where the program reads a non-string type, or the reverse, is named with both types
before anything runs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator, Optional

from ..plan.graph import SourceNode
from ..state_store.storage import Storage
from .exceptions import SourceSchemaError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark.sql import DataFrame

    from ..plan.graph import Transformation

__all__ = ["check_parquet_sources", "check_parquet_source"]

_PARQUET_TYPES = {"string": "BINARY (a string or bytes)", "large_string": "BINARY (a string or "
                  "bytes)", "binary": "BINARY (a string or bytes)", "int64": "INT64 (bigint)",
                  "int32": "INT32 (int)", "double": "DOUBLE (double)", "float": "FLOAT (float)",
                  "bool": "BOOLEAN (boolean)"}
_TEXT_SPARK = frozenset({"string", "binary"})


def _parquet_sources(df: Any) -> Iterator[tuple[list[str], dict[str, Any]]]:
    """(paths, read schema as JSON) of each Parquet source read by ``df``: a BATCH read's
    listed files with its data schema, a streaming read's folders with its declared one."""
    leaves = df._jdf.queryExecution().analyzed().collectLeaves().iterator()
    while leaves.hasNext():
        leaf = leaves.next()
        kind = leaf.getClass().getSimpleName()
        if kind == "LogicalRelation":
            relation = leaf.relation()
            if (relation.getClass().getSimpleName() == "HadoopFsRelation"
                    and str(relation.fileFormat().shortName()).lower() == "parquet"):
                yield ([str(p) for p in relation.location().inputFiles()],
                       json.loads(relation.dataSchema().json()))
            continue
        if kind != "StreamingRelation":
            continue
        source = leaf.dataSource()
        if str(source.className()).lower() != "parquet":
            continue
        declared = source.userSpecifiedSchema()
        if not declared.isDefined():
            continue
        paths = [str(p) for p in source.paths().mkString("\n").split("\n") if p]
        option = source.options().get("path")
        if option.isDefined():
            paths.append(str(option.get()))
        yield paths, json.loads(declared.get().json())


def _is_text(arrow_type: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
                or pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type))


def _mismatch(spark_type: str, arrow_type: Any) -> bool:
    """A string where the program reads a non-string scalar, or the reverse (the mismatches
    Spark never converts; widening such as int to bigint is Spark's to judge)."""
    import pyarrow as pa

    if spark_type in _TEXT_SPARK:
        return bool(pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
                    or pa.types.is_boolean(arrow_type))
    scalar = spark_type in ("bigint", "int", "smallint", "tinyint", "double", "float",
                            "boolean") or spark_type.startswith("decimal")
    return scalar and _is_text(arrow_type)


def _spark_name(field: dict[str, Any]) -> Optional[str]:
    from pyspark.sql.types import StructField

    kind = StructField.fromJson(field).dataType
    return str(kind.simpleString())


def check_parquet_source(df: DataFrame, storage: Storage, context: str) -> None:
    """Raise SourceSchemaError for the first file of a Parquet source of ``df`` (BATCH or
    streaming) whose column type differs from the schema it is read with (see the module
    text).

    Args:
        df: the source DataFrame as the program gave it.
        storage: the job's storage layer (reads the files' footers).
        context: what is being built, for the message's last words.
    Returns:
        None.
    """
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    try:
        sources = list(_parquet_sources(df))
    except Exception:  # noqa: BLE001 - not a plan this check understands: Spark reports it
        return
    for paths, schema in sources:
        declared = {f["name"]: _spark_name(f) for f in schema.get("fields", [])}
        for uri in paths:
            try:
                fs, root = storage.resolve(uri)
                infos = [fs.get_file_info(root)]
                if infos[0].type == pafs.FileType.Directory:
                    infos = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True,
                                                                recursive=True))
            except Exception:  # noqa: BLE001, S112 - unreadable here: Spark reports it
                continue
            for info in sorted(infos, key=lambda i: i.path):
                name = info.path.rsplit("/", 1)[-1]
                if info.type != pafs.FileType.File or name.startswith(("_", ".")):
                    continue
                if not name.endswith(".parquet"):
                    continue
                try:
                    with fs.open_input_file(info.path) as f:
                        file_schema = pq.read_schema(f)
                except Exception:  # noqa: BLE001, S112 - not Parquet: Spark reports it
                    continue
                for field in file_schema:
                    want = declared.get(field.name)
                    if want is not None and _mismatch(want, field.type):
                        shown = uri.rstrip("/") + info.path[len(root.rstrip("/")):]
                        held = _PARQUET_TYPES.get(str(field.type), str(field.type))
                        raise SourceSchemaError(
                            f"source column {field.name!r} changed type: the program reads it "
                            f"as {want} (the source's schema), but {shown} holds {held}. "
                            "Convert or move that file, or read the column with its new type "
                            f"and convert it in the program (while building {context})")


def check_parquet_sources(nodes: Sequence[Transformation], storage: Storage, context: str) -> None:
    """:func:`check_parquet_source` for every DataFrame source among ``nodes``.

    Args:
        nodes: the job graph's nodes.
        storage: the job's storage layer.
        context: what is being built, for the message's last words.
    Returns:
        None.
    """
    for node in nodes:
        if isinstance(node, SourceNode) and node.kind == "dataframe":
            check_parquet_source(node.payload, storage, context)
