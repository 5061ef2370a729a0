"""PyFlink's rolling aggregations of a KeyedStream (``sum``, ``min``, ``max``, ``min_by``,
``max_by``) as a base class of ``KeyedStream``, which gives them its key node and builds
their keyed operator.
"""

from __future__ import annotations

import enum
from typing import Any, Union

from ..operators import aggregations as _aggs
from ..state_store.exceptions import GraphBuildError

__all__ = ["KeyedAggregations"]


class KeyedAggregations:
    """Rolling field aggregations per key, for a stream holding its key node in ``_key_node``."""

    class AccumulateType(enum.Enum):
        """The rolling aggregations (PyFlink's ``KeyedStream.AccumulateType``)."""

        MIN = 1
        MAX = 2
        MIN_BY = 3
        MAX_BY = 4
        SUM = 5

    _key_node: Any

    def _keyed(self, op: str, function: Any, output_type: Any, name: str) -> Any:
        """The DataStream of a keyed operator (given by the stream class)."""
        raise NotImplementedError

    def _agg(self, kind: str, field: Union[int, str]) -> Any:
        if not isinstance(field, (int, str)) or isinstance(field, bool):
            raise GraphBuildError(f"{kind}() needs a field position (int) or name (str), got {field!r}")
        t = self._key_node.output_type
        if isinstance(field, str) and t is not None and hasattr(t, "get_field_names"):
            names = list(t.get_field_names())
            if field not in names:
                raise GraphBuildError(f"{kind}('{field}'): no such field; the stream's fields are {names}")
        f = getattr(_aggs, kind)(field)
        return self._keyed("reduce", f, t, f"{kind.capitalize()}({field})")

    def sum(self, position_to_sum: Union[int, str] = 0) -> Any:
        """Rolling sum of a field per key (PyFlink's ``sum``; BATCH emits the final one per key).

        Args:
            position_to_sum: The field's position (int) or name (str).

        Returns:
            The stream of running sums.

        Raises:
            GraphBuildError: The field is not an int or str, or names no field of the stream.
        """
        return self._agg("sum", position_to_sum)

    def min(self, position_to_min: Union[int, str] = 0) -> Any:
        """Rolling minimum of a field per key (the other fields are the first record's; BATCH
        emits the final one per key).

        Args:
            position_to_min: The field's position (int) or name (str).

        Returns:
            The stream of running minimums.

        Raises:
            GraphBuildError: The field is not an int or str, or names no field of the stream.
        """
        return self._agg("min", position_to_min)

    def max(self, position_to_max: Union[int, str] = 0) -> Any:
        """Rolling maximum of a field per key (the other fields are the first record's; BATCH
        emits the final one per key).

        Args:
            position_to_max: The field's position (int) or name (str).

        Returns:
            The stream of running maximums.

        Raises:
            GraphBuildError: The field is not an int or str, or names no field of the stream.
        """
        return self._agg("max", position_to_max)

    def min_by(self, position_to_min_by: Union[int, str] = 0) -> Any:
        """Per key, the record with the smallest value of a field so far (BATCH: the final one).

        Args:
            position_to_min_by: The field's position (int) or name (str).

        Returns:
            The stream of running minimum records.

        Raises:
            GraphBuildError: The field is not an int or str, or names no field of the stream.
        """
        return self._agg("min_by", position_to_min_by)

    def max_by(self, position_to_max_by: Union[int, str] = 0) -> Any:
        """Per key, the record with the largest value of a field so far (BATCH: the final one).

        Args:
            position_to_max_by: The field's position (int) or name (str).

        Returns:
            The stream of running maximum records.

        Raises:
            GraphBuildError: The field is not an int or str, or names no field of the stream.
        """
        return self._agg("max_by", position_to_max_by)
