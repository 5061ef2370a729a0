"""A streaming DataFrame source read in BATCH: one available-now run into staged Parquet.

The staging folder lies under the checkpoint root when the job has one (storage every host
of a cluster reaches, where Unity Catalog allows a streaming checkpoint), else in the
driver's temporary folder. It holds a copy of the source's input, so it lives no longer
than the job that reads it: a job that runs (``execute()``, ``execute_and_collect()``)
removes it when it ends; a ``to_dataframe()`` DataFrame reads it lazily, so its folder
stays until the Python process exits.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Optional

from ...operators.exceptions import JobExecutionError
from ...state_store.storage import Storage
from ..job_identity import safe_name, temporary_folder

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ...plan.graph import SourceNode

__all__ = ["TriggerOnceReads"]

log = logging.getLogger("pyspark_datastream")

#: every staging folder of this process not removed yet -> the storage layer removing it
_LIVE: dict[str, Storage] = {}
_LIVE_LOCK = threading.Lock()


def _remove(folder: str) -> None:
    with _LIVE_LOCK:
        storage = _LIVE.pop(folder, None)
    if storage is None:
        return
    try:
        storage.delete_dir(folder)
    except Exception as exc:  # noqa: BLE001 - a job's outcome stands; the folder is named
        log.warning("the staged read %s could not be removed: %s", folder, exc)


@atexit.register
def _remove_all() -> None:
    with _LIVE_LOCK:
        folders = list(_LIVE)
    for folder in folders:
        _remove(folder)


class TriggerOnceReads:
    """The staged reads of one BATCH job's streaming DataFrame sources."""

    def __init__(self, job_name: str, action: Callable[[str], AbstractContextManager[Any]],
                 storage: Storage, root: Callable[[], Optional[str]]) -> None:
        """Args:
            job_name: The job's name (for its log lines and folder names).
            action: Times a Spark action of the job (its progress), given a label.
            storage: The job's storage layer (it removes the folders).
            root: The job's checkpoint root, normalized, or None (asked on first use).
        """
        self._job_name = job_name
        self._action = action
        self._storage = storage
        self._root = root
        self._folders: list[str] = []

    def _new_folder(self) -> str:
        folder = temporary_folder(self._root(), "pyspark-datastream-trigger-once-",
                                  f"_batch-read-{safe_name(self._job_name)}-")
        with _LIVE_LOCK:
            _LIVE[folder] = self._storage
        self._folders.append(folder)
        return folder

    def read(self, df: DataFrame, node: SourceNode) -> DataFrame:
        """Run ``df`` once, available-now, into a staging folder, and read that.

        Args:
            df: The source's streaming DataFrame.
            node: The source node (named in errors).

        Returns:
            A batch DataFrame over the staged Parquet, with ``df``'s schema.

        Raises:
            JobExecutionError: The available-now run failed (its folder is removed).
        """
        staging = self._new_folder()
        start = time.time()
        try:
            with self._action(f"trigger-once read of {node.name!r}"):
                query = (df.writeStream.format("parquet").option("path", f"{staging}/data")
                         .option("checkpointLocation", f"{staging}/checkpoint")
                         .trigger(availableNow=True).start())
                query.awaitTermination()
            if query.exception() is not None:
                raise JobExecutionError(
                    f"{node.describe()}: trigger-once read failed: {query.exception()}")
        except BaseException:
            self._folders.remove(staging)
            _remove(staging)
            raise
        log.info("BATCH job %r: streaming source %s read as one trigger-once batch in %.1f s "
                 "(staged in %s until the job ends)", self._job_name, node.name,
                 time.time() - start, staging)
        return df.sparkSession.read.schema(df.schema).parquet(f"{staging}/data")

    def remove(self) -> None:
        """Remove every staging folder (the job that read them has ended)."""
        folders, self._folders = self._folders, []
        for folder in folders:
            _remove(folder)
