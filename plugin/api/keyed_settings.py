"""The operator settings a KeyedStream refuses, as PyFlink's does.

``key_by(...)`` makes no operator of its own (its records go on to the keyed operator after
it), so PyFlink's ``KeyedStream`` overrides each per-operator setting to raise: name, uid,
parallelism, max parallelism, non-parallel, buffer timeout, chaining, slot sharing group and
``cache``. Here each raises a ``GraphBuildError`` naming the call and saying where the setting
goes instead, rather than being recorded on a node that runs no operator.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..state_store.exceptions import GraphBuildError

__all__ = ["KEYED_STREAM_REFUSED", "KeyedStreamSettings"]

#: The DataStream calls a KeyedStream refuses (PyFlink's KeyedStream overrides each to raise).
KEYED_STREAM_REFUSED = ("name", "get_name", "uid", "set_parallelism", "set_max_parallelism",
                        "force_non_parallel", "set_buffer_timeout", "start_new_chain",
                        "disable_chaining", "slot_sharing_group", "cache")


class KeyedStreamSettings:
    """Every call of :data:`KEYED_STREAM_REFUSED` raises, naming itself."""

    _node: Any

    def _refuse_setting(self, call: str) -> NoReturn:
        raise GraphBuildError(
            f"{call}() on the KeyedStream of {self._node.describe()} is not supported (as in "
            f"PyFlink): key_by(...) is not an operator of its own; call {call}() on the "
            f"operator after it instead, e.g. key_by(...).reduce(...).{call}(...)")

    def name(self, name: str) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Args:
            name: The operator name it would set.

        Raises:
            GraphBuildError: Always, naming ``name()``.
        """
        self._refuse_setting("name")

    def get_name(self) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Raises:
            GraphBuildError: Always, naming ``get_name()``.
        """
        self._refuse_setting("get_name")

    def uid(self, uid: str) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Args:
            uid: The operator id it would set.

        Raises:
            GraphBuildError: Always, naming ``uid()``.
        """
        self._refuse_setting("uid")

    def set_parallelism(self, parallelism: int) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Args:
            parallelism: The parallelism it would set.

        Raises:
            GraphBuildError: Always, naming ``set_parallelism()``.
        """
        self._refuse_setting("set_parallelism")

    def set_max_parallelism(self, max_parallelism: int) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Args:
            max_parallelism: The max parallelism it would set.

        Raises:
            GraphBuildError: Always, naming ``set_max_parallelism()``.
        """
        self._refuse_setting("set_max_parallelism")

    def force_non_parallel(self) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Raises:
            GraphBuildError: Always, naming ``force_non_parallel()``.
        """
        self._refuse_setting("force_non_parallel")

    def set_buffer_timeout(self, timeout_millis: int) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Args:
            timeout_millis: The buffer timeout it would set.

        Raises:
            GraphBuildError: Always, naming ``set_buffer_timeout()``.
        """
        self._refuse_setting("set_buffer_timeout")

    def start_new_chain(self) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Raises:
            GraphBuildError: Always, naming ``start_new_chain()``.
        """
        self._refuse_setting("start_new_chain")

    def disable_chaining(self) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Raises:
            GraphBuildError: Always, naming ``disable_chaining()``.
        """
        self._refuse_setting("disable_chaining")

    def slot_sharing_group(self, slot_sharing_group: Any) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Args:
            slot_sharing_group: The group it would set.

        Raises:
            GraphBuildError: Always, naming ``slot_sharing_group()``.
        """
        self._refuse_setting("slot_sharing_group")

    def cache(self) -> NoReturn:
        """Refused on a KeyedStream, as in PyFlink.

        Raises:
            GraphBuildError: Always, naming ``cache()``.
        """
        self._refuse_setting("cache")
