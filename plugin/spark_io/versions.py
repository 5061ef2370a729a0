"""Known-bad combinations of the installed pyspark and pyarrow, refused when a job is built.

pyspark's ``applyInPandasWithState`` worker (every keyed STREAMING operator here) slices each
group's rows out of an Arrow batch at offsets read from a pandas row; when the batch carries
padding state rows those offsets are floats, and pyarrow 26 refuses float offsets in
``RecordBatch.slice`` ("'float' object cannot be interpreted as an integer", raised in a Python
worker in the middle of the first micro-batch). pyspark 4.0.5 and 4.1.4 (released after
pyarrow 26) convert the offsets to int; 4.2.0 converts its batches another way and is not
affected (both measured here: pyspark 4.0.1 fails and 4.1.4 and 4.2.0 run with pyarrow 26.0.1).
"""

from __future__ import annotations

from typing import Optional

from ..state_store.exceptions import ConfigurationError

__all__ = ["check_streaming_versions"]


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
