"""PyFlink's operator hints that only steer Flink's scheduler, accepted so programs port.

Flink chains operators into tasks, places tasks in slot-sharing groups and shows each
operator's description in its web UI. None of these changes what a job computes. Spark
fuses the stages of a pass itself and schedules its tasks on executors, so here the hints
are checked (a wrong argument fails where it is written) and have no other effect; a
description is kept on the job graph.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..state_store.exceptions import GraphBuildError

__all__ = ["SchedulingHints"]

_Self = TypeVar("_Self", bound="SchedulingHints")


class SchedulingHints:
    """``set_description``, ``start_new_chain``, ``disable_chaining``, ``slot_sharing_group``
    for a stream or sink handle holding its graph node in ``_node``."""

    _node: Any

    def set_description(self: _Self, description: str) -> _Self:
        """Describe the operator (kept on the job graph as ``description``).

        Args:
            description: The description.

        Returns:
            This stream or sink.

        Raises:
            GraphBuildError: ``description`` is not a str.
        """
        if not isinstance(description, str):
            raise GraphBuildError(
                f"{self._node.describe()}: set_description() needs a str, got {description!r:.80}")
        self._node.description = description
        return self

    def set_parallelism(self: _Self, parallelism: int) -> _Self:
        """The operator's parallelism (e.g. ``ds.print().set_parallelism(1)``), kept on the
        job graph; the job's partitions come from ``parallelism.default``.

        Args:
            parallelism: an int >= 1.

        Returns:
            This handle.

        Raises:
            GraphBuildError: not an int >= 1.
        """
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise GraphBuildError(
                f"{self._node.describe()}: parallelism must be a positive int, got "
                f"{parallelism!r}")
        self._node.parallelism = parallelism
        return self

    def start_new_chain(self: _Self) -> _Self:
        """Flink: start a new task chain here. Spark fuses stages itself: no effect.

        Returns:
            This stream or sink.
        """
        return self

    def disable_chaining(self: _Self) -> _Self:
        """Flink: never chain this operator. Spark fuses stages itself: no effect.

        Returns:
            This stream or sink.
        """
        return self

    def slot_sharing_group(self: _Self, slot_sharing_group: Any) -> _Self:
        """Flink: the slot-sharing group (a name or a ``SlotSharingGroup``) of the operator.
        Spark schedules tasks on its executors: checked, no effect.

        Args:
            slot_sharing_group: A non-empty name, or an object with ``get_name()``.

        Returns:
            This stream or sink.

        Raises:
            GraphBuildError: Neither a non-empty name nor a group with one.
        """
        name = slot_sharing_group
        if not isinstance(name, str):
            get_name = getattr(slot_sharing_group, "get_name", None)
            name = get_name() if callable(get_name) else None
        if not isinstance(name, str) or not name:
            raise GraphBuildError(
                f"{self._node.describe()}: slot_sharing_group() needs a non-empty name or a "
                f"SlotSharingGroup, got {slot_sharing_group!r:.80}")
        return self

    def set_uid_hash(self: _Self, uid_hash: str) -> _Self:
        """Refused: Flink's operator hash matches the state of a Flink savepoint; state here
        is matched by ``uid()`` (else by position).

        Args:
            uid_hash: Flink's 32-hex-digit hash.

        Returns:
            Nothing: it always raises.

        Raises:
            GraphBuildError: always, naming ``uid()`` instead.
        """
        raise GraphBuildError(
            f"{self._node.describe()}: set_uid_hash({uid_hash!r}) sets Flink's operator hash "
            f"for matching a Flink savepoint's state; state here is matched by uid(): call "
            f"uid(...) instead")
