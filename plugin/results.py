"""What running a job gives back: an iterator over collected records and the execution result.

Shared by the API (which returns them) and the translation layer (which builds them), so
neither has to import the other.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["CloseableIterator", "JobExecutionResult", "JobID"]


class CloseableIterator(Iterator[Any]):
    """Iterator over a job's results; close it (or use ``with``) to release resources.
    Returned by ``ds.execute_and_collect()``; not constructed directly.
    """

    def __init__(self, iterator: Iterator[Any], on_close: Optional[Callable[[], None]] = None):
        self._it = iterator
        self._on_close = on_close
        self._closed = False

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        return next(self._it)

    def next(self) -> Any:
        """The next record (PyFlink's ``CloseableIterator.next``).

        Returns:
            The record.

        Raises:
            StopIteration: no record is left, or the iterator is closed.
        """
        return self.__next__()

    def close(self) -> None:
        """Closes the underlying iterator and runs the on-close callback; later calls do nothing."""
        if not self._closed:
            self._closed = True
            close = getattr(self._it, "close", None)
            if close is not None:
                close()
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()



class JobID(str):
    """A job run's id (PyFlink's ``JobID``): 32 hex digits, as Flink's 16-byte ids print;
    a ``str``, so it equals and hashes as its text.

    Args:
        hex_string: The id's 32 hex digits.

    Raises:
        ValueError: not 32 hex digits.
    """

    def __new__(cls, hex_string: str) -> JobID:
        text = str(hex_string).lower()
        if len(text) != 32 or any(c not in "0123456789abcdef" for c in text):
            raise ValueError(f"a JobID is 32 hex digits, got {hex_string!r}")
        return super().__new__(cls, text)

    @staticmethod
    def generate() -> JobID:
        """A new random id.

        Returns:
            The JobID.
        """
        return JobID(uuid.uuid4().hex)

    @staticmethod
    def from_hex_string(hex_string: str) -> JobID:
        """The id of ``hex_string`` (Flink's ``JobID.fromHexString``).

        Args:
            hex_string: 32 hex digits.

        Returns:
            The JobID.
        """
        return JobID(hex_string)

    def to_hex_string(self) -> str:
        """The id's 32 hex digits.

        Returns:
            The text.
        """
        return str.__str__(self)


@dataclass
class JobExecutionResult:
    """What ``execute`` returns: job name, mode, net runtime, per-sink row counts and the
    progress rows (BATCH: one per stage; STREAMING: one per micro-batch of each query).
    Returned by ``env.execute()`` and ``JobClient.get_job_execution_result()``; not
    constructed directly.
    """

    job_name: str
    mode: str
    net_runtime_ms: int
    sink_counts: dict[str, int] = field(default_factory=dict)
    savepoint_path: Optional[str] = None
    progress: list[dict[str, Any]] = field(default_factory=list)
    #: a random hex id of the run (Spark has no id for a set of queries)
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def get_job_id(self) -> JobID:
        """The run's id (as ``JobClient.get_job_id`` of the same run).

        Returns:
            A :class:`JobID` (a 32-digit hex ``str``).
        """
        return JobID(self.job_id)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        """The job's accumulators: none, as for every PyFlink job whose functions are
        Python (PyFlink's ``RuntimeContext`` has no accumulators).

        Returns:
            An empty dict.
        """
        return {}

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """An accumulator's result: None, as no Python function registers one (see
        :meth:`get_all_accumulator_results`).

        Args:
            accumulator_name: The accumulator's name.

        Returns:
            None.
        """
        return None

    def get_job_execution_result(self) -> JobExecutionResult:
        """This result itself (PyFlink's ``JobExecutionResult.get_job_execution_result``).

        Returns:
            ``self``.
        """
        return self

    def get_net_runtime(self) -> int:
        """The job's wall-clock run time in milliseconds (PyFlink's ``get_net_runtime``).

        Returns:
            ``net_runtime_ms``.
        """
        return self.net_runtime_ms

    def get_progress(self) -> list[dict[str, Any]]:
        """The job's progress rows: flat dicts, e.g. for ``pandas.DataFrame(rows)``.

        BATCH: one row per stage (``stage``, ``stages``, ``kind``, ``name``, ``detail``,
        ``rows_in``, ``rows_out``, ``side_rows_out``, ``entries_in``, ``entries_out``,
        ``key_groups_in_approx``, ``action``, ``duration_ms``, ``metrics``).
        STREAMING: one row per micro-batch (``query``, ``batch``, ``rows_in``, ``rows_out``,
        ``watermark``, key-group state counts, ``duration_ms``, ``metrics``).
        ``metrics``: the user metrics (``get_metrics_group()``) of the stage's operators, or
        in STREAMING of the query's operators on its last row, combined over their parallel
        instances: ``{operator: {metric: value}}`` (``{}`` when none).

        Returns:
            A new list of the progress dicts, in the order they were recorded.
        """
        return list(self.progress)
