"""PyFlink's smaller ``DataStream`` methods: per-operator settings, ``project`` and ``cache``.

Per-operator settings that only steer Flink's runtime are checked and kept on the job
graph (``env.get_execution_plan()`` shows them); the whole job's key groups and partitions
come from ``pipeline.max-parallelism`` and ``parallelism.default``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, TypeVar

from ..plan.config import RuntimeMode
from ..plan.graph import reachable
from ..state_store.exceptions import GraphBuildError
from ..state_store.keygroups import check_max_parallelism
from ..state_store.typeinfo import FieldsTypeInfo, TypeInformation
from ..state_store.types import Types

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


__all__ = ["Projection", "StreamExtras"]

_Self = TypeVar("_Self", bound="StreamExtras")


class Projection:
    """The record of the fields at ``indexes`` of a tuple record, as a tuple."""

    def __init__(self, indexes: tuple[int, ...]) -> None:
        self.indexes = indexes

    def __call__(self, value: Any) -> tuple[Any, ...]:
        return tuple(value[i] for i in self.indexes)


class StreamExtras:
    """``set_max_parallelism``, ``set_buffer_timeout``, ``force_non_parallel``,
    ``project`` and ``cache`` for a stream holding its environment in ``_env`` and its graph
    node in ``_node``."""

    _env: Any
    _node: Any

    if TYPE_CHECKING:  # what the stream class this mixes into (DataStream) defines
        def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> Any: ...

        def _require_typed(self, what: str) -> None: ...

        def to_dataframe(self) -> DataFrame: ...

    def set_max_parallelism(self: _Self, max_parallelism: int) -> _Self:
        """Flink: the operator's number of key groups. Here one number of key groups holds
        for the whole job (``env.set_max_parallelism``): the value must be that one.

        Args:
            max_parallelism: 1..32768, equal to the environment's max parallelism.

        Returns:
            This stream.

        Raises:
            KeyGroupError: out of range.
            GraphBuildError: another value than the job's (its key groups would differ).
        """
        check_max_parallelism(max_parallelism)
        job = self._env.get_max_parallelism()
        if max_parallelism != job:
            raise GraphBuildError(
                f"{self._node.describe()}: set_max_parallelism({max_parallelism}) differs from "
                f"the job's {job}: every operator here uses the job's key groups; set "
                f"env.set_max_parallelism({max_parallelism}) (pipeline.max-parallelism) instead")
        return self

    def set_buffer_timeout(self: _Self, timeout_millis: int) -> _Self:
        """Flink's network buffer flush interval for this operator. Spark moves records
        between stages per partition or micro-batch: checked, no effect.

        Args:
            timeout_millis: an int >= -1.

        Returns:
            This stream.

        Raises:
            GraphBuildError: not an int >= -1.
        """
        if isinstance(timeout_millis, bool) or not isinstance(timeout_millis, int) \
                or timeout_millis < -1:
            raise GraphBuildError(
                f"{self._node.describe()}: set_buffer_timeout needs an int >= -1, "
                f"got {timeout_millis!r}")
        return self

    def force_non_parallel(self: _Self) -> _Self:
        """Flink: run this operator as one task. Kept as the node's parallelism 1; the
        job's partitions come from ``parallelism.default``.

        Returns:
            This stream.
        """
        self._node.parallelism = 1
        return self

    def project(self, *field_indexes: int) -> Any:
        """A stream of tuples of the given fields of a ``Types.TUPLE`` stream, in the given
        order (PyFlink's ``project``).

        Args:
            *field_indexes: indexes of the input's fields (repeats allowed).

        Returns:
            The projected stream, typed ``Types.TUPLE`` of the chosen field types.

        Raises:
            GraphBuildError: the stream is not a TUPLE stream, no index is given, or an
                index is out of range.

        Example:
            >>> ds.project(2, 0)  # (a, b, c) -> (c, a)
        """
        t = self._node.output_type
        if not isinstance(t, FieldsTypeInfo) or t.type_name != "TUPLE":
            raise GraphBuildError(
                f"{self._node.describe()}: project() needs a stream of Types.TUPLE records, "
                f"got output_type {t!r}")
        types = list(t.get_field_types())
        bad = [i for i in field_indexes
               if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(types)]
        if not field_indexes or bad:
            raise GraphBuildError(
                f"{self._node.describe()}: project() needs field indexes in 0..{len(types) - 1},"
                f" got {field_indexes!r}")
        output = Types.TUPLE([types[i] for i in field_indexes])
        stream = self.map(Projection(tuple(field_indexes)),
                          output_type=output)
        return stream.name("Projection")

    def cache(self) -> Any:
        """BATCH: keep this stream's records cached in Spark (``DataFrame.cache``), so jobs
        reading the returned stream compute them once. STREAMING: refused, as in PyFlink.

        The cached stream's records carry no event timestamps: assign them again
        (``assign_timestamps_and_watermarks``) where event time is used downstream.

        Returns:
            A :class:`CachedDataStream`; ``invalidate()`` drops the cached data.

        Raises:
            GraphBuildError: the job would run in STREAMING mode, or the stream is not typed
                (its records must be Spark columns).
        """
        mode = self._env.runtime_mode_for(reachable([self._node]))
        if mode is not RuntimeMode.BATCH:
            raise GraphBuildError(
                f"{self._node.describe()}: cache() is only supported in BATCH mode (as in "
                f"PyFlink); this job runs {mode.value}: set execution.runtime-mode to BATCH")
        self._require_typed("cache()")
        df = self.to_dataframe().cache()
        return self._env.cached_stream(df, self._node.output_type)
