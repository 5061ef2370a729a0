"""Which pyspark the package runs on: the supported Spark lines, checked when the package is
imported (:func:`check_pyspark`), and known-bad combinations of pyspark and pyarrow, refused
when a job is built (:func:`check_streaming_versions`).

The check reads pyspark's ``version.py`` without importing pyspark, so the Spark-free
subpackages (``operators``, ``state_store``) still import without loading Spark. It works for
every way a runtime provides pyspark: pip's package, a folder on ``PYTHONPATH`` (Databricks
Runtime), or databricks-connect's own ``pyspark`` module.

pyspark's ``applyInPandasWithState`` worker (every keyed STREAMING operator here) slices each
group's rows out of an Arrow batch at offsets read from a pandas row; when the batch carries
padding state rows those offsets are floats, and pyarrow 26 refuses float offsets in
``RecordBatch.slice`` ("'float' object cannot be interpreted as an integer", raised in a Python
worker in the middle of the first micro-batch). pyspark 4.0.5 and 4.1.4 (released after
pyarrow 26) convert the offsets to int; 4.2.0 converts its batches another way and is not
affected (both measured here: pyspark 4.0.1 fails and 4.1.4 and 4.2.0 run with pyarrow 26.0.1).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import warnings
from typing import Optional

from ..state_store.exceptions import ConfigurationError
from .exceptions import SparkVersionError, UnsupportedSparkFeatureError

__all__ = ["SUPPORTED_LINES", "UNTESTED_SPARK_ENV", "check_pyspark", "check_streaming_versions",
           "installed_pyspark_version", "require_spark_feature", "SPARK_FEATURES",
           "require_feature"]

#: The Spark lines the package is tested on (``make test`` and ``make test-compat``).
SUPPORTED_LINES: tuple[str, ...] = ("3.5", "4.0", "4.1", "4.2", "4.3")
#: Set to 1 to run on a Spark line the package has not been tested on (a warning says so).
UNTESTED_SPARK_ENV = "PYSPARK_DATASTREAM_UNTESTED_SPARK"
_INSTALL = ("install one (pip install 'pyspark-datastream[spark]' brings pip's pyspark for a "
            "local run; on Databricks Runtime and with databricks-connect use the pyspark that "
            "comes with them)")


def _release(version: str) -> tuple[int, ...]:
    """``4.0.1`` -> (4, 0, 1); a suffix (``.dev1``, ``rc1``, ``+local``) is ignored."""
    parts = []
    for piece in version.split("+")[0].split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def installed_pyspark_version() -> Optional[str]:
    """The version of the importable pyspark, read from its ``version.py`` without importing
    it; None when no pyspark is importable.

    Returns:
        ``pyspark.__version__`` as written in ``pyspark/version.py``, or None.

    Raises:
        SparkVersionError: a pyspark is importable but its version cannot be read.
    """
    loaded = sys.modules.get("pyspark")
    if loaded is not None and isinstance(getattr(loaded, "__version__", None), str):
        return str(loaded.__version__)  # a worker, or a program that imported it already
    spec = importlib.util.find_spec("pyspark")
    if spec is None:
        return None
    folders = list(spec.submodule_search_locations or [])
    get_data = getattr(spec.loader, "get_data", None)
    for folder in folders:
        path = os.path.join(folder, "version.py")
        try:
            # through the loader: pyspark may sit in a zip (Spark's workers import pyspark.zip)
            text = get_data(path) if get_data is not None else open(path, "rb").read()
        except OSError:
            continue
        found = re.search(r"""__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""",
                          text.decode("utf-8", "replace"))
        if found:
            return found.group(1)
    raise SparkVersionError(
        f"pyspark_datastream cannot read the version of the pyspark found at "
        f"{folders or spec.origin}: it has no readable pyspark/version.py")


def check_pyspark(version: Optional[str] = None) -> str:
    """Check that pyspark is importable and of a supported Spark line (called when the package
    is imported).

    Args:
        version: The pyspark version to check; default the importable pyspark's.

    Returns:
        The Spark line (``"4.2"``).

    Raises:
        SparkVersionError: no pyspark is importable, or its line is not supported (unless
            ``PYSPARK_DATASTREAM_UNTESTED_SPARK=1``, which only warns).
    """
    if version is None:
        version = installed_pyspark_version()
    supported = ", ".join(SUPPORTED_LINES)
    if version is None:
        raise SparkVersionError(
            f"pyspark_datastream needs pyspark (Spark {supported}) and none is importable: "
            f"{_INSTALL}")
    release = _release(version)
    line = ".".join(str(p) for p in release[:2])
    if line in SUPPORTED_LINES:
        return line
    message = (f"pyspark_datastream supports the Spark lines {supported}; the importable "
               f"pyspark is {version} (line {line or '?'})")
    if os.environ.get(UNTESTED_SPARK_ENV) == "1":
        warnings.warn(f"{message}: running on it untested, as {UNTESTED_SPARK_ENV}=1 asks",
                      RuntimeWarning, stacklevel=2)
        return line
    raise SparkVersionError(
        f"{message}. Use a runtime with one of those lines, or {_INSTALL}; set "
        f"{UNTESTED_SPARK_ENV}=1 to run on {line} untested")


def require_spark_feature(feature: str, since: str, spark_version: Optional[str] = None) -> None:
    """Refuse ``feature`` when the session's Spark line is older than ``since``.

    Args:
        feature: What the job uses, as the user wrote it (e.g. ``"Spark Connect"``).
        since: The first Spark line that has it (``"4.0"``).
        spark_version: The session's Spark version; default the importable pyspark's.

    Raises:
        UnsupportedSparkFeatureError: the line is older than ``since``.
    """
    if spark_version is None:
        spark_version = installed_pyspark_version() or "0"
    if _release(spark_version)[:2] < _release(since)[:2]:
        line = ".".join(str(p) for p in _release(spark_version)[:2])
        raise UnsupportedSparkFeatureError(
            f"{feature} needs Spark {since} or newer; this session runs Spark {spark_version} "
            f"(line {line}). Run the job on a Spark {since}+ runtime, or do without {feature}")


#: Features of the package that an older supported Spark line cannot run, by the name
#: :func:`require_feature` takes: ``(what the job asks for, the first line that runs it, what
#: it needs from that line)``. Everything else runs on every line of :data:`SUPPORTED_LINES`.
SPARK_FEATURES: dict[str, tuple[str, str, str]] = {
    "streaming_savepoint": (
        "a STREAMING savepoint", "4.0",
        "env.execute(name, savepoint_path=...) in STREAMING mode and JobClient's "
        "trigger_savepoint / stop_with_savepoint read the keyed state back from the query "
        "checkpoint with Spark's state data source, format(\"statestore\"), which Spark 4.0 "
        "added; on this line write the savepoint from a BATCH run, which a STREAMING job can "
        "restore"),
    "one_query": (
        "execution.streaming.query-mapping=one-query", "4.0",
        "it chains keyed stages as transformWithStateInPandas operators, which Spark 4.0 "
        "added; use execution.streaming.query-mapping=per-stage (or auto, the default) on this "
        "line"),
}


def require_feature(name: str, spark_version: Optional[str] = None) -> None:
    """Refuse the package feature ``name`` (a key of :data:`SPARK_FEATURES`) when the
    session's Spark line cannot run it; called when the job is built.

    Args:
        name: The feature's key in :data:`SPARK_FEATURES`.
        spark_version: The session's Spark version (``spark.version``); default the
            importable pyspark's.

    Raises:
        UnsupportedSparkFeatureError: the line is older than the feature's first line.
    """
    feature, since, why = SPARK_FEATURES[name]
    try:
        require_spark_feature(feature, since, spark_version)
    except UnsupportedSparkFeatureError as exc:
        raise UnsupportedSparkFeatureError(f"{exc} ({why})") from None


def check_streaming_versions(pyspark_version: Optional[str] = None,
                             pyarrow_version: Optional[str] = None) -> None:
    """ConfigurationError when the installed pyspark's ``applyInPandasWithState`` cannot run
    with the installed pyarrow (pyspark 4.0.0-4.0.4 or 4.1.0-4.1.3 with pyarrow >= 26)."""
    if pyspark_version is None:
        import pyspark

        pyspark_version = pyspark.__version__
    if pyarrow_version is None:
        import pyarrow

        pyarrow_version = pyarrow.__version__
    spark, arrow = _release(pyspark_version), _release(pyarrow_version)
    affected = (4, 0) <= spark < (4, 0, 5) or (4, 1) <= spark < (4, 1, 4)
    if affected and arrow >= (26,):
        fixed = "4.0.5" if spark < (4, 1) else "4.1.4"
        raise ConfigurationError(
            f"STREAMING jobs cannot run on pyspark {pyspark_version} with pyarrow "
            f"{pyarrow_version}: pyspark's applyInPandasWithState passes float offsets to "
            f"pyarrow's RecordBatch.slice, which pyarrow >= 26 refuses. Install pyspark>="
            f"{fixed} (or 4.2.0), or pyarrow<26")
