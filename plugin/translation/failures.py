"""Failures of Spark actions, surfaced as the product's own typed errors.

A user function that raises on an executor becomes a :class:`UserFunctionError` there
(operator, call, record, then the user's own traceback frames); Spark hands it to the
driver buried in a ``PythonException`` / ``StreamingQueryException`` / Py4J error, after a
worker traceback and before JVM frames. :func:`job_failure` digs the product's error back
out and raises it as the same class, its text as the executor wrote it (the first line
names the operator and the record), with the job context on a last line and Spark's
exception as ``__cause__``. A worker that could not import a module the job needs (it runs
another Python than the driver, or one without the package's dependencies) becomes a
:class:`WorkerEnvironmentError` saying so. Anything else becomes a :class:`JobExecutionError`
whose first line is Spark's own first line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

from ..operators import exceptions as operators_exceptions
from ..operators.exceptions import JobExecutionError
from ..savepoint import exceptions as savepoint_exceptions
from ..spark_io import exceptions as spark_io_exceptions
from ..state_store import exceptions as state_store_exceptions
from ..state_store.exceptions import DataStreamError
from . import exceptions as translation_exceptions
from .exceptions import CheckpointMismatchError, SourceSchemaError, WorkerEnvironmentError

__all__ = ["embedded_error", "job_failure", "schema_change", "surfacing",
           "timeout_layout_change", "worker_environment"]

#: how a worker's traceback names the product's error class (its module, then the class)
_MARK = re.compile(r"(?:pyspark_datastream\.)?(?:state_store|operators|savepoint|spark_io|translation)"
                   r"\.exceptions\.(\w+): ")
#: the product's error classes by name, from every layer's ``exceptions`` module
_CLASSES: dict[str, type[DataStreamError]] = {
    name: getattr(module, name)
    for module in (state_store_exceptions, operators_exceptions, savepoint_exceptions,
                   spark_io_exceptions, translation_exceptions)
    for name in module.__all__
}
#: where the worker's Python text ends: JVM frames and Spark's trailers
_END = re.compile(r"^\s*(?:at [\w$.<>]+\(|\.\.\. \d+ more|Caused by: |Driver stacktrace:|"
                  r"JVM stacktrace:|\tat |=== Streaming Query ===)")
#: error classes Spark appends to the last line of the worker's text
_SQLSTATE = re.compile(r"(?:\s*SQLSTATE: \w+)+\s*$")


def _texts(exc: BaseException) -> Iterator[str]:
    """The texts of ``exc`` and its causes (Spark keeps the worker's text in ``desc``)."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield str(getattr(current, "desc", None) or current)
        current = current.__cause__ or current.__context__


def embedded_error(exc: BaseException) -> Optional[DataStreamError]:
    """The product's error an executor raised, rebuilt from the text of ``exc`` (or of its
    causes); None when there is none."""
    for text in _texts(exc):
        found = list(_MARK.finditer(text))
        if not found:
            continue
        mark = found[-1]
        cls = _CLASSES.get(mark.group(1), JobExecutionError)
        lines = []
        for line in text[mark.end():].splitlines():
            if _END.match(line):
                break
            lines.append(_SQLSTATE.sub("", line))
        message = "\n".join(lines).rstrip()
        if message:
            return cls(message)
    return None


#: Spark's messages for a Parquet file whose column type differs from the read schema
_SCHEMA_CHANGES = (
    re.compile(r"reading file (?P<file>\S+?)\.? Data type mismatches when reading Parquet "
               r"column \[?(?P<column>[^\]\s.]+)\]?\. Expected Spark type (?P<old>\S+?),? "
               r"actual Parquet type (?P<new>\S+?)\."),
    re.compile(r"Parquet column cannot be converted in file (?P<file>\S+?)\. Column: "
               r"\[(?P<column>[^\]]+)\], Expected: (?P<old>\S+?), Found: (?P<new>\S+?)\b"),
)
_PARQUET_TYPES = {"BINARY": "BINARY (a string or bytes)", "INT64": "INT64 (bigint)",
                  "INT32": "INT32 (int)", "DOUBLE": "DOUBLE (double)", "FLOAT": "FLOAT (float)",
                  "BOOLEAN": "BOOLEAN (boolean)"}


def schema_change(exc: BaseException, context: str) -> Optional[SourceSchemaError]:
    """A SourceSchemaError when ``exc`` is Spark's failure to read a source file whose
    column type differs from the schema the program reads the source with, else None."""
    for text in _texts(exc):
        for pattern in _SCHEMA_CHANGES:
            found = pattern.search(text)
            if found is not None:
                new = _PARQUET_TYPES.get(found["new"], found["new"])
                return SourceSchemaError(
                    f"source column {found['column']!r} changed type: the program reads it as "
                    f"{found['old']} (the source's schema), but {found['file']} holds "
                    f"{new}. Convert or move that file, or read the column with its new type "
                    f"and convert it in the program (while running {context})")
    return None


#: a Python worker's failure to import a module (its own start-up, or unpickling the job)
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'")


def worker_environment(exc: BaseException, context: str) -> Optional[WorkerEnvironmentError]:
    """A WorkerEnvironmentError when ``exc`` is a Python worker's failure to import a module
    (the workers run an interpreter without the job's dependencies), else None."""
    import os
    import sys

    for text in _texts(exc):
        found = _MISSING_MODULE.search(text)
        if found is None:
            continue
        module = found["module"]
        workers = os.environ.get("PYSPARK_PYTHON")
        told = (f"PYSPARK_PYTHON is {workers!r}" if workers else
                "PYSPARK_PYTHON is not set, so they run the first python3 on the PATH")
        return WorkerEnvironmentError(
            f"Spark's Python workers cannot import {module!r}, which the job needs "
            f"(ModuleNotFoundError while running {context}). They must run a Python with "
            f"pyspark-datastream and its dependencies installed; this driver runs "
            f"{sys.executable} and {told}. Set PYSPARK_PYTHON (or spark.pyspark.python) to "
            f"that interpreter before the session starts, or install the package on every "
            f"worker (on Databricks: as a cluster or notebook library)")
    return None


def job_failure(exc: BaseException, context: str) -> DataStreamError:
    """The error to raise for ``exc``, a failure of ``context`` (e.g. ``"collect of 'x'"``):
    the executor's typed error when ``exc`` carries one, else a JobExecutionError."""
    found = embedded_error(exc)
    if found is not None and type(found) is not JobExecutionError:
        found.args = (f"{found}\n(while running {context})",)
        return found
    # A source file that no longer fits the read schema fails whatever reads it (a Delta
    # writer, a foreachBatch sink) and arrives wrapped in their generic JobExecutionError:
    # its cause is the error, named on the first line
    changed = schema_change(exc, context)
    if changed is not None:
        return changed
    if found is not None:
        found.args = (f"{found}\n(while running {context})",)
        return found
    if isinstance(exc, DataStreamError):
        return exc
    layout = timeout_layout_change(exc, context)
    if layout is not None:
        return layout
    missing = worker_environment(exc, context)
    if missing is not None:
        return missing
    first = (str(getattr(exc, "desc", None) or exc).strip().splitlines() or [repr(exc)])[0]
    return JobExecutionError(f"{context} failed: {first[:2000]}")


@contextmanager
def surfacing(context: str) -> Iterator[None]:
    """Run a Spark action; its failure is raised as :func:`job_failure` ``from`` it."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - every failure is surfaced as a typed error
        failure = job_failure(exc, context)
        if failure is exc:
            raise
        raise failure from exc


#: Spark's refusal of a GroupState checkpoint whose rows differ from the operator's
_STATE_VALUE_CHANGE = re.compile(r"STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE.*?Existing "
                                 r"value_schema=(?P<old>.*?) and new value_schema=(?P<new>.*?)\.",
                                 re.S)
def timeout_layout_change(exc: BaseException, context: str) -> Optional[CheckpointMismatchError]:
    """A CheckpointMismatchError when ``exc`` is Spark refusing a keyed operator's
    checkpoint because its state rows have a timeout column the operator now lacks (or the
    reverse).

    Args:
        exc: the failure of a streaming query.
        context: what was running, named in the message.

    Returns:
        The error to raise, or None when ``exc`` is another failure.
    """
    for text in _texts(exc):
        found = _STATE_VALUE_CHANGE.search(text)
        if found is None:
            continue
        had, has = "timeoutTimestamp" in found["old"], "timeoutTimestamp" in found["new"]
        if had == has:
            return None
        if had:
            why = ("this run's operator has nothing that can time it out (no event time, an "
                   "unbounded input, no processing-time timers) and runs without one: the "
                   "checkpoint was written by an earlier version of pyspark-datastream, or "
                   "with execution.streaming.timeout-free-operators.enabled=false (since "
                   "removed), which gave every keyed operator a timeout")
        else:
            why = ("this run's operator runs with a timeout (event time, a bounded input or "
                   "processing-time timers) that the run which wrote the checkpoint did not "
                   "have")
        return CheckpointMismatchError(
            f"the checkpoint of {context} holds keyed state {'with' if had else 'without'} "
            f"Spark's GroupState timeout column, and {why}. Restore a savepoint of the old "
            f"run into a new job")
    return None
